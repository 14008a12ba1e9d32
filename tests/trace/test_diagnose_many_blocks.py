"""``ccp diagnose`` of calls selecting thousands of rows or points (issue 23, breaker6 F4): a list index of 5,001 rows
(a data loader's batch) or 5,001 points is kept exact, its list written by the recorder as runs in arithmetic
progression, and the model's chunk loads equal the raw reads of the program itself under HDF5's log driver and those
``--verify`` measures (diagnose --verify as the CLI runs it, in this process). A call too large to list even so (140,001 scattered points, over the recorder's 131,072 values)
is its bounding box: diagnose says so before any count, prints the counts as "at most", and sizes no chunk cache on
them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from ccp.trace.diagnose import diagnose, format_diagnosis
from ccp.workload.tracefile import load_trace

ROOT = Path(__file__).resolve().parents[2]

# argv: file, what, [log file: read untraced under the log driver, print its raw reads]
PROGRAM = """
import sys
import h5py
import numpy as np
from h5py import h5f, h5s

path, what = sys.argv[1], sys.argv[2]
if len(sys.argv) > 3:
    from ccp.hdf5.plists import log_fapl
    fapl = log_fapl(sys.argv[3])
    fapl.set_cache(0, 521, 1024, 0.75)
    f = h5py.File(h5f.open(path.encode(), h5f.ACC_RDONLY, fapl))
else:
    f = h5py.File(path, "r", rdcc_nbytes=1024, rdcc_nslots=521, rdcc_w0=0.75)
w = f["w"]
n = w.shape[0]


def points(pts):
    space = w.id.get_space()
    space.select_elements(np.asarray(pts, "u8").reshape(-1, 1))
    out = np.empty(len(pts), w.dtype)
    w.id.read(h5s.create_simple((len(pts),)), space, out)


for i in range(6):
    if what == "list":        # 5,001 rows: 5,000 in the first chunk, one in the last
        w[list(range(0, 10000, 2)) + [n - 2]]
    elif what == "points":
        points(list(range(i, 10000, 2)) + [n - 2])
    elif what == "scattered":  # 140,001 points in no arithmetic progression: the first 7 chunks and the last
        rng = np.random.default_rng(i)
        points(np.sort(rng.choice(280000, 140000, replace=False)).tolist() + [n - 1])
f.close()
if len(sys.argv) > 3:
    from pathlib import Path
    from ccp.measurement import iolog
    print(iolog.totals(iolog.parse_log(Path(sys.argv[3])))["raw_reads"])
"""


def _run(tmp_path, what: str, size: int, verify: bool = True) -> tuple[dict, str, int]:
    """(diagnose [--verify] --json's dataset, diagnose's text, the program's own raw reads untraced)."""
    path, program = tmp_path / "f.h5", tmp_path / "program.py"
    with h5py.File(path, "w") as f:      # gzip chunks bigger than the cache: a chunk load is one raw read
        f.create_dataset("w", data=np.arange(size, dtype="<f8"), chunks=(40000,), compression="gzip")
    program.write_text(PROGRAM)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")} | {"PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, str(program), str(path), what, str(tmp_path / "log.txt")],
                       capture_output=True, text=True, env=env, timeout=600, check=False)
    assert r.returncode == 0, r.stderr
    own = int(r.stdout.split()[-1])
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", str(tmp_path / "trace"), "--", sys.executable,
                        str(program), str(path), what], capture_output=True, text=True, env=env, timeout=600,
                       check=False)
    assert r.returncode == 0, r.stderr
    diag = diagnose(load_trace(tmp_path / "trace"), verify=verify)
    d = next(x for x in diag["datasets"] if x["dataset"] == "/w")
    return d, format_diagnosis(diag), own


@pytest.mark.parametrize("what, verify", [("list", False), pytest.param("list", True, marks=pytest.mark.slow),
                                          pytest.param("points", True, marks=pytest.mark.slow)],
                         ids=["list", "list-verified", "points-verified"])
def test_thousands_of_rows_or_points_are_modelled_exactly(tmp_path, what, verify):
    """make test keeps the model against the program's own reads; --verify's (25 s of measuring) in make test-slow."""
    d, text, own = _run(tmp_path, what, 400000, verify)
    # each call: the first chunk and the last, 2 loads; 6 calls
    assert d["chunk_loads"] == own == 12, (d["chunk_loads"], own)
    if verify:
        assert d["verified"]["before_io"]["raw_reads"] == own
    assert not d["approximate_calls"] and "at most" not in text and "bounding box" not in text


@pytest.mark.slow
def test_a_call_too_large_to_list_is_said_an_upper_bound(tmp_path):
    d, text, own = _run(tmp_path, "scattered", 400000)
    t = load_trace(tmp_path / "trace").table
    listed = t.loc[t["sel"] == "points", "points"].tolist()
    assert len(listed) == 6 and not any(isinstance(v, (list, np.ndarray)) for v in listed), \
        "the recorder listed a call over its limit"
    # the bounding box spans all 10 chunks; the program read its 7 + 1
    assert own == 6 * 8 and d["approximate_calls"] == 6 and d["chunk_loads"] == 6 * 10
    lines = text.splitlines()
    note = next(i for i, line in enumerate(lines) if "known only by their bounding box" in line)
    model = next(i for i, line in enumerate(lines) if "model over the real sequence" in line)
    assert note < model and "at most 60 chunk loads" in lines[model]
    assert not any(c.get("apply", {}).get("kind") == "cache" for c in d["cures"])
    assert all(c["speedup"] is None for c in d["cures"])

