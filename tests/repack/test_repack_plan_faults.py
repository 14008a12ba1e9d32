"""A fault while deciding a dataset's layout never shows Python's own words (breaker4's F2 showed
"'NoneType' object has no attribute 'spec'"): named in -l/-f it is one line and exit 2, else a note."""

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from ccp.repack import decide


def cli(*args):
    from ccp.cli import main

    return CliRunner().invoke(main, ["repack", *map(str, args)])


@pytest.fixture
def faulty_planner(monkeypatch):
    real = decide._Planner.decide

    def fails_on_x(self, path, key, ds, options=True):
        if path == "/x" and options:
            raise AttributeError("'NoneType' object has no attribute 'spec'")
        return real(self, path, key, ds, options)

    monkeypatch.setattr(decide._Planner, "decide", fails_on_x)


CASES = {
    "named-layout": (["-l", "/x:CHUNK=5"], 2),
    "named-filter": (["-f", "/x:GZIP=1"], 2),
    "all-datasets": (["-f", "GZIP=1"], 0),
}


@pytest.mark.parametrize("case", CASES)
def test_planning_fault_is_worded_for_the_user(tmp_path, faulty_planner, case):
    args, code = CASES[case]
    src, out = tmp_path / "in.h5", tmp_path / "out.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("x", data=np.arange(20.0), chunks=(10,))
    r = cli(*args, src, out)
    assert r.exit_code == code, r.output
    assert "NoneType" not in r.output and "AttributeError" not in r.output
    assert "/x" in r.output and "a fault in ccp" in r.output
    if code == 2:
        assert len([line for line in r.output.splitlines() if line.strip()]) == 1 and not out.exists()
