"""Each timed pass's CPU share (process CPU time / wall time), kept beside its wall time so a fit can be
checked on the time a pass would have taken had it never waited for a core."""

import numpy as np
import pandas as pd
import pytest

from ccp.tune.prove import _req_passes, cpu_shares


def table(passes, machine=True):
    """A requests table as the engine writes it: per pass an open row (with the pass's machine state), two
    requests and a close; the counted pass (-1) last."""
    rows = []
    for p, (wall, cpu) in enumerate(passes):
        for phase in ("open", "request", "request", "close"):
            row = {"pass": p, "phase": phase, "time_s": 0.01}
            if machine:
                row |= {"pass_wall_s": wall if phase == "open" else np.nan, "pass_cpu_s": cpu if phase == "open" else np.nan}
            rows.append(row)
    rows.append({"pass": -1, "phase": "request", "time_s": 1.0})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("passes, want", [
    ([(0.2, 0.05), (0.1, 0.05)], (0.25, 0.5)),
    ([(0.1, 0.12)], (1.0,)),                  # CPU over wall (threads): capped at 1
    ([(0.0, 0.0)], (1.0,)),
], ids=["busy", "capped", "zero-wall"])
def test_each_pass_keeps_its_share(passes, want):
    got = _req_passes(table(passes), 2)
    assert got.passes == pytest.approx([0.04] * len(passes))
    assert got.cpu_share == pytest.approx(want)


def test_a_run_without_machine_columns_has_no_shares():
    assert _req_passes(table([(0.2, 0.05)], machine=False), 2).cpu_share == ()
    assert cpu_shares(table([(0.2, 0.05)]), [0, 1]) == ()       # a pass without its row: none, not a guess
