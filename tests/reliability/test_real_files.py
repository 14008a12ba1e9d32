"""Sweeps on files nobody here wrote (PyTables' 46 test files): `ccp check` says valid or one line, never an
internal error; every dataset it calls valid, `ccp run --quick` measures."""

from pathlib import Path

import h5py
import pandas as pd
import pytest

TABLES = Path(h5py.__file__).resolve().parents[1] / "tables" / "tests"


def datasets():
    out = []
    for f in sorted(TABLES.glob("*.h5")):
        try:
            with h5py.File(f, "r") as h:
                names = []
                h.visititems(lambda n, o, names=names: names.append("/" + n) if isinstance(o, h5py.Dataset) else None)
        except OSError:
            continue
        out += [(f, n) for n in names[:2]]
    return out


CASES = datasets()


@pytest.mark.skipif(not CASES, reason="PyTables' test files are not installed")
@pytest.mark.parametrize("file,path", CASES, ids=[f"{f.name}:{n}" for f, n in CASES])
def test_check_on_a_real_file(tmp_path, file, path, cli):
    sweep = tmp_path / "s.yaml"
    sweep.write_text(f"name: real\ndataset:\n  file: {str(file)!r}\n  path: {path!r}\n")
    r = cli("check", str(sweep))
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    if r.exit_code == 0:
        assert "valid" in lines[0]
    else:
        assert r.exit_code == 2 and len(lines) == 1 and lines[0].startswith("ccp: error:"), r.output


RUNNABLE = [(f, n) for f, n in CASES if f.name in ("smpl_f64be.h5", "smpl_i32le.h5", "smpl_SDSextendible.h5", "blosc_bigendian.h5", "test_szip.h5", "float.h5")]


@pytest.mark.parametrize("file,path", RUNNABLE, ids=[f"{f.name}:{n}" for f, n in RUNNABLE])
def test_quick_run_on_a_real_file(tmp_path, file, path, cli):
    sweep = tmp_path / "s.yaml"
    sweep.write_text(f"name: real\ndataset:\n  file: {str(file)!r}\n  path: {path!r}\n")
    if cli("check", str(sweep)).exit_code != 0:
        pytest.skip("not a dataset ccp measures")
    before = file.read_bytes()
    r = cli("run", str(sweep), "--quick", "--no-report", "--out", str(tmp_path / "run"),
            "--work", str(tmp_path / "work"))
    assert r.exit_code == 0, r.output
    assert (pd.read_csv(tmp_path / "run" / "cells.csv")["status"] == "ok").all()
    assert file.read_bytes() == before
