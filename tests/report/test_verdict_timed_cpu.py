"""breaker9 G8 in full (issue 22): a short pass's CPU time was mostly ccp's own harness (15-42 ms passes around a
4.6 ms timed part made a 6.7x difference "CPU time within 1.49x"), so such a cell could only be undecided. A run of
schema 5 records the timed part's own CPU time (requests.parquet's timed_cpu_s): the witness of the timed requests
however short the pass. A schema-4 run (no such column) is judged as before: whole-pass CPU time, none when the
timed part is under half the pass."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from report_synthetic import KIB, _cell, write_run

from ccp.cli import main
from ccp.report.data import normalise
from ccp.report.run_samples import samples
from ccp.report.stats import judge
from ccp.store.schema import CELL_COLUMNS, cell_columns_of

TIMED_S = 0.0046        # breaker9 G8's timed part: open + requests + close of one pass
HARNESS_S = 0.030       # the rest of its pass (setup, buffers, the file open), all on the CPU
CID = "00beef"


def _cells(factor: float) -> pd.DataFrame:
    c = _cell("4x30x9x100", "gzip:6", 1024 * KIB, "1x1x1x100")
    t = TIMED_S * factor
    c.update(cell_id=CID, time_s=t, time_s_min=t * 0.99, time_s_max=t * 1.01, spread=1.02, repeats=5, open_s=0.0,
             close_s=0.0, request_s_median=t / c["requests"], first_request_s=t / c["requests"], flags="")
    return normalise(pd.DataFrame([c]))


def _run(folder, factor: float, timed_cpu: bool):
    """A run of one cell, 5 passes, its timed part ``factor`` x TIMED_S, wall and CPU alike; each pass's whole wall
    and CPU time that plus HARNESS_S of harness. ``timed_cpu``: a schema-5 run (timed_cpu_s recorded); else what
    schema 4 wrote (no column, schema_version 4)."""
    cells = _cells(factor)
    run = write_run(folder, cells=cells, tables=False)
    part = run / "requests.parquet" / f"{CID}.parquet"
    req = pd.read_parquet(part)
    timed = req[req["pass"] >= 0].groupby("pass")["time_s"].sum()
    opens = (req["phase"] == "open") & (req["pass"] >= 0)
    per_pass = req.loc[opens, "pass"].map(timed).to_numpy(float)
    req.loc[opens, "pass_wall_s"] = per_pass + HARNESS_S
    req.loc[opens, "pass_cpu_s"] = per_pass * 0.95 + HARNESS_S
    if timed_cpu:
        req.loc[opens, "timed_cpu_s"] = per_pass * 0.95
    else:
        req = req.drop(columns=["timed_cpu_s"]).assign(schema_version=4)
        cells = cells.assign(schema_version=4).drop(columns=[c for c in CELL_COLUMNS if c not in cell_columns_of(4)])
        cells.to_csv(run / "cells.csv", index=False)
        cells.to_parquet(run / "cells.parquet", index=False)
        record = json.loads((run / "run.json").read_text())
        (run / "run.json").write_text(json.dumps({**record, "schema_version": 4}))
    req.to_parquet(part, index=False)
    return run


@pytest.mark.parametrize("timed_cpu, factor, word, cpu_is", [
    (True, 7.0, "slower", "timed"),      # the timed part's CPU time moved 7x with its wall time: a real slowdown
    #                                      (beyond the 6x two runs' CPU time alone must pass)
    (False, 6.0, "undecided", "none"),   # schema 4: the whole pass's CPU time is mostly harness, no witness (G8)
], ids=["schema5-timed-cpu", "schema4-whole-pass"])
def test_a_short_pass_whose_timed_cpu_moved_far_is_slower(tmp_path, timed_cpu, factor, word, cpu_is):
    a, b = _run(tmp_path / "a", 1.0, timed_cpu), _run(tmp_path / "b", factor, timed_cpu)
    sa, sb = (samples(run, pd.read_parquet(run / "cells.parquet"))[CID] for run in (a, b))
    if cpu_is == "timed":
        assert np.median(sb.cpu) / np.median(sa.cpu) == pytest.approx(factor, rel=0.05)
    else:
        assert len(sa.cpu) == len(sb.cpu) == 0
    v = judge(sa, sb)
    assert v.word == word, v
    if timed_cpu:
        assert "CPU time per pass 7" in v.why, v.why
    else:
        assert "CPU time not recorded on both sides" in v.why, v.why
    r = CliRunner().invoke(main, ["compare", str(a), str(b), "--fail-above", "2"])
    assert r.exit_code == (1 if word == "slower" else 3), r.output


def test_a_schema_4_folder_reads_with_the_column_absent(tmp_path):
    """Whole-pass CPU time where the timed part is most of the pass: the witness, as schema 4 always had it."""
    run = _run(tmp_path / "old", 1.0, timed_cpu=False)
    part = run / "requests.parquet" / f"{CID}.parquet"
    req = pd.read_parquet(part)
    assert "timed_cpu_s" not in req
    opens = (req["phase"] == "open") & (req["pass"] >= 0)
    req.loc[opens, "pass_wall_s"] = req.loc[opens, "pass_wall_s"] - HARNESS_S + 0.001   # 1 ms of harness only
    req.loc[opens, "pass_cpu_s"] = req.loc[opens, "pass_cpu_s"] - HARNESS_S + 0.001
    req.to_parquet(part, index=False)
    s = samples(run, pd.read_parquet(run / "cells.parquet"))[CID]
    assert np.allclose(s.cpu, req.loc[opens].sort_values("pass")["pass_cpu_s"].to_numpy(float))
    r = CliRunner().invoke(main, ["compare", str(run), str(run)])
    assert r.exit_code == 0 and "damaged" not in r.output, r.output
