"""Synthetic run folders that follow ccp/store/schema.py exactly, and a headless-Chromium page check.

The synthetic run is the quickstart's CrIS trap in miniature, with numbers shaped like the real thing: a
gzip layout whose chunk is larger than the small cache is ~1000x slower when read by rows, plus a write
cell, a failed cell, an unstable cell, a cell whose requests are too short to time, an extrapolated cell and
one cell with many file operations (subsampled in the plot).
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from ccp.store.schema import CELL_COLUMNS, IO_COLUMNS, REQUEST_COLUMNS, SCHEMA_VERSION

SHAPE = (8, 30, 9, 100)
ITEMSIZE = 4
LOGICAL = int(np.prod(SHAPE)) * ITEMSIZE
KIB = 1024

TABLES = [
    {"title": "Table 5 in miniature", "rows": ["file", "cache", "chunks", "access", "time", "raw_reads", "chunk_loads"],
     "columns": [{"chunks": "4x30x9x100", "filters": "gzip:6", "cache": "256KiB", "block": "1x1x1x100"},
                 {"chunks": "4x30x9x100", "filters": "gzip:6", "cache": "1MiB", "block": "1x1x1x100"}],
     "labels": ["small cache", "large cache"],
     "reference": [{"time_s": 345}, {"time": "0.37s"}],
     "note": "The paper's times are approximate."},
    {"title": "Ambiguous and missing columns", "rows": ["time", "raw_reads"],
     "columns": [{"cache": "1MiB", "block": "4x30x9x100"}, {"chunks": "2x30x9x100"}]},
]


def _dims(s: str) -> list[int]:
    return [int(d) for d in s.split("x")]


def _requests(block: str) -> int:
    return int(np.prod([-(-s // b) for s, b in zip(SHAPE, _dims(block))]))


def _cell(chunks, filters, cache, block, op="read", seed=0) -> dict:
    """One cell row with plausible numbers: raw reads from a tiny chunk-cache model, times from them."""
    chunk = _dims(chunks)
    chunk_bytes = int(np.prod(chunk)) * ITEMSIZE
    nchunks = int(np.prod([-(-s // c) for s, c in zip(SHAPE, chunk)]))
    requests = _requests(block)
    whole = all(b % c == 0 for b, c in zip(_dims(block), chunk))
    gz = filters != "none"
    stored_chunk = int(chunk_bytes / 1.08) if gz else chunk_bytes
    if whole:
        raw_reads, loads = requests * max(1, int(np.prod([b // c for b, c in zip(_dims(block), chunk)]))), nchunks
    elif chunk_bytes <= cache:
        raw_reads, loads = nchunks, nchunks
    else:
        raw_reads, loads = requests, requests if gz else 0
    per_read = 4e-3 if gz else 3e-6
    time_s = 1e-3 + raw_reads * per_read * (chunk_bytes / 432_000 if gz else 1) + requests * 1e-6
    rng = np.random.default_rng(seed)
    passes = time_s * (1 + rng.uniform(0, 0.05, 3))
    row = {c: np.nan for c in CELL_COLUMNS}
    row.update(
        schema_version=SCHEMA_VERSION, cell_id=hashlib.sha1(repr((chunks, filters, cache, block, op)).encode()).hexdigest()[:12],
        chunks=chunks, filters=filters, cache_nbytes=cache, cache_nslots=521, cache_w0=0.75, op=op, block=block,
        order="0x1x2x3", random=0, requests=requests, repeats=3, cold=True,
        time_s=float(np.median(passes)), time_s_min=float(passes.min()), time_s_max=float(passes.max()),
        first_request_s=float(time_s / requests * (1 if raw_reads >= requests else 30)),
        request_s_median=float(time_s / requests), open_s=2e-4, close_s=1e-4,
        raw_reads=raw_reads if op == "read" else 0, raw_read_bytes=raw_reads * stored_chunk if op == "read" else 0,
        raw_writes=raw_reads if op == "write" else 0, raw_write_bytes=raw_reads * stored_chunk if op == "write" else 0,
        meta_reads=17, meta_read_bytes=9960, meta_writes=0 if op == "read" else 3, meta_write_bytes=0 if op == "read" else 1200,
        chunk_bytes=chunk_bytes, nchunks=nchunks, file_bytes=nchunks * stored_chunk + 7120, storage_bytes=nchunks * stored_chunk,
        logical_bytes=LOGICAL, compression_ratio=LOGICAL / (nchunks * stored_chunk), repack_s=np.nan,
        spread=float(passes.max() / passes.min()), flags="", traps="", status="ok", fraction_measured=1.0,
        dataset_file=f"/tmp/work/quick-{chunks}-{filters}.h5", host="testhost", started_at="2026-11-22T12:00:00+00:00",
        elapsed_s=float(time_s * 4.5), cpus=2, load_max=0.4, cpu_ratio=0.95,
        predicted_requests=requests, predicted_raw_reads=raw_reads if op == "read" else 0,
        predicted_raw_read_bytes=raw_reads * stored_chunk if op == "read" else 0,
        predicted_raw_writes=raw_reads if op == "write" else 0, predicted_raw_write_bytes=raw_reads * stored_chunk if op == "write" else 0,
        predicted_chunk_loads=loads, predicted_chunk_hits=max(0, requests - loads), predicted_evictions=max(0, loads - nchunks),
        predicted_time_s=float(time_s * 0.9),
    )
    if gz and chunk_bytes > cache and not whole:
        row["traps"] = (f"chunk larger than the cache: a {chunks} chunk is {chunk_bytes // KIB} KiB, the cache {cache // KIB} KiB; "
                        "every request that covers part of a chunk decompresses the whole chunk again")
    return row


def build_cells(quick: bool = False) -> pd.DataFrame:
    rows = []
    for chunks in ("4x30x9x100", "1x30x9x100"):
        for filters in ("none", "gzip:6"):
            for cache in (256 * KIB, 1024 * KIB):
                for block in ("1x1x1x100", "4x30x9x100"):
                    if chunks == "1x30x9x100" and block == "4x30x9x100":
                        continue
                    rows.append(_cell(chunks, filters, cache, block, seed=len(rows)))
    rows.append(_cell("4x30x9x100", "none", 1024 * KIB, "1x30x9x100", op="write", seed=99))
    cells = pd.DataFrame(rows, columns=CELL_COLUMNS)
    # an unstable cell, a cell whose requests are too short to time, an extrapolated one
    unstable = (cells["chunks"] == "1x30x9x100") & (cells["filters"] == "none") & (cells["cache_nbytes"] == 256 * KIB)
    cells.loc[unstable, ["time_s_max", "spread", "flags"]] = [cells.loc[unstable, "time_s_min"].iloc[0] * 2.4, 2.4, "unstable"]
    short = (cells["chunks"] == "4x30x9x100") & (cells["filters"] == "none") & (cells["block"] == "1x1x1x100") & \
        (cells["cache_nbytes"] == 1024 * KIB)
    cells.loc[short, ["request_s_median", "flags"]] = [4e-7, "short"]
    extra = (cells["chunks"] == "1x30x9x100") & (cells["filters"] == "gzip:6") & (cells["cache_nbytes"] == 1024 * KIB)
    cells.loc[extra, ["status", "fraction_measured", "flags"]] = ["extrapolated", 0.25, "partial"]
    failed = _cell("4x30x9x100", "gzip:6", 64 * KIB, "1x1x1x100", seed=7)
    for k in CELL_COLUMNS[CELL_COLUMNS.index("time_s"):]:
        if k not in ("status", "host", "started_at", "dataset_file"):
            failed[k] = np.nan if not isinstance(failed[k], str) else ""
    failed["status"] = "failed: MemoryError in H5Dread (cell worker exited with status -9)"
    cells = pd.concat([cells, pd.DataFrame([failed], columns=CELL_COLUMNS)], ignore_index=True)
    if quick:   # no counted pass: every count and prediction from it is missing
        for k in ("raw_reads", "raw_read_bytes", "raw_writes", "raw_write_bytes", "meta_reads", "meta_read_bytes",
                  "meta_writes", "meta_write_bytes"):
            cells[k] = np.nan
        cells["flags"] = ""
    for k in ("requests", "repeats", "random", "cache_nbytes", "cache_nslots", "chunk_bytes", "nchunks"):
        cells[k] = cells[k].astype("Int64")
    return cells


def _request_part(cell: pd.Series, counted: bool) -> pd.DataFrame:
    n = int(cell["requests"])
    per = float(cell["request_s_median"])
    rng = np.random.default_rng(int(cell["cell_id"], 16) % 2**32)
    frames = []
    for p in (list(range(int(cell["repeats"]))) + ([-1] if counted else [])):
        t = per * rng.lognormal(0, 0.2, n)
        t[0] = cell["first_request_s"]
        reads = np.full(n, np.nan) if p >= 0 else np.full(n, float(cell["raw_reads"]) / n)
        frames.append(pd.DataFrame({
            "pass": p, "phase": ["open"] + ["request"] * n + ["close"], "request": [-1] + list(range(n)) + [-1],
            "time_s": np.r_[cell["open_s"], t, cell["close_s"]], "raw_reads": np.r_[np.nan, reads, np.nan]}))
    df = pd.concat(frames, ignore_index=True)
    # each timed pass's machine state on its open row (schema 4): a quiet machine, the pass 95% on a CPU
    opens = (df["phase"] == "open") & (df["pass"] >= 0)
    df["pass_wall_s"] = np.where(opens, df.groupby("pass")["time_s"].transform("sum") * 1.02, np.nan)
    df["pass_cpu_s"] = np.where(opens, df["pass_wall_s"] * 0.95, np.nan)
    df["pass_load"] = np.where(opens, 0.4, np.nan)
    # timed_cpu_s (schema 5) left empty: these runs are judged on the whole pass's CPU time, as a run before it;
    # tests/report/test_verdict_timed_cpu.py writes it
    df["schema_version"] = SCHEMA_VERSION
    df["cell_id"] = cell["cell_id"]
    df["start"] = "2026-11-22T12:00:00+00:00"
    for k in REQUEST_COLUMNS:
        if k not in df:
            df[k] = np.nan
    counts = [k for k in REQUEST_COLUMNS if k.startswith(("raw_", "meta_"))]
    df[counts] = df[counts].round().astype("Int64")
    return df[REQUEST_COLUMNS]


def _io_part(cell: pd.Series, many_operations: int = 0) -> pd.DataFrame:
    """Metadata reads at the start, then one raw op per raw read/write, offsets walking chunk by chunk."""
    nraw = int(many_operations or (cell["raw_reads"] + cell["raw_writes"]))
    stored = int(cell["storage_bytes"] / max(int(cell["nchunks"]), 1))   # contiguous: one extent
    kind = "write" if cell["op"] == "write" else "read"
    meta = pd.DataFrame({"phase": "open", "request": -1, "kind": "read",
                         "mem_type": ["super"] * 3 + ["ohdr"] * 6 + ["btree"] * 8, "offset": np.arange(17) * 48, "size": 48})
    idx = np.arange(nraw)
    chunk_of = (idx * max(int(cell["nchunks"]), 1) // max(nraw, 1)).astype(np.int64)
    raw = pd.DataFrame({"phase": "request", "request": idx * int(cell["requests"]) // max(nraw, 1), "kind": kind, "mem_type": "draw",
                        "offset": 7120 + chunk_of * stored, "size": stored})
    tail = pd.DataFrame({"phase": "close", "request": -1, "kind": "write" if kind == "write" else "read",
                         "mem_type": ["ohdr", "super"], "offset": [96, 0], "size": [512, 96]})
    df = pd.concat([meta, raw, tail], ignore_index=True)
    df["seq"] = np.arange(len(df))
    df["t_s"] = df["seq"] * 1e-6
    df["schema_version"] = SCHEMA_VERSION
    df["cell_id"] = cell["cell_id"]
    return df[IO_COLUMNS]


SWEEP = {
    "name": "synthetic", "dataset": {"path": "/data", "generate": {"shape": list(SHAPE), "dtype": ">f4", "data": "normal", "seed": 0,
                                                                   "maxshape": None, "fillvalue": None}},
    "matrix": {"chunks": ["4x30x9x100", "1x30x9x100"], "filters": ["none", "gzip:6"],
               "cache": [{"nbytes": 65536, "nslots": 521, "w0": 0.75}, {"nbytes": 262144, "nslots": 521, "w0": 0.75},
                         {"nbytes": 1048576, "nslots": 521, "w0": 0.75}],
               "access": [{"op": "read", "block": [1, 1, 1, 100], "order": None, "random": 0, "seed": 0},
                          {"op": "read", "block": [4, 30, 9, 100], "order": None, "random": 0, "seed": 0},
                          {"op": "write", "block": [1, 30, 9, 100], "order": None, "random": 0, "seed": 0}]},
    "exclude": [], "repeats": 3, "cold": True, "time_budget": None, "quick": False,
}
ENV = {"time": "2026-11-22T12:00:00+00:00", "host": "testhost", "cpu": "Test CPU", "cores": 2, "memory_bytes": 8 * 1024**3,
       "kernel": "Linux 6.1", "filesystem": "ext4 on /dev/test (/)", "python": "3.11.7", "h5py": "3.16.0", "hdf5": "2.0.0",
       "numpy": "2.4.6", "ccp": "0.1.0", "hdf5plugin": "7.1.0",
       "hdf5_default_chunk_cache": {"dapl": {"nslots": 8191, "nbytes": 8388608, "w0": 0.75}},
       "git_commit": "0123456789abcdef0123456789abcdef01234567", "git_dirty": False}


def write_run(folder: Path, *, tables=True, quick: bool = False, many_operations: int = 60_000, cells: pd.DataFrame | None = None,
              name: str = "synthetic") -> Path:
    """A run folder as the engine writes it (schema.py): sweep.yaml, env.json, cells.csv/.parquet, requests/ and io/ parts."""
    folder.mkdir(parents=True, exist_ok=True)
    sweep = dict(SWEEP, name=name, quick=quick)
    if tables:
        sweep["tables"] = TABLES if tables is True else tables
    if quick:
        sweep["repeats"], sweep["cold"] = 1, False
    (folder / "sweep.yaml").write_text(yaml.safe_dump(sweep, sort_keys=False))
    (folder / "env.json").write_text(json.dumps(ENV, indent=2))
    (folder / "run.json").write_text(json.dumps({"schema_version": SCHEMA_VERSION, "sweep": name,
                                                 "dataset_identity": "generate:synthetic", "settings": {}}))
    cells = build_cells(quick) if cells is None else cells
    cells.to_csv(folder / "cells.csv", index=False)
    cells.to_parquet(folder / "cells.parquet", index=False)
    (folder / "requests.parquet").mkdir(exist_ok=True)
    if not quick:
        (folder / "io.parquet").mkdir(exist_ok=True)
    slowest = cells.loc[cells["time_s"].astype(float).idxmax(), "cell_id"] if cells["time_s"].notna().any() else None
    for _, cell in cells.iterrows():
        if not str(cell["status"]).startswith(("ok", "extrapolated")):
            continue
        if quick:
            cell = cell.copy()
            cell["repeats"] = 1
        _request_part(cell, counted=not quick).to_parquet(folder / "requests.parquet" / f"{cell['cell_id']}.parquet", index=False)
        if not quick:
            _io_part(cell, many_operations if cell["cell_id"] == slowest else 0).to_parquet(
                folder / "io.parquet" / f"{cell['cell_id']}.parquet", index=False)
    return folder


@pytest.fixture
def make_run(tmp_path):
    """make_run(name='run', **options) -> a synthetic run folder under tmp_path."""

    def _make(name: str = "run", **kw) -> Path:
        return write_run(tmp_path / name, **kw)

    return _make


@pytest.fixture
def undrawn_figures(monkeypatch):
    """The report's figures built (their data and plotting code run) but not drawn into PNG files: drawing is most of
    a report's time (8 figures, ~2 s each), and a test of the page's words reads none of them (the page's images
    are test_report_page.py's, on a report drawn whole)."""
    import matplotlib.pyplot as plt

    from ccp.report import plots

    def undrawn(fig, out, name):
        plt.close(fig)
        return name

    monkeypatch.setattr(plots, "_save", undrawn)


@pytest.fixture(scope="session")
def synthetic_report(tmp_path_factory):
    """One synthetic run with its report written (module-wide: the report is read by many tests)."""
    from ccp.report import write_report

    run = write_run(tmp_path_factory.mktemp("synthetic") / "run")
    page = write_report(run)
    return run, page.read_text()


# ---------------------------------------------------------------------------------------------- the browser

_PROBE = """<script>
(function () {
  const errors = [];
  window.addEventListener('error', e => {
    const t = e.target;
    errors.push(t && t !== window ? 'failed to load ' + (t.src || t.href || t.tagName) : 'error ' + e.message);
  }, true);
  const origError = console.error;
  console.error = function (...a) { errors.push('console.error ' + a.join(' ')); origError.apply(console, a); };
  window.addEventListener('load', () => {
    const imgs = [...document.images];
    const broken = imgs.filter(i => !i.complete || i.naturalWidth === 0).map(i => i.getAttribute('src'));
    const remote = performance.getEntriesByType('resource').map(r => r.name).filter(n => !n.startsWith('file:') && !n.startsWith('data:'));
    const out = {images: imgs.length, broken: broken, errors: errors, remote: remote,
                 widths: imgs.map(i => i.naturalWidth),
                 sections: [...document.querySelectorAll('h2')].map(h => h.id),
                 headlines: [...document.querySelectorAll('p.headline')].map(p => p.parentElement.innerText),
                 visible_text: document.body.innerText,
                 folded: [...document.querySelectorAll('details:not([open]) summary')].map(s => s.innerText)};
    const pre = document.createElement('pre');
    pre.id = 'ccp-probe';
    pre.textContent = 'CCP-PROBE ' + JSON.stringify(out) + ' END-PROBE';
    document.body.appendChild(pre);
  });
})();
</script>"""

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--virtual-time-budget=10000"]


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture
def open_in_chromium(tmp_path):
    """Open a page in headless Chromium; returns what an in-page probe saw (images, broken, errors, remote loads)."""
    chromium = chromium_path()
    if chromium is None:
        pytest.skip("chromium is not installed; CI installs it with: apt-get install -y chromium")

    def _open(page: Path) -> dict:
        probe = page.with_name(f".probe-{page.name}")
        text = page.read_text()
        probe.write_text(text.replace("<head>", "<head>" + _PROBE, 1))
        try:
            out = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}", "--dump-dom",
                                  probe.as_uri()], capture_output=True, text=True, timeout=120)
        finally:
            probe.unlink()
        m = re.search(r'<pre id="ccp-probe">CCP-PROBE (.*?) END-PROBE</pre>', out.stdout, re.DOTALL)
        assert m, f"{page}: the page did not load in Chromium: {out.stderr[-2000:]}"
        return json.loads(html.unescape(m.group(1)))

    return _open


