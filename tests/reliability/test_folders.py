"""Folders ccp writes into: `--out` holds one ccp run of one sweep, `ccp clean` removes only what ccp made."""

import json
import os
import textwrap

import pytest

from ccp.store.results import LOCK, RunStore
from ccp.store.schema import SCHEMA_VERSION
from ccp.store.workdir import MANIFEST

SWEEP = """
name: folders
dataset:
  generate: {shape: [8, 6], dtype: "<f4"}
matrix:
  chunks: [[4, 6]]
  access: [{op: read, block: [1, 6]}]
repeats: 1
cold: false
"""


@pytest.fixture
def sweep(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text(textwrap.dedent(SWEEP))
    return p


def one_line_error(result, *expected):
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("ccp: error:"), result.output
    for e in expected:
        assert e in lines[0], lines[0]


def snapshot(folder):
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None for p in sorted(folder.rglob("*"))}


FOREIGN = [
    ("cells-csv-with-cell-id", {"cells.csv": "cell_id,notes\nabc,my notes\n"}, "no run.json"),
    ("foreign-cells-csv-beside-a-run-json", {"cells.csv": "cell_id,notes\nabc,my notes\n",
                                             "run.json": json.dumps({"schema_version": SCHEMA_VERSION, "dataset_identity": "generate:[8, 6]:<f4:normal:0"})},
     "cells.csv is not one ccp wrote"),
    ("cells-csv-without-cell-id", {"cells.csv": "a,b\n1,2\n"}, "no run.json"),
    ("garbage-run-json", {"run.json": "{not json"}, "run.json is not a ccp run record"),
    ("run-json-not-a-record", {"run.json": "[1, 2]"}, "run.json is not a ccp run record"),
    ("binary-run-json", {"run.json": b"\xff\xfe\x00"}, "run.json is not a ccp run record"),
    ("other-files", {"notes.txt": "mine"}, "no run.json"),
    ("other-sweep", {"run.json": json.dumps({"schema_version": SCHEMA_VERSION, "dataset_identity": "x", "sweep": "other"})}, "sweep 'other'"),
    ("other-schema", {"run.json": json.dumps({"schema_version": 99, "dataset_identity": "x"})}, "schema 99"),
]


