"""What reading the output back costs `ccp repack` (issue 21: it checks what it wrote before it says done).

    .venv/bin/python benchmarks/repack_read_back_cost.py [--rounds 5]

On seed 000's synthetic CrIS file (benchmarks/repack_vs_h5repack.py's, 4x30x9x717 -> 1x30x9x717, gzip 6),
``ccp.repack.copy.repack`` runs in this process with the read-back and with it replaced by a no-op,
alternately (one warm-up each, the order swapped every round); prints the median and spread of each and
the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DSET = "/All_Data/CrIS-SDR_All/ES_ImaginaryLW"


def main() -> None:
    from repack_vs_h5repack import make_cris

    import ccp.repack.copy as copy_module

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    real = copy_module.verify_written
    times: dict[str, list[float]] = {"with read-back": [], "without": []}
    with tempfile.TemporaryDirectory(prefix="ccp-readback-") as tmp:
        src = Path(tmp) / "in.h5"
        make_cris(src)

        def once(label: str) -> float:
            copy_module.verify_written = real if label == "with read-back" else (lambda *a, **k: [])
            out = Path(tmp) / "out.h5"
            t0 = time.perf_counter()
            copy_module.repack(src, out, {DSET: "CHUNK=1x30x9x717"}, {DSET: "GZIP=6"})
            took = time.perf_counter() - t0
            out.unlink()
            return took

        labels = list(times)
        for label in labels:
            once(label)                       # warm-up
        for r in range(args.rounds):
            for label in (labels if r % 2 == 0 else labels[::-1]):
                times[label].append(once(label))
        copy_module.verify_written = real
    print(f"{src.name}: {DSET} 60x30x9x717 >f4, 4x30x9x717 -> 1x30x9x717, gzip 6; {args.rounds} rounds")
    for label, ts in times.items():
        print(f"  {label:<15} median {statistics.median(ts):.3f} s, spread {min(ts):.3f}-{max(ts):.3f} s")
    print(f"  read-back cost: {statistics.median(times['with read-back']) - statistics.median(times['without']):.3f} s "
          f"(medians); load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
