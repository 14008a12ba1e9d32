"""`ccp from-darshan` on the real logs shipped with pydarshan."""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

darshan = pytest.importorskip("darshan")
LOGS = Path(darshan.__file__).parent / "examples" / "example_logs"
ROOT = Path(__file__).resolve().parents[2]


def ccp(*args):
    return subprocess.run([sys.executable, "-m", "ccp.cli", *map(str, args)], check=False, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300)


def test_h5d_records_become_a_sweep(tmp_path):
    from ccp.config.sweep import parse_sweep

    out = tmp_path / "sweep.yaml"
    r = ccp("from-darshan", LOGS / "ior_hdf5_example.darshan", "-o", out, "--file", tmp_path / "mine.h5")
    assert r.returncode == 0, r.stderr
    raw = yaml.safe_load(out.read_text())
    assert raw["dataset"] == {"file": str(tmp_path / "mine.h5"), "path": "/Dataset-0000.0000"}
    # IOR wrote and read 32768-element blocks, 8 times per rank on 3 ranks (the log's own counters)
    assert raw["matrix"]["access"] == [{"op": "read", "block": [32768]}]
    assert "x 24 in the log" in out.read_text()
    parse_sweep(raw, tmp_path)          # a valid sweep file


@pytest.mark.parametrize("log,message", [
    (LOGS / "example.darshan", "no H5D records"),
    (Path("/etc/hostname"), "not a Darshan log"),
    (Path("/no/such.darshan"), "no such file"),
], ids=["no-h5d-module", "not-a-log", "missing"])
def test_unusable_logs_get_one_line(tmp_path, log, message):
    r = ccp("from-darshan", log, "-o", tmp_path / "s.yaml")
    assert r.returncode == 2
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "s.yaml").exists()
