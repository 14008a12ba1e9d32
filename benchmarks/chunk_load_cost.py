"""HDF5's cost per chunk load on this machine, by chunk size, unfiltered and gzip: the figures behind
ccp.trace.chunk_price (a chunk load's fixed part, its cost per byte).

    .venv/bin/python benchmarks/chunk_load_cost.py [--smooth]

Each dataset (1-D f4, chunks of 1 to 65536 elements) is read whole with the chunk cache off (rdcc_nbytes=0), so
each chunk is one load; the time over the chunks, median of 5 fresh opens. --smooth: a sine series (compresses
well) instead of random numbers.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np

SIZES = (1, 16, 256, 4096, 65536)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smooth", action="store_true")
    args = ap.parse_args()
    n = 1 << 18
    x = (np.sin(np.arange(n) / 50.0) if args.smooth else np.random.default_rng(0).random(n)).astype("f4")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "chunks.h5"
        with h5py.File(path, "w") as f:
            for c in SIZES:
                data = x[:20000] if c == 1 else x      # 20,000 one-element chunks are enough
                f.create_dataset(f"none{c}", data=data, chunks=(c,))
                f.create_dataset(f"gzip{c}", data=data, chunks=(c,), compression="gzip")
        for c in SIZES:
            for kind in ("none", "gzip"):
                times = []
                for _ in range(5):
                    with h5py.File(path, "r", rdcc_nbytes=0) as f:
                        d = f[f"{kind}{c}"]
                        nchunks = d.id.get_num_chunks()
                        t = time.perf_counter()
                        d[...]
                        times.append(time.perf_counter() - t)
                print(f"{kind} chunk {4 * c:7d} B  {nchunks:6d} chunks  per chunk "
                      f"{1e6 * statistics.median(times) / nchunks:8.2f} us")


if __name__ == "__main__":
    main()
