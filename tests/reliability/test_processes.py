"""Processes: workers die with `ccp run`, a broken pipe ends output not the sweep, a bad layout fails its cell."""

import os
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from ccp.config.sweep import parse_sweep_file
from ccp.hdf5.dataset import describe_source
from ccp.matrix.cells import expand
from ccp.run import job as run_job
from ccp.run import run_sweep

from .conftest import ccp_cmd, ccp_env

SWEEP = """
name: procs
dataset:
  generate: {shape: [8, 6], dtype: "<f4"}
matrix:
  chunks: [[4, 6], [2, 6], [8, 6]]
  cache: ["1MiB", "8KiB"]
  access: [{op: read, block: [1, 6]}]
repeats: 1
cold: false
"""


@pytest.fixture
def sweep(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text(textwrap.dedent(SWEEP))
    return p


def cells_of(sweep):
    sw = parse_sweep_file(sweep)
    return expand(sw, describe_source(sw.dataset))


def children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(x) for x in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.slow   # a whole sweep killed part way: make test-slow (CI); test_interrupt_leaves_no_temp_and_resumes stays fast
def test_killed_run_takes_its_worker_with_it(sweep, tmp_path):
    first = cells_of(sweep)[0]
    proc = subprocess.Popen(ccp_cmd("run", sweep, "--out", tmp_path / "out", "--work", tmp_path / "work", "--no-report"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=ccp_env(CCP_FAULT_INJECT=f"{first.cell_id}:hang"))
    workers = []
    try:
        deadline = time.monotonic() + 60
        while not workers and time.monotonic() < deadline:
            workers = children(proc.pid)
            time.sleep(0.05)
        assert workers, "the worker never started"
        time.sleep(0.5)                 # the worker is hanging inside its cell
        os.kill(proc.pid, signal.SIGKILL)   # the parent only, not its process group
        proc.wait()
        deadline = time.monotonic() + 10
        while any(alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(alive(w) for w in workers), "the worker outlived its ccp run"
    finally:
        for w in workers + children(proc.pid):     # never leave a hanging worker behind, fix or no fix
            if alive(w):
                os.kill(w, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.slow   # a whole sweep killed part way: make test-slow (CI); test_interrupt_leaves_no_temp_and_resumes stays fast
def test_broken_pipe_ends_output_not_the_sweep(sweep, tmp_path):
    """`ccp run ... | head -1`: every cell still runs."""
    out = tmp_path / "out"
    proc = subprocess.Popen(ccp_cmd("run", sweep, "--out", out, "--work", tmp_path / "work", "--no-report"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ccp_env())
    proc.stdout.readline()
    proc.stdout.close()                # the reader leaves after one line
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert b"Traceback" not in err and b"BrokenPipe" not in err
    cells = pd.read_csv(out / "cells.csv")
    assert len(cells) == 6 and (cells["status"] == "ok").all()


def test_a_layout_error_fails_only_its_cells(sweep, tmp_path, monkeypatch):
    cells = cells_of(sweep)
    real = run_job.ensure_layout_file

    def broken(work_dir, sw, source, chunks, filters):
        if chunks == (2, 6):
            raise ValueError("Unable to create dataset (injected)")
        return real(work_dir, sw, source, chunks, filters)

    monkeypatch.setattr(run_job, "ensure_layout_file", broken)
    summary = run_sweep(sweep, out=tmp_path / "out", work_dir=tmp_path / "work", report=False, echo=lambda *a: None)
    df = pd.read_csv(tmp_path / "out" / "cells.csv").set_index("cell_id")
    assert summary.failed == 2 and len(df) == len(cells) == 6
    bad = df[df["chunks"] == "2x6"]
    assert bad["status"].str.startswith("failed: work file: ValueError: Unable to create dataset").all()
    assert (df[df["chunks"] != "2x6"]["status"] == "ok").all()


def test_interrupt_leaves_no_temp_and_resumes(sweep, tmp_path):
    """Ctrl-C (SIGINT to the process group) mid-sweep: exit 130, then a rerun finishes each cell once."""
    out, work = tmp_path / "out", tmp_path / "work"
    args = ccp_cmd("run", sweep, "--out", out, "--work", work, "--no-report")
    last = cells_of(sweep)[-1]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
                            env=ccp_env(CCP_FAULT_INJECT=f"{last.cell_id}:hang"))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if (out / "cells.csv").exists() and len(pd.read_csv(out / "cells.csv")) == 5:
            break
        time.sleep(0.1)
    time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert b"interrupted" in err
    assert not list(out.rglob("*.tmp-*")) and not (out / ".ccp.lock").exists()
    rerun = subprocess.run(args, capture_output=True, env=ccp_env(), timeout=300, check=False)
    assert rerun.returncode == 0
    df = pd.read_csv(out / "cells.csv")
    assert len(df) == 6 and df["cell_id"].is_unique and (df["status"] == "ok").all()
    assert not any((work / "tmp").iterdir())
