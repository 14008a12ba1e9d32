"""A machine-learning style loader: shuffled indices read from two datasets in worker processes.

Each worker opens the file once and reads one sample at a time, ``images[i]`` and ``labels[i]``,
in a shuffled order: every image read touches a chunk holding 64 images, so most of what is
decompressed is thrown away unless the cache keeps it. Makes its own input file.

    python examples/shuffled_loader.py [--workers 3] [--start-method spawn|fork] [--samples 600]
    ccp trace -o results/trace-loader -- python examples/shuffled_loader.py

Prints the number of dataset calls made by all processes (``dataset calls: N``) as its last line.
"""

import argparse
import multiprocessing as mp
import os
import tempfile

import h5py
import numpy as np

N, SIDE = 4096, 32
_file = None


def make_file(path: str) -> int:
    """Write both datasets; returns the dataset calls made (two create_dataset with data)."""
    rng = np.random.default_rng(0)
    with h5py.File(path, "w") as f:
        f.create_dataset("images", data=rng.integers(0, 32, size=(N, SIDE, SIDE), dtype="u1"), chunks=(64, SIDE, SIDE),
                         compression="gzip", compression_opts=1)
        f.create_dataset("labels", data=rng.integers(0, 10, size=N), chunks=(1024,))
    return 2


def _open(path: str) -> None:
    global _file
    _file = h5py.File(path, "r")


def load(indices) -> tuple[int, int]:
    """(dataset calls, checksum) for a batch of sample indices."""
    images, labels = _file["images"], _file["labels"]
    calls, check = 0, 0
    for i in indices:
        img = images[i]
        lab = labels[i]
        calls += 2
        check += int(img[0, 0]) + int(lab)
    return calls, check


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file")
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--start-method", default="spawn", choices=mp.get_all_start_methods())
    ap.add_argument("--samples", type=int, default=600)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.file or os.path.join(tmp, "train.h5")
        made = 0 if os.path.exists(path) else make_file(path)
        order = np.random.default_rng(1).permutation(N)[:args.samples]
        batches = [order[i:i + 50].tolist() for i in range(0, len(order), 50)]
        ctx = mp.get_context(args.start_method)
        with ctx.Pool(args.workers, initializer=_open, initargs=(path,)) as pool:
            results = pool.map(load, batches)
        print(f"checksum: {sum(c for _, c in results)}")
        print(f"dataset calls: {made + sum(n for n, _ in results)}")


if __name__ == "__main__":
    main()
