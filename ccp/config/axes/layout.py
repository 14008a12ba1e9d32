"""The layout axes: ``chunks`` (a chunk shape, ``contiguous`` or ``source``) and ``filters`` (a pipeline or ``source``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ccp.config.axes.base import Axis, ParseContext, as_list, scale_dims
from ccp.config.shapes import SOURCE, parse_chunks
from ccp.errors import ConfigError
from ccp.hdf5.filters import FilterPipeline, parse_filters
from ccp.units import shape_str


class ChunksAxis(Axis):
    name = "chunks"
    columns = text_columns = ("chunks",)
    selectors = {"chunks": "chunks"}
    report_column = "chunks"

    def parse(self, matrix: Mapping[str, Any], ctx: ParseContext) -> tuple:
        default = [SOURCE] if ctx.from_file else [None]
        out = tuple(parse_chunks(v, f"matrix.chunks[{i}]") for i, v in enumerate(as_list(matrix.get("chunks", default), "matrix.chunks")))
        for i, c in enumerate(out):
            if c is SOURCE and not ctx.stored_layout:
                raise ConfigError(f"matrix.chunks[{i}]", "`source` means the stored layout: give `dataset.file`, or `dataset.generate.chunks`")
        return out

    def as_yaml(self, parsed: tuple) -> dict[str, Any]:
        return {"chunks": [SOURCE.value if c is SOURCE else shape_str(c) for c in parsed]}

    def parse_rule(self, rule: Mapping[str, Any], where: str) -> dict[str, Any]:
        return {"chunks": parse_chunks(rule["chunks"], f"{where}.chunks")} if "chunks" in rule else {}

    def excluded(self, rule: Mapping[str, Any], value: Any, raw: Any = None) -> bool:
        return "chunks" not in rule or rule["chunks"] in (value, raw)

    def scale_matrix(self, matrix: dict, factor: float, volume: float) -> None:
        if "chunks" in matrix:
            c = matrix["chunks"]
            matrix["chunks"] = [scale_dims(x, factor) for x in c] if isinstance(c, list) else scale_dims(c, factor)
            if isinstance(matrix["chunks"], list) and matrix["chunks"] and not isinstance(matrix["chunks"][0], (list, str)):
                matrix["chunks"] = scale_dims(matrix["chunks"], factor)     # one chunk shape given as a list of ints

    def scale_rule(self, rule: dict, factor: float, volume: float) -> None:
        if "chunks" in rule:
            rule["chunks"] = scale_dims(rule["chunks"], factor)

    def scale_selector(self, selector: dict, factor: float, volume: float) -> None:
        self.scale_rule(selector, factor, volume)

    def parse_selector(self, key: str, value: Any, where: str) -> Any:
        c = parse_chunks(value, where)
        if c is None:
            return "contiguous"
        if isinstance(c, str):
            raise ConfigError(where, "pick a column by the layout measured (like 4x30x9x717 or contiguous), not `source`")
        return shape_str(c)

    def key(self, value: Any) -> list[str]:
        return [shape_str(value)]

    def label(self, value: Any) -> str:
        return f"chunks {shape_str(value)}"

    def row(self, value: Any) -> dict[str, Any]:
        return {"chunks": shape_str(value)}


def _filters(value, where: str):
    return SOURCE if isinstance(value, str) and value.strip().lower() == SOURCE.value else parse_filters(value, where)


class FiltersAxis(Axis):
    name = "filters"
    columns = text_columns = ("filters",)
    selectors = {"filters": "filters"}
    report_column = "filters"
    default = FilterPipeline()

    def parse(self, matrix: Mapping[str, Any], ctx: ParseContext) -> tuple:
        default = [SOURCE] if ctx.from_file else ["none"]
        out = tuple(_filters(v, f"matrix.filters[{i}]") for i, v in enumerate(as_list(matrix.get("filters", default), "matrix.filters")))
        for i, f in enumerate(out):
            if f is SOURCE and not ctx.stored_layout:
                raise ConfigError(f"matrix.filters[{i}]", "`source` means the stored filters: give `dataset.file`, or `dataset.generate.chunks`/`filters`")
        return out

    def as_yaml(self, parsed: tuple) -> dict[str, Any]:
        return {"filters": [SOURCE.value if f is SOURCE else f.spec for f in parsed]}

    def parse_rule(self, rule: Mapping[str, Any], where: str) -> dict[str, Any]:
        if "filters" not in rule:
            return {}
        v = rule["filters"]
        return {"filters": SOURCE if isinstance(v, str) and v.lower() == SOURCE.value else parse_filters(v, f"{where}.filters")}

    def excluded(self, rule: Mapping[str, Any], value: Any, raw: Any = None) -> bool:
        if "filters" not in rule:
            return True
        return raw == SOURCE if rule["filters"] == SOURCE else rule["filters"] == value

    def parse_selector(self, key: str, value: Any, where: str) -> Any:
        return parse_filters(value, where).spec

    def key(self, value: Any) -> list[str]:
        return [value.spec]

    def label(self, value: Any) -> str:
        return value.spec

    def row(self, value: Any) -> dict[str, Any]:
        return {"filters": value.spec}


CHUNKS = ChunksAxis()
FILTERS = FiltersAxis()
