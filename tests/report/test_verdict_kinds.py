"""Issue 22 (breaker7 S2, S3): the rule's verdicts between cells that do different kinds of work (a local file's raw
reads, an S3 object's GETs), between two runs of the same S3 cells through an endpoint that got slower, and of runs
with too few passes for the pass test: the report's headline and `ccp compare` alike (one rule, stats.judge)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from report_synthetic import KIB, _cell, write_run

from ccp.cli import main
from ccp.report.data import normalise, prepare
from ccp.report.headline import headline_text, headlines

# (storage, fsspec, latency, seconds)
CELLS = [("local", "", "", 0.0033), ("s3", "none/5MiB", "0ms", 7.3), ("s3", "readahead/64KiB", "0ms", 0.17)]
GETS = {"none/5MiB": 131, "readahead/64KiB": 6}


def _cells(rows=CELLS, repeats: int = 3) -> pd.DataFrame:
    out = []
    for k, (storage, fsspec, lat, t) in enumerate(rows):
        c = _cell("4x30x9x100", "gzip:6", 1024 * KIB, "1x1x1x100", seed=k)
        c.update(storage=storage, fsspec=fsspec, latency=lat, bandwidth="unlimited" if lat else "", file_space="default",
                 page_buffer="none", time_s=t, time_s_min=t * 0.99, time_s_max=t * 1.01, spread=1.02, repeats=repeats,
                 open_s=0.0, close_s=0.0)
        c.update(request_s_median=t / c["requests"], first_request_s=t / c["requests"])   # passes of about t
        c["cell_id"] = f"{k:02d}beef"
        if storage == "s3":
            for col in ("raw_reads", "raw_read_bytes", "raw_writes", "raw_write_bytes"):
                c[col] = np.nan
            c.update(http_gets=GETS[fsspec], http_bytes=300 * KIB, http_open_gets=3, http_wait_s=t * 0.9)
        out.append(c)
    return normalise(pd.DataFrame(out))


def _run(folder, cells: pd.DataFrame):
    """A run folder of ``cells``; each S3 cell's requests wait 90% of their time on GETs (http_wait_s per row)."""
    s3 = cells["storage"] == "s3"
    run = write_run(folder, cells=cells.assign(raw_reads=cells["raw_reads"].fillna(0),
                                               raw_writes=cells["raw_writes"].fillna(0)), tables=False)
    cells.to_csv(run / "cells.csv", index=False)        # S3 cells: GETs, no raw reads
    cells.to_parquet(run / "cells.parquet", index=False)
    for cid in cells.loc[s3, "cell_id"]:
        (run / "io.parquet" / f"{cid}.parquet").unlink()
        part = run / "requests.parquet" / f"{cid}.parquet"
        req = pd.read_parquet(part)
        req["http_wait_s"] = req["time_s"] * 0.9
        req.to_parquet(part, index=False)
    return run


def _slower(run, cell_id: str, factor: float, cpu: bool = False):
    """One cell of ``run`` ``factor`` times slower: every request, pass and GET wait (and the CPU time if ``cpu``)."""
    cells = pd.read_parquet(run / "cells.parquet")
    pick = cells["cell_id"] == cell_id
    for k in ("time_s", "time_s_min", "time_s_max", "http_wait_s"):
        cells.loc[pick, k] = cells.loc[pick, k] * factor
    cells.to_parquet(run / "cells.parquet", index=False)
    cells.to_csv(run / "cells.csv", index=False)
    part = run / "requests.parquet" / f"{cell_id}.parquet"
    req = pd.read_parquet(part)
    for k in ("time_s", "http_wait_s", "pass_wall_s") + (("pass_cpu_s",) if cpu else ()):
        req[k] = req[k] * factor
    req.to_parquet(part, index=False)
    return run


def _cli(*args):
    return CliRunner().invoke(main, ["compare", *map(str, args)])


