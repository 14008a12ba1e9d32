"""An h5py reader of a file object from fsspec, as a program reading from S3 or HTTP opens it.

The filesystem here serves a local file through fsspec's own buffered file class (``AbstractBufferedFile``,
the one s3fs and http use): every byte range fsspec's cache fetches is one ``_fetch_range``, that is one
GET, delayed by ``--latency`` seconds (emulated; 20 ms by default, an S3 GET's order). The program reads
rows of a 2-D dataset with fsspec's default cache (readahead) and a small block size. Makes its own file.

    python examples/fsspec_reader.py [--file data.h5] [--cache-type readahead] [--block-size 65536]
    ccp trace -o results/trace-fsspec -- python examples/fsspec_reader.py --file results/remote.h5
    ccp diagnose results/trace-fsspec

Prints the GETs it made and the number of dataset calls (``dataset calls: N``) as its last line.
"""

import argparse
import os
import tempfile
import time

import h5py
import numpy as np
from fsspec.spec import AbstractBufferedFile, AbstractFileSystem

LATENCY = [0.02]
GETS = []


class RangeFile(AbstractBufferedFile):
    def _fetch_range(self, start, end):
        GETS.append((start, end))
        time.sleep(LATENCY[0])
        with open(self.path, "rb") as f:
            f.seek(start)
            return f.read(end - start)


class RangeFS(AbstractFileSystem):
    """Local files served by ranged fetches (one per GET), as s3fs serves objects."""

    protocol = "ranged"

    def _open(self, path, mode="rb", block_size=None, autocommit=True, cache_options=None, **kwargs):
        return RangeFile(self, path, mode, block_size, cache_options=cache_options, size=os.path.getsize(path),
                         **kwargs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", help="the HDF5 file (made if missing; default: a temporary file)")
    ap.add_argument("--cache-type", default="readahead")
    ap.add_argument("--block-size", type=int, default=64 * 1024)
    ap.add_argument("--latency", type=float, default=0.02, help="emulated seconds per GET")
    args = ap.parse_args()
    LATENCY[0] = args.latency
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.abspath(args.file or os.path.join(tmp, "remote.h5"))
        if not os.path.exists(path):
            with h5py.File(path, "w") as f:
                f.create_dataset("x", data=np.random.default_rng(0).normal(size=(512, 2048)).astype("f4"),
                                 chunks=(32, 256), compression="gzip")
        t0 = time.perf_counter()
        calls = 0
        with RangeFS().open(path, "rb", cache_type=args.cache_type, block_size=args.block_size) as fobj:
            with h5py.File(fobj, "r") as f:
                d = f["x"]
                for i in range(0, 512, 8):
                    d[i, :]
                    calls += 1
        print(f"read in {time.perf_counter() - t0:.2f} s; {len(GETS)} GETs")
        print(f"dataset calls: {calls}")


if __name__ == "__main__":
    main()
