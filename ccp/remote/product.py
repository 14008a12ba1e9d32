"""A multi-dataset netCDF-4 product written by the netCDF4 library (Unidata's), for the S3 sweeps and tests.

    python -m ccp.remote.product results/s3/product.nc [--time 120]

Like a gridded Level-3 / model-output granule: coordinates ``time`` (unlimited), ``lat``, ``lon``;
three deflated float32 variables ``pr``, ``tas``, ``huss`` of (time, lat, lon) with CF attributes,
chunks of ``chunk_time`` steps x the whole grid; a ``quality`` group. Values are smooth fields plus
noise from a fixed seed (deflate gains a little, chunk sizes differ). netCDF4 writes it with its own
defaults (HDF5's default file-space strategy: not paged), as most archives' files are.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

VARIABLES = ("pr", "tas", "huss")


def write_netcdf_product(path, shape=(120, 180, 360), chunk_time: int = 10, variables=VARIABLES,
                         seed: int = 15) -> Path:
    """Write the product to ``path`` (overwritten) and return it. Needs the netCDF4 package."""
    try:
        import netCDF4
    except ImportError:
        from ccp.errors import CcpError

        raise CcpError("writing the netCDF-4 product needs the netCDF4 package: pip install netCDF4") from None
    t, y, x = (int(s) for s in shape)
    rng = np.random.default_rng(seed)
    lat = np.linspace(-89.5, 89.5, y, dtype="f4")
    lon = np.linspace(0, 360, x, endpoint=False, dtype="f4")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.title = "ccp S3 case study: a gridded product"
        nc.Conventions = "CF-1.8"
        nc.createDimension("time", None)
        nc.createDimension("lat", y)
        nc.createDimension("lon", x)
        tv = nc.createVariable("time", "f8", ("time",))
        tv.units = "days since 2000-01-01"
        tv[:] = np.arange(t)
        nc.createVariable("lat", "f4", ("lat",))[:] = lat
        nc.createVariable("lon", "f4", ("lon",))[:] = lon
        field = (np.cos(np.deg2rad(lat))[:, None] * np.sin(np.deg2rad(lon))[None, :]).astype("f4")
        for k, name in enumerate(variables):
            v = nc.createVariable(name, "f4", ("time", "lat", "lon"), zlib=True, complevel=1,
                                  chunksizes=(min(chunk_time, t), y, x))
            v.units = ("kg m-2 s-1", "K", "1")[k % 3]
            v.long_name = f"{name} (synthetic)"
            for i in range(0, t, chunk_time):       # a chunk's worth of time steps at a time
                n = min(chunk_time, t - i)
                v[i:i + n] = (k + 1) * 10 * field + rng.normal(0, 0.5, (n, y, x)).astype("f4")
        grp = nc.createGroup("quality")
        grp.createVariable("flag", "u1", ("time",))[:] = np.zeros(t, "u1")
    return path


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--time", type=int, default=120, help="time steps (default 120)")
    args = ap.parse_args(argv)
    out = write_netcdf_product(args.out, (args.time, 180, 360))
    print(f"{out}: {out.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()


__all__ = ["VARIABLES", "write_netcdf_product"]
