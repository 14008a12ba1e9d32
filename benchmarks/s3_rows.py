"""A CrIS-like granule read by rows and by chunks, locally and through a loopback S3 server.

    PYTHONPATH=. .venv/bin/python benchmarks/s3_rows.py [--scans 60] [--repeats 3] \
        [--latency 0ms --latency 20ms --latency 80ms] [--cache-type none --cache-type readahead] [--block-size 4MiB]

The file: 60 x 30 x 9 x 717 >f4 (``--scans`` sets the first dimension), chunks 4 x 30 x 9 x 717, gzip 4;
a copy with paged file-space aggregation (4 MiB pages, ``ccp.remote.layout.cloud_optimized_copy``), read
with and without a 16 MiB page buffer. Patterns: ``rows`` (one scan per request, HDF5's default 8 MiB
chunk cache, so each chunk is read once), ``rows-nocache`` (the same with ``rdcc_nbytes=0``: each row
reads its whole chunk again), ``chunks`` (one chunk per request). Remote cells go through moto's S3
server on 127.0.0.1 (``ccp.remote.server``) and s3fs; latency is **emulated** per GET on the client.

Columns: GETs at open (file + dataset + chunk index), GETs and bytes of the requests (measured and
predicted by ``ccp.remote.predict``), bytes HDF5 used, median seconds of ``--repeats`` runs of the
requests (open excluded) and the part of it spent waiting for GETs. Local cells drop the file from the
page cache first (posix_fadvise DONTNEED). Results also go to results/s3_rows/<time>.csv.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np

from ccp.chunkcache import ChunkCache
from ccp.measurement.pagecache import drop_file
from ccp.remote.cell import read_cell
from ccp.remote.layout import FileSpace, cloud_optimized_copy, page_buffer_kwargs
from ccp.remote.network import EmulatedNetwork, parse_latency
from ccp.remote.predict import dataset_layout, predict_gets, trace_open
from ccp.remote.s3 import Credentials, FsspecOptions, S3Settings, S3Store
from ccp.remote.server import S3Server
from ccp.units import format_bytes, parse_size

CHUNK_CACHE = {"rdcc_nbytes": 8 * 2**20, "rdcc_nslots": 8191, "rdcc_w0": 0.75}   # HDF5 2.0's default, stated
NO_CACHE = {"rdcc_nbytes": 0, "rdcc_nslots": 8191, "rdcc_w0": 0.75}


def make_granule(path: Path, scans: int) -> None:
    rng = np.random.default_rng(15)
    shape = (scans, 30, 9, 717)
    # radiance-like: a smooth spectrum per field of view plus noise, so gzip gains a little
    spectrum = 50 + 30 * np.sin(np.linspace(0, 12, 717, dtype=np.float32))
    data = (spectrum + rng.normal(0, 0.5, shape).astype(np.float32)).astype(">f4")
    with h5py.File(path, "w") as f:
        f.create_dataset("/All_Data/CrIS-SDR_All/ES_RealLW", data=data, chunks=(4, 30, 9, 717),
                         compression="gzip", compression_opts=4)


def patterns(scans: int):
    rows = [((i, 0, 0, 0), (1, 30, 9, 717)) for i in range(scans)]
    chunks = [((i, 0, 0, 0), (min(4, scans - i), 30, 9, 717)) for i in range(0, scans, 4)]
    return {"rows": (rows, CHUNK_CACHE), "rows-nocache": (rows, NO_CACHE), "chunks": (chunks, CHUNK_CACHE)}


DSET = "/All_Data/CrIS-SDR_All/ES_RealLW"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scans", type=int, default=60)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--latency", action="append", default=None)
    ap.add_argument("--cache-type", action="append", default=None)
    ap.add_argument("--block-size", default="4MiB")
    ap.add_argument("--out", default="results/s3_rows")
    args = ap.parse_args()
    latencies = [parse_latency(v) for v in (args.latency or ["0ms", "20ms", "80ms"])]
    cache_types = args.cache_type or ["none", "readahead"]
    block = parse_size(args.block_size)
    rows_out = []
    with tempfile.TemporaryDirectory(prefix="ccp-s3-rows-") as tmp:
        plain = Path(tmp) / "granule.h5"
        make_granule(plain, args.scans)
        paged = Path(tmp) / "granule-paged.h5"
        cloud_optimized_copy(plain, paged, FileSpace(page_size=4 * 2**20))
        files = {"plain": (plain, 0), "paged": (paged, 0), "paged+pb16MiB": (paged, 16 * 2**20)}
        print(f"file {format_bytes(plain.stat().st_size)}, paged copy {format_bytes(paged.stat().st_size)}")
        for layout_name, (path, pb) in files.items():
            for pat, (reqs, cache) in patterns(args.scans).items():
                kw = dict(cache, **page_buffer_kwargs(pb, 4 * 2**20 if pb else None))
                times = []
                for _ in range(args.repeats):
                    drop_file(path)
                    c = read_cell(lambda p=path, k=kw: h5py.File(p, "r", **k), DSET, reqs)
                    times.append(c.seconds)
                rows_out.append(dict(storage="local", latency="-", layout=layout_name, fsspec="-", pattern=pat,
                                     open_gets="", http_gets="", predicted_http_gets="", http_bytes="",
                                     predicted_http_bytes="", bytes_used="", seconds=statistics.median(times),
                                     spread=max(times) - min(times), wait_s=""))
        with S3Server() as ep:
            store = S3Store(S3Settings(ep.url, "ccp-bench"), Credentials(ep.access_key, ep.secret_key, ep.region))
            store.create_bucket()
            keys = {name: store.upload(p, name).key for name, (p, _) in files.items()}
            for layout_name, (path, pb) in files.items():
                with h5py.File(path, "r") as f:
                    lay = dataset_layout(f, DSET)
                for pat, (reqs, cache) in patterns(args.scans).items():
                    kw = dict(cache, **page_buffer_kwargs(pb, lay.page_size if pb else None))
                    opened = trace_open(path, DSET, **kw)
                    for ct in cache_types:
                        pred = predict_gets(lay, reqs, ChunkCache(kw["rdcc_nbytes"], kw["rdcc_nslots"],
                                                                   kw["rdcc_w0"]), ct, block, opened, pb)
                        for lat in latencies:
                            net = EmulatedNetwork(lat, None)
                            runs = []
                            for _ in range(args.repeats):
                                remote = store.open(keys[layout_name], FsspecOptions(ct, block), net)
                                try:
                                    runs.append(read_cell(lambda r=remote, k=kw: r.h5file(**k), DSET, reqs,
                                                          net.label, remote.log, remote.fileobj))
                                finally:
                                    remote.close()
                            c = runs[0]
                            assert all(r.http_gets == c.http_gets for r in runs), "GET counts differ between runs"
                            times = [r.seconds for r in runs]
                            rows_out.append(dict(
                                storage="s3", latency=f"{lat * 1e3:g}ms (emulated)", layout=layout_name,
                                fsspec=FsspecOptions(ct, block).label, pattern=pat, open_gets=c.open.gets,
                                http_gets=c.http_gets, predicted_http_gets=pred.http_gets, http_bytes=c.http_bytes,
                                predicted_http_bytes=pred.http_bytes, bytes_used=c.bytes_used,
                                seconds=statistics.median(times), spread=max(times) - min(times),
                                wait_s=statistics.median(r.wait_s for r in runs)))
                            print(_line(rows_out[-1]), flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    dest = out / f"{time.strftime('%Y%m%dT%H%M%S')}.csv"
    with open(dest, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows_out[0]))
        w.writeheader()
        w.writerows(rows_out)
    print()
    print(_table(rows_out))
    print(f"\n{dest}")


def _fmt(r, k):
    v = r[k]
    if v == "" or v is None:
        return "-"
    if k in ("http_bytes", "predicted_http_bytes", "bytes_used"):
        return format_bytes(v)
    if k in ("seconds", "spread", "wait_s"):
        return f"{v:.3f}"
    return str(v)


COLS = ["storage", "latency", "layout", "fsspec", "pattern", "open_gets", "http_gets", "predicted_http_gets",
        "http_bytes", "predicted_http_bytes", "bytes_used", "seconds", "spread", "wait_s"]


def _line(r):
    return " | ".join(_fmt(r, k) for k in COLS)


def _table(rows):
    head = "| " + " | ".join(COLS) + " |\n|" + "---|" * len(COLS)
    return head + "\n" + "\n".join("| " + _line(r) + " |" for r in rows)


if __name__ == "__main__":
    main()
