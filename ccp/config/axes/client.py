"""The ``client`` axis: how a cell's requests reach HDF5."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ccp.config.axes.base import Axis, ParseContext, as_list
from ccp.errors import ConfigError

# How a cell's requests reach HDF5: the native loop (HDF5's own cost), today's h5py low-level loop, and
# the high-level slicing most Python users write. A cell with the old loop keeps its old id.
CLIENTS = ("native", "h5py-lowlevel", "h5py")
DEFAULT_CLIENT = "native"
BEFORE_CLIENT = "h5py-lowlevel"     # every cell measured before the axis (schema 1) used h5py's low-level loop


def parse_client(raw, where: str) -> str:
    if not isinstance(raw, str) or raw.strip().lower() not in CLIENTS:
        raise ConfigError(where, f"expected one of {', '.join(CLIENTS)}, got {raw!r}")
    return raw.strip().lower()


class ClientAxis(Axis):
    name = "client"
    columns = text_columns = ("client",)
    selectors = {"client": "client"}
    report_column = "client"
    default = DEFAULT_CLIENT
    before = BEFORE_CLIENT

    def parse(self, matrix: Mapping[str, Any], ctx: ParseContext) -> tuple:
        return tuple(dict.fromkeys(parse_client(v, f"matrix.client[{i}]")
                                   for i, v in enumerate(as_list(matrix.get("client", [DEFAULT_CLIENT]), "matrix.client"))))

    def as_yaml(self, parsed: tuple) -> dict[str, Any]:
        return {"client": list(parsed)}

    def parse_rule(self, rule: Mapping[str, Any], where: str) -> dict[str, Any]:
        return {"client": parse_client(rule["client"], f"{where}.client")} if "client" in rule else {}

    def excluded(self, rule: Mapping[str, Any], value: Any, raw: Any = None) -> bool:
        return "client" not in rule or rule["client"] == value

    def parse_selector(self, key: str, value: Any, where: str) -> Any:
        return parse_client(value, where)

    def key(self, value: Any) -> list[str]:
        return [] if value == self.before else [value]

    def label(self, value: Any) -> str:
        return "" if value == DEFAULT_CLIENT else value

    def row(self, value: Any) -> dict[str, Any]:
        return {"client": value}


CLIENT = ClientAxis()