def test_an_endpoint_that_got_slower_fails_the_gate(tmp_path):
    """breaker7 S3: the same S3 cells, B through a proxy that adds 20 ms to every GET: the readahead cell 2.2x slower,
    its GET wait grown by as much, the CPU time not: "the endpoint/network is slower", a regression, not the
    machine's load (with 3 passes the pass test can never say so)."""
    a = _run(tmp_path / "a", _cells())
    b = _slower(_run(tmp_path / "b", _cells()), "02beef", 2.2)
    r = _cli(a, b, "--fail-above", "1.3")
    assert r.exit_code == 1, r.output
    assert "FAIL: 1 cell(s) slower in B by more than 1.3x" in r.output
    assert re.search(r"2\.2x +\S+ ms +\S+ ms +slower +same .* the endpoint/network is slower \(GET wait 1[45]\d ms -> 3[0-9]\d ms a pass, "
                     r"the same GETs, CPU time per pass within 1.0x\): not this machine's load", r.output), r.output
    assert "machine's" not in r.output.split("FAIL")[0].split("where a difference")[0]


@pytest.mark.parametrize("cpu, code, says", [
    (True, 3, "undecided: 1 cell(s) that may be slower in B by more than 1.5x (by their wall or CPU time, or hidden "
     "by A's competitors; or without a usable time) that the rule cannot clear (exit 3"),
    (False, 3, "undecided: 1 cell(s) that may be slower in B by more than 1.5x"),
], ids=["cpu-moved-too-few-passes", "cpu-still-waiting"])
def test_two_passes_a_side_never_pass_a_large_difference_silently(tmp_path, cpu, code, says):
    """Two passes a side (repeats: 2): the pass test's least p is 0.33. A local cell 3x slower in wall and CPU time
    cannot be judged: an explicit "undecided" and exit 3, not a pass; with the CPU time unmoved too: 2 passes
    cannot show the wall time apart, so it is not "the machine's" either (breaker9 G1c)."""
    a = _run(tmp_path / "a", _cells(repeats=2))
    b = _slower(_run(tmp_path / "b", _cells(repeats=2)), "00beef", 3.0, cpu=cpu)
    r = _cli(a, b, "--fail-above", "1.5")
    assert r.exit_code == code, r.output
    assert says in r.output
    assert "too few passes to judge: the pass test on 2 vs 2 passes cannot reach p < 0.05 (its least p is 0.33); " \
           "4 passes a side can" in r.output
    assert "undecided in 1: the rule cannot clear them (too few passes, 4 a side can decide" in r.output


def test_compare_help_states_the_rule_and_the_exit_codes():
    text = " ".join(CliRunner().invoke(main, ["compare", "--help"]).output.split())
    for phrase in ("A local cell's raw reads and an S3 cell's GETs are different work, and so are different GET counts",
                   '"the endpoint/network is slower"', "An extrapolated cell's counts", "4 passes a side",
                   "The load EXCUSES a slowdown", "an 'undecided' line and exit 3",
                   "3 when a cell slower by more than RATIO is undecided", "The table is judged at RATIO too",
                   "B's CPU time per pass is 3x A's or more", "never a tie, \"not apart\", faster or a pass"):
        assert phrase in text, phrase


def test_a_two_pass_local_and_s3_sweep_is_never_all_a_tie():
    """breaker7 S2: local raw reads against S3 GETs, 2 passes a side: the headline called a 2,200x difference "all
    configurations are a tie ... the same work". Different kinds of work: the slowest is apart, by rule (1)."""
    cells, _ = prepare(_cells(repeats=2))
    (h,) = headlines(cells)
    text = " ".join(headline_text(h))
    assert "are a tie" not in text and not h.ties, text
    assert "The slowest, s3 none/5MiB 0ms (7.3 s), is 2,212x slower (different work: 2 raw reads (local) against " \
           "131 GETs (S3))" in text, text


def test_a_difference_too_few_passes_can_judge_is_named_not_tied():
    """Two local cells of the same work, 3x apart, 2 passes each and no CPU times: neither a tie nor a difference."""
    rows = [("local", "", "", 0.010), ("local", "", "", 0.030)]
    cells = _cells(rows, repeats=2)
    cells.loc[1, "cache_nbytes"] = 2048 * KIB         # another cache: two configurations of one pattern
    cells, _ = prepare(normalise(cells))
    (h,) = headlines(cells)
    text = " ".join(headline_text(h))
    assert "are a tie" not in text and not h.ties and len(h.undecided) == 1, text
    assert "Too few passes to judge against it, neither a tie nor a difference" in text and "4 passes a side" in text
