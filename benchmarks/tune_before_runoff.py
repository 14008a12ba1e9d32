"""Tune's pick, predicted from the first round alone / measured in the runoff, as measured and brought to the
runoff's CPU share, from finished runs' ``tune.json`` (no measuring).

    PYTHONPATH=. .venv/bin/python benchmarks/tune_before_runoff.py RUN/tune.json [...]

Per file: the first round's fit recomputed from ``prices.cells`` (the first round's equations, as tune fits them),
the pick's runoff cells priced by it against their measured medians (each pattern at its workload weight; a cell
measured on a prefix is its prefix's equation on both sides), and the same prediction x the pick's median CPU share
in the first round / in the runoff (``cpu_share`` beside each pass): what the first round's prices say at the
runoff's load. Also the pick's own first round / runoff (the measurement's reproducibility). A run whose pick has no
runoff cell, or whose cells lack their shares, prints what it can.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import yaml

from ccp.predict import Calibration
from ccp.tune.fit import Observation, fit_prices, round_share
from ccp.tune.search import PRICE_GROUPS, Costs


def wall(cell: dict) -> float:
    return float(statistics.median(cell["passes"])) if cell.get("passes") else float(cell["measured_s"])


def weights_of(t: dict) -> dict:
    """{pattern index: weight} from the run's workload file; 1 each when it cannot be read."""
    try:
        doc = yaml.safe_load(Path(t["workload"]).read_text())
        return {i: float(it["weight"]) for i, it in enumerate(doc["workload"])}
    except (OSError, KeyError, TypeError, yaml.YAMLError):
        return {}


def analyse(path: Path) -> str:
    t = json.loads(path.read_text())
    cells, pick = t["prices"]["cells"], t["recommended"]["label"]
    first = [c for c in cells if c["round"] == "first"]
    mine = [c for c in cells if c["round"] == "runoff" and c["label"] == pick]
    if not mine:
        return f"{path}: {pick}: no runoff cell of the pick"
    w = weights_of(t)
    fit = fit_prices(Costs(Calibration(1.0, 1.0, {}, {}), 1.0),
                     [Observation(tuple(c["parts"]), wall(c), len(c["passes"] or [1])) for c in first])
    if fit is None:
        return f"{path}: {pick}: too few first-round cells to fit"
    s = fit.scales
    predicted = sum(w.get(c["pattern"], 1.0) * (sum(s[g] * p for g, p in zip(PRICE_GROUPS, c["parts"]) if g != "open")
                                                + s["open"]) for c in mine)
    measured = sum(w.get(c["pattern"], 1.0) * wall(c) for c in mine)
    out = f"{path}: pick {pick}: first-round prices / runoff {predicted / measured:.2f}x"
    share1 = round_share([x for c in first if c["label"] == pick for x in (c.get("cpu_share") or [])])
    share2 = round_share([x for c in mine for x in (c.get("cpu_share") or [])])
    if share1 and share2:
        out += (f"; the pick's median CPU share {share1:.2f} in the first round, {share2:.2f} in the runoff: brought to "
                f"the runoff's share {predicted * share1 / share2 / measured:.2f}x")
    own = {c["pattern"]: wall(c) for c in first if c["label"] == pick and c["first"] is None}
    if all(c["first"] is None for c in mine) and set(own) == {c["pattern"] for c in mine}:
        again = sum(w.get(i, 1.0) * x for i, x in own.items())
        out += f"; the pick itself, first round / runoff {again / measured:.2f}x"
    prefixes = sum(1 for c in mine if c["first"] is not None)
    return out + (f" ({prefixes} of its runoff cells a prefix)" if prefixes else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tune_json", type=Path, nargs="+")
    for p in ap.parse_args().tune_json:
        print(analyse(p))


if __name__ == "__main__":
    main()
