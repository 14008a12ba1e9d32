"""``ccp from-darshan``: a Darshan log's H5D records -> a sweep replaying their access patterns.

Darshan's HDF5 module keeps, per dataset and rank, the four most common hyperslab accesses
(``H5D_ACCESSn_LENGTH_D1..D5`` and ``_STRIDE_``, right-aligned: the last used slot is the
fastest-varying dimension) with their counts, the dataspace (``H5D_DATASPACE_NDIMS``,
``_NPOINTS``), the element size and the chunk shape (``H5D_CHUNK_SIZE_D*``, zero when
contiguous). It does not keep the dataspace's dimensions or the order of requests, so the sweep
tiles the dataset with each common access shape (strides that skip data are named in a comment);
the dataset's shape comes from the user's file, read-only.

Everything that cannot become a sweep gets one line: a log without H5D records, scalar datasets,
datasets whose access counters are all zero; a damaged or truncated log (darshan_log.py reads it in
a child process and checks it) is one line too, never a sweep with wrong counts.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections import Counter
from pathlib import Path

from ccp.errors import CcpError
from ccp.outfile import output_target, umask_mode
from ccp.trace.darshan_log import H5DRecord, read_log

DIMS = 5                         # Darshan keeps the access shape of the last five dimensions (H5D_MAX_NDIMS)
ACCESS_SLOTS = 4                 # and the four most common accesses (H5D_ACCESS1..4)


def _damaged(log: Path, name: str, what: str) -> CcpError:
    return CcpError(f"{log}: damaged Darshan log: the H5D record of {name} {what}")


def _record_accesses(log: Path, rec: H5DRecord, name: str, ndims: int) -> Counter:
    """The record's common accesses {(lengths, strides): count}, cross-checked against its own counters.

    Darshan fills the slots right-aligned with count x block per dimension and keeps each access's
    size in bytes (``H5D_ACCESSn_ACCESS``, the selection's points times the file type's size): for
    a regular hyperslab the product of the lengths times the element size must equal it, and the
    counted accesses cannot outnumber the reads and writes. A log that breaks one of these is
    damaged, not a sweep. Lengths of 0 (a whole-dataset selection, a point or irregular one) or -1
    (Darshan built against HDF5 < 1.10) describe no block: such accesses are not tiled.
    (The dataspace's point count is the one at open: an extended dataset's accesses may pass it.)
    """
    c = rec.counters
    itemsize = c["H5D_DATATYPE_SIZE"]
    ops = c["H5D_READS"] + c["H5D_WRITES"]
    for key in ("H5D_READS", "H5D_WRITES", "H5D_DATASPACE_NPOINTS", "H5D_DATATYPE_SIZE"):
        if c[key] < 0:
            raise _damaged(log, name, f"has {key} = {c[key]}")
    accesses: Counter = Counter()
    counted = 0
    for n in range(1, ACCESS_SLOTS + 1):
        count = c[f"H5D_ACCESS{n}_COUNT"]
        if count < 0:
            raise _damaged(log, name, f"has H5D_ACCESS{n}_COUNT = {count}")
        if count == 0:
            continue
        counted += count
        lengths = tuple(c[f"H5D_ACCESS{n}_LENGTH_D{k}"] for k in range(DIMS - ndims + 1, DIMS + 1))
        strides = tuple(c[f"H5D_ACCESS{n}_STRIDE_D{k}"] for k in range(DIMS - ndims + 1, DIMS + 1))
        if any(v <= 0 for v in lengths):
            continue
        if math.prod(lengths) * itemsize != c[f"H5D_ACCESS{n}_ACCESS"]:
            raise _damaged(log, name, f"has access {n} of {list(lengths)} x {itemsize} bytes but "
                                      f"H5D_ACCESS{n}_ACCESS = {c[f'H5D_ACCESS{n}_ACCESS']}")
        accesses[(lengths, strides)] += count
    if counted > ops:
        raise _damaged(log, name, f"counts {counted} common accesses but only {ops} reads and writes")
    return accesses


def h5d_patterns(log: Path) -> tuple[list[dict], list[str]]:
    """(datasets with their common accesses, lines about what was skipped or is worth knowing)."""
    contents = read_log(log)
    if not contents.h5d:
        raise CcpError(f"{log}: no H5D records (Darshan's HDF5 module was not enabled, or the job used no HDF5 datasets)")
    grouped: dict[int, dict] = {}
    skipped = []
    if contents.partial:
        skipped.append("note: Darshan marked this log partial (it ran out of room for records): "
                       "some datasets or ranks may be missing")
    for module in contents.damaged:
        skipped.append(f"note: the log's {module} region is damaged (fails its checksum); "
                       "the H5D records and names are intact and used")
    for rec in contents.h5d:
        name = contents.names.get(rec.rec_id)
        if name is None:
            raise CcpError(f"{log}: damaged Darshan log: H5D record id {rec.rec_id} has no name record")
        ndims = rec.counters["H5D_DATASPACE_NDIMS"]
        if ndims < 0:
            raise _damaged(log, name, f"has {ndims} dimensions")
        if ndims == 0:
            skipped.append(f"{name}: scalar dataset (no dimensions): nothing to tile, skipped")
            continue
        if ndims > DIMS:
            skipped.append(f"{name}: {ndims} dimensions; Darshan keeps at most {DIMS}, skipped")
            continue
        chunks = tuple(rec.counters[f"H5D_CHUNK_SIZE_D{k}"] for k in range(DIMS - ndims + 1, DIMS + 1))
        if any(v < 0 for v in chunks):
            raise _damaged(log, name, f"has chunk shape {list(chunks)}")
        d = grouped.setdefault(rec.rec_id, {"name": name, "ndims": ndims,
                                            "npoints": rec.counters["H5D_DATASPACE_NPOINTS"],
                                            "itemsize": rec.counters["H5D_DATATYPE_SIZE"], "accesses": Counter(),
                                            "reads": 0, "writes": 0, "ranks": 0, "chunks": chunks})
        if (ndims, d["npoints"], d["itemsize"]) != (d["ndims"], rec.counters["H5D_DATASPACE_NPOINTS"],
                                                    rec.counters["H5D_DATATYPE_SIZE"]):
            skipped.append(f"note: {name}: ranks saw different dataspaces or element sizes; the first is described")
        d["ranks"] += 1
        d["reads"] += rec.counters["H5D_READS"]
        d["writes"] += rec.counters["H5D_WRITES"]
        d["accesses"] += _record_accesses(log, rec, name, ndims)
    out = []
    for d in grouped.values():
        if not d["accesses"]:
            skipped.append(f"{d['name']}: all access counters are zero ({d['reads']} reads, {d['writes']} writes "
                           "recorded without a hyperslab shape), skipped")
            continue
        out.append(d)
    return out, skipped


def _split_name(name: str) -> tuple[str, str]:
    """Darshan names a dataset ``/path/file.h5:/group/dataset`` (the first ``:/``: a dataset's name may hold ``:``)."""
    at = name.find(":/")
    if at <= 0:
        return name, ""
    return name[:at], name[at + 1:]


def _pick(log: Path, datasets: list[dict], wanted: str | None) -> dict:
    """The dataset to sweep: the one named (full Darshan name or its path in the file), else the busiest."""
    if wanted is None:
        return max(datasets, key=lambda x: sum(x["accesses"].values()))
    hits = [d for d in datasets if wanted in (d["name"], _split_name(d["name"])[1])]
    if len(hits) != 1:
        names = ", ".join(d["name"] for d in datasets)
        how = "is not among" if not hits else "names more than one of"
        raise CcpError(f"--dataset: {wanted!r} {how} the datasets of {log} that can become a sweep: {names}")
    return hits[0]


def _sweep_name(log: Path) -> str:
    stem = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "._-") else "-" for ch in log.stem[:40])
    return f"darshan-{stem.strip('.') or 'log'}"


