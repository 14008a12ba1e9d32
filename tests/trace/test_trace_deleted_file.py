"""A program that deletes its file mid-run: trace.json lists the file once, by its real path, and every row names it
so (h5py's name for it, relative, was all that was left once it was gone: it was listed twice). Issue 23."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = textwrap.dedent("""
    import os, sys, h5py, numpy as np
    os.chdir(sys.argv[1])
    with h5py.File("d.h5", "w") as f:
        f.create_dataset("x", data=np.arange(100.0), chunks=(10,))
    f = h5py.File("d.h5", "r")
    f["x"][1]
    os.remove("d.h5")
    f["x"][2]                       # a new handle, registered after the file is gone
    d = f["x"]
    d[3]
    if sys.argv[2] == "chdir":      # h5py's relative name now points nowhere: the path it had stands
        os.mkdir("elsewhere")
        os.chdir("elsewhere")
        d[4]
    f.close()
""")


@pytest.mark.parametrize("then", ["stay", "chdir"])
def test_a_file_deleted_mid_run_is_listed_once(tmp_path, then):
    (tmp_path / "p.py").write_text(PROGRAM)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")}
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", str(tmp_path / "t"), "--", sys.executable,
                        str(tmp_path / "p.py"), str(tmp_path), then], capture_output=True, text=True, timeout=300,
                       env={**env, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    head = json.loads((tmp_path / "t" / "trace.json").read_text())
    real = os.path.realpath(tmp_path / "d.h5")
    assert [f["path"] for f in head["files"]] == [real] and head["files"][0]["exists"] is False
    assert [d["file"] for d in head["datasets"]] == [real]
    names = pd.read_parquet(tmp_path / "t" / "calls.parquet")["file"].dropna().unique().tolist()
    assert names == [real]
