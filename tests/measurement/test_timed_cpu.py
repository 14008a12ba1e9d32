"""Each timed pass records the process CPU time of its timed part alone (requests.parquet's timed_cpu_s, schema 5),
from just before the timed open to just after the timed close, beside the whole pass's (pass_cpu_s): the verdict's
witness no longer holds ccp's own setup (breaker9 G8)."""

from __future__ import annotations

import pandas as pd

from ccp.store.schema import REQUEST_COLUMNS, WARMUP_PASS
from tests.remote.conftest import NEEDS_S3

# process_time_ns reads CLOCK_PROCESS_CPUTIME_ID; two reads of it a little apart may disagree by a scheduler tick
GRANULARITY_S = 0.002

LOCAL_SWEEP = """
name: timed-cpu
dataset:
  generate: {shape: [16, 40], dtype: "<f8", data: normal, seed: 0}
matrix:
  chunks: [[4, 40]]
  filters: ["gzip:1"]
  cache: ["64KiB"]
  access: [{op: read, block: [1, 40]}, {op: write, block: [4, 40]}, {op: copy, block: [4, 40]}]
  client: [h5py-lowlevel, native, h5py]
repeats: 3
"""

S3_SWEEP = """
name: timed-cpu-s3
s3: local
dataset:
  path: /x
  generate: {shape: [8, 30], dtype: ">f4", data: normal, seed: 0}
matrix:
  chunks: [[4, 30]]
  cache: ["1MiB"]
  access: [{op: read, block: [4, 30]}]
  storage: [s3]
repeats: 2
"""


def _run(tmp_path, text: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    from ccp.run import run_sweep

    (tmp_path / "sweep.yaml").write_text(text)
    summary = run_sweep(tmp_path / "sweep.yaml", out=tmp_path / "run", work_dir=tmp_path / "work", echo=lambda *a: None,
                        report=None)
    assert summary.failed == 0
    return pd.read_csv(tmp_path / "run" / "cells.csv"), pd.read_parquet(tmp_path / "run" / "requests.parquet")


def _check_timed_cpu(cells: pd.DataFrame, req: pd.DataFrame) -> None:
    assert list(req.columns) == REQUEST_COLUMNS and REQUEST_COLUMNS[-4:] == ["timed_cpu_s", "timed_run_delay_s",
                                                                             "timed_wall_s", "pass_pace_s"]
    opens = req[(req["phase"] == "open") & (req["pass"] >= 0)]
    assert len(opens) == int(cells["repeats"].sum())          # one open row per timed pass of every cell
    timed, whole = opens["timed_cpu_s"].astype(float), opens["pass_cpu_s"].astype(float)
    assert (timed > 0).all(), opens[["cell_id", "pass", "timed_cpu_s"]]
    assert (timed <= whole + GRANULARITY_S).all(), opens[["cell_id", "pass", "timed_cpu_s", "pass_cpu_s"]]
    # on no other row: not the requests', the close's, nor the counted pass's (whose times are not the cell's); the
    # warm-up pass's open row has its own (schema 6), for a report to show beside warmup_s
    warm_opens = (req["phase"] == "open") & (req["pass"] == WARMUP_PASS)
    assert (req.loc[warm_opens, "timed_cpu_s"].astype(float) > 0).all()
    assert req.loc[~req.index.isin(opens.index) & ~warm_opens, "timed_cpu_s"].isna().all()
    # schema 7: the part's wait for a CPU and its wall time over the same span (on Linux, which says the run delay):
    # the CPU time and the wait each within the wall time, nested spans
    delay, wall = opens["timed_run_delay_s"].astype(float), opens["timed_wall_s"].astype(float)
    assert (wall > 0).all() and (delay >= 0).all(), opens[["cell_id", "pass", "timed_run_delay_s", "timed_wall_s"]]
    assert (delay <= wall).all() and (timed <= wall + GRANULARITY_S).all()
    assert req.loc[~req.index.isin(opens.index) & ~warm_opens, "timed_run_delay_s"].isna().all()
    # schema 8: the machine's pace just after each pass (a reference copy's CPU seconds), on the same rows
    pace = opens["pass_pace_s"].astype(float)
    assert (pace > 0).all() and (pace < whole + 1.0).all(), opens[["cell_id", "pass", "pass_pace_s"]]
    assert req.loc[~req.index.isin(opens.index) & ~warm_opens, "pass_pace_s"].isna().all()


def test_a_real_sweep_records_each_timed_parts_cpu_time(tmp_path):
    cells, req = _run(tmp_path, LOCAL_SWEEP)
    assert len(cells) == 9 and set(cells["client"]) == {"h5py-lowlevel", "native", "h5py"}
    assert set(cells["op"]) == {"read", "write", "copy"}
    _check_timed_cpu(cells, req)


@NEEDS_S3
def test_an_s3_pass_records_its_timed_parts_cpu_time(tmp_path):
    """The S3 loop's timed part starts before the fsspec file is opened: its CPU time too."""
    cells, req = _run(tmp_path, S3_SWEEP)
    assert (cells["storage"] == "s3").all()
    _check_timed_cpu(cells, req)


def test_the_parts_clocks_nest_wall_outside_run_delay_outside_cpu(monkeypatch):
    """A wait between two reads of the clocks counts in every span that holds it: read the other way round, the run
    delay exceeded the part's wall time in 297 of 3,000 1-ms parts under load (up to 7x)."""
    from ccp.measurement import passes

    reads: list[str] = []
    ticks = iter(range(0, 10_000, 10))
    monkeypatch.setattr(passes.time, "perf_counter_ns", lambda: reads.append("wall") or next(ticks))
    monkeypatch.setattr(passes.time, "process_time_ns", lambda: reads.append("cpu") or next(ticks))
    monkeypatch.setattr(passes, "run_delay_ns", lambda: reads.append("delay") or next(ticks))
    part = passes.part_end(passes.part_start())
    cpu, delay, wall = part["cpu_ns"], part["run_delay_ns"], part["span_ns"]
    assert reads == ["wall", "delay", "cpu", "cpu", "delay", "wall"]
    assert cpu <= delay <= wall
