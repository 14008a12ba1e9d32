"""`ccp compare --remeasure`: the cells that differ measured again here, A and B alternating, judged by those passes."""

import shutil
import tempfile
from pathlib import Path

import pandas as pd
import yaml

SWEEP = {"name": "tiny", "dataset": {"path": "/d", "generate": {"shape": [16, 64, 64], "dtype": "<f4", "seed": 0}},
         "matrix": {"chunks": [[4, 64, 64]], "filters": ["gzip:1"], "cache": ["1MiB"],
                    "access": [{"op": "read", "block": [1, 64, 64]}]},
         "repeats": 3, "cold": False}


def test_remeasure_judges_the_differing_cell_by_interleaved_passes(tmp_path, cli):
    sweep = tmp_path / "tiny.yaml"
    sweep.write_text(yaml.safe_dump(SWEEP))
    a = tmp_path / "a"
    r = cli("run", str(sweep), "--out", str(a), "--work", str(tmp_path / "work"), "--no-isolate",
            "--no-report")
    assert r.exit_code == 0, r.output
    b = tmp_path / "b"
    shutil.copytree(a, b)
    cells = pd.read_parquet(b / "cells.parquet")       # B recorded 5x slower, the same counts: the machine's?
    for k in ("time_s", "time_s_min", "time_s_max"):
        cells[k] = cells[k] * 5
    cells.to_parquet(b / "cells.parquet", index=False)
    before = set(Path(tempfile.gettempdir()).glob("ccp-remeasure-*"))
    r = cli("compare", str(a), str(b), "--remeasure", "3", "--fail-above", "4")
    assert r.exit_code == 0, r.output        # measured again side by side, B is A: never a 4x regression
    assert "remeasuring 1 cell(s), A and B alternating, 3 pass(es) each" in r.output
    assert "remeasured, 3 alternating passes" in r.output
    assert set(Path(tempfile.gettempdir()).glob("ccp-remeasure-*")) == before      # its scratch folder removed
