"""What two runs ``ccp compare`` is given differ in: the dataset and the measurement settings, which make a ratio
mean something else (:func:`differences`), and, when they share no cell, the configured values that kept every cell
apart (:func:`nothing_in_common`)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ccp.config import axes as matrix_axes
from ccp.report.data import is_ok, read_run_sweep
from ccp.report.headline import RunKind
from ccp.store.reader import read_run_record

SETTINGS = ("repeats", "cold", "quick", "time_budget")   # measurement settings that change what a time means


def differences(run_a: Path, run_b: Path) -> list[str]:
    """What the two runs measured differently (dataset, data, settings): each makes a ratio mean something else."""
    out = []
    (_, sa), (_, sb) = read_run_sweep(run_a), read_run_sweep(run_b)
    ia, ib = read_run_record(run_a).get("dataset_identity"), read_run_record(run_b).get("dataset_identity")
    da, db = sa.get("dataset"), sb.get("dataset")
    if ia and ib and ia != ib:
        out.append(f"the runs measured different datasets: A {ia}, B {ib}")
    elif da != db and da is not None and db is not None:
        out.append(f"the runs' dataset settings differ: A {json.dumps(da, default=str)}, B {json.dumps(db, default=str)}")
    for key in SETTINGS:
        va, vb = sa.get(key), sb.get(key)
        if va != vb:
            out.append(f"{key} differs: A {va!r}, B {vb!r}")
    ka, kb = RunKind.of(sa), RunKind.of(sb)
    if ka.scale != kb.scale:
        out.append(f"scale differs: A {ka.scale or 1:g}, B {kb.scale or 1:g} (times of scaled data are not comparable)")
    return out


def _some(values: list[str]) -> str:
    """'1 MiB', '1 MiB and 256 KiB', '1 MiB, 256 KiB, 64 KiB and 3 more'."""
    shown = values[:3] if len(values) > 4 else values
    rest = f" and {len(values) - len(shown)} more" if len(values) > len(shown) else ""
    return (", ".join(shown[:-1]) + " and " + shown[-1] if len(shown) > 1 and not rest else ", ".join(shown)) + rest


def nothing_in_common(a: pd.DataFrame, b: pd.DataFrame) -> str:
    """Why two runs (their cells, labelled by :func:`join`) share no finished cell, in one line that leads the output
    (audit22 F1: two runs of the quickstart, one with cache 1 MiB and one with 256 KiB, printed "pass: no cell
    slower" before "not compared"): a run that finished nothing, else the configured values (each axis's words, as
    the labels write them) that differ between the two sweeps: the axes whose values they share none of, when any."""
    fa, fb = a[is_ok(a)], b[is_ok(b)]
    for run, cells, done in (("A", a, fa), ("B", b, fb)):
        if not len(done):
            return f"no cells in common: {run} finished none of its {len(cells)} cell(s): nothing to compare"
    differ = []
    for ax in matrix_axes.axes():
        col = ax.report_column or ax.name
        if col not in a or col not in b:
            continue
        va, vb = (list(dict.fromkeys(str(x) for x in cells[col])) for cells in (a, b))
        if set(va) != set(vb):
            differ.append((ax.name, va, vb))
    # an axis whose values the two share none of is why no cell matches; one that differs in part is not
    differ = [d for d in differ if not set(d[1]) & set(d[2])] or differ
    advice = ("(compare matches cells of the same configuration; to compare two settings, run both in one sweep: its "
              "report ranks them)")
    if not differ:
        return ("no cells in common: no cell of B has the configuration of a finished cell of A, though both sweeps' "
                "axes take the same values (their exclude: rules combine them differently, or a `chunks: source` cell "
                f"followed a file rechunked since) {advice}")
    return ("no cells in common: A's sweep has " + " and ".join(f"{name} {_some(va)}" for name, va, _ in differ)
            + ", B's " + " and ".join(f"{name} {_some(vb)}" if len(differ) > 1 else _some(vb)
                                      for name, _, vb in differ) + f" {advice}")
