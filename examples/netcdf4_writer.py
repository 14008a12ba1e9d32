"""A netCDF4-python writer that stores daily maps one latitude row per call, with a small chunk cache.

The variable is chunked 8 days x 96 x 144 (432 KiB) and compressed; the program sets a 256 KiB chunk cache
on it (``set_var_chunk_cache``, to save memory), smaller than one chunk. Each row it writes lands in a
chunk that cannot stay in the cache: netCDF-C (HDF5) compresses the partial chunk, writes it, and reads
and decompresses it again at the next row. Makes its own output file.

    python examples/netcdf4_writer.py [--file out.nc] [--days 8] [--cache 1048576] [--whole-maps | --whole-chunks]
    ccp trace -o results/trace-nc-writer -- python examples/netcdf4_writer.py --file results/out.nc
    ccp diagnose results/trace-nc-writer

Prints the number of dataset calls it made (``dataset calls: N``) as its last line.
"""

import argparse
import os
import tempfile
import time

import numpy as np

NY, NX, CHUNK_DAYS = 96, 144, 8


def main() -> None:
    import netCDF4

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", help="the output file (default: a temporary file)")
    ap.add_argument("--days", type=int, default=8)
    ap.add_argument("--cache", type=int, default=256 * 1024, help="set_var_chunk_cache size (a cure: 1048576)")
    ap.add_argument("--whole-maps", action="store_true", help="write each day's map in one call (a cure)")
    ap.add_argument("--whole-chunks", action="store_true", help=f"buffer {CHUNK_DAYS} days, write whole chunks (a cure)")
    args = ap.parse_args()
    calls = 0
    with tempfile.TemporaryDirectory() as tmp:
        path = args.file or os.path.join(tmp, "out.nc")
        t0 = time.perf_counter()
        with netCDF4.Dataset(path, "w") as nc:
            nc.createDimension("time", None)
            nc.createDimension("lat", NY)
            nc.createDimension("lon", NX)
            v = nc.createVariable("tas", "f4", ("time", "lat", "lon"), zlib=True, chunksizes=(CHUNK_DAYS, NY, NX))
            v.set_var_chunk_cache(size=args.cache)
            x = np.arange(NX, dtype="f4")
            buf = np.empty((CHUNK_DAYS, NY, NX), "f4")
            for t in range(args.days):
                rows = np.stack([280 + np.sin(x / 20.0 + j / 15.0) + t / 10.0 for j in range(NY)]).astype("f4")
                if args.whole_chunks:
                    buf[t % CHUNK_DAYS] = rows
                    if t % CHUNK_DAYS == CHUNK_DAYS - 1 or t == args.days - 1:
                        lo = t - t % CHUNK_DAYS
                        v[lo:t + 1] = buf[:t + 1 - lo]
                        calls += 1
                    continue
                if args.whole_maps:
                    v[t] = rows
                    calls += 1
                    continue
                for j in range(NY):
                    v[t, j, :] = rows[j]
                    calls += 1
        print(f"written in {time.perf_counter() - t0:.2f} s")
        print(f"dataset calls: {calls}")


if __name__ == "__main__":
    main()
