"""The storage axes (``storage``, ``fsspec``, ``latency``, ``bandwidth``, ``file_space``, ``page_buffer``) as one
axis of the cell: they combine by rules (:func:`ccp.config.storage.storage_cells`) into one
:class:`~ccp.config.storage.StorageSetting` per cell, whose id part is every label or, at the default, nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ccp.config.axes.base import Axis, ParseContext, is_missing
from ccp.config.storage import (
    AXES,
    S3_ONLY,
    StorageConfig,
    StorageSetting,
    matches_storage,
    parse_storage_config,
    parse_storage_exclude,
)
from ccp.errors import ConfigError


def _text(row: Mapping[str, Any], key: str, default: str = "") -> str:
    v = row.get(key)
    return default if is_missing(v) else str(v)


def storage_text(c: Mapping[str, Any], varying=()) -> str:
    """One cell's storage axes in a few words: 'local', 'local page/4MiB, page buffer 16MiB',
    's3 readahead/4MiB 20ms (emulated)'. Every axis in ``varying`` (those that differ between the cells
    being compared) is named even at its default, so two labels never read alike: 'local, page buffer none'."""
    varying = set(varying)
    parts = [_text(c, "storage", "local")]
    if parts[0] == "s3":
        lat, bw = _text(c, "latency", "0ms"), _text(c, "bandwidth", "unlimited")
        emulated = lat not in ("0ms", "") or bw not in ("unlimited", "")
        parts.append(f"{_text(c, 'fsspec')} {lat}" + ("" if bw in ("unlimited", "") and "bandwidth" not in varying
                                                       else f" {bw}") + (" (emulated)" if emulated else ""))
    if _text(c, "file_space", "default") != "default":
        parts.append(_text(c, "file_space"))
    elif "file_space" in varying:
        parts.append("file space default")
    out = " ".join(parts)
    if _text(c, "page_buffer", "none") != "none" or "page_buffer" in varying:
        out += f", page buffer {_text(c, 'page_buffer', 'none')}"
    return out


def storage_varying(rows: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The storage columns whose values differ between cells they apply to (the S3-only ones among S3 cells)."""
    s3 = [r for r in rows if _text(r, "storage", "local") == "s3"]
    return tuple(c for c in AXES if len({_text(r, c) for r in (s3 if c in S3_ONLY else rows)}) > 1)


class StorageAxis(Axis):
    name = "storage"
    keys = columns = text_columns = AXES
    selectors = {k: k for k in AXES}
    report_column = "storage_label"
    default = before = StorageSetting()

    def parse(self, matrix: Mapping[str, Any], ctx: ParseContext) -> StorageConfig:
        storage = parse_storage_config(dict(ctx.sweep))       # one line naming matrix.<axis>[i] or s3.<key>
        if "s3" in ctx.sweep and storage.s3 is None:
            raise ConfigError("s3", "only applies to files read over S3: add s3 to matrix.storage")
        return storage

    def values(self, parsed: Any) -> tuple:
        raise TypeError("the storage settings of a cell depend on its op and file: ccp.config.storage.storage_cells")

    def as_yaml(self, parsed: StorageConfig) -> dict[str, Any]:
        return parsed.as_dict()

    def parse_rule(self, rule: Mapping[str, Any], where: str) -> dict[str, Any]:
        return parse_storage_exclude(dict(rule), where)

    def excluded(self, rule: Mapping[str, Any], value: Any, raw: Any = None) -> bool:
        return matches_storage(dict(rule), value)

    def key(self, value: Any) -> list[str]:
        return value.key_parts

    def label(self, value: Any) -> str:
        return value.label()

    def row(self, value: Any) -> dict[str, Any]:
        return dict(value.labels())

    def text_context(self, rows: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
        return storage_varying(rows)

    def text(self, row: Mapping[str, Any], context: Any) -> str:
        return storage_text(row, context or ())


STORAGE = StorageAxis()
