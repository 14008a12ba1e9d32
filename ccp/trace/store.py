"""The trace folder's writer: merge per-process part files into ``calls.parquet`` + ``trace.json``.

The format (its columns and schema version) and its reader, :func:`ccp.workload.tracefile.load_trace`, live
in the workload room: a sweep's replay loads traces there, below this app.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pickle
import platform
import sys
from pathlib import Path

from ccp.errors import CcpError
from ccp.trace.fastpath import BATCH, BATCH_AGE_NS, block_calls
from ccp.trace.journal_read import JournalFeed
from ccp.trace.selections import describe_kept, describe_key
from ccp.workload.tracefile import COLUMNS, LIST_COLUMNS, SCHEMA_VERSION

PARTS = "parts"


def _part_pid(part: Path) -> int | None:
    head = part.name.split("-", 1)[0]
    return int(head) if head.isdigit() else None


def _part_batches(part: Path, torn: list | None, journaled: dict | None = None):
    """The pickled batches of one part file, a torn last batch (a killed process, a full disk) ending it, with the
    calls its journal committed (:mod:`ccp.trace.journal`: lists of the fast path's tuples) placed between them in
    seq order; ``journaled`` counts those per part."""
    feed = JournalFeed(str(part))
    with open(part, "rb") as f:
        while True:
            try:
                batch = pickle.load(f)
            except EOFError:
                break
            except Exception:  # torn by a killed process or a full disk: keep what came before
                if torn is not None:
                    torn.append(part.name)
                break
            if not isinstance(batch, list):
                continue
            seqs = [r["seq"] for r in batch if type(r) is dict and type(r.get("seq")) is int]
            if seqs:    # the journal's calls made before its first record come first, its handles before them
                handles = [r for r in batch if type(r) is dict and r.get("kind") == "handle"]
                if handles:
                    yield handles
                yield from feed.upto(min(seqs) - 1)
            yield batch
            if seqs:
                yield from feed.upto(max(seqs))
    yield from feed.upto(None)
    if journaled is not None and feed.count:
        journaled[part.name] = feed.count


_SEL_CACHE: dict = {}


def _describe_cached(key: tuple, shape: tuple) -> dict:
    """describe_key, remembered per (key, shape): a loop reads the same few keys again and again."""
    try:
        h = (shape, tuple((a.start, a.stop, a.step) if type(a) is slice else a for a in key))
        out = _SEL_CACHE.get(h)
    except TypeError:        # an unhashable key part
        return describe_key(key, shape)
    if out is None:
        if len(key) == len(shape) and all(type(a) is int and 0 <= a < n for a, n in zip(key, shape)):
            out = {"sel": "box", "start": list(key), "count": [1] * len(key), "nelems": 1}
        else:
            out = describe_key(key, shape)
        if len(_SEL_CACHE) > 100_000:
            _SEL_CACHE.clear()
        _SEL_CACHE[h] = out
    return out


def _codes(values: list):
    """Integer columns equal where ``values`` are equal: ints as they are, anything else by its repr."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    kinds = set(map(type, values))
    if kinds <= {int, type(None)}:
        try:
            if kinds == {int}:
                return [np.array(values, np.int64)]
            return [np.array([-1 if v is None else v for v in values], np.int64),
                    np.fromiter((v is None for v in values), np.int64, len(values))]
        except OverflowError:       # an index past int64: the selection is damage, but tell it apart by repr
            pass
    return [pc.dictionary_encode(pa.array(list(map(repr, values)), pa.string())).indices.to_numpy().astype(np.int64)]


def _distinct_keys(tokens: list, keys: list):
    """One id per call, the same for calls on the same handle with equal keys (ints, slices, Ellipsis; slices
    are not hashable in this Python): the keys compared column by column, a list pass per key position."""
    import numpy as np

    n = len(keys)
    lens = np.fromiter(map(len, keys), np.int64, n)
    tok = np.asarray(tokens, np.int64)
    ids = np.empty(n, np.int64)
    base = 0
    for rank in np.unique(lens).tolist():
        at = np.flatnonzero(lens == rank)
        group = keys if len(at) == n else [keys[i] for i in at.tolist()]
        fields = [tok[at]]
        for j in range(rank):
            col = [k[j] for k in group]
            if set(map(type, col)) == {slice}:
                for attr in ("start", "stop", "step"):
                    fields += _codes([getattr(a, attr) for a in col])
            else:
                fields += _codes(col)
        table = np.stack(fields)                # (field, call): equal columns are equal keys
        order = np.lexsort(table[::-1])
        ordered = table[:, order]
        new = np.ones(len(order), bool)
        new[1:] = (ordered[:, 1:] != ordered[:, :-1]).any(axis=0)
        ids[at[order]] = base + np.cumsum(new) - 1
        base += int(new.sum())
    return ids


def _fast_table(fast: list, pid: int | None, handles: dict, schema):
    """Fast-path tuples as calls.parquet rows, column by column: each call's user row, then its fast_reader
    row. Each distinct (handle, key) is described once; the rest are numpy and Arrow gathers."""
    import numpy as np
    import pyarrow as pa

    fast = [r for r in fast if r[3] in handles]        # a handle lost with a torn batch: the call cannot be placed
    n = len(fast)
    if not n:
        return schema.empty_table()
    seq = np.fromiter((r[0] for r in fast), np.int64, n)
    t0 = np.fromiter((r[1] for r in fast), np.int64, n)
    ns = np.fromiter((r[2] for r in fast), np.int64, n) - t0
    tokens = [r[3] for r in fast]
    keys = [r[4] for r in fast]
    ids = _distinct_keys(tokens, keys)
    _, first = np.unique(ids, return_index=True)        # ids number the distinct (handle, key) pairs
    infos = [handles[tokens[i]] for i in first.tolist()]
    descs = [_describe_cached(keys[i], info[3]) for i, info in zip(first.tolist(), infos)]
    at = pa.array(ids)
    idx = ids
    nelems = np.array([x["nelems"] for x in descs], np.int64)[idx]
    nbytes = nelems * np.array([i[2] for i in infos], np.int64)[idx]
    wall_s = pa.array(ns / 1e9, pa.float64())

    def const(value, type_):
        return pa.nulls(n, type_) if value is None else pa.repeat(pa.scalar(value, type_), n)

    common = {"kind": const("call", pa.string()), "pid": const(pid, pa.int64()), "op": const("read", pa.string()),
              "file": pa.array([i[0] for i in infos], pa.string()).take(at),
              "dataset": pa.array([i[1] for i in infos], pa.string()).take(at),
              "t0_ns": pa.array(t0), "wall_s": wall_s, "hdf5_s": wall_s, "bytes": pa.array(nbytes)}
    user = {**common, "seq": pa.array(seq), "depth": const(0, pa.int64()), "parent": const(0, pa.int64()),
            "api": const("Dataset.__getitem__", pa.string()), "nlow": const(1, pa.int64())}
    sels = {"sel": pa.array([x["sel"] for x in descs], pa.string()),
            **{k: pa.array([_int_list(x.get(k)) for x in descs], pa.list_(pa.int64()))
               for k in ("start", "count", "stride", "block", "blocks", "points")},
            "nblocks": pa.array([x.get("nblocks") for x in descs], pa.int64())}
    child = {**common, "seq": pa.array(seq + 1), "depth": const(1, pa.int64()), "parent": pa.array(seq),
             "api": const("fast_reader", pa.string()), "nlow": const(0, pa.int64()), "nelems": pa.array(nelems),
             **{k: v.take(at) for k, v in sels.items()}}
    return pa.concat_tables([_table(user, n, schema), _table(child, n, schema)])


def _table(columns: dict, n: int, schema):
    """``columns`` (Arrow arrays) as a table of ``schema``; a column not given is all null."""
    import pyarrow as pa

    return pa.Table.from_arrays([columns[f.name] if f.name in columns else pa.nulls(n, f.type) for f in schema],
                                schema=schema)


def _expand(batch: list, pid: int | None, handles: dict, out: list, layouts: list, errors: list,
            fast: list | None = None) -> None:
    """Records of one batch as row dicts; a fast-path tuple (the recorder's column blocks are read back as these
    tuples, :func:`ccp.trace.fastpath.block_calls`) becomes its user call and its fast_reader row (kept as the tuple
    in ``fast`` when given, for :func:`_fast_table`)."""
    for r in batch:
        if type(r) is dict and r.get("kind") == "fast":     # the fast path's columns: as its per-call tuples
            if fast is not None:
                fast.extend(block_calls(r))
                continue
            _expand(list(block_calls(r)), pid, handles, out, layouts, errors)
            continue
        if type(r) is tuple and fast is not None:
            fast.append(r)
            continue
        if type(r) is tuple:
            seq, t0, t1, token, key = r
            info = handles.get(token)
            if info is None:        # its handle record was lost (torn part): the call cannot be placed
                continue
            file, name, itemsize, shape = info
            sel = describe_key(key, shape)
            ns = t1 - t0
            nbytes = sel["nelems"] * itemsize
            common = {"kind": "call", "pid": pid, "op": "read", "file": file, "dataset": name, "t0_ns": t0,
                      "wall_ns": ns, "hdf5_ns": ns, "bytes": nbytes}
            out.append({**common, "seq": seq, "depth": 0, "parent": 0, "api": "Dataset.__getitem__", "nlow": 1})
            out.append({**common, **sel, "seq": seq + 1, "depth": 1, "parent": seq, "api": "fast_reader", "nlow": 0})
            continue
        kind = r.get("kind")
        if kind == "handle":
            handles[r["token"]] = (r["file"], r["dataset"], r["itemsize"], tuple(r["shape"]))
        elif kind == "layout":
            layouts.append(r)
        elif kind == "error":
            errors.append(r)
        else:
            out.append(describe_kept(r))    # a file dataspace the recorder kept encoded, described


def read_parts(parts_dir: Path, torn: list | None = None) -> tuple[list[dict], list[dict], list[dict]]:
    """(records, layouts, errors) from every part file, in memory (small traces and tests; merge streams)."""
    records: list[dict] = []
    layouts: list[dict] = []
    errors: list[dict] = []
    for part in sorted(Path(parts_dir).glob("*.part")):
        handles: dict = {}
        for batch in _part_batches(part, torn):
            _expand(batch, _part_pid(part), handles, records, layouts, errors)
    return records, layouts, errors


INT_COLUMNS = ("pid", "seq", "t0_ns", "depth", "parent", "nblocks", "nelems", "bytes", "nlow", "rdcc_nbytes",
               "rdcc_nslots", "cache_nbytes", "cache_nslots")
STRING_COLUMNS = ("kind", "api", "op", "file", "dataset", "sel", "mode", "reason")
ROWS_PER_CHUNK = 200_000      # row dicts held at once while merging


def _frame(records: list[dict]):
    """Row dicts as calls.parquet's columns, each with one fixed dtype (pandas coerces what Arrow refuses)."""
    import pandas as pd

    df = pd.DataFrame.from_records(records)
    for c in (*COLUMNS, "wall_ns", "hdf5_ns"):
        if c not in df.columns:
            df[c] = None
    df["wall_s"] = pd.to_numeric(df["wall_ns"]).astype(float) / 1e9
    df["hdf5_s"] = pd.to_numeric(df["hdf5_ns"]).astype(float) / 1e9
    df = df[list(COLUMNS)].copy()
    for c in LIST_COLUMNS:
        df[c] = df[c].astype(object).map(_int_list)
    for c in INT_COLUMNS:
        df[c] = pd.array(pd.to_numeric(df[c]), dtype="Int64")
    for c in ("rdcc_w0", "cache_w0"):
        df[c] = pd.to_numeric(df[c]).astype(float)
    for c in STRING_COLUMNS:
        df[c] = df[c].astype("string")
    return df


def _int_list(v):
    if type(v) is list and all(type(x) is int for x in v):
        return v
    return [int(x) for x in v] if isinstance(v, (list, tuple)) else None


def _arrow_schema():
    import pyarrow as pa

    fields = []
    for c in COLUMNS:
        if c in LIST_COLUMNS:
            t = pa.list_(pa.int64())
        elif c in INT_COLUMNS:
            t = pa.int64()
        elif c in STRING_COLUMNS:
            t = pa.string()
        else:
            t = pa.float64()
        fields.append(pa.field(c, t))
    return pa.schema(fields)


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def environment() -> dict:
    env = {"python": sys.version.split()[0], "platform": platform.platform(), "host": platform.node(),
           "cpus": os.cpu_count()}
    try:
        import h5py

        env["h5py"] = h5py.__version__
        env["hdf5"] = h5py.version.hdf5_version
    except ImportError:
        pass
    return env


def _signal_name(n: int) -> str:
    import signal

    try:
        return signal.Signals(n).name
    except ValueError:
        return f"signal {n}"


def completeness(run: dict | None, part_pids: set[int], torn: list[str], errors: list[dict],
                 calls_by_pid: dict | None = None) -> dict:
    """Whether the trace holds every h5py call the program made, and if not, why (see tracefile). A process that
    never said it ended is listed in ``silent_processes``: how it ended (the program's own status or signal, else
    unknown), the calls the trace holds of it (``calls_by_pid``) and what it may have lost at most (``batch_bound``:
    the recorder writes every ``BATCH`` calls of each kind of key and ``BATCH`` records, and whenever a call finds
    the last write older than ``BATCH_AGE_NS``)."""
    if run is None:         # merged without ccp trace's view of the run (a part folder merged by hand)
        return {"complete": None, "reasons": ["merged without the run's status: completeness unknown"],
                "exit_status": None, "signal": None, "processes_seen": len(part_pids), "lost_records": 0,
                "recorder_errors": [e.get("error") for e in errors]}
    rc = run["returncode"]
    reasons: list[str] = []
    started: dict[int, str] = {}
    ended: dict[int, tuple[int, int, str]] = {}
    images: dict[int, int] = {}     # "start" lines less "end" lines of a pid: one more than 0 after an exec
    problems: list[str] = []        # (ccp.trace.exec_flush) means the new image never said it ended
    for line in run.get("status_lines", []):
        if len(line) < 2 or not line[0].isdigit():
            continue
        pid, what = int(line[0]), line[1]
        if what == "start":
            started.setdefault(pid, " ".join(line[2:4]))
            images[pid] = images.get(pid, 0) + 1
        elif what == "end" and len(line) >= 5:
            before = ended.get(pid, (0, 0, ""))
            ended[pid] = (before[0] + int(line[2]), before[1] + int(line[3]), line[4] or before[2])
            images[pid] = images.get(pid, 0) - 1
        elif what in ("error", "problem") and len(line) > 2:
            problems.append(f"pid {pid}: {line[2]}")
    for pid in ended:       # its "end" line accounts for it (a pool worker ended as it started: its "start" line
        started.setdefault(pid, "")     # was cut short by the SIGTERM it answered)
    if run.get("stopped_by"):
        reasons.append(f"ccp trace was {run['stopped_by']}")
    reasons += run.get("reasons", [])       # ccp trace's own (the recorder's folder removed: ccp.trace.parts_folder)
    if rc < 0:
        reasons.append(f"the program was killed by {_signal_name(-rc)}")
    elif rc > 0:
        reasons.append(f"the program exited with status {rc}: it may have stopped before its usual end")
    if run.get("top_is_python") and run["pid"] not in started:
        reasons.append(f"the program (pid {run['pid']}) ran without the recorder (python -I, -E or -S, env -i, "
                       "or a wrapper that clears PYTHONPATH or CCP_TRACE_DIR): its h5py calls are not in the trace")
    for pid, cmd in sorted(run.get("python_seen", {}).items()):
        if pid not in started and pid != run["pid"]:
            reasons.append(f"process {pid} ({cmd}) ran Python without the recorder (python -I/-E/-S or a cleared "
                           "environment): its h5py calls, if any, are not in the trace")
    lost, still_running = 0, set(run.get("still_running", ()))
    silent: list[dict] = []
    for pid in sorted(started):
        if pid not in ended or images.get(pid, 0) > 0:
            how = _how_it_ended(pid, run, pid in still_running)
            calls = (calls_by_pid or {}).get(pid, 0)
            silent.append({"pid": pid, "ended": how, "calls": calls})
            reasons.append(_silent_process(pid, started[pid], pid in still_running, pid in part_pids,
                                           run.get("end_grace_s"), how, calls))
            continue
        _written, lost_here, stopped = ended[pid]
        lost += lost_here
        if stopped or lost_here:    # no stop: made as a fork no hook saw forked, maybe the parent's (rawfork)
            reasons.append(f"process {pid}: {stopped and f'recording stopped ({stopped}); ' or 'up to '}{lost_here} "
                           "record(s) lost")
    for name in torn:
        reasons.append(f"part file {name} is cut short: its last batch of records is lost")
    unknown_pids = part_pids - set(started)
    if unknown_pids and started:
        reasons.append(f"{len(unknown_pids)} process(es) wrote records without reporting to ccp trace")
    recorder_errors = list(dict.fromkeys([*problems, *(f"pid {e.get('pid')}: {e.get('error')}" for e in errors)]))
    signal_no = -rc if rc < 0 else None
    return {"complete": not reasons, "reasons": reasons, "exit_status": rc if rc >= 0 else None, "signal": signal_no,
            "processes_seen": len(set(started) | part_pids | {p for p in run.get("python_seen", {}) if p not in started}),
            "lost_records": lost, "recorder_errors": recorder_errors, "silent_processes": silent,
            "batch_bound": _BATCH_BOUND}


_BATCH_BOUND = {"calls_per_kind": BATCH, "kinds": ["index", "slice", "tuple"], "records": BATCH,
                "seconds": BATCH_AGE_NS / 1e9}
_LOST_AT_MOST = (f"at most its last batch of each kind is missing: up to {BATCH} d[k] calls of each kind of key (an "
                 f"int, a slice, a tuple) and {BATCH} other records, all made within {BATCH_AGE_NS / 1e9:g} s after its "
                 "last write")


def _how_it_ended(pid: int, run: dict, running: bool) -> str:
    """How a process that never said it ended went: the program's own exit (ccp trace saw its status), else unknown."""
    if running:
        return "still running"
    if pid == run.get("pid"):
        rc = run["returncode"]
        return f"killed by {_signal_name(-rc)}" if rc < 0 else f"exited with status {rc}"
    return "unknown"


def _silent_process(pid: int, start: str, running: bool, wrote: bool, grace_s: float | None, how: str = "unknown",
                    calls: int = 0) -> str:
    """Why a process that said "start" but never "end" makes the trace incomplete: which process it was (its
    parent, its command or "fork"), whether it was still alive when ccp trace stopped waiting, whether it wrote, how
    it ended and what the trace holds of it."""
    parent, _, what = start.partition(" ")
    desc = f"forked by pid {parent}" if what == "fork" else f"{what or 'started'}, parent pid {parent or '?'}"
    who = f"process {pid} ({desc}{'' if wrote else '; no records written'})"
    if running:
        waited = f" {grace_s:g} s" if grace_s else ""
        return (f"{who} was still running{waited} after the program left and never said it ended: the calls it made "
                "after its last write are not in the trace")
    ended = ("a crash, a signal, kill -9 or a C-level _exit: unknown which" if how == "unknown"
             else f"it {how}")
    return (f"{who} ended without the recorder's exit hook ({ended}); the trace holds its {calls} call(s), "
            f"{_LOST_AT_MOST}")


def _records_table(records: list[dict], schema):
    """Row dicts (calls the recorder described itself, events) as a table of ``schema``: Arrow converts
    them in one pass; a value of an unexpected type takes pandas' coercing path (:func:`_frame`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not records:
        return schema.empty_table()
    raw_schema = pa.schema([f for f in schema if f.name not in ("wall_s", "hdf5_s")]
                           + [pa.field("wall_ns", pa.int64()), pa.field("hdf5_ns", pa.int64())])
    try:
        raw = pa.Table.from_pylist(records, schema=raw_schema)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return pa.Table.from_pandas(_frame(records), schema=schema, preserve_index=False)
    cols = {name: raw.column(name) for name in raw.column_names}
    for ns, s in (("wall_ns", "wall_s"), ("hdf5_ns", "hdf5_s")):
        cols[s] = pc.divide(pc.cast(cols[ns], pa.float64()), 1e9)
    return _table(cols, raw.num_rows, schema)


def _part_tables(part: Path, torn: list, layouts: list, errors: list, schema, batch_rows: int):
    """One part file's rows as tables of about ``batch_rows`` rows, each sorted by (pid, seq)."""
    import pyarrow as pa

    from ccp.trace.streamsort import sort_rows

    handles: dict = {}
    rows: list[dict] = []
    fast: list[tuple] = []
    pid = _part_pid(part)
    made = False
    for batch in _part_batches(part, torn):
        _expand(batch, pid, handles, rows, layouts, errors, fast)
        while len(rows) + 2 * len(fast) >= batch_rows:
            take = max(1, batch_rows // 2)
            chunk, fast = fast[:take], fast[take:]
            yield sort_rows(pa.concat_tables([_records_table(rows, schema), _fast_table(chunk, pid, handles, schema)]))
            rows, made = [], True
    if rows or fast or not made:
        yield sort_rows(pa.concat_tables([_records_table(rows, schema), _fast_table(fast, pid, handles, schema)]))


def _output_schema():
    """calls.parquet's schema, with the pandas metadata readers use to get nullable ints and strings back."""
    import pyarrow as pa

    return pa.Table.from_pandas(_frame([]), schema=_arrow_schema(), preserve_index=False).schema


def _write_calls(path: Path, parts: list[Path], spill: set[str], batch_rows: int) -> dict:
    """Every part's rows into ``path`` (parquet), sorted by (pid, seq), one chunk at a time; returns the
    counts, pids, files, layouts, errors and torn parts the header needs. A part in ``spill`` is sorted
    through run files (:func:`ccp.trace.streamsort.merge_runs`)."""
    import tempfile

    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from ccp.trace.streamsort import InOrder, OutOfOrder, merge_runs, write_run

    schema = _output_schema()
    stats: dict = {"torn": [], "layouts": [], "errors": [], "pids": set(), "files": set(), "user": 0, "nested": 0,
                   "events": 0, "calls_by_pid": {}}

    def count(table) -> None:
        kind, depth = table.column("kind"), table.column("depth")
        is_call = pc.fill_null(pc.equal(kind, "call"), False)
        user = pc.and_(is_call, pc.fill_null(pc.equal(depth, 0), False))
        stats["user"] += pc.sum(user).as_py() or 0
        stats["nested"] += pc.sum(pc.and_(is_call, pc.invert(user))).as_py() or 0
        stats["events"] += pc.sum(pc.fill_null(pc.equal(kind, "event"), False)).as_py() or 0
        stats["pids"].update(int(p) for p in pc.unique(table.column("pid")).to_pylist() if p is not None)
        for entry in pc.value_counts(pc.filter(table.column("pid"), user)).to_pylist():
            if entry["values"] is not None:
                by_pid = stats["calls_by_pid"]
                by_pid[int(entry["values"])] = by_pid.get(int(entry["values"]), 0) + entry["counts"]
        stats["files"].update(f for f in pc.unique(table.column("file")).to_pylist() if f)

    written = 0
    with pq.ParquetWriter(path, schema) as writer:
        def write(table) -> None:
            nonlocal written
            writer.write_table(table, row_group_size=max(batch_rows, 1))
            written += table.num_rows

        for part in parts:      # one process at a time, in chunks: memory stays bounded by the chunk size
            tables = _part_tables(part, stats["torn"], stats["layouts"], stats["errors"], schema, batch_rows)
            if part.name not in spill:
                order = InOrder(write)
                try:
                    for table in tables:
                        count(table)
                        order.add(table)
                except OutOfOrder:
                    raise OutOfOrder(part.name) from None
                order.close()
                continue
            with tempfile.TemporaryDirectory(dir=path.parent, prefix=".merge-") as runs_dir:
                runs = []
                for i, table in enumerate(tables):
                    count(table)
                    runs.append(Path(runs_dir) / f"{i}.parquet")
                    write_run(runs[-1], table, max(1024, batch_rows // 16))
                merge_runs(runs, write, max(1024, batch_rows // 16))
        if not written:
            writer.write_table(pa.Table.from_pandas(_frame([]), schema=schema, preserve_index=False))
    return stats


def merge(trace_dir: Path, command: list[str], exit_status: int, wall_s: float, checksum: bool = True,
          run: dict | None = None, batch_rows: int = ROWS_PER_CHUNK) -> dict:
    """Write ``calls.parquet`` and ``trace.json`` from ``trace_dir/parts``; returns the header.

    ``run`` is ccp trace's view of the run (return code, status lines, Python processes seen), from which
    the header's ``completeness`` is worked out. ``batch_rows``: rows converted and sorted at once (the
    merge's memory; the trace is the same for any value).
    """
    from ccp.trace.streamsort import OutOfOrder

    trace_dir = Path(trace_dir)
    table_tmp = trace_dir / "calls.parquet.tmp"
    parts = sorted(Path(trace_dir / PARTS).glob("*.part"), key=lambda p: (_part_pid(p) or 0, p.name))
    spill: set[str] = set()
    while True:         # a part whose calls ended far out of order is merged again, sorted through run files
        try:
            stats = _write_calls(table_tmp, parts, spill, batch_rows)
            break
        except OutOfOrder as exc:
            spill.add(str(exc.args[0]))
    layouts, errors, torn, pids = stats["layouts"], stats["errors"], stats["torn"], stats["pids"]
    datasets: dict[str, dict] = {}
    for lay in layouts:
        key = f"{lay['file']}::{lay['dataset']}"
        entry = {k: v for k, v in lay.items() if k not in ("kind", "pid")}
        datasets.setdefault(key, entry)
    files = {}
    for name in sorted(stats["files"] | {d["file"] for d in datasets.values()}):
        info = {"path": name, "exists": os.path.isfile(name)}
        if info["exists"]:
            info["size"] = os.path.getsize(name)
            if checksum:
                info["sha256"] = _sha256(name)
        files[name] = info
    header = {
        "schema_version": SCHEMA_VERSION, "tool": "ccp trace", "command": list(command), "exit_status": exit_status,
        "wall_s": wall_s, "environment": environment(), "pids": sorted(pids),
        "calls": stats["user"], "nested_calls": stats["nested"],
        "events": stats["events"], "files": list(files.values()), "datasets": list(datasets.values()),
        "recorder_errors": errors,
        "completeness": completeness(run, pids, torn, errors, stats["calls_by_pid"]),
        "checksum_note": "sha256 and size taken after the program ended" if checksum else "checksums skipped (--no-checksum)",
    }
    head_tmp = trace_dir / "trace.json.tmp"
    head_tmp.write_text(json.dumps(header, indent=2, default=str))
    os.replace(table_tmp, trace_dir / "calls.parquet")
    os.replace(head_tmp, trace_dir / "trace.json")      # last: a folder with trace.json holds a whole trace
    return header


def merge_or_explain(trace_dir: Path, *args, **kwargs) -> dict:
    """:func:`merge`, with any failure (a full disk, a damaged part file) one CcpError and no half-written trace."""
    try:
        return merge(trace_dir, *args, **kwargs)
    except Exception as exc:  # the run is over: say why its trace is missing, leave no half files
        for name in ("calls.parquet.tmp", "trace.json.tmp"):
            with contextlib.suppress(OSError):
                (Path(trace_dir) / name).unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.strerror:
            detail = exc.strerror + (f" ({exc.filename})" if exc.filename else "")
        else:
            detail = f"{type(exc).__name__}: {exc}"
        raise CcpError(f"{trace_dir}: the trace could not be written: {detail}; the recorded part files are "
                       f"kept in {Path(trace_dir) / PARTS}") from None
