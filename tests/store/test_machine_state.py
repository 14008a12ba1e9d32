"""Schema 4: the machine's state per pass (cpus, load, CPU/wall) is stored; older runs still read; contention rule."""

import json

import numpy as np
import pytest

from ccp.measurement.passes import MachineClock, PassMachine
from ccp.measurement.runner import machine_state
from ccp.store.results import check_run_folder, read_cells
from ccp.store.schema import ADDED_IN, CELL_COLUMNS, REQUEST_COLUMNS, SCHEMA_VERSION, cell_columns_of, contended


@pytest.mark.parametrize("load, cpus, ratio, io, expect", [
    (1.0, 2, 0.95, False, False),        # a quiet machine
    (4.5, 2, 0.95, False, True),         # more runnable processes than CPUs
    (1.0, 2, 0.3, False, True),          # a warm local pass off the CPU 70% of its time: someone else had it
    (1.0, 2, 0.3, True, False),          # a cold or S3 pass waits for its I/O: judged by the load alone
    (float("nan"), 2, float("nan"), False, False),   # unknown (no getloadavg): never flagged
], ids=["quiet", "overloaded", "starved", "io-wait", "unknown"])
def test_contention_rule(load, cpus, ratio, io, expect):
    assert contended(load, cpus, ratio, io) is expect


def test_machine_state_summarises_passes_and_flags_any_contended_pass():
    quiet = PassMachine(wall_s=1.0, cpu_s=0.98, load=0.5, cpus=2)
    busy = PassMachine(wall_s=2.0, cpu_s=0.9, load=5.0, cpus=2)
    state = machine_state((quiet, quiet, busy), waits_for_io=False)
    assert state == {"cpus": 2, "load_max": 5.0, "cpu_ratio": 0.98, "contended": True}
    assert machine_state((quiet,) * 3, waits_for_io=False)["contended"] is False
    assert machine_state((), waits_for_io=False) == {"contended": False}


def test_the_clock_measures_cpu_time_apart_from_wall_time():
    clock = MachineClock()
    clock.start()
    x = np.arange(2_000_000, dtype=np.float64)
    for _ in range(20):            # CPU-bound work: CPU time is most of the wall time, and never more than it
        x = np.sqrt(x + 1.0)
    m = clock.stop()
    assert 0 < m.cpu_s and 0 < m.wall_s and m.cpus >= 1
    assert m.cpu_ratio == m.cpu_s / m.wall_s


def test_schema_4_columns_and_an_older_run_still_reads(tmp_path):
    assert SCHEMA_VERSION >= 4 and ADDED_IN[4] == ("cpus", "load_max", "cpu_ratio", "file_open_s", "requests_s")
    i = REQUEST_COLUMNS.index("pass_wall_s")
    assert REQUEST_COLUMNS[i:i + 3] == ["pass_wall_s", "pass_cpu_s", "pass_load"]
    old = cell_columns_of(3)
    later = [c for v, cols in ADDED_IN.items() if v > 3 for c in cols]
    assert not set(ADDED_IN[4]) & set(old) and len(old) == len(CELL_COLUMNS) - len(later)
    run = tmp_path / "old"
    run.mkdir()
    row = {c: "" for c in old}
    row.update(schema_version=3, cell_id="abc", chunks="4x8", filters="none", cache_nbytes=1, cache_nslots=1,
               cache_w0=0.75, op="read", block="1x8", order="0x1", random=0, client="native", status="ok", time_s=0.5)
    (run / "cells.csv").write_text(",".join(old) + "\n" + ",".join(str(row[c]) for c in old) + "\n")
    (run / "run.json").write_text(json.dumps({"schema_version": 3, "dataset_identity": "x", "sweep": "t"}))
    check_run_folder(run)                     # a schema-3 run is a run this ccp reads
    from ccp.report.data import load_cells
    cells = load_cells(run)
    assert set(ADDED_IN[4]) <= set(cells.columns) and np.isnan(cells.loc[0, "load_max"])
    assert read_cells(run).loc[0, "time_s"] == 0.5


def test_schema_5_adds_the_timed_parts_cpu_time_to_requests_only():
    """timed_cpu_s (the timed part's process CPU seconds) is a requests column after schema 4's pass columns; cells.csv
    is what schema 4 wrote, so a schema-4 cells table reads with no column missing."""
    assert SCHEMA_VERSION >= 5 and REQUEST_COLUMNS.index("timed_cpu_s") == REQUEST_COLUMNS.index("pass_load") + 1
    assert 5 not in ADDED_IN and cell_columns_of(4) == cell_columns_of(5)


def test_schema_6_adds_the_warm_up_pass():
    """warmup_s in cells.csv (last), pass -2 in requests.parquet; a schema-5 cells table lacks only warmup_s."""
    from ccp.store.schema import COUNTED_PASS, WARMUP_PASS

    assert SCHEMA_VERSION >= 6 and ADDED_IN[6] == ("warmup_s",) and CELL_COLUMNS[-1] == "warmup_s"
    assert cell_columns_of(6) == CELL_COLUMNS and cell_columns_of(5) == CELL_COLUMNS[:-1]
    assert WARMUP_PASS < 0 and COUNTED_PASS < 0 and WARMUP_PASS != COUNTED_PASS     # timed passes: pass >= 0