@pytest.mark.parametrize("files,expected", [c[1:] for c in FOREIGN], ids=[c[0] for c in FOREIGN])
def test_out_holding_something_else_is_refused_before_writing(sweep, tmp_path, files, expected, cli):
    out = tmp_path / "out"
    out.mkdir()
    for name, text in files.items():
        (out / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    before = snapshot(out)
    one_line_error(cli("run", sweep, "--out", out, "--work", tmp_path / "work", "--no-report"), f"--out {out}", expected)
    assert snapshot(out) == before


def test_out_that_is_a_file_is_refused(sweep, tmp_path, cli):
    f = tmp_path / "afile"
    f.write_text("x")
    r = cli("run", sweep, "--out", f, "--work", tmp_path / "work", "--no-report")
    assert r.exit_code == 2 and f.read_text() == "x"


def test_a_second_run_on_a_locked_out_is_refused(sweep, tmp_path, cli):
    out = tmp_path / "out"
    holder = RunStore(out)
    holder.lock()                      # as a running `ccp run` holds it
    try:
        one_line_error(cli("run", sweep, "--out", out, "--work", tmp_path / "work", "--no-report"),
                       "another ccp run", f"pid {os.getpid()}")
        assert not (out / "cells.csv").exists()
    finally:
        holder.unlock()
    assert cli("run", sweep, "--out", out, "--work", tmp_path / "work", "--no-report").exit_code == 0


def test_a_stale_lock_of_a_dead_process_is_taken_over(sweep, tmp_path, cli):
    out = tmp_path / "out"
    out.mkdir()
    (out / LOCK).write_text("999999999\n")      # no such pid, and nobody holds the flock
    r = cli("run", sweep, "--out", out, "--work", tmp_path / "work", "--no-report")
    assert r.exit_code == 0, r.output
    assert not (out / LOCK).exists()


@pytest.mark.parametrize("first,second,named", [
    (["--quick"], [], "quick"),
    ([], ["--quick"], "quick"),
    ([], ["--time-budget", "5s"], "time_budget"),
], ids=["quick-then-full", "full-then-quick", "time-budget"])
def test_runs_measured_differently_cannot_mix(sweep, tmp_path, first, second, named, cli):
    out, work = tmp_path / "out", tmp_path / "work"
    assert cli("run", sweep, "--out", out, "--work", work, "--no-report", *first).exit_code == 0
    before = snapshot(out)
    one_line_error(cli("run", sweep, "--out", out, "--work", work, "--no-report", *second), named, "cannot mix")
    assert snapshot(out) == before


@pytest.mark.parametrize("key,old,new", [
    ("repeats", "repeats: 1", "repeats: 2"),
    ("cold", "cold: false", "cold: true"),
    ("fillvalue", 'dtype: "<f4"}', 'dtype: "<f4", fillvalue: 7}'),
    ("dataset", 'dtype: "<f4"}', 'dtype: "<f4", data: uniform}'),
], ids=["repeats", "cold", "fillvalue", "data"])
def test_changed_sweep_settings_cannot_mix(sweep, tmp_path, key, old, new, cli):
    out, work = tmp_path / "out", tmp_path / "work"
    assert cli("run", sweep, "--out", out, "--work", work, "--no-report").exit_code == 0
    sweep.write_text(textwrap.dedent(SWEEP).replace(old, new))
    one_line_error(cli("run", sweep, "--out", out, "--work", work, "--no-report"), key)


def test_resume_with_the_same_settings_is_fine(sweep, tmp_path, cli):
    out, work = tmp_path / "out", tmp_path / "work"
    assert cli("run", sweep, "--out", out, "--work", work, "--no-report").exit_code == 0
    r = cli("run", sweep, "--out", out, "--work", work, "--no-report")
    assert r.exit_code == 0 and "1 already done" in r.output


# ------------------------------------------------------------------ ccp clean

def test_clean_removes_only_what_ccp_made(sweep, tmp_path, monkeypatch, cli):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "folders-0123456789abcdef.h5").write_text("a user's file with a ccp-like name")
    (tmp_path / "calibration.json").write_text("{}")              # the user's, there before ccp ran
    (tmp_path / "tmp").mkdir()
    (tmp_path / "tmp" / "0123456789ab-1").mkdir()                # the user's too: tmp/ was theirs
    assert cli("run", sweep, "--out", "results/run", "--work", ".", "--no-report").exit_code == 0
    made = [p.name for p in tmp_path.glob("folders-*.h5") if p.name != "folders-0123456789abcdef.h5"]
    assert made and (tmp_path / MANIFEST).exists()
    run_before = snapshot(tmp_path / "results")
    r = cli("clean", "--work", ".")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert (tmp_path / "folders-0123456789abcdef.h5").exists()
    assert (tmp_path / "calibration.json").exists()     # (ccp plan's calibrate adds its entries to it: not removed)
    assert (tmp_path / "tmp" / "0123456789ab-1").is_dir()
    assert not any((tmp_path / m).exists() for m in made)
    assert snapshot(tmp_path / "results") == run_before
    assert not (tmp_path / MANIFEST).exists()


def test_clean_results_keeps_run_folders(sweep, tmp_path, monkeypatch, cli):
    monkeypatch.chdir(tmp_path)
    assert cli("run", sweep, "--out", "results/run", "--work", "results/work", "--no-report").exit_code == 0
    (tmp_path / "results" / "notes.md").write_text("mine")
    before = snapshot(tmp_path / "results" / "run")
    assert cli("clean", "--work", "results").exit_code == 0           # not the work folder: nothing of ccp's
    assert snapshot(tmp_path / "results" / "run") == before
    assert (tmp_path / "results" / "notes.md").exists()
    assert any((tmp_path / "results" / "work").glob("folders-*.h5"))
    assert cli("clean", "--work", "results/work").exit_code == 0
    assert not any((tmp_path / "results" / "work").glob("folders-*.h5"))
    assert snapshot(tmp_path / "results" / "run") == before


def test_clean_never_follows_a_symlink(sweep, tmp_path, cli):
    work = tmp_path / "work"
    assert cli("run", sweep, "--out", tmp_path / "run", "--work", work, "--no-report").exit_code == 0
    victim = tmp_path / "precious"
    victim.mkdir()
    (victim / "data").write_text("keep")
    (work / "tmp" / "0123456789ab-1").symlink_to(victim)
    assert cli("clean", "--work", work).exit_code == 0
    assert (victim / "data").read_text() == "keep"


def test_clean_dry_run_removes_nothing(sweep, tmp_path, cli):
    work = tmp_path / "work"
    assert cli("run", sweep, "--out", tmp_path / "run", "--work", work, "--no-report").exit_code == 0
    before = snapshot(work)
    r = cli("clean", "--work", work, "--dry-run")
    assert r.exit_code == 0 and "would remove" in r.output
    assert snapshot(work) == before


