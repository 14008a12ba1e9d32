"""Every time tune prints says what it is and where it is stored: an extrapolated time beside its run
folder's figure (breaker9 G12), the slot and cache checks named as such, completed by the fitted model as the
runoff is, and their passes kept in rounds.csv (breaker9 G13)."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from ccp.chunkcache import ChunkCache
from ccp.config.sweep import AccessSpec, DatasetSpec, GenerateSpec
from ccp.hdf5.dataset import describe_source
from ccp.hdf5.filters import parse_filters
from ccp.tune import settle
from ccp.tune.answer import extrapolated_lines
from ccp.tune.prove import ROUNDS_COLUMNS, Contender, ItemPasses, Measured, write_rounds
from ccp.tune.workload import WorkItem

NONE = parse_filters("none")
SRC = describe_source(DatasetSpec("/data", generate=GenerateSpec((64, 64, 64), np.dtype("<f4"))))
WL = SimpleNamespace(items=(WorkItem(AccessSpec("read", (64, 1, 1)), 1.0), WorkItem(AccessSpec("read", (1, 64, 64)), 1.0)))


def t1_block_row():
    """breaker9's T1: block 64x1x1, its maps pattern measured on 1 of 64 requests: tune printed ~496 ms, its run
    folder's cells.csv says 13.6 s (the prefix scaled up), and the summary pointed to cells.csv for it."""
    return {"label": "block 64x1x1", "runoff": False, "extrapolated": True, "measured_s": 0.496,
            "extrapolated_how": "1/64 requests measured, the rest priced by the fitted model",
            "engine_measured_s": 13.647, "run_dir": "T1/runs/08-block-64x1x1", "first_extrapolated": True}


@pytest.mark.parametrize("row, says", [
    (t1_block_row(), ["block 64x1x1 (1st round)", "496 ms", "the engine's figure: 13.6 s",
                      "T1/runs/08-block-64x1x1/cells.csv"]),
    ({**t1_block_row(), "label": "tuned", "runoff": True, "measured_s": 0.0369, "engine_measured_s": 0.0612,
      "run_dir": "T3/runoff", "first_extrapolated": False},
     ["tuned (runoff)", "36.9 ms", "the engine's figure: 61.2 ms", "T3/runoff/rounds.csv"]),
], ids=["first-round", "runoff"])
def test_an_extrapolated_time_names_its_run_folders_figure(row, says):
    text = "\n".join(extrapolated_lines([row]))
    assert all(s in text for s in says), text
    assert "not the sweep engine's figure in its run folder" in text


def test_no_extrapolated_time_no_lines():
    assert extrapolated_lines([{**t1_block_row(), "extrapolated": False, "first_extrapolated": False}]) == []


def test_interleaved_passes_are_kept_in_rounds_csv(tmp_path):
    c = Contender("h5py guess", (16, 16, 16), NONE, ChunkCache(262144, 1601, 0.75), 0.046, "heuristic")

    def got(t, n, status):
        row = SimpleNamespace(op="read", block="1x64x64", status=status, requests=64, time_s=t, load_max=4.4, cpus=2)
        req = pd.DataFrame({"pass": [-1, 0] + [0] * n, "phase": ["open", "open"] + ["request"] * n,
                            "time_s": [9.0, 0.001] + [0.002] * n})
        return row, req

    write_rounds(tmp_path, [(c, [[got(0.13, 64, "ok"), got(0.5, 4, "extrapolated")]])])
    rounds = pd.read_csv(tmp_path / "rounds.csv")
    assert list(rounds.columns) == ROUNDS_COLUMNS and len(rounds) == 2
    assert list(rounds["measured_requests"]) == [64, 4] and list(rounds["round"]) == [1, 2]
    assert rounds["pass_s"].tolist() == pytest.approx([0.001 + 64 * 0.002, 0.001 + 4 * 0.002])   # timed passes only
    assert rounds["time_s"].tolist() == [0.13, 0.5] and rounds["cache_nslots"].tolist() == [1601, 1601]
    assert set(pd.read_parquet(tmp_path / "requests.parquet")["round"]) == {1, 2}


def test_the_slot_check_is_named_kept_and_completed_by_the_model(monkeypatch, tmp_path, costs):
    """T1: "runoff round 1/7 ... 7/7" was printed for the slot check, its "179 ms against 199 ms" was the engine's
    prefix scaled up beside a 36 ms pick, and nothing of it was kept."""
    pick = Contender("h5py guess", (16, 16, 16), NONE, ChunkCache(262144, 1601, 0.75), 0.046, "heuristic")
    seen = {}

    def fake(wl, source, contenders, out, work, rounds, cell_budget, echo, phase="runoff"):
        seen["phase"] = phase
        # the maps pattern cut to 16 of 64 requests in every round: the engine scaled 5 ms up to 20 ms
        prefix = ItemPasses(64, 16, (0.005,) * rounds)
        whole = ItemPasses(4096, 4096, (0.02,) * rounds)
        return [Measured(c, 0.04, ((0.02, "ok"), (0.02, "extrapolated")), Path(out), 0.04, 0.04,
                         passes=(whole, prefix)) for c in contenders]

    monkeypatch.setattr(settle, "measure_interleaved", fake)
    chosen, note, both = settle.check_slots(WL, SRC, pick, tmp_path, tmp_path, 3, None, lambda *_: None, costs=costs)
    assert seen["phase"] == "slot check"
    assert all(m.extrapolated and m.engine_s == pytest.approx(0.04) and m.measured_s != pytest.approx(0.04)
               for m in both)                       # the prefix completed by the model, the engine's figure kept
    assert "~" in note and str(tmp_path / "slots" / "rounds.csv") in note and "7 interleaved rounds" in note


