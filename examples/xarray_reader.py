"""An xarray reader on the h5netcdf engine, reading one time step at a time (needs xarray).

xarray makes many h5py calls of its own (coordinates, attributes, lazy indexing); the trace shows
all of them. Makes its own netCDF-4 file with h5netcdf.

    python examples/xarray_reader.py [--file era.nc]
    ccp trace -o results/trace-xarray -- python examples/xarray_reader.py
    ccp diagnose results/trace-xarray
"""

import argparse
import os
import tempfile

import numpy as np


def make_file(path: str) -> None:
    import h5netcdf

    nt, ny, nx = 48, 90, 180
    with h5netcdf.File(path, "w") as f:
        f.dimensions = {"time": nt, "lat": ny, "lon": nx}
        f.create_variable("time", ("time",), "f8", data=np.arange(nt, dtype="f8"))
        f.create_variable("lat", ("lat",), "f4", data=np.linspace(-89, 89, ny, dtype="f4"))
        f.create_variable("lon", ("lon",), "f4", data=np.linspace(0, 358, nx, dtype="f4"))
        v = f.create_variable("t2m", ("time", "lat", "lon"), "f4", chunks=(48, 30, 30), compression="gzip")
        t, y, x = np.ogrid[:nt, :ny, :nx]
        v[...] = (280 + 10 * np.sin(y / 15.0) + np.cos(x / 20.0) + t / 10.0).astype("f4")


def main() -> None:
    import xarray as xr

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.file or os.path.join(tmp, "era.nc")
        if not os.path.exists(path):
            make_file(path)
        means = []
        with xr.open_dataset(path, engine="h5netcdf", cache=False) as ds:
            for i in range(ds.sizes["time"]):
                means.append(float(ds["t2m"].isel(time=i).mean()))
        print(f"time steps: {len(means)}; mean {np.mean(means):.4f}")


if __name__ == "__main__":
    main()
