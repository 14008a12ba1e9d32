"""The fault-injection suite, bounded: one trial of each fault, then the invariants.

benchmarks/fault_injection.py --trials N is the long version (random moments, many trials).
"""

import importlib.util
import random
from pathlib import Path

import pytest

from .conftest import ROOT

_spec = importlib.util.spec_from_file_location("fault_injection", ROOT / "benchmarks" / "fault_injection.py")
fi = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fi)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("faults")
    sweep = tmp / "faults.yaml"
    sweep.write_text(fi.SWEEP)
    truth, duration = fi.reference(sweep, tmp)
    return sweep, truth, duration


# one fault runs in make test; every fault in make test-slow (CI)
@pytest.mark.parametrize("kind", [k if k == "kill-worker" else pytest.param(k, marks=pytest.mark.slow) for k in fi.KINDS])
def test_fault_then_rerun_keeps_the_invariants(kind, reference, tmp_path):
    if kind.startswith("fill-") and not fi.Tmpfs.available():
        pytest.skip("a full disk is emulated with a tmpfs mount, which needs root")
    sweep, truth, duration = reference
    fs = fi.Tmpfs(tmp_path / "mnt")
    hang = max(truth) if kind in ("kill-parent", "sigint") else None   # the fault always lands
    try:
        result = fi.run_trial(kind, random.Random(7), tmp_path / "trial", sweep, truth, duration, fs, hang_cell=hang)
    finally:
        fs.close()
    assert result["violations"] == [], result
    assert not (hang and result.get("missed")), result


@pytest.mark.slow   # make test-slow (CI)
def test_the_invariants_catch_a_smaller_count(reference, tmp_path):
    """The checker itself: a run whose raw_reads were cut is caught (so the suite can fail)."""
    import pandas as pd

    sweep, truth, _ = reference
    out, work = tmp_path / "out", tmp_path / "work"
    import subprocess
    subprocess.run(fi.ccp_args(sweep, out, work), capture_output=True, env=fi._env(), timeout=600, check=True)
    assert fi.check_invariants(out, work, truth, {sweep: fi.sha(sweep)}) == []
    df = pd.read_csv(out / "cells.csv")
    df.loc[0, "raw_reads"] = int(df.loc[0, "raw_reads"]) - 1
    df.to_csv(out / "cells.csv", index=False)
    (Path(out) / "requests.parquet" / "stray.parquet").write_bytes(b"")
    found = fi.check_invariants(out, work, truth, {sweep: fi.sha(sweep)})
    assert any("smaller than the truth" in v for v in found) and any("do not match" in v for v in found)