def test_one_cut_round_is_completed_alone(costs):
    """breaker9 follow-up (a live 41-round runoff): one pass of 41 cut to 1 request made every pass a 1-request
    prefix, the model's time of 4,095 requests added to 40 whole passes (~37.1 ms printed for ~27 ms measured)."""
    from ccp.matrix.cells import Cell
    from ccp.tune.complete import completed, reestimate

    c = Contender("refit #3", (64, 11, 64), NONE, ChunkCache(262144, 521, 0.75), 0.03, "candidate")
    maps = WL.items[1]
    d = ItemPasses(64, 1, (0.02, 0.02, 0.001), each=(64, 64, 1))
    done, note = completed(d, Cell(c.chunks, c.filters, c.cache, maps.access), SRC, costs)
    assert done[:2] == [0.02, 0.02] and done[2] > 0.001 and "1 of 3 passes cut" in note
    whole = ItemPasses(4096, 4096, (0.01, 0.01, 0.01))
    m = Measured(c, 0.03, ((0.01, "ok"), (0.02, "extrapolated")), Path("."), passes=(whole, d))
    (again,) = reestimate([m], WL.items, SRC, costs)
    assert again.measured_s == pytest.approx(0.01 + 0.02)          # the medians of the passes as measured


def test_the_fit_takes_an_interleaved_cells_whole_passes(costs):
    from ccp.tune.tune import fit_from_round

    c = Contender("refit #3", (64, 11, 64), NONE, ChunkCache(262144, 521, 0.75), 0.03, "candidate")
    d = ItemPasses(64, 1, (0.02, 0.02, 0.001), cpu_share=(0.5, 0.6, 0.9), each=(64, 64, 1))
    whole = ItemPasses(4096, 4096, (0.01, 0.01, 0.01))
    m = Measured(c, 0.03, ((0.01, "ok"), (0.02, "extrapolated")), Path("."), passes=(whole, d))
    cells: list = []
    fit_from_round([c], [m], WL.items, SRC, costs, cells)
    maps = next(x for x in cells if x["pattern"] == 1)
    assert maps["first"] is None and maps["passes"] == [0.02, 0.02]      # the whole passes, not a 1-request prefix
    assert maps["cpu_share"] == [0.5, 0.6]                               # each beside its pass (tune_fit.py zips them)


def test_a_cut_round_is_left_out_of_the_pairing_not_the_whole_runoff():
    """41 rounds, round 1 of one layout cut to a prefix: the other 40 are compared round against round (they
    were 'no whole passes', and the runoff undecided)."""
    from ccp.tune.settle import compared_passes, runoff_verdict, tie_basis, weighted_passes

    c = Contender("refit #3", (64, 11, 64), NONE, ChunkCache(262144, 521, 0.75), 0.03, "candidate")
    rng = np.random.default_rng(0)
    base = rng.uniform(0.02, 0.03, 41)
    cut = Measured(c, 0.03, ((0.02, "extrapolated"), (0.001, "ok")), Path("."),
                   passes=(ItemPasses(4096, 1, tuple(base), each=(1,) + (4096,) * 40),
                           ItemPasses(64, 64, (0.001,) * 41, each=(64,) * 41)))
    pa = weighted_passes(cut, WL.items)
    assert pa is not None and pa[0] is None and all(x is not None for x in pa[1:])
    slower = [x * 1.2 if x is not None else 0.5 for x in pa]       # 1.2x in every round
    a = {"label": "a", "measured_s": float(np.median(base)) + 0.001, "passes": pa, "paired": True}
    b = {"label": "b", "measured_s": a["measured_s"] * 1.2, "passes": slower, "paired": True}
    how, qa, qb = compared_passes(a, b)
    assert how == "paired" and len(qa) == len(qb) == 40
    assert runoff_verdict(a, b) == "apart"
    # b2: 1% one way, then the other (log-symmetric: exp(+-0.01)), the round's noise: no difference round by round
    b2 = {**b, "passes": [x * float(np.exp(0.01 if i % 2 else -0.01)) if x is not None else None for i, x in enumerate(pa)],
          "measured_s": a["measured_s"] * 1.05}
    assert runoff_verdict(a, b2) == "tied" and "40 interleaved rounds (of 41" in tie_basis(a, b2)
