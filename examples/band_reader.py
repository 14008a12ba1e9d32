"""A hyperspectral band reader that reopens its file for every band (the NEON case).

Each band of a (rows, cols, bands) cube lives in chunks that hold many bands, so reading band
after band from an open file hits the chunk cache; reopening the file per band throws the cache
away and decompresses every chunk again for every band. Makes its own input file.

    python examples/band_reader.py [--file cube.h5] [--bands 64]
    ccp trace -o results/trace-bands -- python examples/band_reader.py
    ccp diagnose results/trace-bands

Prints the number of dataset calls it made (``dataset calls: N``) as its last line.
"""

import argparse
import os
import tempfile

import h5py
import numpy as np

SHAPE = (192, 192, 64)
CHUNKS = (64, 64, 32)


def make_cube(path: str) -> int:
    """Write the cube; returns the dataset calls made (one: create_dataset with data)."""
    r, c, b = np.ogrid[:SHAPE[0], :SHAPE[1], :SHAPE[2]]
    cube = (np.sin(r / 17.0) + np.cos(c / 23.0) + b / 50.0).astype("f4")
    with h5py.File(path, "w") as f:
        f.create_dataset("Reflectance/Reflectance_Data", data=cube, chunks=CHUNKS, compression="gzip",
                         compression_opts=4)
    return 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", help="the cube file (made if missing; default: a temporary file)")
    ap.add_argument("--bands", type=int, default=SHAPE[2])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.file or os.path.join(tmp, "cube.h5")
        calls = 0 if os.path.exists(path) else make_cube(path)
        total = 0.0
        for band in range(min(args.bands, SHAPE[2])):
            with h5py.File(path, "r") as f:          # the slow habit: a fresh file, a fresh cache
                img = f["Reflectance/Reflectance_Data"][:, :, band]
                calls += 1
            total += float(img.mean())
        print(f"mean of band means: {total / max(args.bands, 1):.6f}")
        print(f"dataset calls: {calls}")


if __name__ == "__main__":
    main()
