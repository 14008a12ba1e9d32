"""The ETA replayed on nine live `ccp run configs/cris.yaml` runs recorded with `benchmarks/eta_accuracy.py --events`
(tests/run/data/eta: x0.8 and x0.71 on this project's shared 2-CPU machine, its load in each file's name; audit22's
while the load rose 1.4 -> 8.2, and four x0.8 runs of the counted pass's round, the last while it rose 1.9 -> 7.7).
Each keeps at least the share of its lines with a minute or more left
within 1.5x of the time really left, and no worse a worst ratio, that the estimator had when they were recorded
(docs/eta.md), less a small margin: a change to the estimator that helps a synthetic stream must not lose on real runs.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data" / "eta"
_spec = importlib.util.spec_from_file_location("eta_accuracy", ROOT / "benchmarks" / "eta_accuracy.py")
assert _spec is not None and _spec.loader is not None
eta_accuracy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(eta_accuracy)

# (file, lines with >= 60 s left within 1.5x as a share, worst predicted/actual either way), as replayed at 94963a0
RECORDED = [
    ("cris08-rising-load.jsonl", 0.765, 2.36),
    ("cris08-load-1.5-3.5.jsonl", 0.799, 2.07),
    ("cris08-load-4.8-10.3.jsonl", 0.776, 1.98),
    ("cris071-load-9.6-10.3.jsonl", 1.0, 1.47),
    ("cris071-load-7.5.jsonl", 0.707, 2.19),
    # as replayed at the counted pass's round (docs/eta.md, "The counted pass"): recorded with its estimator
    ("cris08-load-3.2-3.8.jsonl", 1.0, 1.06),
    ("cris08-load-1.5-2.3.jsonl", 1.0, 1.08),
    ("cris08-load-2.4-4.2.jsonl", 1.0, 1.47),
    ("cris08-load-1.9-7.7.jsonl", 0.636, 1.71),
]


def _ratios(events: Path) -> list[float]:
    lines, end = eta_accuracy.replay(str(events))
    out = []
    for t, line in lines:
        said = eta_accuracy.SWEEP_LEFT.search(line)
        if said and end - t >= eta_accuracy.MIN_LEFT_S:
            out.append(eta_accuracy.seconds_of(said) / (end - t))
    return out


@pytest.mark.parametrize(("name", "share", "worst"), RECORDED, ids=[r[0].removesuffix(".jsonl") for r in RECORDED])
def test_the_eta_on_a_recorded_run_keeps_its_accuracy(name, share, worst):
    ratios = _ratios(DATA / name)
    assert len(ratios) >= 300
    within = sum(1 / 1.5 <= r <= 1.5 for r in ratios) / len(ratios)
    assert within >= share - 0.02
    assert max(max(ratios), 1 / min(ratios)) <= worst + 0.1
