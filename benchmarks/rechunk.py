"""Hard rechunks (HDF5 issue 6458, scaled): ccp repack against h5repack, nccopy, an h5py script with a
large chunk cache, and rechunker (to Zarr, for reference), on the same jobs; and ccp's prediction.

    .venv/bin/python benchmarks/rechunk.py [--rounds 3] [--rows 200000] [--work DIR] [--jobs 6458,unaligned,transpose]
                                          [--jobs wide,wide20k --wide-cols 2000] [--timeout SECONDS]
                                          [--tas results/tas.nc] [--tas-filters GZIP=1,SHUF+GZIP=4+FLET]
                                          [--no-bytecode] [--ccp-only]

Input: /data, ROWS x 100 float32 (a random walk rounded to 3 decimals: gzip:1 reaches ~1.9:1), chunks 2000x1
(column chunks, as in issue 6458), gzip:1. Jobs, each to gzip:1:

    6458        2000x1 -> 20000x10      (the issue's scaled case)
    unaligned   2000x1 -> 6719x10       (target rows not a multiple of the source's, like 6458's 67186)
    transpose   2000x1 -> 500x100       (column chunks to row chunks: each target chunk needs 100 source chunks)

With --jobs wide (or wide20k), the issue's own shapes on a wide input: /data, 67186 x COLS float32 (--wide-cols,
default 2000; the issue's file has 1,093,742 columns), the same random walk, chunks 2000x1, gzip:1, made once
in --work (reused while its shape matches):

    wide        2000x1 -> 67186x10      (6458's target: 2.6 MB chunks, larger than h5repack's 1 MiB buffer)
    wide20k     2000x1 -> 20000x10      (800 KB target chunks, which fit that buffer)

Tools, each run as its own process (start-up included; one killed after --timeout seconds is shown as such,
with the bytes it had moved by then):

    h5repack -l data:CHUNK=AxB -f data:GZIP=1 in.h5 out.h5                   (Debian's hdf5-tools)
    nccopy -d1 -c phony_dim_0/A,phony_dim_1/B in.h5 out.nc                     (Debian's netcdf-bin)
    python h5py script: 512 MiB chunk cache on the source, target chunks copied in C order, a block of
                        target-chunk rows by at most 64 MiB of whole target-chunk columns at a time
    python rechunker script: rechunker.rechunk(h5py source via dask, target Zarr, max_mem 512MB, zlib 1)
    ccp repack --memory 512MiB -l data:CHUNK=AxB -f data:GZIP=1 in.h5 out.h5
    ccp repack --memory 512MiB --plan --json ...                               (the prediction, before each ccp run)

With --tas FILE, also the daily-map transpose: FILE's /tas (365x96x144 f4, chunks 1x96x144, shuffle+gzip:4, made
by examples/netcdf4_reader.py --file FILE --points 1) to chunks 365x1x1, filters kept: h5repack -l
/tas:CHUNK=365x1x1 and ccp repack -l /tas:CHUNK=365x1x1 (nccopy -c time/365,lat/1,lon/1 had not finished
after 100 s: left out). With --tas-filters, the same transpose again to other filters, given as h5repack's
filter words (GZIP=1: plain gzip:1, no shuffle; SHUF+GZIP=4+FLET: with fletcher32), each word one -f for both.

ccp runs with its bytecode cached, as an installed ccp does: a PYTHONDONTWRITEBYTECODE in this shell is removed
from its environment (else ccp's ~30 modules compile on every start, ~0.1 s; --no-bytecode keeps it), after
one untimed run.

Per tool: wall time (median and spread over ROUNDS, tools alternating order each round), CPU time
(user+sys), peak RSS (wait4's ru_maxrss) and bytes moved (rchar/wchar of /proc/PID/io, sampled every
10 ms until the process ends: the last few ms of I/O can be missed). Values are checked equal to the
input (numpy, every element). The load average is printed before and after: on a shared machine the
wall times move with it, the CPU times much less.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

import h5py
import numpy as np

JOBS = {"6458": (20000, 10), "unaligned": (6719, 10), "transpose": (500, 100)}
# on the wide input (WIDE_ROWS x --wide-cols): 6458's own target chunks, and ones that fit h5repack's buffer
WIDE_JOBS = {"wide": (67186, 10), "wide20k": (20000, 10)}
WIDE_ROWS = 67186
TAS_CHUNKS = "365x1x1"
MEMORY = "512MiB"
MEMORY_BYTES = 512 * 2**20

_H5PY_SCRIPT = """
import sys, h5py
src, dst, a, b = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with h5py.File(src, "r", rdcc_nbytes=512 * 2**20, rdcc_nslots=1_000_003) as fin, h5py.File(dst, "w") as fout:
    x = fin["data"]
    y = fout.create_dataset("data", shape=x.shape, dtype=x.dtype, chunks=(a, b), compression="gzip", compression_opts=1)
    step = max(1, (64 * 2**20) // (a * b * x.dtype.itemsize)) * b    # whole target chunks, at most 64 MiB a block
    for i in range(0, x.shape[0], a):
        for j in range(0, x.shape[1], step):
            y[i:i + a, j:j + step] = x[i:i + a, j:j + step]
"""

_RECHUNKER_SCRIPT = """
import sys, h5py, dask, dask.array as da, zarr, numcodecs
from rechunker import rechunk
src, dst, tmp, a, b = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
with h5py.File(src, "r") as fin:
    x = fin["data"]
    arr = da.from_array(x, chunks=x.chunks)
    with dask.config.set(scheduler="threads"):
        plan = rechunk(arr, (a, b), "512MB", dst, temp_store=tmp,
                       target_options={"compressor": numcodecs.Zlib(level=1)},
                       temp_options={"compressor": numcodecs.Zlib(level=1)})
        plan.execute()
"""

_LAUNCHER = """
import os, subprocess, sys, time
timeout = float(sys.argv[1])
t0 = time.perf_counter()
proc = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
io = {}
killed = False
while True:
    pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
    if pid:
        break
    if not killed and timeout > 0 and time.perf_counter() - t0 > timeout:
        proc.kill()    # the tool this launcher started, by its pid; its wait4 above reaps it
        killed = True
    try:
        with open(f"/proc/{proc.pid}/io") as f:
            io = dict(line.split(": ") for line in f.read().splitlines())
    except OSError:
        pass
    time.sleep(0.01)
wall = time.perf_counter() - t0
err = proc.stderr.read().decode(errors="replace").strip().replace(chr(10), " | ")[-400:]
print("timeout" if killed else os.waitstatus_to_exitcode(status), wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss,
      int(io.get("rchar", 0)), int(io.get("wchar", 0)), err or "-")
"""


def make_input(path: Path, rows: int) -> None:
    rng = np.random.default_rng(6458)
    with h5py.File(path, "w") as f:
        d = f.create_dataset("data", shape=(rows, 100), dtype="f4", chunks=(2000, 1), compression="gzip",
                             compression_opts=1)
        for i in range(0, rows, 20000):
            n = min(20000, rows - i)
            d[i:i + n] = np.round(np.cumsum(rng.standard_normal((n, 100)), axis=0) * 0.01, 3).astype("f4")
    print(f"input {path}: data {rows}x100 f4, chunks 2000x1, gzip:1, {path.stat().st_size / 2**20:.1f} MiB")


def make_wide_input(path: Path, cols: int) -> Path:
    """The wide input (``WIDE_ROWS`` x ``cols`` float32, the same random walk down each column, chunks 2000x1,
    gzip:1), written once: an existing file of that shape and layout is kept, as it takes minutes to make."""
    if path.exists():
        with h5py.File(path, "r") as f:
            d = f.get("data")
            if d is not None and d.shape == (WIDE_ROWS, cols) and d.chunks == (2000, 1) and d.compression == "gzip":
                print(f"input {path}: kept, data {WIDE_ROWS}x{cols} f4, chunks 2000x1, gzip:1, "
                      f"{path.stat().st_size / 2**20:.1f} MiB")
                return path
    rng = np.random.default_rng(6458)
    tmp = path.with_name(path.name + ".part")
    with h5py.File(tmp, "w") as f:
        d = f.create_dataset("data", shape=(WIDE_ROWS, cols), dtype="f4", chunks=(2000, 1), compression="gzip",
                             compression_opts=1)
        for j in range(0, cols, 200):    # whole columns at a time: each write fills its chunks
            n = min(200, cols - j)
            d[:, j:j + n] = np.round(np.cumsum(rng.standard_normal((WIDE_ROWS, n)), axis=0) * 0.01, 3).astype("f4")
    tmp.rename(path)
    print(f"input {path}: data {WIDE_ROWS}x{cols} f4, chunks 2000x1, gzip:1, {path.stat().st_size / 2**20:.1f} MiB")
    return path


def job_chunks(job: str) -> tuple[int, int]:
    return JOBS[job] if job in JOBS else WIDE_JOBS[job]


def ccp_env(bytecode: bool) -> dict | None:
    """The environment ccp's processes run in: with bytecode (a PYTHONDONTWRITEBYTECODE set in this shell
    removed, so ccp's modules load from their cached .pyc as a pip-installed ccp's do, instead of being
    compiled again on every start: ~0.1 s) unless ``bytecode`` is False."""
    if not bytecode or "PYTHONDONTWRITEBYTECODE" not in os.environ:
        return None
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def measure(cmd: list[str], env: dict | None = None, timeout: float = 0) -> dict:
    """One run of ``cmd`` in its own process: wall, CPU, peak RSS and bytes moved; killed after ``timeout``
    seconds if that is over 0 (``"timeout": True``, its figures those of the moment it was killed)."""
    r = subprocess.run([sys.executable, "-c", _LAUNCHER, str(timeout), *cmd], check=False, capture_output=True,
                       text=True, env=env)
    try:
        code, wall, cpu, rss, rchar, wchar, err = r.stdout.split(maxsplit=6)
    except ValueError:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    if code != "timeout" and int(code) != 0:
        sys.exit(f"failed ({code}): {' '.join(cmd)}\n{err}")
    return {"wall": float(wall), "cpu": float(cpu), "rss_mib": int(rss) / 1024, "read_mib": int(rchar) / 2**20,
            "written_mib": int(wchar) / 2**20, "timeout": code == "timeout"}


def check_equal(src: Path, out: Path, kind: str) -> None:
    """Every element of ``out`` equal to the input's, compared a block of ~64 MiB of whole columns at a time
    (the wide input does not fit memory twice over)."""
    name = "tas" if kind == "tas" else "data"
    with h5py.File(src, "r", rdcc_nbytes=256 * 2**20, rdcc_nslots=1_000_003) as f, \
            (nullcontext(None) if kind == "zarr" else h5py.File(out, "r", rdcc_nbytes=256 * 2**20)) as g:
        want_ds = f[name]
        if kind == "zarr":
            import zarr

            got_ds = zarr.open(str(out), mode="r")
        else:
            got_ds = g[name]
        if want_ds.ndim != 2:
            if not np.array_equal(want_ds[...], got_ds[...]):
                sys.exit(f"{out}: values differ from the input")
            return
        step = max(1, (64 * 2**20) // (want_ds.shape[0] * want_ds.dtype.itemsize))
        for j in range(0, want_ds.shape[1], step):
            if not np.array_equal(want_ds[:, j:j + step], got_ds[:, j:j + step]):
                sys.exit(f"{out}: values differ from the input in columns {j}-{j + step - 1}")


def tools(src: Path, work: Path, job: str, have_rechunker: bool, engines: tuple[str, ...] = (),
          h5repack_bufsizes: tuple[int, ...] = ()) -> dict:
    a, b = job_chunks(job)
    ccp = str(Path(sys.executable).with_name("ccp"))
    out = {}
    if shutil.which("h5repack"):
        out["h5repack"] = ([shutil.which("h5repack"), "-l", f"data:CHUNK={a}x{b}", "-f", "data:GZIP=1", str(src),
                            str(work / "o_h5repack.h5")], work / "o_h5repack.h5", "h5")
    for mb in h5repack_bufsizes:    # h5repack 1.10 reads its hyperslab buffer's size (MiB) from this variable
        out[f"h5repack, {mb} MiB buffer"] = (["env", f"H5TOOLS_BUFSIZE={mb}", shutil.which("h5repack") or "h5repack",
                                              *out["h5repack"][0][1:-1], str(work / f"o_h5repack_{mb}.h5")],
                                             work / f"o_h5repack_{mb}.h5", "h5")
    if shutil.which("nccopy"):
        out["nccopy -c"] = ([shutil.which("nccopy"), "-d1", "-c", f"phony_dim_0/{a},phony_dim_1/{b}", str(src),
                             str(work / "o_nccopy.nc")], work / "o_nccopy.nc", "h5")
    out["h5py, 512 MiB cache"] = ([sys.executable, "-c", _H5PY_SCRIPT, str(src), str(work / "o_h5py.h5"), str(a), str(b)],
                                  work / "o_h5py.h5", "h5")
    if have_rechunker:
        out["rechunker -> Zarr"] = ([sys.executable, "-c", _RECHUNKER_SCRIPT, str(src), str(work / "o_rechunker.zarr"),
                                     str(work / "t_rechunker.zarr"), str(a), str(b)], work / "o_rechunker.zarr", "zarr")
    out["ccp repack"] = ([ccp, "repack", "-q", "--memory", MEMORY, "-l", f"data:CHUNK={a}x{b}", "-f", "data:GZIP=1",
                          str(src), str(work / "o_ccp.h5")], work / "o_ccp.h5", "h5")
    for engine in engines:     # ccp with another gzip encoder than its default (--deflate auto)
        target = work / f"o_ccp_{engine}.h5"
        out[f"ccp --deflate {engine}"] = (out["ccp repack"][0][:2] + ["--deflate", engine] + out["ccp repack"][0][2:-1]
                                          + [str(target)], target, "h5")
    return out


def clean(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def predict(src: Path, job: str, env: dict | None = None) -> dict:
    ccp = str(Path(sys.executable).with_name("ccp"))
    t0 = time.perf_counter()
    r = subprocess.run([ccp, "repack", "--memory", MEMORY, *job_options(job), "--plan", "--json", str(src)],
                       check=True, capture_output=True, text=True, env=env)
    doc = json.loads(r.stdout)
    doc["plan_seconds"] = time.perf_counter() - t0
    return doc


def job_options(job: str) -> list[str]:
    if job.startswith("tas"):    # "tas" (filters kept) or "tas:F1+F2" (h5repack filter words, each a -f)
        words = job.split(":", 1)[1].split("+") if ":" in job else []
        return ["-l", f"/tas:CHUNK={TAS_CHUNKS}"] + [x for w in words for x in ("-f", f"/tas:{w}")]
    a, b = job_chunks(job)
    return ["-l", f"data:CHUNK={a}x{b}", "-f", "data:GZIP=1"]


def tas_tools(src: Path, work: Path, job: str = "tas") -> dict:
    """The daily-map transpose (``--tas FILE``): /tas 365x96x144 f4, chunks 1x96x144, shuffle+gzip:4 (made by
    examples/netcdf4_reader.py) to chunks 365x1x1, filters kept (``job`` "tas") or those of ``job``
    ("tas:GZIP=1": h5repack's filter words, each one -f, for both tools); h5repack and ccp."""
    ccp = str(Path(sys.executable).with_name("ccp"))
    out = {}
    if shutil.which("h5repack"):
        out["h5repack"] = ([shutil.which("h5repack"), *job_options(job), str(src),
                            str(work / "o_h5repack.nc")], work / "o_h5repack.nc", "tas")
    # (nccopy -c time/365,lat/1,lon/1 had not finished after 100 s at load 10, h5repack taking ~1-3 s: left out)
    out["ccp repack"] = ([ccp, "repack", "-q", "--memory", MEMORY, *job_options(job), str(src), str(work / "o_ccp.nc")],
                         work / "o_ccp.nc", "tas")
    return out


def stored_mib(path: Path) -> float:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20
    return path.stat().st_size / 2**20 if path.exists() else 0.0


def run_job(src: Path, work: Path, job: str, rounds: int, have_rechunker: bool, engines: tuple[str, ...] = (),
            bytecode: bool = True, ccp_only: bool = False, timeout: float = 0,
            h5repack_bufsizes: tuple[int, ...] = ()) -> None:
    cmds = tas_tools(src, work, job) if job.startswith("tas") else tools(src, work, job, have_rechunker, engines,
                                                                          h5repack_bufsizes)
    if ccp_only:     # ccp and its plan alone (the plan's error is checked against ccp's own time)
        cmds = {n: c for n, c in cmds.items() if n.startswith("ccp")}
    env = ccp_env(bytecode)
    what = (f"/tas 1x96x144 -> {TAS_CHUNKS}, " + ("shuffle+gzip:4 kept" if job == "tas" else
                                                   " ".join(job_options(job)[2:]))) if job.startswith("tas") else \
        "2000x1 -> {}x{}, gzip:1".format(*job_chunks(job))
    print(f"\njob {job}: {what}; input {stored_mib(src):.0f} MiB stored; load average before "
          f"{os.getloadavg()[0]:.2f} ({time.strftime('%H:%M:%S', time.gmtime())} UTC)", flush=True)
    print("  ccp runs " + ("with its bytecode cached (PYTHONDONTWRITEBYTECODE removed from its environment, as an "
                           "installed ccp runs)" if env is not None else "in this shell's environment"))
    for name, (cmd, target, _kind) in cmds.items():    # one untimed run each: caches warm, ccp's bytecode written
        if name.startswith("ccp"):
            clean(target)
            measure(cmd, env, timeout)
            clean(target)
    for name, (cmd, _, _) in cmds.items():
        shown = " ".join(c if len(c) < 80 else c.strip().splitlines()[0] + " ..." for c in cmd)
        print(f"  {name}: {shown}")
    res: dict = {n: [] for n in cmds}
    out_mib: dict = {}
    preds = []
    for i in range(rounds):
        order = list(cmds) if i % 2 == 0 else list(cmds)[::-1]
        for name in order:
            if res[name] and res[name][0]["timeout"]:
                continue     # killed once at --timeout: not run again
            cmd, target, kind = cmds[name]
            clean(target)
            clean(work / "t_rechunker.zarr")
            if name == "ccp repack":
                preds.append(predict(src, job, env))
            r = measure(cmd, env if name.startswith("ccp") else None, timeout)
            res[name].append(r)
            print(f"    round {i + 1} {name}: {'killed after ' if r['timeout'] else ''}{r['wall']:.2f} s wall, "
                  f"{r['cpu']:.2f} s CPU, read {r['read_mib']:.0f} MiB, written {r['written_mib']:.0f} MiB; "
                  f"load {os.getloadavg()[0]:.2f}", flush=True)
            out_mib[name] = stored_mib(target)
            if i == 0 and not r["timeout"]:
                check_equal(src, target, kind)
            clean(target)
            clean(work / "t_rechunker.zarr")
    killed = [n for n, rs in res.items() if rs[0]["timeout"]]
    print(f"  load average after {os.getloadavg()[0]:.2f} ({time.strftime('%H:%M:%S', time.gmtime())} UTC); values "
          f"equal to the input for every tool{' that finished' if killed else ''} (checked in round 1)")
    print(f"  {'tool':<22} {'wall median (spread)':>24} {'CPU s':>7} {'peak RSS':>9} {'read':>9} {'written':>9} "
          f"{'out file':>9}")
    med = {}
    for name, rs in res.items():
        walls = [r["wall"] for r in rs]
        med[name] = statistics.median(walls)
        wall = (f"killed at {walls[0]:>7.1f} s" if rs[0]["timeout"] else
                f"{med[name]:>9.2f} s ({min(walls):.2f}-{max(walls):.2f})")
        print(f"  {name:<22} {wall:>24} "
              f"{statistics.median(r['cpu'] for r in rs):>7.2f} {max(r['rss_mib'] for r in rs):>6.0f} MiB "
              f"{statistics.median(r['read_mib'] for r in rs):>5.0f} MiB {statistics.median(r['written_mib'] for r in rs):>5.0f} MiB"
              f" {out_mib[name]:>5.0f} MiB")
    if "ccp repack" not in med:
        return
    c = med["ccp repack"]
    c_cpu = statistics.median(r["cpu"] for r in res["ccp repack"])
    for name in med:  # (none but ccp's rows with --ccp-only)
        if name != "ccp repack":
            at_least = "more than " if name in killed else ""
            print(f"  {name} / ccp repack: {at_least}{med[name] / c:.2f}x median wall, "
                  f"{at_least}{statistics.median(r['cpu'] for r in res[name]) / c_cpu:.2f}x median CPU")
    rss = max(r["rss_mib"] for r in res["ccp repack"])
    print(f"  ccp peak RSS {rss:.0f} MiB of the {MEMORY} budget: {'under' if rss * 2**20 <= MEMORY_BYTES else 'OVER'}")
    for p, r in zip(preds, res["ccp repack"]):
        d = next(x for x in p["datasets"] if x.get("method") != "copy")
        err = (p["predicted_seconds"] - r["wall"]) / r["wall"]
        print(f"  predicted {p['predicted_seconds']:.2f} s vs measured {r['wall']:.2f} s ({err:+.0%}); peak memory "
              f"predicted {p['peak_memory_bytes'] / 2**20:.0f} MiB vs {r['rss_mib']:.0f} MiB; "
              f"{d['source_chunk_reads']} source chunk reads of {d['source_chunks_stored']}; plan took {p['plan_seconds']:.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--jobs", default=",".join(JOBS))
    ap.add_argument("--work", type=Path, default=None, help="folder for the files (default: a temporary folder)")
    ap.add_argument("--no-rechunker", action="store_true")
    ap.add_argument("--tas", type=Path, default=None, metavar="FILE",
                    help="also the daily-map transpose of FILE's /tas to chunks 365x1x1 (make it with "
                         "examples/netcdf4_reader.py --file FILE --points 1); with --jobs '' only that")
    ap.add_argument("--tas-filters", default="", metavar="WORDS[,WORDS]",
                    help="with --tas, also the same transpose to these filters, each h5repack's filter words "
                         "joined by + (each one -f, for h5repack and ccp alike): e.g. GZIP=1,SHUF+GZIP=4+FLET")
    ap.add_argument("--no-bytecode", action="store_true",
                    help="run ccp in this shell's environment even if it forbids bytecode (ccp's modules then "
                         "compile on every start)")
    ap.add_argument("--deflate", default="", metavar="ENGINE[,ENGINE]",
                    help="also run ccp with these --deflate engines (zlib, libdeflate, isal), a row each")
    ap.add_argument("--ccp-only", action="store_true",
                    help="run ccp and its --plan only (no h5repack, nccopy, h5py or rechunker rows)")
    ap.add_argument("--wide-cols", type=int, default=2000,
                    help=f"columns of the wide jobs' input ({WIDE_ROWS} rows; the issue's file has 1,093,742)")
    ap.add_argument("--h5repack-bufsize", default="", metavar="MIB[,MIB]",
                    help="also run h5repack with its hyperslab buffer set to these sizes (H5TOOLS_BUFSIZE, MiB; "
                         "1.10's default is 32 MiB, used once a dataset is over 256 MiB), a row each")
    ap.add_argument("--timeout", type=float, default=0, metavar="SECONDS",
                    help="kill a tool's run after this long (0: never) and show what it had moved by then")
    args = ap.parse_args()
    try:
        import rechunker  # noqa: F401
        import zarr  # noqa: F401

        have_rechunker = not args.no_rechunker
    except ImportError:
        print("rechunker not installed (pip install -e '.[rechunk-bench]'): its row is left out")
        have_rechunker = False
    print(f"machine: {os.cpu_count()} CPUs")
    if args.work is not None:
        args.work.mkdir(parents=True, exist_ok=True)     # a fresh --work folder is made, not an error
    with tempfile.TemporaryDirectory(dir=args.work) as tmp:
        work = Path(tmp)
        src = work / "in.h5"
        jobs = [j for j in args.jobs.split(",") if j]
        for job in jobs:
            if job not in JOBS and job not in WIDE_JOBS:
                sys.exit(f"unknown job {job!r}: one of {', '.join([*JOBS, *WIDE_JOBS])}")
        if any(j in JOBS for j in jobs):
            make_input(src, args.rows)
        if any(j in WIDE_JOBS for j in jobs):    # kept in --work (outside the temporary folder) for the next run
            wide_src = make_wide_input((args.work or work) / f"wide_in_{WIDE_ROWS}x{args.wide_cols}.h5", args.wide_cols)
        for job in jobs:
            run_job(wide_src if job in WIDE_JOBS else src, work, job, args.rounds, have_rechunker,
                    tuple(e for e in args.deflate.split(",") if e), not args.no_bytecode, args.ccp_only, args.timeout,
                    tuple(int(x) for x in args.h5repack_bufsize.split(",") if x))
        if args.tas is not None:
            for job in ["tas", *(f"tas:{w}" for w in args.tas_filters.split(",") if w)]:
                run_job(args.tas.resolve(), work, job, args.rounds, False, (), not args.no_bytecode, args.ccp_only,
                        args.timeout)


if __name__ == "__main__":
    main()
