"""The ``ccp compare`` click command: a thin layer over :func:`ccp.report.write_compare`."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import click


class Ratio(click.FloatRange):
    """A ratio of at least 1 that is a number: ``nan`` (an unset variable in a CI script) would pass every gate."""

    name = "ratio"

    def convert(self, value, param, ctx):
        ratio = super().convert(value, param, ctx)
        if not math.isfinite(ratio):
            self.fail(f"{value!r} is not a finite ratio (e.g. 1.5)", param, ctx)
        return ratio


@click.command(name="compare")
@click.argument("run_a", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.argument("run_b", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--html", "html_out", type=click.Path(dir_okay=False, path_type=Path), help="Also write an HTML page here.")
@click.option("--fail-above", type=Ratio(min=1.0), metavar="RATIO",
              help="Exit 1 when a shared cell is slower in B by more than RATIO (B / A) by the rule below, e.g. 1.5: a "
                   "CI gate. A time difference the load explains (the machine's) never fails. A cell slower by more "
                   "than RATIO that the rule cannot clear (undecided: too few passes, wall time apart alone, CPU time "
                   "moved without the passes apart, an extrapolated cell, no usable time in B) is never a pass: an "
                   "'undecided' line and exit 3 (when no cell regressed); so is a cell that finished in A and has no "
                   "cell in B ('not compared'). A cell whose CPU time per pass decided against its wall time (or "
                   "left it undecided) is measured by that CPU ratio. The table is judged at RATIO too: one "
                   "threshold a comparison, one verdict a cell.")
@click.option("--threshold", type=Ratio(min=1.0), default=None, metavar="RATIO",
              help="Call a cell faster or slower only beyond this ratio (and by the rule); closer is a tie. "
                   "[default: 1.25; --fail-above's under a gate] Given with a different --fail-above it is refused "
                   "(exit 2): the table and the gate would give a cell two verdicts.")
@click.option("--remeasure", type=click.IntRange(min=0, max=50), default=0, show_default=True, metavar="ROUNDS",
              help="Measure the cells that differ again on this machine, A and B alternating, ROUNDS passes each, and "
                   "judge them by those passes (local cells; needs the runs' work files or data). Never a cell rule (1) "
                   "decided (its I/O counts differ), nor one rule (3) decided on its recorded passes and CPU time, "
                   "nor one that makes other I/O here than its run recorded. Both "
                   "sides run with this ccp and this HDF5: it tells the machine's noise from a difference of the "
                   "cells' settings, not whether the code that measured B was slower: a cell whose recorded CPU time "
                   "per pass in B is beyond the bar stays undecided however the remeasure ends.")
def compare_command(run_a, run_b, html_out, fail_above, threshold, remeasure):
    """Compare the cells two runs share, side by side with ratios (B / A) and a verdict per cell.

    The rule, in this order: (1) the slower side did materially more of some I/O count
    (requests, raw reads and bytes, GETs, beyond 5% of the smaller; more of all, or a mix):
    "more work", real whatever the load. A local cell's raw reads and an S3 cell's GETs are
    different work, and so are different GET counts. An extrapolated cell's counts (a time
    budget) are estimates: never rule (1); slower beyond the threshold, it is undecided
    unless its passes decide. (2) Two S3 cells with the same GETs whose GET wait grew while
    the CPU time did not: "the endpoint/network is slower", real. (3) The same work (or less
    on the slower side): real when the passes differ (Mann-Whitney, p < 0.05: 4 passes a
    side; or every pass apart in wall and CPU time) and the CPU time per pass moved beyond
    its bar, every pass apart in it (--threshold, at least 1.25x; 1.5x when the slower side
    had more competitors: its passes got under 0.7 of the faster's CPU share or of a whole
    CPU, or a higher load; within 2.25x then undecided; between two runs, beyond 6x too:
    each run measures a cell's passes in one process, and two runs of identical work moved
    up to 4.77x so; --remeasure, alternating both in one process, decides by the pass's own
    bar); a slower side whose share was cut so is undecided up to 6x its CPU time
    (competitors evict a pass's caches too: identical work's CPU time per pass rose 5.3x).
    The same work
    with 4 or more passes a side that are not apart: "not apart", no difference shown.
    Then the CPU time per pass against the wall time: the same work, every pass of B above
    every pass of A in CPU time, beyond its bar, while the wall time ties, overlaps or calls
    B faster (A measured under competitors keeps its wall time up): B is "slower" when A's
    passes got under 0.7 of B's share of a CPU and B's CPU time per pass is 3x A's or
    more (what competitors the share does not show can cost; 6x between two runs), else
    undecided; never a
    tie, "not apart", faster or a pass. The mirror (A's CPU time beyond B's) is B faster
    when B's share was the cut one, else the wall time's verdict stands. A tie, "not apart"
    or a small "faster" over an A whose passes got under 0.7 of B's share of a CPU is
    undecided, counted by a gate beyond the shares' ratio: A's competitors keep its wall and
    CPU time up and can hide a slowdown of B's as large.
    The load EXCUSES a slowdown ("the machine's") only with the CPU time within its bar, the
    faster side's passes not under 0.7 of a CPU (its competitors raised its CPU time), and:
    where both runs recorded each pass's wait for a CPU (runnable, not running), the slower
    side's passes less that wait within the threshold of the faster's less theirs (a sleep
    or a lock is no CPU wait); else both loads known, the slower side's load per CPU really
    higher (by 0.5 and 25%) and the ratio within 1.5 x its max(1, load/CPU) over the
    faster's. Anything else
    beyond --threshold is undecided, never a tie, never the machine's. --remeasure measures
    such cells again here, A and B alternating.
    Exit status: 0; with --fail-above, 1 when a cell regressed by more than RATIO, else 3
    when a cell slower by more than RATIO is undecided, a cell that finished in A has no
    usable cell in B (not compared) or the runs share no cell, else 0; 2 for bad input (a --threshold other than
    --fail-above: one threshold a comparison, stated in its summary).

    \b
    Example:
      ccp compare results/cris/laptop results/cris/server --html compare.html
      ccp compare results/cris/main results/cris/branch --fail-above 1.5   # in CI
      ccp compare results/cris/monday results/cris/tuesday --remeasure 5
    """
    from ccp.report import write_compare
    from ccp.store.results import check_run_folder

    for name, r in (("RUN_A", run_a), ("RUN_B", run_b)):
        check_run_folder(r, name)
    # one threshold a comparison (compare.one_threshold): a --threshold other than --fail-above is refused there
    result = write_compare(run_a, run_b, html_out, fail_above=fail_above, threshold=threshold, remeasure=remeasure)
    click.echo(result)
    if fail_above is not None and result.regressions:
        sys.exit(1)
    if fail_above is not None and (result.undecided or result.absent or not len(result.joined)):
        sys.exit(3)         # a gate cannot pass what it cannot judge (or did not compare): distinct from 1
