"""``dset[:]`` on a dataset with tiny chunks: one call, thousands of chunk reads and decodes.

    python examples/tiny_chunks.py [--file tiny.h5]
    ccp trace -o results/trace-tiny -- python examples/tiny_chunks.py
    ccp diagnose results/trace-tiny

Prints the number of dataset calls it made (``dataset calls: N``) as its last line.
"""

import argparse
import os
import tempfile

import h5py
import numpy as np

N, CHUNK = 400_000, 32


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.file or os.path.join(tmp, "tiny.h5")
        calls = 0
        if not os.path.exists(path):
            with h5py.File(path, "w") as f:
                f.create_dataset("signal", data=np.sin(np.arange(N) / 100.0), chunks=(CHUNK,), compression="gzip")
                calls += 1      # create_dataset with data writes: a dataset call
        with h5py.File(path, "r") as f:
            d = f["signal"]
            for _ in range(args.repeats):
                x = d[:]
                calls += 1
        print(f"sum: {x.sum():.6f}")
        print(f"dataset calls: {calls}")


if __name__ == "__main__":
    main()