def _check_out(out: Path, force: bool, protect: tuple[Path, ...] = ()) -> Path:
    """The file the sweep is renamed onto (a symbolic link's target), or a one-line refusal."""
    for p in protect:
        if out.exists() and p.exists() and out.samefile(p):
            raise CcpError(f"-o: {out} is the input {p}: refusing to write over it")
    if out.is_dir():
        raise CcpError(f"-o: {out} is a folder; give a file name for the sweep")
    target, why = output_target(out)
    if why is not None:
        raise CcpError(f"-o: {why}")
    if os.path.lexists(out) and not force:
        raise CcpError(f"-o: {out} exists; refusing to overwrite it (use --force to replace it)")
    if not target.parent.is_dir():
        raise CcpError(f"-o: folder {target.parent} does not exist")
    return target


def _check_data_file(file: str, dset: str, d: dict, where: str) -> tuple[tuple[int, ...], tuple]:
    """The sweep's file must hold the logged dataset at the logged size, or ``ccp check`` would refuse the sweep;
    returns its (shape, maxshape)."""
    from ccp.hdf5.dataset import open_readonly

    if Path(file).is_dir():
        raise CcpError(f"{where}: {file} is a folder; give the HDF5 file the job used")
    hint = "give the file the job used with --file" if where != "--file" else "not the file the job used"
    with open_readonly(Path(file), where) as f:
        obj = f.get(dset)
        shape = getattr(obj, "shape", None)
        if shape is None:
            raise CcpError(f"{where}: {file} has no dataset {dset} (the log's {d['name']}); {hint}")
        points = math.prod(shape)
        if d["npoints"] and (len(shape) != d["ndims"] or points != d["npoints"]):
            raise CcpError(f"{where}: {file}:{dset} is {'x'.join(map(str, shape)) or 'scalar'} ({points} elements), "
                           f"the log's has {d['npoints']} elements in {d['ndims']} dims; {hint}")
        return tuple(shape), tuple(obj.maxshape or shape)


