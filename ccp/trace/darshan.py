"""``ccp from-darshan``: a Darshan log's H5D records -> a sweep replaying their access patterns.

Darshan's HDF5 module keeps, per dataset and rank, the four most common hyperslab accesses
(``H5D_ACCESSn_LENGTH_D1..D5`` and ``_STRIDE_``, right-aligned: the last used slot is the
fastest-varying dimension) with their counts, the dataspace (``H5D_DATASPACE_NDIMS``,
``_NPOINTS``), the element size and the chunk shape (``H5D_CHUNK_SIZE_D*``, zero when
contiguous). It does not keep the dataspace's dimensions or the order of requests, so the sweep
tiles the dataset with each common access shape (strides that skip data are named in a comment);
the dataset's shape comes from the user's file, read-only.

Everything that cannot become a sweep gets one line: a log without H5D records, scalar datasets,
datasets whose access counters are all zero.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections import Counter
from pathlib import Path

from ccp.errors import CcpError

DIMS = 5


@contextlib.contextmanager
def _quiet_stderr():
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def _read_log(log: Path):
    try:
        import darshan
    except ImportError:
        raise CcpError("from-darshan needs pydarshan: pip install darshan") from None
    if not log.is_file():
        raise CcpError(f"{log}: no such file")
    error = None
    with _quiet_stderr():       # libdarshan-util prints its own "Error:" lines on a bad log, some at clean-up
        try:
            report = darshan.DarshanReport(str(log), read_all=True)
        except Exception as exc:  # noqa: BLE001 -- pydarshan raises many kinds on a bad log; say it in one line
            error = f"{log}: not a Darshan log pydarshan can read ({type(exc).__name__}: {exc})"
        import gc

        gc.collect()            # the half-open report's destructor prints too: let it print here
    if error:
        raise CcpError(error)
    return report


def h5d_patterns(log: Path) -> tuple[list[dict], list[str]]:
    """(datasets with their common accesses, lines about what was skipped)."""
    report = _read_log(log)
    if "H5D" not in report.records or not len(report.records["H5D"]):
        raise CcpError(f"{log}: no H5D records (Darshan's HDF5 module was not enabled, or the job used no HDF5 datasets)")
    counters = report.records["H5D"].to_df()["counters"]
    names = report.name_records
    grouped: dict[int, dict] = {}
    skipped = []
    for _, row in counters.iterrows():
        rec_id = int(row["id"])
        name = names.get(rec_id, str(rec_id))
        ndims = int(row["H5D_DATASPACE_NDIMS"])
        if ndims <= 0:
            skipped.append(f"{name}: scalar dataset (no dimensions): nothing to tile, skipped")
            continue
        if ndims > DIMS:
            skipped.append(f"{name}: {ndims} dimensions; Darshan keeps at most {DIMS}, skipped")
            continue
        d = grouped.setdefault(rec_id, {"name": name, "ndims": ndims, "npoints": int(row["H5D_DATASPACE_NPOINTS"]),
                                         "itemsize": int(row["H5D_DATATYPE_SIZE"]), "accesses": Counter(),
                                         "reads": 0, "writes": 0, "ranks": 0,
                                         "chunks": tuple(int(row[f"H5D_CHUNK_SIZE_D{k}"]) for k in range(DIMS - ndims + 1, DIMS + 1))})
        d["ranks"] += 1
        d["reads"] += int(row["H5D_READS"])
        d["writes"] += int(row["H5D_WRITES"])
        for n in range(1, 5):
            count = int(row[f"H5D_ACCESS{n}_COUNT"])
            if count <= 0:
                continue
            lengths = tuple(int(row[f"H5D_ACCESS{n}_LENGTH_D{k}"]) for k in range(DIMS - ndims + 1, DIMS + 1))
            strides = tuple(int(row[f"H5D_ACCESS{n}_STRIDE_D{k}"]) for k in range(DIMS - ndims + 1, DIMS + 1))
            if any(v <= 0 for v in lengths):
                continue
            d["accesses"][(lengths, strides)] += count
    out = []
    for d in grouped.values():
        if not d["accesses"]:
            skipped.append(f"{d['name']}: all access counters are zero ({d['reads']} reads, {d['writes']} writes "
                           "recorded without a hyperslab shape), skipped")
            continue
        out.append(d)
    return out, skipped


def _split_name(name: str) -> tuple[str, str]:
    """Darshan names a dataset ``/path/file.h5:/group/dataset``."""
    file, sep, dset = name.rpartition(":")
    if not sep or not dset.startswith("/"):
        return name, ""
    return file, dset


def darshan_to_sweep(log, out, h5file: str | None = None) -> list[str]:
    """Write the sweep; returns the lines to print (what was written, what was skipped)."""
    import yaml

    log, out = Path(log), Path(out)
    datasets, skipped = h5d_patterns(log)
    if not datasets:
        raise CcpError(f"{log}: no H5D record can become a sweep:\n" + "\n".join(skipped) if skipped else
                       f"{log}: no usable H5D records")
    d = max(datasets, key=lambda x: sum(x["accesses"].values()))
    file, dset = _split_name(d["name"])
    file = h5file or file
    access, notes = [], []
    for (lengths, strides), count in d["accesses"].most_common(4):
        access.append({"op": "read", "block": list(lengths)})
        gaps = [s for s, n in zip(strides, lengths) if s and s != n]
        notes.append(f"# access {list(lengths)} x {count} in the log (strides {list(strides)})"
                     + ("; strides skip data, the sweep tiles it" if gaps else ""))
    chunks = [list(d["chunks"])] if all(d["chunks"]) else ["contiguous"]
    sweep = {"name": f"darshan-{log.stem[:40]}", "dataset": {"file": file, "path": dset or "/"},
             "matrix": {"chunks": chunks, "cache": ["1MiB", "8MiB", "64MiB"], "access": access}, "repeats": 3}
    head = [f"# from `ccp from-darshan {log}`: dataset {d['name']} ({d['ranks']} rank record(s), {d['reads']} reads,",
            f"# {d['writes']} writes; {d['ndims']} dims, {d['npoints']} points, {d['itemsize']}-byte elements).",
            *notes]
    out.write_text("\n".join(head) + "\n" + yaml.safe_dump(sweep, sort_keys=False))
    lines = [f"{out}: sweep for {d['name']} with {len(access)} access pattern(s)"]
    others = [x["name"] for x in datasets if x is not d]
    if others:
        lines.append(f"other datasets in the log (run again with their file to sweep them): {', '.join(others)}")
    return lines + skipped