def slow_down(run: Path, factor: float, where=None, noise: float = 0.0, cpu: bool = True) -> Path:
    """Make a synthetic run consistently ``factor`` times slower (every cell, or the cells ``where(cells)`` picks): the
    times in cells.csv/.parquet and every request and pass in requests.parquet, as a real slower run would record.
    With ``noise``, every request is drawn again (x lognormal(0, noise)) and each cell's passes move by up to 4%: a rerun.
    ``cpu``: the passes' CPU time moves too (slower code); without, only the wall time does (a busy machine: the
    process waited for a CPU), and the cells are flagged contended at load 7.9 on 2 CPUs."""
    rng = np.random.default_rng(1)
    cells = pd.read_parquet(run / "cells.parquet")
    pick = where(cells) if where is not None else pd.Series(True, index=cells.index)
    jitter = 1 + rng.uniform(-0.04, 0.04, len(cells)) if noise else np.ones(len(cells))
    for k in ("time_s", "time_s_min", "time_s_max", "first_request_s", "request_s_median", "open_s", "close_s"):
        cells.loc[pick, k] = cells.loc[pick, k] * factor * jitter[pick.to_numpy()]
    if not cpu:
        cells.loc[pick, "flags"] = [",".join([f for f in str(v or "").split(",") if f] + ["contended"])
                                    for v in cells.loc[pick, "flags"]]
        cells.loc[pick, "load_max"], cells.loc[pick, "cpus"] = 7.9, 2
    cells.to_parquet(run / "cells.parquet", index=False)
    cells.to_csv(run / "cells.csv", index=False)
    for cid in cells.loc[pick, "cell_id"]:
        part = run / "requests.parquet" / f"{cid}.parquet"
        if part.exists():
            req = pd.read_parquet(part)
            req["time_s"] = req["time_s"] * factor * (rng.lognormal(0, noise, len(req)) if noise else 1.0)
            req["pass_wall_s"] = req["pass_wall_s"] * factor
            if cpu:
                req["pass_cpu_s"] = req["pass_cpu_s"] * factor
            req.to_parquet(part, index=False)
    return run
