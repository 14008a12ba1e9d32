"""A netCDF4-python reader that pulls time series at points, opening the file for each one (needs netCDF4).

``series(path, j, i)`` opens the file, reads ``tas[:, j, i]`` and closes it: a common helper. The
variable is stored as daily maps (1x96x144 chunks, deflate, as netCDF-C chunks an unlimited time axis),
so each series decompresses every map, and because the file is closed after each series, netCDF-C's
chunk cache (64 MiB per variable) is thrown away before the next point needs the same maps again.
Makes its own netCDF-4 file unless ``--file`` names one that exists.

    python examples/netcdf4_reader.py [--file tas.nc] [--points 20] [--keep-open] [--block]
    ccp trace -o results/trace-nc-reader -- python examples/netcdf4_reader.py --file results/tas.nc
    ccp diagnose results/trace-nc-reader

Prints the number of dataset calls it made (``dataset calls: N``) as its last line.
"""

import argparse
import os
import tempfile
import time

import numpy as np

NT, NY, NX = 365, 96, 144


def make_file(path: str) -> None:
    import netCDF4

    with netCDF4.Dataset(path, "w") as nc:
        nc.createDimension("time", None)
        nc.createDimension("lat", NY)
        nc.createDimension("lon", NX)
        nc.createVariable("lat", "f4", ("lat",))[:] = np.linspace(-89, 89, NY, dtype="f4")
        nc.createVariable("lon", "f4", ("lon",))[:] = np.linspace(0, 357.5, NX, dtype="f4")
        v = nc.createVariable("tas", "f4", ("time", "lat", "lon"), zlib=True, chunksizes=(1, NY, NX))
        y, x = np.ogrid[:NY, :NX]
        for t in range(NT):
            v[t] = (280 + 10 * np.sin(y / 15.0) + np.cos(x / 20.0) + np.sin(t / 58.0)).astype("f4")


def series(path: str, j: int, i: int):
    import netCDF4

    with netCDF4.Dataset(path) as nc:
        return nc["tas"][:, j, i]


def main() -> None:
    import netCDF4

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", help="the netCDF-4 file (made if missing; default: a temporary file)")
    ap.add_argument("--points", type=int, default=20)
    ap.add_argument("--keep-open", action="store_true", help="open the file once for all points (a cure)")
    ap.add_argument("--block", action="store_true", help="read the maps once, then index them in memory (a cure)")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    points = [(int(rng.integers(NY)), int(rng.integers(NX))) for _ in range(args.points)]
    with tempfile.TemporaryDirectory() as tmp:
        path = args.file or os.path.join(tmp, "tas.nc")
        if not os.path.exists(path):
            make_file(path)
        t0 = time.perf_counter()
        calls, means = 0, []
        if args.block or args.keep_open:
            with netCDF4.Dataset(path) as nc:
                v = nc["tas"]
                block = v[:] if args.block else None
                calls += bool(args.block)
                for j, i in points:
                    if block is not None:
                        means.append(float(block[:, j, i].mean()))
                    else:
                        means.append(float(v[:, j, i].mean()))
                        calls += 1
        else:
            for j, i in points:
                means.append(float(series(path, j, i).mean()))
                calls += 1
        print(f"{len(points)} series read in {time.perf_counter() - t0:.2f} s; mean {np.mean(means):.4f}")
        print(f"dataset calls: {calls}")


if __name__ == "__main__":
    main()
