"""gzip engines on the rechunk benchmark's data (HDF5 issue 6458, scaled): zlib, libdeflate and ISA-L
(the ``isal`` package) encoding and decoding the 10,000 source chunks (2000x1) and the 100 target chunks
(20000x10) of benchmarks/rechunk.py's input, one thread, CPU seconds (median of ROUNDS), with the ratio.

    .venv/bin/python benchmarks/deflate_engines.py [--rounds 5] [--rows 200000]

ISA-L's levels are its own (0-3), not zlib's: the table shows each, so the level ccp's "isal" engine
uses for gzip level 1 (codecs.ISAL_LEVEL_FOR_GZIP_1) can be judged by its ratio next to zlib's level 1.
Every stream is checked to decode (with zlib) to its chunk. The load average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import zlib

import numpy as np


def walk(rows: int) -> np.ndarray:
    """The values benchmarks/rechunk.py writes (same seed and blocks)."""
    rng = np.random.default_rng(6458)
    blocks = [np.round(np.cumsum(rng.standard_normal((min(20000, rows - i), 100)), axis=0) * 0.01, 3).astype("f4")
              for i in range(0, rows, 20000)]
    return np.concatenate(blocks)


def cpu_median(fn, items, rounds: int) -> tuple[float, list]:
    times, out = [], []
    for _ in range(rounds):
        t0 = time.process_time()
        out = [fn(b) for b in items]
        times.append(time.process_time() - t0)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--rows", type=int, default=200_000)
    args = ap.parse_args()
    import deflate
    from isal import isal_zlib

    x = walk(args.rows)
    rows = x.shape[0]
    grids = {"source 2000x1": (2000, 1), "target 20000x10": (20000, 10)}
    encoders = {"zlib 1": lambda b: zlib.compress(b, 1), "libdeflate 1": lambda b: deflate.zlib_compress(b, 1)}
    encoders.update({f"isal {n}": (lambda b, n=n: isal_zlib.compress(b, n)) for n in range(4)})
    print(f"load average before {os.getloadavg()[0]:.2f}; CPU seconds, one thread, median of {args.rounds}")
    for grid, (a, b) in grids.items():
        chunks = [np.ascontiguousarray(x[i:i + a, j:j + b]).tobytes() for i in range(0, rows, a) for j in range(0, 100, b)]
        raw = sum(map(len, chunks))
        decoders = {"zlib": zlib.decompress, "libdeflate": lambda c, n=a * b * 4: deflate.zlib_decompress(c, n),
                    "isal": isal_zlib.decompress}
        print(f"\n{grid}: {len(chunks)} chunks, {raw / 2**20:.1f} MiB raw")
        print(f"  {'encoder':<13} {'encode s':>8} {'ratio':>6}   decode s by " + ", ".join(decoders))
        for name, enc in encoders.items():
            te, streams = cpu_median(enc, chunks, args.rounds)
            if any(zlib.decompress(s) != c for s, c in zip(streams, chunks)):
                raise SystemExit(f"{name}: a stream does not decode to its chunk")
            decode = [cpu_median(dec, streams, args.rounds)[0] for dec in decoders.values()]
            print(f"  {name:<13} {te:>8.3f} {raw / sum(map(len, streams)):>6.3f}   " + "  ".join(f"{t:.3f}" for t in decode))
    print(f"\nload average after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
