"""Ctrl-C and SIGTERM in the middle of ``ccp repack`` (issue 21): the temporary file is removed and the
message says what was kept: nothing, or OUT as it was; IN untouched. (Random moments, kill -9 and full
disks: benchmarks/fault_injection_repack.py.)"""

import hashlib
import os
import signal

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from ccp.repack import tree
from ccp.repack.command import repack_command


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@pytest.fixture
def src(tmp_path):
    path = tmp_path / "in.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("a", data=np.arange(1000.0), chunks=(100,))
        f.create_dataset("b", data=np.arange(1000), chunks=(100,))
    return path


def _ctrl_c(*args, **kwargs):
    raise KeyboardInterrupt


def _sigterm(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGTERM)     # the command's handler turns it into an exit that unwinds


@pytest.mark.parametrize(("stop", "how", "code"), [(_ctrl_c, "interrupted", 130), (_sigterm, "terminated", 143)],
                         ids=["ctrl-c", "sigterm"])
@pytest.mark.parametrize("out_exists", [False, True], ids=["new-out", "existing-out"])
def test_stopped_mid_dataset_keeps_nothing_and_says_so(src, tmp_path, monkeypatch, stop, how, code, out_exists):
    out = tmp_path / "out.h5"
    if out_exists:
        out.write_bytes(b"an older copy")
    before = digest(src)
    monkeypatch.setattr(tree._Repacker, "_repack_dataset", stop)
    result = CliRunner().invoke(repack_command, ["-f", "GZIP=6", str(src), str(out)])
    assert result.exit_code == code, result.output
    line = result.output.strip().splitlines()[-1]
    assert line.startswith(f"ccp: {how}: nothing written") and "in.h5 untouched" in line, line
    assert ("left as it was" in line) == out_exists, line
    assert digest(src) == before
    assert sorted(os.listdir(tmp_path)) == sorted(["in.h5"] + (["out.h5"] if out_exists else []))
    if out_exists:
        assert out.read_bytes() == b"an older copy"
