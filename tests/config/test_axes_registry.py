"""A new axis is one object: registered, it is parsed, multiplied, excluded, named in ids, labels and columns,
written to and read back from sweep.yaml, scaled, selected by report tables and labelled by the report, with
no other file touched. The fake axis here (``stripes``) stands for the next real one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
import pytest

from ccp.config import axes as matrix_axes
from ccp.config.axes.base import Axis, ParseContext, as_list
from ccp.config.scale import scale_sweep
from ccp.config.shapes import parse_int
from ccp.config.sweep import parse_sweep, sweep_as_dict
from ccp.config.tables import parse_tables
from ccp.errors import ConfigError
from ccp.hdf5.dataset import describe_source
from ccp.matrix.cells import expand
from ccp.report.data import Labels, normalise


class StripesAxis(Axis):
    """Files striped over N servers (a fake axis): 1, the default, is what every cell had before it."""

    name = "stripes"
    columns = ("stripes",)
    selectors = {"stripes": "stripes"}
    report_column = "stripes_label"
    default = before = 1

    def parse(self, matrix: Mapping[str, Any], ctx: ParseContext) -> tuple:
        return tuple(parse_int(v, f"matrix.stripes[{i}]", lo=1, hi=1024)
                     for i, v in enumerate(as_list(matrix.get("stripes", [1]), "matrix.stripes")))

    def as_yaml(self, parsed: tuple) -> dict[str, Any]:
        return {"stripes": list(parsed)}

    def parse_rule(self, rule, where):
        return {"stripes": parse_int(rule["stripes"], f"{where}.stripes", lo=1)} if "stripes" in rule else {}

    def excluded(self, rule, value, raw=None):
        return "stripes" not in rule or rule["stripes"] == value

    def scale_matrix(self, matrix, factor, volume):
        if "stripes" in matrix:
            matrix["stripes"] = [max(1, round(n * factor)) for n in matrix["stripes"]]

    def parse_selector(self, key, value, where):
        return parse_int(value, where, lo=1)

    def key(self, value):
        return [] if value == 1 else [f"stripes={value}"]

    def label(self, value):
        return "" if value == 1 else f"{value} stripes"

    def row(self, value):
        return {"stripes": value}

    def text(self, row, context):
        return f"{int(row['stripes'])} stripes"


@pytest.fixture
def stripes():
    axis = StripesAxis()
    matrix_axes.register(axis)
    try:
        yield axis
    finally:
        matrix_axes.unregister("stripes")


SWEEP = {"name": "striped", "dataset": {"generate": {"shape": [8, 10], "dtype": "<f4"}},
         "matrix": {"chunks": [[4, 10]], "cache": ["64KiB", "1MiB"], "access": [{"op": "read", "block": [1, 10]}]}}


def _cells(raw):
    sweep = parse_sweep(raw)
    return sweep, expand(sweep, describe_source(sweep.dataset))


def test_a_registered_axis_reaches_ids_labels_columns_exclude_and_yaml(stripes):
    _, before = _cells(SWEEP)
    raw = {**SWEEP, "matrix": {**SWEEP["matrix"], "stripes": [1, 8]}, "exclude": [{"stripes": 8, "cache": "64KiB"}]}
    sweep, cells = _cells(raw)
    assert sweep.setting("stripes") == (1, 8)
    assert [(c.cache.nbytes, c.value(stripes)) for c in cells] == [(65536, 1), (1 << 20, 1), (1 << 20, 8)]
    # at its default the axis adds nothing to the id: the cells before it keep theirs
    assert [c.cell_id for c in cells if c.value(stripes) == 1] == [c.cell_id for c in before]
    eight = cells[-1]
    assert eight.key.endswith("|stripes=8") and eight.label().endswith(" | 8 stripes")
    assert eight.columns()["stripes"] == 8 and list(eight.columns())[-1] == "stripes"
    # sweep.yaml holds it, and reads back as the same cells
    as_run = sweep_as_dict(sweep)
    assert as_run["matrix"]["stripes"] == [1, 8]
    assert [c.key for c in _cells(as_run)[1]] == [c.key for c in cells]


def test_a_registered_axis_is_checked_scaled_and_selected(stripes):
    with pytest.raises(ConfigError, match=r"matrix\.stripes\[1\]"):
        parse_sweep({**SWEEP, "matrix": {**SWEEP["matrix"], "stripes": [1, 0]}})
    with pytest.raises(ConfigError, match=r"exclude\[0\]\.stripes"):
        parse_sweep({**SWEEP, "exclude": [{"stripes": "many"}]})
    scaled = scale_sweep({**SWEEP, "matrix": {**SWEEP["matrix"], "stripes": [1, 8]}}, 0.5)
    assert scaled["matrix"]["stripes"] == [1, 4]
    table = parse_tables([{"title": "t", "rows": ["time"], "columns": [{"stripes": 8}]}])[0]
    assert table.columns == ((("stripes", 8),),)


def test_the_report_labels_a_registered_axis_that_varies(stripes):
    _, cells = _cells({**SWEEP, "matrix": {**SWEEP["matrix"], "stripes": [1, 8]}})
    frame = normalise(pd.DataFrame([{"schema_version": 4, "cell_id": c.cell_id, "status": "ok", **c.columns()} for c in cells]))
    labels = Labels.of(frame)
    assert ("stripes", "stripes_label") in labels.axes
    assert labels.add(frame)["label"].str.contains("8 stripes").sum() == 2


def test_an_axis_cannot_take_another_axis_key():
    clash = StripesAxis()
    clash.columns = ("cache_nbytes",)
    with pytest.raises(ValueError, match="cache_nbytes"):
        matrix_axes.register(clash)
    with pytest.raises(ValueError, match="built in"):
        matrix_axes.unregister("cache")
