"""A program that reads HDF5 through PyTables or pandas' HDFStore is told in one line that those reads are not
traced, by ``ccp trace`` and by ``ccp diagnose``, never just "no h5py calls" (issue 23, F5)."""

import subprocess
import sys
import textwrap

import pytest
from traced_program import ROOT

pytest.importorskip("tables")

PROGRAMS = {
    "pytables": """
        import sys, tables, numpy as np
        with tables.open_file(sys.argv[1], "w") as f:
            f.create_carray("/", "x", obj=np.arange(1000.0), chunkshape=(100,))
        with tables.open_file(sys.argv[1]) as f:
            s = sum(float(f.root.x[i]) for i in range(0, 1000, 50))
    """,
    "hdfstore": """
        import sys, pandas as pd, numpy as np
        pd.DataFrame({"a": np.arange(100.0)}).to_hdf(sys.argv[1], key="t", format="table")
        with pd.HDFStore(sys.argv[1], "r") as store:
            store.select("t", where="index < 10")
    """,
    "h5py": """
        import sys, h5py, numpy as np
        with h5py.File(sys.argv[1], "w") as f:
            f.create_dataset("x", data=np.arange(100.0))
    """,
}


def run(*args):
    return subprocess.run([sys.executable, "-m", "ccp.cli", *map(str, args)], capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=600)


@pytest.mark.parametrize("program,untraced", [("pytables", True), ("hdfstore", True), ("h5py", False)],
                         ids=["pytables", "hdfstore", "h5py-only"])
def test_reads_through_pytables_are_said_to_be_untraced(tmp_path, program, untraced):
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(PROGRAMS[program]))
    t = run("trace", "-o", tmp_path / "trace", "--", sys.executable, prog, tmp_path / "data.h5")
    assert t.returncode == 0, t.stderr
    d = run("diagnose", tmp_path / "trace")
    assert d.returncode == 0, d.stderr
    for text in (t.stderr, d.stdout):
        said = [line for line in text.splitlines() if "not traced" in line]
        if untraced:
            assert len(said) == 1 and "PyTables" in said[0] and "HDFStore" in said[0], text
        else:
            assert not said, text
