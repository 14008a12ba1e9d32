"""The ``access`` axis: what a cell does (read, write or copy; blocks tiled in an order, random blocks, or a
traced program's selections replayed)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ccp.config.axes.base import Axis, ParseContext, as_list, check_keys, scale_dims
from ccp.config.shapes import parse_int, parse_shape
from ccp.errors import ConfigError, suggest
from ccp.units import shape_str

MAX_RANDOM = 10**8               # random requests are planned in memory: rank x 8 bytes each
OPS = ("read", "write", "copy")


@dataclass(frozen=True)
class AccessSpec:
    op: str
    block: tuple[int, ...]                 # a replay's is () until its trace is loaded (ccp.workload.sweep)
    order: tuple[int, ...] | None = None   # dims slowest first; None = C order
    random: int = 0                        # 0 = tile the dataset; N = N random block-aligned requests
    seed: int = 0
    trace: str | None = None               # a `ccp trace` folder: replay its selections on `trace_dataset`
    trace_dataset: str | None = None
    pid: int | None = None                 # only this process's calls (None: every process, in time order)

    @property
    def order_str(self) -> str:
        if self.trace is not None:         # a replay: its identity is the trace, the dataset and the process
            return f"trace:{Path(self.trace).name}:{self.trace_dataset}" + (f":pid{self.pid}" if self.pid is not None else "")
        return "x".join(map(str, self.order or range(len(self.block))))


def parse_access(raw, where: str) -> AccessSpec:
    check_keys(raw, ("op", "block", "order", "random", "seed", "trace", "dataset", "pid"), where)
    op = raw.get("op", "read")
    if not isinstance(op, str) or op not in OPS:
        raise ConfigError(f"{where}.op", f"must be read, write or copy, got {op!r}{suggest(op, OPS)}")
    if raw.get("trace") is not None:
        return _parse_replay(raw, op, where)
    for key in ("dataset", "pid"):
        if key in raw:
            raise ConfigError(f"{where}.{key}", "belongs to a replay: give `trace: FOLDER` (from ccp trace) too")
    if "block" not in raw:
        raise ConfigError(f"{where}.block", "missing: the shape of one request, like [1, 1, 1, 717]")
    block = parse_shape(raw["block"], f"{where}.block")
    order = None
    if raw.get("order") is not None:
        order = tuple(parse_int(d, f"{where}.order", lo=0) for d in (raw["order"] if isinstance(raw["order"], list) else [raw["order"]]))
        if sorted(order) != list(range(len(block))):
            raise ConfigError(f"{where}.order", f"must list each of the {len(block)} dims once, slowest first, got {list(order)}")
    random = parse_int(raw.get("random", 0), f"{where}.random", lo=0, hi=MAX_RANDOM, why=" (requests are planned in memory)")
    if random and op != "read":
        raise ConfigError(f"{where}.random", f"random requests are for reads; a {op} cell handles every block once")
    if random and order is not None:
        raise ConfigError(f"{where}.order", "order applies to tiling; drop it or drop random")
    return AccessSpec(op=op, block=block, order=order, random=random,
                      seed=parse_int(raw.get("seed", 0), f"{where}.seed", lo=0, hi=2**63 - 1))


def _parse_replay(raw, op: str, where: str) -> AccessSpec:
    """``{trace: FOLDER, dataset: /path, pid: N}``: the selections a traced program made, in its order."""
    for key in ("block", "order", "random", "seed"):
        if key in raw:
            raise ConfigError(f"{where}.{key}", "a replay takes its requests from the trace; drop this key")
    if op == "copy":
        raise ConfigError(f"{where}.op", "a replay reads or writes as the program did; use read or write")
    trace = Path(str(raw["trace"])).expanduser()
    if not (trace / "trace.json").is_file():
        raise ConfigError(f"{where}.trace", f"{trace}: not a ccp trace folder (no trace.json; make one with `ccp trace -o {trace} -- ...`)")
    dataset = raw.get("dataset")
    if not isinstance(dataset, str) or not dataset.strip():
        raise ConfigError(f"{where}.dataset", "a replay names the traced dataset to replay, like /g/data")
    pid = parse_int(raw["pid"], f"{where}.pid", lo=0) if raw.get("pid") is not None else None
    # the block (the largest request: labels, cell ids, checks) is set when the trace is loaded (ccp.workload.sweep)
    return AccessSpec(op=op, block=(), trace=str(trace.resolve()), trace_dataset=dataset.strip(), pid=pid)


def _default_order(block: str) -> str:
    return "x".join(str(i) for i in range(len(str(block).split("x"))))


def access_text(op, block, order, random) -> str:
    """'read 1x1x717', with the order when it is not C order and the number of random requests."""
    s = f"{op} {block}".strip()
    if order and order != _default_order(block):
        s += f" order {order}"
    try:
        many = math.isfinite(float(random)) and int(random)
    except (TypeError, ValueError):
        many = 0
    if many:
        s += f" random {int(random):,}"
    return s


class AccessAxis(Axis):
    name = "access"
    columns = ("op", "block", "order", "random")
    text_columns = ("op", "block", "order")
    selectors = {"op": "op", "block": "block", "order": "order", "random": "random"}
    report_column = "access_label"
    describes_work = True

    def parse(self, matrix: Mapping[str, Any], ctx: ParseContext) -> tuple:
        raw = matrix.get("access")          # none: the whole dataset read at once (ccp.matrix.cells.expand)
        if raw is None or raw == []:        # [] is how sweep.yaml writes "none given"
            return ()
        return tuple(parse_access(v, f"matrix.access[{i}]") for i, v in enumerate(as_list(raw, "matrix.access")))

    def as_yaml(self, parsed: tuple) -> dict[str, Any]:
        return {"access": [{"op": a.op, "trace": a.trace, "dataset": a.trace_dataset, "pid": a.pid} if a.trace is not None else
                           {"op": a.op, "block": list(a.block), "order": list(a.order) if a.order else None,
                            "random": a.random, "seed": a.seed} for a in parsed]}

    def parse_rule(self, rule: Mapping[str, Any], where: str) -> dict[str, Any]:
        if "access" not in rule:
            return {}
        a, w = rule["access"], f"{where}.access"
        check_keys(a, ("op", "block", "order", "random", "seed"), w)
        sub: dict[str, object] = {}
        if "op" in a:
            if not isinstance(a["op"], str) or a["op"] not in OPS:
                raise ConfigError(f"{w}.op", f"must be read, write or copy, got {a['op']!r}")
            sub["op"] = a["op"]
        if "block" in a:
            sub["block"] = parse_shape(a["block"], f"{w}.block")
        if "order" in a:
            if a["order"] is not None and not isinstance(a["order"], list):
                raise ConfigError(f"{w}.order", f"expected a list of dims like [0, 1], got {a['order']!r}")
            sub["order"] = tuple(parse_int(d, f"{w}.order", lo=0) for d in a["order"]) if a["order"] is not None else None
        if "random" in a:
            sub["random"] = parse_int(a["random"], f"{w}.random", lo=0)
        return {"access": sub}

    def excluded(self, rule: Mapping[str, Any], value: Any, raw: Any = None) -> bool:
        return all(getattr(value, k) == v for k, v in rule.get("access", {}).items())

    def scale_matrix(self, matrix: dict, factor: float, volume: float) -> None:
        for a in matrix.get("access") or []:
            if isinstance(a, dict) and "block" in a:
                a["block"] = scale_dims(a["block"], factor)
            if isinstance(a, dict) and isinstance(a.get("random"), int) and not isinstance(a["random"], bool) and a["random"] > 0:
                a["random"] = max(1, math.ceil(a["random"] * factor))

    def scale_rule(self, rule: dict, factor: float, volume: float) -> None:
        if isinstance(rule.get("access"), dict) and "block" in rule["access"]:
            rule["access"]["block"] = scale_dims(rule["access"]["block"], factor)

    def scale_selector(self, selector: dict, factor: float, volume: float) -> None:
        if "block" in selector:
            selector["block"] = scale_dims(selector["block"], factor)

    def parse_selector(self, key: str, value: Any, where: str) -> Any:
        if key in ("block", "order"):
            return shape_str(parse_shape(value, where))
        if key == "random":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(where, f"expected a whole number, got {value!r}")
            return int(value)
        if value not in OPS:
            raise ConfigError(where, f"must be read, write or copy, got {value!r}{suggest(value, OPS)}")
        return value

    def key(self, value: Any) -> list[str]:
        return [value.op, shape_str(value.block), value.order_str, str(value.random), str(value.seed)]

    def label(self, value: Any) -> str:
        what = value.order_str if value.trace is not None else shape_str(value.block)
        return f"{value.op} {what}"

    def row(self, value: Any) -> dict[str, Any]:
        return {"op": value.op, "block": shape_str(value.block), "order": value.order_str, "random": value.random}

    def text(self, row: Mapping[str, Any], context: Any) -> str:
        return access_text(row.get("op"), row.get("block"), row.get("order"), row.get("random"))


ACCESS = AccessAxis()
