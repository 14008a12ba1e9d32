"""File objects that are not fsspec's, handed to ``h5py.File``: a file opened with ``open(path, "rb")`` is named by its
path and its reopens are one dataset; a BytesIO by its type. The cure code parses as Python and ``--verify`` never
prints nan (issue 23, F8)."""

import ast
import json
import subprocess
import sys
import textwrap

import pytest
from traced_program import ROOT, trace_program

PROGRAM = textwrap.dedent("""
    import io, sys, h5py, numpy as np
    path, how = sys.argv[1], "{how}"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(64 * 64.0).reshape(64, 64), chunks=(8, 64))
    raw = open(path, "rb").read()
    for rep in range(3):                        # a reopen per pass: the cache is lost each time
        fileobj = open(path, "rb") if how == "open" else io.BytesIO(raw)
        with h5py.File(fileobj, "r", rdcc_nbytes=1024) as f:
            d = f["x"]
            for i in range(64):
                d[i, :8]
        fileobj.close()
""")


def diagnose(trace, *extra):
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "diagnose", str(trace), *extra], capture_output=True,
                       text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=600)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("how", ["open", pytest.param("bytesio", marks=pytest.mark.slow)])
def test_a_file_object_is_named_by_its_path_and_its_cures_parse(tmp_path, how):
    out = trace_program(tmp_path, PROGRAM.replace("{how}", how))
    head = json.loads((out / "trace.json").read_text())
    name = str((tmp_path / "data.h5").resolve()) if how == "open" else "<BytesIO file object>"
    assert [d["file"] for d in head["datasets"]].count(name) == 1     # the program's writes made data.h5 by path
    diag = json.loads(diagnose(out, "--json"))
    (d,) = [d for d in diag["datasets"] if d["file"] == name]
    assert d["reopens"] == 2 and d["cures"]
    for cure in d["cures"]:
        if not cure["code"].startswith(("ccp ", "nccopy ")):       # shell commands are not Python
            ast.parse(cure["code"])
    text = diagnose(out, "--verify")
    assert "nan" not in text
    verified = [line for line in text.splitlines() if "verified:" in line]
    assert verified and ("not measured" in verified[0]) == (how == "bytesio"), verified
