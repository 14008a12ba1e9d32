"""Cell ids, labels, row columns and the as-run YAML stay what the code before the axis objects made them.

``fixtures/axes_golden.json`` was written by ``tests/config/axes_cases.py`` before ``ccp.config.axes`` existed;
``tests/store/fixtures/schema4`` is a run folder ``ccp run --quick`` wrote then (client and file_space varying).
A resumed run finds its cells by id: one changed character here and every old run folder reruns from scratch.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml
from axes_cases import GOLDEN, OLD_AXES, REPORT_GOLDEN, record, report_record, sweeps

from ccp.config.sweep import SWEEP_KEYS, parse_sweep
from ccp.hdf5.dataset import describe_source
from ccp.matrix.cells import expand
from ccp.store.schema import SCHEMA_VERSION

GOLD = json.loads(GOLDEN.read_text())
RUN = Path(__file__).resolve().parents[1] / "store" / "fixtures" / "schema4"


@pytest.mark.parametrize("name", sorted(GOLD), ids=sorted(GOLD))
def test_cells_and_yaml_match_the_code_before_the_axes(name):
    now = record(sweeps()[name])
    old = GOLD[name]
    assert [c["key"] for c in now["cells"]] == [c["key"] for c in old["cells"]]
    # ids, labels, columns; the row's schema_version is the store's stamp (5 since the timed part's CPU time joined
    # requests.parquet), not a column the axes make
    assert _unstamped(now["cells"]) == _unstamped(old["cells"])
    assert {c["columns"]["schema_version"] for c in now["cells"]} <= {SCHEMA_VERSION}
    assert now["sweep_as_dict"] == old["sweep_as_dict"]


def _unstamped(cells: list[dict]) -> list[dict]:
    return [{**c, "columns": {k: v for k, v in c["columns"].items() if k != "schema_version"}} for c in cells]


def test_a_committed_run_folder_finds_its_cells_by_id():
    doc = yaml.safe_load((RUN / "sweep.yaml").read_text())
    sweep = parse_sweep({k: v for k, v in doc.items() if k in SWEEP_KEYS})
    ids = [c.cell_id for c in expand(sweep, describe_source(sweep.dataset))]
    with open(RUN / "cells.csv", newline="") as f:
        stored = [row["cell_id"] for row in csv.DictReader(f)]
    assert len(stored) == 4 and sorted(ids) == sorted(stored)


REPORT_GOLD = json.loads(REPORT_GOLDEN.read_text())


@pytest.mark.parametrize("name", sorted(REPORT_GOLD), ids=sorted(REPORT_GOLD))
def test_report_labels_match_the_code_before_the_axes(name):
    base = name.removesuffix(" (schema 1)")
    cells = GOLD[base]["cells"]
    if base != name:
        cells = [{"columns": {k: v for k, v in c["columns"].items() if k not in OLD_AXES}} for c in cells]
    assert report_record(cells) == REPORT_GOLD[name]


ROUND_TRIP = {**sweeps(), "file-space-settings": {
    "name": "fs", "dataset": {"generate": {"shape": [4, 8], "dtype": "<f4"}},
    "matrix": {"chunks": [[2, 8]], "access": [{"op": "read", "block": [1, 8]}],
               "file_space": [{"strategy": "page", "page_size": "4KiB", "persist": False},
                              {"strategy": "fsm_aggr", "threshold": 64}, "aggregate", "default"]}}}


@pytest.mark.parametrize("name", sorted(ROUND_TRIP), ids=sorted(ROUND_TRIP))
def test_every_axis_reads_back_from_its_yaml_form(name):
    """The run folder's sweep.yaml (sweep_as_dict) parses back to the same setting on every axis."""
    from ccp.config import axes as matrix_axes
    from ccp.config.sweep import sweep_as_dict

    sweep = parse_sweep(ROUND_TRIP[name], base_dir=GOLDEN.parents[3] / "configs")
    again = parse_sweep(yaml.safe_load(yaml.safe_dump(sweep_as_dict(sweep), sort_keys=False)))
    for a in matrix_axes.axes():
        assert again.setting(a.name) == sweep.setting(a.name), a.name
