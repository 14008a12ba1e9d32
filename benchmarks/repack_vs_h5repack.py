"""`ccp repack` against HDF5's `h5repack` on seed 000's CrIS case, and ccp's peak memory.

    .venv/bin/python benchmarks/repack_vs_h5repack.py [--rounds 5] [--work DIR] [--memory [--memory-gib 1]]

Needs h5repack on PATH; this script does not install it. On Debian/Ubuntu:

    apt-get install hdf5-tools

Speed: generates the synthetic CrIS file of seed 000 (dataset /All_Data/CrIS-SDR_All/ES_ImaginaryLW,
60x30x9x717 big-endian float32, every dimension unlimited, chunks 4x30x9x717, gzip 6, fill value
-999.3, normal noise from numpy seed 0, so gzip 6 only reaches ~1.08:1), then runs

    h5repack   -l DSET:CHUNK=1x30x9x717 -f DSET:GZIP=6 in.h5 out_h5repack.h5
    ccp repack -l DSET:CHUNK=1x30x9x717 -f DSET:GZIP=6 in.h5 out_ccp.h5

alternately (one untimed warm-up each, then ROUNDS timed rounds, the order swapped every round),
prints the median and the spread (min-max) of the wall time of each command, the ratio of the
medians (also for `ccp repack --deflate zlib`: stdlib zlib, the very bytes h5repack writes; the
default engine is libdeflate when the `deflate` package is installed), the load average (another busy process on the machine takes a core from ccp's threads),
and checks that both outputs hold equal values with the same chunks, filters, dtype, maxshape and
fill value (and says whether the stored chunks are byte-identical).

Memory (--memory): writes a MEMORY_GIB float32 dataset (chunks 16x256x256, no filters), repacks it
to chunks 1x1024x1024 with gzip 1 through a 32 MiB buffer, and prints the peak RSS of the
`ccp repack` process (wait4's ru_maxrss), with h5repack's for the same job.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np

DSET = "/All_Data/CrIS-SDR_All/ES_ImaginaryLW"


def make_cris(path: Path) -> None:
    data = np.random.default_rng(0).standard_normal((60, 30, 9, 717)).astype(">f4")
    with h5py.File(path, "w") as f:
        d = f.create_dataset(DSET, data=data, maxshape=(None,) * 4, chunks=(4, 30, 9, 717), compression="gzip",
                             compression_opts=6, fillvalue=np.float32(-999.3))
        ratio = data.nbytes / d.id.get_storage_size()
    print(f"input {path}: {DSET} 60x30x9x717 >f4, chunks 4x30x9x717, gzip 6, ratio {ratio:.3f}:1, "
          f"{path.stat().st_size / 2**20:.1f} MiB")


def ccp_command() -> list[str]:
    """`ccp repack` if the CLI has it, else the same command through `python -m ccp.repack`."""
    ccp = Path(sys.executable).with_name("ccp")
    if ccp.exists():
        r = subprocess.run([str(ccp), "repack", "--help"], check=False, capture_output=True, text=True)
        if r.returncode == 0:
            return [str(ccp), "repack"]
    return [sys.executable, "-m", "ccp.repack"]


def timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, check=False, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    return wall


# A small launcher measures the command: a child forked from this (large) process would count
# this process's pages in its ru_maxrss until it execs.
_LAUNCHER = """
import os, subprocess, sys, time
t0 = time.perf_counter()
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(proc.pid, 0)
print(os.waitstatus_to_exitcode(status), time.perf_counter() - t0, usage.ru_maxrss)
"""


def peak_rss(cmd: list[str]) -> tuple[float, float]:
    """(seconds, peak RSS in MiB) of one command (wait4's ru_maxrss of that process)."""
    r = subprocess.run([sys.executable, "-c", _LAUNCHER, *cmd], check=False, capture_output=True, text=True)
    try:
        code, wall, rss = r.stdout.split()
    except ValueError:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    if int(code) != 0:
        sys.exit(f"failed ({code}): {' '.join(cmd)}\n{r.stderr}")
    return float(wall), int(rss) / 1024


def compare(a: Path, b: Path, dset: str) -> str:
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        x, y = fa[dset], fb[dset]
        problems = []
        for what in ("shape", "maxshape", "chunks", "compression", "compression_opts", "shuffle", "dtype"):
            if getattr(x, what) != getattr(y, what):
                problems.append(f"{what} {getattr(x, what)} != {getattr(y, what)}")
        if x.dtype.str != y.dtype.str:
            problems.append(f"byte order {x.dtype.str} != {y.dtype.str}")
        if x.fillvalue != y.fillvalue:
            problems.append(f"fill value {x.fillvalue} != {y.fillvalue}")
        step = max(1, x.shape[0] // 8)
        for i in range(0, x.shape[0], step):
            if not np.array_equal(x[i:i + step], y[i:i + step]):
                problems.append(f"values differ in rows {i}-{i + step}")
                break
        identical = x.id.get_num_chunks() == y.id.get_num_chunks() and all(
            x.id.read_direct_chunk(x.id.get_chunk_info(i).chunk_offset)
            == y.id.read_direct_chunk(x.id.get_chunk_info(i).chunk_offset)
            for i in range(x.id.get_num_chunks()))
    if problems:
        sys.exit("outputs differ: " + "; ".join(problems))
    return "equal values and properties; stored chunks " + ("byte-identical" if identical else "differ in bytes")


def speed(work: Path, rounds: int, extra: list[str], zlib_too: bool = True) -> None:
    src = work / "cris.h5"
    make_cris(src)
    h5repack = shutil.which("h5repack")
    if not h5repack:
        sys.exit("h5repack not found: apt-get install hdf5-tools")
    opts = ["-l", f"{DSET}:CHUNK=1x30x9x717", "-f", f"{DSET}:GZIP=6"]
    out_h, out_c, out_z = work / "out_h5repack.h5", work / "out_ccp.h5", work / "out_ccp_zlib.h5"
    cmds = {"h5repack": [h5repack, *opts, str(src), str(out_h)],
            "ccp repack": [*ccp_command(), "-q", *extra, *opts, str(src), str(out_c)]}
    if zlib_too:
        cmds["ccp --deflate zlib"] = [*ccp_command(), "-q", "--deflate", "zlib", *extra, *opts, str(src), str(out_z)]
    from ccp.hdf5.filters.codecs import resolve_deflate_engine

    print(f"ccp repack's gzip engine (--deflate auto): {resolve_deflate_engine('auto')}")
    ver = subprocess.run([h5repack, "--version"], check=False, capture_output=True, text=True).stdout.strip()
    print(f"{ver}; ccp: {' '.join(cmds['ccp repack'][:2 if cmds['ccp repack'][1] == 'repack' else 3])}")
    for name, cmd in cmds.items():
        print(f"  {name}: {' '.join(cmd)}")
    print(f"machine: {os.cpu_count()} CPUs, load average before {os.getloadavg()[0]:.2f}")
    times: dict = {name: [] for name in cmds}
    for cmd in cmds.values():  # warm-up: page cache, imports
        timed(cmd)
    for i in range(rounds):
        order = list(cmds) if i % 2 == 0 else list(cmds)[::-1]  # alternate who goes first
        for name in order:
            times[name].append(timed(cmds[name]))
        print(f"  round {i + 1}: " + ", ".join(f"{n} {times[n][-1]:.3f} s" for n in cmds))
    print(f"load average after {os.getloadavg()[0]:.2f}")
    med = {n: statistics.median(t) for n, t in times.items()}
    for n, t in times.items():
        print(f"{n:>10}: median {med[n]:.3f} s, spread {min(t):.3f}-{max(t):.3f} s over {len(t)} rounds")
    for n in cmds:
        if n != "h5repack":
            print(f"ratio h5repack / {n} (medians): {med['h5repack'] / med[n]:.2f}x")
    print("check ccp repack:", compare(out_h, out_c, DSET))
    if zlib_too:
        print("check ccp --deflate zlib:", compare(out_h, out_z, DSET))


def memory(work: Path, gib: float, extra: list[str]) -> None:
    n0 = max(16, int(gib * 1024**3 // (1024 * 1024 * 4)) // 16 * 16)
    src = work / "big.h5"
    rng = np.random.default_rng(0)
    with h5py.File(src, "w") as f:
        d = f.create_dataset("x", shape=(n0, 1024, 1024), dtype="<f4", chunks=(16, 256, 256))
        base = np.sin(np.linspace(0, 20, 1024 * 1024, dtype="f4")).reshape(1024, 1024)
        for i in range(0, n0, 16):
            d[i:i + 16] = base + rng.integers(0, 8, (16, 1024, 1024), dtype=np.uint8).astype("f4") * 0.125
    size = src.stat().st_size
    opts = ["-l", "x:CHUNK=1x1024x1024", "-f", "x:GZIP=1"]
    print(f"memory: {src.name} {n0}x1024x1024 <f4 = {size / 2**30:.2f} GiB, chunks 16x256x256 -> 1x1024x1024 gzip 1")
    for buffer in ("32MiB", "8MiB"):
        out = work / "big_ccp.h5"
        wall, rss = peak_rss([*ccp_command(), "-q", "--buffer", buffer, *extra, *opts, str(src), str(out)])
        print(f"  ccp repack --buffer {buffer:>5}: {wall:5.1f} s, peak RSS {rss:4.0f} MiB, "
              f"output {out.stat().st_size / 2**20:.0f} MiB")
        out.unlink()
    wall, rss = peak_rss([*ccp_command(), "--help"])
    print(f"  (ccp repack --help alone:        peak RSS {rss:4.0f} MiB)")
    h5repack = shutil.which("h5repack")
    if h5repack:
        out = work / "big_h5repack.h5"
        wall, rss = peak_rss([h5repack, *opts, str(src), str(out)])
        print(f"  h5repack:                  {wall:5.1f} s, peak RSS {rss:4.0f} MiB, "
              f"output {out.stat().st_size / 2**20:.0f} MiB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--work", type=Path, default=None, help="folder for the files (default: a temporary folder)")
    ap.add_argument("--threads", type=int, default=None, help="ccp repack --threads (default: all CPUs)")
    ap.add_argument("--memory", action="store_true", help="also measure peak memory on a file much larger than the buffer")
    ap.add_argument("--memory-gib", type=float, default=1.0)
    ap.add_argument("--no-speed", action="store_true", help="only the memory measurement")
    ap.add_argument("--no-zlib", action="store_true",
                    help="skip the extra `ccp repack --deflate zlib` timing (stdlib zlib, byte-identical to h5repack)")
    args = ap.parse_args()
    extra = ["--threads", str(args.threads)] if args.threads else []
    with tempfile.TemporaryDirectory(dir=args.work, prefix="repack-bench-") as tmp:
        work = Path(tmp)
        if not args.no_speed:
            speed(work, args.rounds, extra, not args.no_zlib)
        if args.memory:
            memory(work, args.memory_gib, extra)


if __name__ == "__main__":
    main()
