"""Write seed 004's netCDF-4 file: pr(time=1560, lat=128, lon=256) float32, chunks 64x128x256, deflate 1.

    .venv/bin/python notebooks/make_seed004_file.py [OUT] [--time N] [--format F] [--no-deflate]

--no-deflate writes the blog's uncompressed netCDF-4 file (same chunks); --format NETCDF3_CLASSIC writes its
classic (netCDF-3) file, NETCDF4_CLASSIC the classic-model netCDF-4 (HDF5) file with netCDF's default chunks.

The blog's file (pr_A1_z1_64_128_256.nc, CCSM precipitation) is not available here; this writes a
stand-in of the same shape, chunking and compression with the netCDF4 library (so it is a real
netCDF-4 file: dimensions, coordinate variables, attributes), filled with a smooth field plus noise.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def make(out: Path, ntime: int = 1560, nlat: int = 128, nlon: int = 256, seed: int = 0, tchunk: int = 64,
         fmt: str = "NETCDF4", deflate: bool = True) -> Path:
    import netCDF4

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    rng = np.random.default_rng(seed)
    with netCDF4.Dataset(tmp, "w", format=fmt) as nc:
        nc.createDimension("time", None)
        nc.createDimension("lat", nlat)
        nc.createDimension("lon", nlon)
        nc.createVariable("time", "f8", ("time",))[:] = np.arange(ntime) * 30.0
        nc.createVariable("lat", "f4", ("lat",))[:] = np.linspace(-90, 90, nlat)
        nc.createVariable("lon", "f4", ("lon",))[:] = np.linspace(0, 360, nlon, endpoint=False)
        if fmt == "NETCDF4":
            layout = {"zlib": deflate, "complevel": 1, "shuffle": False, "chunksizes": (min(tchunk, ntime), nlat, nlon)}
        else:   # netCDF-3 has no chunks or filters; netCDF-4 classic gets what a converted file gets: the defaults
            layout = {}
        pr = nc.createVariable("pr", "f4", ("time", "lat", "lon"), **layout)
        pr.units = "kg m-2 s-1"
        lat = np.linspace(-np.pi / 2, np.pi / 2, nlat)[:, None]
        lon = np.linspace(0, 2 * np.pi, nlon)[None, :]
        for t0 in range(0, ntime, tchunk):
            n = min(tchunk, ntime - t0)
            t = (t0 + np.arange(n))[:, None, None]
            field = 3e-5 * (1 + np.cos(lat) * np.sin(lon + t / 12.0))
            pr[t0:t0 + n] = (field * rng.lognormal(0.0, 0.5, size=(n, nlat, nlon))).astype("f4")
    tmp.replace(out)
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?", type=Path, default=Path(__file__).resolve().parent.parent / "results/seed004/pr_A1_z1_64_128_256.nc")
    ap.add_argument("--time", type=int, default=1560)
    ap.add_argument("--format", default="NETCDF4", choices=["NETCDF4", "NETCDF4_CLASSIC", "NETCDF3_CLASSIC"])
    ap.add_argument("--no-deflate", action="store_true")
    a = ap.parse_args()
    print(make(a.out, a.time, fmt=a.format, deflate=not a.no_deflate))
