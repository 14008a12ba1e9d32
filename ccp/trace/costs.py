"""What one chunk load costs for another chunk shape: measured on a sample of the real data.

A trace tells what a chunk load cost the program at the file's own chunk shape; a repack cure
needs the cost at another shape (small chunks cost a fixed amount each, large ones by their
bytes and filters). This writes a sample of the dataset's real values (read-only from the user's
file) into temporary files with each chunk shape and the file's own filter pipeline, and times
whole-chunk reads with the chunk cache off. Only ratios are used: they carry over to the
program's conditions better than absolute times.
"""

from __future__ import annotations

import math
import os
import tempfile
import time

import numpy as np

SAMPLE_BYTES = 16 * 1024 * 1024


def _region(shape, shapes, itemsize) -> tuple[int, ...]:
    """A corner box holding a few chunks of every shape, at most SAMPLE_BYTES."""
    big = [max(s[d] for s in shapes) for d in range(len(shape))]
    region = [min(n, 4 * b) for n, b in zip(shape, big)]
    while math.prod(region) * itemsize > SAMPLE_BYTES:
        d = int(np.argmax([r / max(b, 1) for r, b in zip(region, big)]))
        if region[d] <= big[d]:
            d = int(np.argmax(region))
        if region[d] <= 1:
            break
        region[d] = max(1, region[d] // 2)
    return tuple(region)


def load_costs(file: str, dataset: str, shapes, min_loads: int = 24) -> dict | None:
    """{chunk shape: seconds per whole-chunk load} for each shape, or None if the file is gone."""
    import h5py
    from h5py import h5d, h5f, h5s

    from ccp.hdf5 import plists

    if not os.path.isfile(file):
        return None
    shapes = [tuple(int(x) for x in s) for s in shapes]
    with h5py.File(file, "r") as f:
        src = f[dataset]
        if src.chunks is None:
            return None
        region = _region(src.shape, shapes, src.dtype.itemsize)
        data = src[tuple(slice(0, r) for r in region)]
        tid = src.id.get_type()
        out = {}
        with tempfile.TemporaryDirectory(prefix="ccp-costs-") as tmp:
            for k, shape in enumerate(shapes):
                chunks = tuple(min(c, r) for c, r in zip(shape, region))
                path = os.path.join(tmp, f"s{k}.h5").encode()
                fid = h5f.create(path, h5f.ACC_TRUNC)
                dcpl = plists.relaid_dcpl(src.id, "chunked", chunks, None)   # its own filters and fill, new chunks
                ds = h5d.create(fid, b"d", tid, h5s.create_simple(region), dcpl=dcpl)
                ds.write(h5s.ALL, h5s.ALL, np.ascontiguousarray(data))
                ds.close()
                fid.close()
                fid = h5f.open(path, h5f.ACC_RDONLY)
                dapl = plists.no_cache_dapl()         # no cache: every read is a load
                ds = h5d.open(fid, b"d", dapl)
                grid = [range(0, r, c) for r, c in zip(region, chunks)]
                starts = list(np.ndindex(*[len(g) for g in grid]))
                fs = ds.get_space()
                n, t = 0, 0.0
                while n < min_loads:
                    for idx in starts:
                        lo = tuple(g[i] for g, i in zip(grid, idx))
                        cnt = tuple(min(c, r - a) for c, r, a in zip(chunks, region, lo))
                        buf = np.empty(cnt, data.dtype)
                        fs.select_hyperslab(lo, cnt)
                        ms = h5s.create_simple(cnt)
                        t0 = time.perf_counter()
                        ds.read(ms, fs, buf)
                        t += time.perf_counter() - t0
                        n += 1
                ds.close()
                fid.close()
                out[shape] = t / n
        return out
