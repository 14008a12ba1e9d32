"""A logger that appends one record at a time to a resizable, compressed dataset (the writer case).

Each call resizes the dataset by one row and writes that row: a 64-row chunk takes 64 calls to fill,
and with a chunk cache too small to hold the chunks being filled (here 128 KiB, as small as an old
HDF5's 1 MiB default is against bigger chunks), every partial chunk is flushed through gzip and read
back and decompressed at the next row: read-modify-write. Makes its own output file.

    python examples/append_writer.py [--file log.h5] [--rows 640] [--cache 262144] [--whole-chunks]
    ccp trace -o results/trace-writer -- python examples/append_writer.py
    ccp diagnose results/trace-writer

Prints the number of dataset calls it made (``dataset calls: N``) as its last line.
"""

import argparse
import os
import tempfile
import time

import h5py
import numpy as np

WIDTH = 1024           # float32 values per record: 4 KiB
CHUNK_ROWS = 64        # 256 KiB chunks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", help="the output file (default: a temporary file)")
    ap.add_argument("--rows", type=int, default=640)
    ap.add_argument("--cache", type=int, default=128 * 1024, help="rdcc_nbytes of the file (a cure: 262144)")
    ap.add_argument("--whole-chunks", action="store_true", help="buffer 64 rows and write whole chunks (a cure)")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    calls = 0
    with tempfile.TemporaryDirectory() as tmp:
        path = args.file or os.path.join(tmp, "log.h5")
        t0 = time.perf_counter()
        with h5py.File(path, "w", rdcc_nbytes=args.cache) as f:
            d = f.create_dataset("records", shape=(0, WIDTH), maxshape=(None, WIDTH), chunks=(CHUNK_ROWS, WIDTH),
                                 dtype="f4", compression="gzip")
            buf = np.empty((CHUNK_ROWS, WIDTH), "f4")
            for i in range(args.rows):
                row = rng.normal(size=WIDTH).astype("f4")
                if not args.whole_chunks:
                    d.resize((i + 1, WIDTH))
                    d[i] = row
                    calls += 1
                    continue
                buf[i % CHUNK_ROWS] = row
                if i % CHUNK_ROWS == CHUNK_ROWS - 1 or i == args.rows - 1:
                    lo = i - i % CHUNK_ROWS
                    d.resize((i + 1, WIDTH))
                    d[lo:i + 1] = buf[:i + 1 - lo]
                    calls += 1
        print(f"written in {time.perf_counter() - t0:.2f} s")
        print(f"dataset calls: {calls}")


if __name__ == "__main__":
    main()
