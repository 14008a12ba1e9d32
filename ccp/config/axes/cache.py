"""The ``cache`` axis: each value a chunk cache (:class:`ccp.chunkcache.ChunkCache`), a size or ``{nbytes, nslots, w0}``."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ccp.chunkcache import HDF5_1X, ChunkCache
from ccp.config.axes.base import Axis, ParseContext, as_list, check_keys, distinct
from ccp.config.shapes import parse_int
from ccp.errors import ConfigError
from ccp.units import format_bytes, parse_size

# Stated defaults: a run never relies on the HDF5 library's own (1 MiB/521 in 1.x, 8 MiB/8191 in 2.0); a sweep
# that names no cache states HDF5 1.x's, the cache most published measurements were made with.
DEFAULT_CACHE_NBYTES = HDF5_1X.nbytes
DEFAULT_CACHE_NSLOTS = HDF5_1X.nslots
DEFAULT_CACHE_W0 = HDF5_1X.w0
MAX_CACHE_NBYTES = 2**63 - 1     # size_t, and an int64 column in cells.csv/parquet
MAX_CACHE_NSLOTS = 2**27         # HDF5 allocates the slot table up front: 8 bytes a slot (1 GiB here)


def parse_cache(value, where: str) -> ChunkCache:
    if isinstance(value, dict):
        check_keys(value, ("nbytes", "nslots", "w0"), where)
        nbytes = _cache_nbytes(value.get("nbytes", DEFAULT_CACHE_NBYTES), f"{where}.nbytes")
        nslots = parse_int(value.get("nslots", DEFAULT_CACHE_NSLOTS), f"{where}.nslots", lo=1, hi=MAX_CACHE_NSLOTS,
                           why=" (HDF5 allocates every slot up front)")
        w0 = value.get("w0", DEFAULT_CACHE_W0)
        if isinstance(w0, bool) or not isinstance(w0, (int, float)) or not 0.0 <= float(w0) <= 1.0:
            raise ConfigError(f"{where}.w0", f"must be a number from 0 to 1, got {w0!r}")
        return ChunkCache(nbytes, nslots, float(w0))
    return ChunkCache(_cache_nbytes(value, where), DEFAULT_CACHE_NSLOTS, DEFAULT_CACHE_W0)


def _cache_nbytes(value, where: str) -> int:
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(where, f"expected a size like 1MiB, got {value!r}")
    n = parse_size(value, where)
    if n > MAX_CACHE_NBYTES:
        raise ConfigError(where, f"{value!r} is larger than any chunk cache can be (at most {MAX_CACHE_NBYTES:,} bytes)")
    return n


def _finite(v) -> bool:
    try:
        return math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


def cache_text(nbytes, nslots, w0, with_slots: bool, with_w0: bool) -> str:
    """'1 MiB', with the slots and w0 when they vary across the cells labelled together."""
    if not _finite(nbytes):
        return "-"
    s = format_bytes(nbytes)
    if with_slots and _finite(nslots):
        s += f", {int(nslots):,} slots"
    if with_w0 and _finite(w0):
        s += f", w0 {float(w0):g}"
    return s


def _scaled(c, volume: float):
    """A raw cache value with its size shrunk by ``volume`` (at least 1 KiB)."""
    if isinstance(c, dict):
        c = dict(c)
        if "nbytes" in c:
            c["nbytes"] = max(1024, int(parse_size(c["nbytes"], "matrix.cache") * volume))
        return c
    return max(1024, int(parse_size(c, "matrix.cache") * volume))


class CacheAxis(Axis):
    name = "cache"
    columns = ("cache_nbytes", "cache_nslots", "cache_w0")
    selectors = {"cache": "cache_nbytes", "nslots": "cache_nslots", "w0": "cache_w0"}
    report_column = "cache_label"

    def parse(self, matrix: Mapping[str, Any], ctx: ParseContext) -> tuple:
        return tuple(parse_cache(v, f"matrix.cache[{i}]")
                     for i, v in enumerate(as_list(matrix.get("cache", [DEFAULT_CACHE_NBYTES]), "matrix.cache")))

    def as_yaml(self, parsed: tuple) -> dict[str, Any]:
        return {"cache": [{"nbytes": c.nbytes, "nslots": c.nslots, "w0": c.w0} for c in parsed]}

    def parse_rule(self, rule: Mapping[str, Any], where: str) -> dict[str, Any]:
        return {"cache": parse_cache(rule["cache"], f"{where}.cache")} if "cache" in rule else {}

    def excluded(self, rule: Mapping[str, Any], value: Any, raw: Any = None) -> bool:
        return "cache" not in rule or rule["cache"] == value

    def scale_matrix(self, matrix: dict, factor: float, volume: float) -> None:
        if "cache" in matrix:
            c = matrix["cache"]
            matrix["cache"] = [_scaled(x, volume) for x in c] if isinstance(c, list) else _scaled(c, volume)

    def scale_rule(self, rule: dict, factor: float, volume: float) -> None:
        if "cache" in rule:
            rule["cache"] = _scaled(rule["cache"], volume)

    def scale_selector(self, selector: dict, factor: float, volume: float) -> None:
        self.scale_rule(selector, factor, volume)

    def parse_selector(self, key: str, value: Any, where: str) -> Any:
        if key == "cache":
            return parse_size(value, where)
        if key == "nslots":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(where, f"expected a whole number, got {value!r}")
            return int(value)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise ConfigError(where, f"expected a number from 0 to 1, got {value!r}")
        return float(value)

    def key(self, value: Any) -> list[str]:
        return [str(value.nbytes), str(value.nslots), repr(value.w0)]

    def label(self, value: Any) -> str:
        return f"cache {value.label}"

    def row(self, value: Any) -> dict[str, Any]:
        return {"cache_nbytes": value.nbytes, "cache_nslots": value.nslots, "cache_w0": value.w0}

    def text_context(self, rows: Sequence[Mapping[str, Any]]) -> tuple[bool, bool]:
        """(with slots, with w0): named only when they differ between the cells."""
        return distinct(rows, "cache_nslots") > 1, distinct(rows, "cache_w0") > 1

    def text(self, row: Mapping[str, Any], context: Any) -> str:
        with_slots, with_w0 = context or (False, False)
        return cache_text(row.get("cache_nbytes"), row.get("cache_nslots"), row.get("cache_w0"), with_slots, with_w0)


CACHE = CacheAxis()