def test_stale_scratch_of_dead_workers_is_cleaned_at_the_next_run(sweep, tmp_path, cli):
    work = tmp_path / "work"
    assert cli("run", sweep, "--out", tmp_path / "run", "--work", work, "--no-report").exit_code == 0
    dead = work / "tmp" / "0123456789ab-999999999"
    dead.mkdir()
    (dead / "pass0.h5").write_bytes(b"x" * 100)
    alive = work / "tmp" / f"0123456789ab-{os.getpid()}"
    alive.mkdir()
    partial = next(work.glob("folders-*.h5")).with_suffix(".h5.tmp-999999999")
    partial.write_bytes(b"half")
    assert cli("run", sweep, "--out", tmp_path / "run2", "--work", work, "--no-report").exit_code == 0
    assert not dead.exists() and not partial.exists()
    assert alive.exists()          # a live process's scratch is never touched


def test_check_run_folder_tells_a_run_from_someones_cells_csv(sweep, tmp_path, cli):
    from ccp.errors import CcpError
    from ccp.store.results import check_run_folder

    out = tmp_path / "out"
    assert cli("run", sweep, "--out", out, "--work", tmp_path / "work", "--no-report").exit_code == 0
    check_run_folder(out)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "cells.csv").write_text("cell_id,time_s\na,1\n")
    with pytest.raises(CcpError, match="not a ccp run folder"):
        check_run_folder(foreign)
    (foreign / "run.json").write_text((out / "run.json").read_text())
    with pytest.raises(CcpError, match="cells.csv is not one ccp wrote"):
        check_run_folder(foreign)


def test_plan_says_so_before_a_long_prediction(sweep, tmp_path, monkeypatch, cli):
    import ccp.run.plan

    monkeypatch.setattr(ccp.run.plan, "PLAN_REQUESTS_PER_SECOND", 1)     # the sweep's 8 requests: "about 8 s"
    r = cli("plan", str(sweep), "--work", str(tmp_path / "work"))
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[0] == "ccp plan: predicting 8 requests one by one; about 8 s"


def test_a_run_killed_before_its_run_json_leaves_a_folder_the_rerun_takes(sweep, tmp_path, cli):
    out = tmp_path / "out"
    out.mkdir()
    (out / LOCK).write_text("999999999\n")
    (out / ".run.json.tmp-999999999").write_text('{"schema_ver')       # killed inside the first atomic write
    r = cli("run", sweep, "--out", out, "--work", tmp_path / "work", "--no-report")
    assert r.exit_code == 0, r.output
    assert not list(out.glob(".*.tmp-*"))


def test_clean_leaves_the_scratch_of_a_running_ccp(sweep, tmp_path, cli):
    work = tmp_path / "work"
    assert cli("run", sweep, "--out", tmp_path / "run", "--work", work, "--no-report").exit_code == 0
    live = work / "tmp" / f"0123456789ab-{os.getpid()}"
    live.mkdir()
    dead = work / "tmp" / "0123456789ab-999999999"
    dead.mkdir()
    assert cli("clean", "--work", work).exit_code == 0
    assert live.is_dir() and not dead.exists()


def test_a_poisoned_row_does_not_fail_every_rerun(sweep, tmp_path, cli):
    """Issue 17: a failed row with cache_nbytes 10**30 (an older ccp let it through) made every rerun an
    OverflowError; now the value is refused at parse time, and an old folder holding one still resumes."""
    import csv

    out, work = tmp_path / "out", tmp_path / "work"
    assert cli("run", sweep, "--out", out, "--work", work, "--no-report").exit_code == 0
    with open(out / "cells.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    poisoned = {**rows[0], "cell_id": "0123456789ab", "cache_nbytes": str(10**30), "status": "failed: OverflowError"}
    with open(out / "cells.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows([rows[0], poisoned])
    r = cli("run", sweep, "--out", out, "--work", work, "--no-report")
    assert r.exit_code == 0, r.output
    assert (out / "cells.parquet").exists()
    one_line_error(cli("run", _poison(sweep), "--out", tmp_path / "out2", "--work", work), "matrix.cache[0]")


def _poison(sweep):
    p = sweep.with_name("poison.yaml")
    p.write_text(sweep.read_text().replace("  chunks: [[4, 6]]", "  chunks: [[4, 6]]\n  cache: [1000000000000000000000000000000]"))
    return p
