"""``ccp diagnose`` of a trace folder read in row batches: a trace of 10^7 calls in bounded memory.

:func:`ccp.trace.check.load_checked` holds the whole table (about 1.3 KiB a call); here
``calls.parquet`` is read :data:`BATCH_ROWS` rows at a time, each batch checked as ``load_checked``
checks the table (the call and event counts against the header once all are read), and only what the
diagnosis uses is kept, per dataset: the light columns of its calls (times, bytes, selection kind) and
its replayed selections (:class:`ccp.workload.replay_batches.SequenceBuilder`: int64 boxes, the cache
sessions). The diagnosis is then :func:`ccp.trace.diagnose.diagnose` itself, fed these rows, so its
text and JSON are those of the whole-table path (``tests/trace/test_diagnose_batches.py``).

``--verify`` replays the read sequence the diagnosis built (:func:`ccp.trace.verify.verify_top`), so it
streams too. A file read through fsspec keeps, besides, its calls' times and its reads and GETs (the
events :mod:`ccp.trace.remote` matches to the calls by time: a few light columns, that file's rows only).
A table not in (pid, seq) order (a foreign or hand-made one: ``ccp trace`` writes it sorted) is sorted
into a temporary copy in bounded memory first (:func:`sorted_calls`).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from ccp.errors import CcpError
from ccp.trace.check import (
    SELS,
    check_columns,
    check_header,
    check_header_text,
    check_rows,
    compare_counts,
    row_counts,
)
from ccp.trace.rows import LOW_COLUMNS, USER_COLUMNS, CallSummary, DatasetRows
from ccp.workload.replay import LOW_APIS, library_cache
from ccp.workload.replay_batches import OutOfOrder, SequenceBuilder
from ccp.workload.tracefile import Trace, _arrow_lists, read_header
from ccp.workload.tracefile import check_header as check_trace_header
from ccp.workload.tracefile import check_table as check_frame

BATCH_ROWS = 200_000
REMOTE_COLUMNS = ("kind", "pid", "seq", "depth", "api", "op", "file", "dataset", "start", "count", "t0_ns", "wall_s",
                  "bytes")


def _floats(col) -> np.ndarray:
    return pd.to_numeric(col, errors="coerce").to_numpy(float, na_value=np.nan)


class _Dataset:
    """What the diagnosis keeps of one dataset while the batches go by."""

    def __init__(self, where: Path, file: str, dataset: str, layout: dict) -> None:
        self.builders = {op: SequenceBuilder(where, file, dataset, layout, op) for op in ("read", "write")}
        self.walls: list[np.ndarray] = []                           # every call of the program's own, in row order
        self.nwalls = 0                                             # their number, once summed
        self.user: dict[str, list[dict]] = {"read": [], "write": []}
        self.low: dict[str, list[dict]] = {"read": [], "write": []}
        self.read_span: dict[int, list[int]] = {}    # pid -> [first, last] read seq: writes between reads (issue 23)

    def add(self, rows: pd.DataFrame, depth: np.ndarray) -> None:
        for b in self.builders.values():
            b.add(rows)
        call = rows["kind"].eq("call").fillna(False).to_numpy(bool)
        user = call & (depth == 0)
        low = call & rows["api"].isin(list(LOW_APIS)).fillna(False).to_numpy(bool)
        self.walls.append(_floats(rows["wall_s"][user]))
        for op in ("read", "write"):
            is_op = rows["op"].eq(op).fillna(False).to_numpy(bool)
            u = rows[user & is_op]
            self.user[op].append({c: _floats(u[c]) for c in USER_COLUMNS})
            lo = rows[low & is_op]
            part = {"sel": pd.Categorical(lo["sel"].astype(object), categories=list(SELS)).codes,
                    "hdf5_s": _floats(lo["hdf5_s"])}
            if op == "read" and len(lo):
                pids, seqs = lo["pid"].to_numpy(np.int64), lo["seq"].to_numpy(np.int64)
                for pid in np.unique(pids):
                    mine = seqs[pids == pid]
                    span = self.read_span.setdefault(int(pid), [int(mine.min()), int(mine.max())])
                    span[0], span[1] = min(span[0], int(mine.min())), max(span[1], int(mine.max()))
            if op == "write":        # the writes' diagnosis sorts them (the reads' knows they are in order)
                part.update({"pid": lo["pid"].to_numpy(np.int64), "seq": lo["seq"].to_numpy(np.int64)})
            self.low[op].append(part)

    @property
    def ncalls(self) -> int:
        return self.nwalls + sum(len(w) for w in self.walls)

    def wall(self) -> float:
        """The calls' wall time summed as ``diagnose`` sums the table's (a pandas group sum, row order); the
        times are dropped after."""
        w = np.concatenate(self.walls) if self.walls else np.zeros(0)
        self.nwalls, self.walls = len(w), []
        return float(pd.Series(w).groupby(np.zeros(len(w), np.int8)).sum().iloc[0]) if len(w) else 0.0

    def rows(self, trace: Trace) -> DatasetRows:
        def frame(parts: list[dict], columns: list[str]) -> pd.DataFrame:
            if not parts:
                return pd.DataFrame({c: [] for c in columns})
            cols = {c: np.concatenate([p[c] for p in parts]) for c in columns}
            if "sel" in cols:      # kept as category codes (-1: missing), one byte a call
                cols["sel"] = pd.Categorical.from_codes(cols["sel"], categories=list(SELS))
            parts.clear()
            return pd.DataFrame(cols, copy=False)

        ncalls = self.ncalls
        reads, writes = frame(self.user["read"], USER_COLUMNS), frame(self.user["write"], USER_COLUMNS)
        lows, loww = frame(self.low["read"], ["sel", "hdf5_s"]), frame(self.low["write"], LOW_COLUMNS)
        lows.attrs["read_span"] = dict(self.read_span)     # the reads' (pid, seq) are not kept: their span is
        builders = self.builders

        def sequence(op: str):
            seq = builders[op].finish(lambda: library_cache(trace))
            _give_back_memory()           # the batches' pieces, now one array each
            return seq

        _give_back_memory()

        return DatasetRows(ncalls, reads, writes, lows, loww, sequence, in_order=True)


def read_batches(path, batch_rows: int = BATCH_ROWS, table: Path | None = None) -> tuple[Trace, CallSummary]:
    """The trace folder read and checked in batches: a Trace whose table holds only the distinct (api, file)
    pairs (what the library guesses read) and the calls summed and kept per dataset. Raises OutOfOrder when
    the rows are not in (pid, seq) order. ``table``: read these rows instead of the folder's calls.parquet
    (its copy sorted by :func:`sorted_calls`; messages still name the folder's)."""
    path = Path(path)
    _memory_settings()
    where = path / "calls.parquet"
    header = check_header_text(path)        # trace.json parsed once, then checked as read_header checks it
    header = check_trace_header(path / "trace.json", header) if header is not None and where.is_file() \
        else read_header(path)              # says what is missing
    layouts = {(d["file"], d["dataset"]): d for d in header.get("datasets", [])}
    remote_files = {d["file"] for d in layouts.values() if isinstance(d, dict) and "remote" in d}
    remote_rows: list[pd.DataFrame] = []
    datasets: dict[tuple[str, str], _Dataset] = {}
    distinct: list[pd.DataFrame] = []
    found = {"calls": 0, "nested_calls": 0, "events": 0}
    ncalls = nreads = nwrites = 0
    files: set[str] = set()
    offset = 0
    for frame in _frames(table or where, batch_rows, where):
        check_frame(where, frame)
        if offset == 0:
            check_header(header, path / "trace.json")
        check_columns(frame, where)
        for k, v in row_counts(frame).items():
            found[k] += v
        if frame.attrs["last"]:
            compare_counts(found, header, where)
        check_rows(frame, header, where, offset)
        offset += len(frame)
        distinct.append(frame[["api", "file"]].astype(object).drop_duplicates())
        if remote_files:
            remote_rows.append(_remote_rows(frame, remote_files))
        depth = _floats(frame["depth"])
        user = frame["kind"].eq("call").fillna(False).to_numpy(bool) & (depth == 0)
        ops = frame["op"][user]
        ncalls += int(user.sum())
        nreads += int((ops == "read").sum())
        nwrites += int((ops == "write").sum())
        files |= {str(x) for x in frame["file"][user].dropna().unique()}
        named = frame["file"].notna().to_numpy(bool) & frame["dataset"].notna().to_numpy(bool)
        if not named.any():
            continue
        pos_named = np.flatnonzero(named)
        for key, idx in frame[named].groupby(["file", "dataset"], observed=True, sort=False).indices.items():
            layout = layouts.get(key)
            if layout is None:
                continue
            if key not in datasets:
                datasets[key] = _Dataset(path, key[0], key[1], layout)
            pos = pos_named[idx]
            datasets[key].add(frame.iloc[pos], depth[pos])
        del frame
        _give_back_memory()
    table = (pd.concat(distinct, ignore_index=True).drop_duplicates(ignore_index=True) if distinct
             else pd.DataFrame({"api": [], "file": []}))
    if remote_rows:     # the rows remote_diagnosis matches by time, after the (api, file) pairs (no call of theirs)
        table = pd.concat([table, *remote_rows], ignore_index=True)
    trace = Trace(path, header, table)
    walls = {key: d.wall() for key, d in datasets.items() if d.ncalls}
    return trace, CallSummary(ncalls, nreads, nwrites, sorted(files), walls,
                              lambda file, dataset: datasets.pop((file, dataset)).rows(trace))


def _remote_rows(frame: pd.DataFrame, files: set[str]) -> pd.DataFrame:
    """What :func:`ccp.trace.remote.remote_diagnosis` reads of a file read through fsspec: the reads HDF5 made
    through it and fsspec's GETs (events), and the program's calls on it (their times), in file order; text as
    plain objects and selections as lists, so batches concatenate."""
    of_file = frame["file"].isin(list(files)).fillna(False).to_numpy(bool)
    kind, depth = frame["kind"], _floats(frame["depth"])
    event = kind.eq("event").fillna(False).to_numpy(bool) & frame["op"].isin(["get", "fsspec_read"]).fillna(False).to_numpy(bool)
    call = kind.eq("call").fillna(False).to_numpy(bool) & (depth == 0)
    rows = frame.loc[of_file & (event | call), list(REMOTE_COLUMNS)]
    out = {c: rows[c].astype(object) for c in ("kind", "api", "op", "file", "dataset")}
    out.update({c: [None if v is None or v is pd.NA else [int(x) for x in v] for v in rows[c].astype(object)]
                for c in ("start", "count")})
    out.update({c: rows[c].to_numpy() for c in ("pid", "seq", "depth", "t0_ns", "wall_s", "bytes")})
    return pd.DataFrame(out, index=rows.index)


def _libc():
    import ctypes

    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:                 # not glibc: its heap is left as it is
        return None


def _memory_settings() -> None:
    """Memory a batch freed goes back to the system, so the process holds what it keeps, not every batch it read:
    Arrow allocates with malloc (its default pool, mimalloc, kept about half as much again as the kept arrays,
    growing with the trace: 541 -> 338 MiB after reading 3*10^6 calls), and arrays of 128 KiB or more come
    straight from mmap (glibc otherwise raises that threshold to 32 MiB after the first big free, and the
    batches' arrays then come from its heap, whose freed holes stay in the process)."""
    import pyarrow as pa

    pa.set_memory_pool(pa.system_memory_pool())
    libc = _libc()
    if libc is not None and hasattr(libc, "mallopt"):
        libc.mallopt(-3, 128 * 1024)            # M_MMAP_THRESHOLD (fixed: no dynamic raise)


def _give_back_memory() -> None:
    """Return the freed memory of a batch to the system: Arrow's pool keeps a row group's decoded buffers, and
    glibc's heap the batch's small objects."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    libc = _libc()
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)


def _frames(source: Path, batch_rows: int, where: Path):
    """``source`` (calls.parquet, named ``where`` in messages) as pandas frames of ``batch_rows`` rows (text
    columns as categoricals, list columns as Arrow lists, as load_trace reads them), indexed by row number;
    ``attrs["last"]`` on the last. An empty table gives one empty frame (its columns are still checked).
    Damage is one line, as load_checked says it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(source)
        text = [f.name for f in pf.schema_arrow if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
        pf = pq.ParquetFile(source, read_dictionary=text)
        total = pf.metadata.num_rows
        batches = pf.iter_batches(batch_size=batch_rows)
        offset = 0
        while True:
            batch = next(batches, None)
            if batch is None and offset:
                return
            frame = (batch if batch is not None else pf.schema_arrow.empty_table()).to_pandas(
                types_mapper=_arrow_lists, split_blocks=True, self_destruct=True)
            frame.index = pd.RangeIndex(offset, offset + len(frame))
            offset += len(frame)
            frame.attrs["last"] = offset >= total
            yield frame
            if batch is None:
                return
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise CcpError(f"{where}: not a readable parquet table ({' '.join(str(exc).split())[:200]})") from None
    except CcpError:
        raise
    except Exception as exc:  # pyarrow's errors for a damaged file are many; each is "unreadable"
        said = " ".join(str(exc).split())[:160]
        raise CcpError(f"{where}: unreadable ({type(exc).__name__}: {said}); the trace is damaged") from None


def diagnose_folder(path, memory: int = 1 << 30, verify: bool = False, patterns=(), tune_dir=None,
                    batch_rows: int = BATCH_ROWS) -> dict:
    """``ccp diagnose PATH``: the trace read in batches where the diagnosis allows, else loaded whole."""
    from ccp.trace.diagnose import diagnose

    try:
        trace, summary = read_batches(path, batch_rows)
    except OutOfOrder:      # sorted into a temporary copy first, in bounded memory, then read as a sorted one
        with tempfile.TemporaryDirectory(prefix="ccp-diagnose-") as tmp:
            rows = sorted_calls(Path(path) / "calls.parquet", Path(tmp), batch_rows)
            trace, summary = read_batches(path, batch_rows, table=rows)
    return diagnose(trace, memory=memory, verify=verify, patterns=patterns, tune_dir=tune_dir, summary=summary)


def sorted_calls(where: Path, tmp: Path, batch_rows: int = BATCH_ROWS) -> Path:
    """``where`` (a calls.parquet not in (pid, seq) order) sorted into ``tmp``/calls.parquet in bounded memory: each
    batch sorted into a run file, the runs merged holding about ``batch_rows`` rows in all
    (:mod:`ccp.trace.streamsort`, the merge's own sort). Damage is one line naming ``where``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ccp.trace.streamsort import merge_runs, write_run

    out = tmp / "calls.parquet"
    try:
        pf = pq.ParquetFile(where)
        runs = []
        for i, batch in enumerate(pf.iter_batches(batch_size=batch_rows)):
            runs.append(tmp / f"run-{i}.parquet")
            write_run(runs[-1], pa.Table.from_batches([batch]), max(1, batch_rows // 8))
        writer = pq.ParquetWriter(out, pf.schema_arrow)
        try:
            merge_runs(runs, writer.write_table, max(1, batch_rows // max(len(runs), 1)))
        finally:
            writer.close()
        for run in runs:
            run.unlink()
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise CcpError(f"{where}: not a readable parquet table ({' '.join(str(exc).split())[:200]})") from None
    return out
