"""A trim is worded as what it was: the runoff's cap is a bound against every pass running to its budget, and
says how many passes reached it; the answer says when it came (breaker10 B7: "capped ... to end in time",
1 of 39 passes cut, answered at 39.5 s of a 90 s --within)."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from ccp.chunkcache import ChunkCache
from ccp.config.sweep import AccessSpec
from ccp.hdf5.filters import parse_filters
from ccp.tune import runoff as runoff_mod
from ccp.tune.answer import answered_lines
from ccp.tune.pace import Pace
from ccp.tune.prove import Contender, ItemPasses, Measured
from ccp.tune.workload import WorkItem

NONE = parse_filters("none")
WL = SimpleNamespace(items=(WorkItem(AccessSpec("read", (1, 64, 64)), 1.0),))


def test_the_runoffs_cap_says_it_is_a_bound_and_how_many_passes_reached_it(monkeypatch, tmp_path):
    a = Contender("a", (8, 64, 64), NONE, ChunkCache(1 << 20, 521, 0.75), 1.0, "candidate")
    b = Contender("b", (4, 64, 64), NONE, ChunkCache(1 << 20, 521, 0.75), 1.0, "candidate")
    first = [Measured(c, 1.0, ((1.0, "ok"),), Path(".")) for c in (a, b)]
    got: dict = {}

    def interleaved(wl, source, finals, out, work, rounds, cell_s, echo):
        got.update(rounds=rounds, cell_s=cell_s)
        each = [(100,) * rounds, (100,) * (rounds - 1) + (17,)]        # one pass of b's reached its budget
        return [Measured(c, 1.0, ((1.0, "extrapolated" if min(e) < 100 else "ok"),), Path("."),
                         passes=(ItemPasses(100, min(e), (1.0,) * rounds, each=e),)) for c, e in zip(finals, each)]

    monkeypatch.setattr(runoff_mod, "measure_interleaved", interleaved)
    clock = SimpleNamespace(t=0.0)
    pace = Pace(20.0, clock=lambda: clock.t, start=0.0)
    done = runoff_mod.run_off(WL, None, [a, b], first, tmp_path, tmp_path, 1.0, 3, lambda *_: None, pace=pace)
    assert len(done) == 2 and got["cell_s"] < 10.0          # the plan capped the cells below the runoff's 10 s
    (note,) = [n for n in pace.trimmed if "capped" in n]
    assert "a bound under which its rounds end in time even were every pass to run to its budget" in note
    assert f"1 of {2 * got['rounds']} passes reached it" in note
    assert "to end in time:" not in note


@pytest.mark.parametrize("result, want", [
    ({"trimmed": ["the runoff's cells capped ..."], "within_s": 90.0, "wall_s": 39.52},
     ["  trimmed as planned to end in time (each phase against its worst case): answered at 39.5 s, 44% of --within 90 s"]),
    ({"trimmed": [], "within_s": 90.0, "wall_s": 39.52}, []),                     # nothing trimmed: nothing to say
    ({"trimmed": ["x"], "within_s": 90.0, "wall_s": 95.0}, []),                   # over: overrun_lines says it
    ({"trimmed": ["x"], "within_s": None, "wall_s": 95.0}, []),
], ids=["trimmed-early", "untrimmed", "overrun", "no-within"])
def test_the_answer_says_when_it_came_after_a_trim(result, want):
    assert answered_lines(result) == want