def _check_fits(blocks: list, chunks, shape: tuple[int, ...], maxshape: tuple, where: str) -> None:
    """Each logged access block, and the logged chunk shape, within the file's dataset (``ccp check`` refuses a sweep
    whose block exceeds a dimension, or whose chunk exceeds a fixed one)."""
    text = "x".join(map(str, shape))
    for block in blocks:
        if len(block) == len(shape) and any(b > n for b, n in zip(block, shape)):
            raise CcpError(f"{where}: the log's access {'x'.join(map(str, block))} exceeds the dataset's shape {text} "
                           "in the file: not the file the job used, or a damaged log")
    if chunks is not None and len(chunks) == len(shape) and any(
            m is not None and c > m for c, m in zip(chunks, maxshape)):
        raise CcpError(f"{where}: the log's chunk shape {'x'.join(map(str, chunks))} exceeds the dataset's fixed "
                       f"shape {text} in the file: not the file the job used, or a damaged log")


def _comment(text: str) -> str:
    """``text`` safe in a YAML comment line: control characters (a newline would end the comment) escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def write_new(out: Path, text: str, force: bool, protect: tuple[Path, ...] = ()) -> None:
    """Write ``out`` whole or not at all; an existing file only with ``force``, never one of ``protect``.

    The text goes to a temporary file beside ``out`` first, then is linked in (which fails if
    ``out`` appeared meanwhile) or, with ``force``, renamed over it: an interrupted write or a full
    disk leaves no half-written sweep and no temporary file.
    """
    target = _check_out(out, force, protect)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name[:40]}.", suffix=".tmp")
    try:
        os.fchmod(fd, umask_mode())      # as open() would make it: a sweep is shared, not private
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if force:
            os.replace(tmp, target)
        else:
            try:
                os.link(tmp, target)
            except FileExistsError:
                raise CcpError(f"-o: {out} exists; refusing to overwrite it (use --force to replace it)") from None
    except OSError as exc:
        raise CcpError(f"-o: cannot write {out}: {exc.strerror or exc}") from None
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def darshan_to_sweep(log, out, h5file: str | None = None, *, dataset: str | None = None,
                     force: bool = False) -> list[str]:
    """Write the sweep; returns the lines to print (what was written, what was skipped)."""
    import yaml

    log, out = Path(log), Path(out)
    if not str(out).strip() or "\0" in str(out):
        raise CcpError(f"-o: expected a file name, got {str(out)!r}")
    if h5file is not None and (not h5file.strip() or "\0" in h5file):
        raise CcpError(f"--file: expected an HDF5 file name, got {h5file!r}")
    _check_out(out, force, (log,))        # before the parse, and again as it is written
    datasets, skipped = h5d_patterns(log)
    if not datasets:
        raise CcpError(f"{log}: no H5D record can become a sweep ({'; '.join(skipped) or 'no usable records'})")
    d = _pick(log, datasets, dataset)
    file, dset = _split_name(d["name"])
    if not dset:
        raise CcpError(f"{log}: the H5D record {d['name']!r} does not name a dataset as FILE:/PATH")
    if not all(c.isprintable() for c in dset):
        raise CcpError(f"{_comment(str(log))}: the H5D record's dataset {_comment(dset)} holds a control character "
                       "(a newline, a tab): ccp check refuses such a path; rename the dataset, or sweep another "
                       "with --dataset")
    file = h5file or file
    fits = _check_data_file(file, dset, d, "--file" if h5file else f"{log}") if Path(file).exists() else None
    op = "write" if d["reads"] == 0 and d["writes"] > 0 else "read"
    access, notes = [], []
    if d["reads"] and d["writes"]:
        notes.append(f"# Darshan counts common accesses of reads and writes together ({d['reads']} reads, "
                     f"{d['writes']} writes): the sweep replays them as reads")
    for (lengths, strides), count in d["accesses"].most_common(ACCESS_SLOTS):
        access.append({"op": op, "block": list(lengths)})
        gaps = any(s > n for s, n in zip(strides, lengths))
        maybe = not gaps and any(1 < s < n for s, n in zip(strides, lengths))
        notes.append(f"# access {list(lengths)} x {count} in the log (strides {list(strides)})"
                     + ("; strides skip data, the sweep tiles it" if gaps else "")
                     + ("; strides may skip data (Darshan keeps count x block, not the block), the sweep tiles it"
                        if maybe else ""))
    chunked = all(d["chunks"])
    chunks = [list(d["chunks"])] if chunked else ["contiguous"]
    if fits is not None:
        _check_fits([a["block"] for a in access], list(d["chunks"]) if chunked else None, *fits,
                    "--file" if h5file else f"{log}")
    # a contiguous dataset has no chunk cache: three cache cells would be three runs of one configuration
    caches = ["1MiB", "8MiB", "64MiB"] if chunked else ["8MiB"]
    if not chunked:
        notes.append("# the dataset is contiguous: no chunk cache to vary")
    sweep = {"name": _sweep_name(log), "dataset": {"file": file, "path": dset},
             "matrix": {"chunks": chunks, "cache": caches, "access": access}, "repeats": 3}
    head = [f"# from `ccp from-darshan {_comment(str(log))}`: dataset {_comment(d['name'])} ({d['ranks']} rank record(s), {d['reads']} reads,",
            f"# {d['writes']} writes; {d['ndims']} dims, {d['npoints']} points, {d['itemsize']}-byte elements).",
            *notes]
    write_new(out, "\n".join(head) + "\n" + yaml.safe_dump(sweep, sort_keys=False), force, protect=(log,))
    lines = [f"{out}: sweep for {d['name']} with {len(access)} access pattern(s)"]
    if not Path(file).exists():
        lines.append(f"note: {file} does not exist here; give the file the job used with --file")
    others = [x["name"] for x in datasets if x is not d]
    if others:
        lines.append(f"other datasets in the log (sweep one with --dataset PATH): {', '.join(others)}")
    return lines + skipped
