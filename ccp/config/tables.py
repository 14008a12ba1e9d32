"""A sweep's ``tables:`` key: comparison tables in the seed papers' style, validated like every other key.

Each table picks cells by their axis values (``columns``) and lists rows from a fixed vocabulary
(:data:`TABLE_ROWS`), optionally with a published ``reference`` value per column. This module knows
the row *names*, the cells column each shows and how a reference value for it is read; how a row is
labelled, computed and formatted is the report's business (``ccp.report.tables.ROWS``, same names).

    tables:
      - title: "Table 8: three cures"
        rows: [file, cache, chunks, access, time, raw_reads, repack]
        columns:
          - {chunks: 4x30x9x717, filters: gzip:6, cache: 1MiB, block: 1x1x1x717}
          - {chunks: 4x30x9x717, filters: gzip:6, cache: 3MiB, block: 1x1x1x717}
        labels: [default cache, 3 MiB cache]
        reference: [{time: 345}, {time: 0.37}]
        note: the paper's times are approximate
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ccp.config import axes as matrix_axes
from ccp.errors import ConfigError, suggest
from ccp.units import parse_duration, parse_size


@dataclass(frozen=True)
class TableRow:
    kind: str            # time | bytes | count | ratio | text: how a reference value is read
    column: str = ""     # the cells column it shows, if one: also accepted as the row's name


TABLE_ROWS: dict[str, TableRow] = {
    "file": TableRow("text"),
    "chunks": TableRow("text", "chunks"),
    "filters": TableRow("text", "filters"),
    "cache": TableRow("bytes", "cache_nbytes"),
    "nslots": TableRow("count", "cache_nslots"),
    "w0": TableRow("ratio", "cache_w0"),
    "op": TableRow("text", "op"),
    "access": TableRow("text"),
    "block": TableRow("text", "block"),
    "order": TableRow("text", "order"),
    "random": TableRow("count", "random"),
    "requests": TableRow("count", "requests"),
    "time": TableRow("time", "time_s"),
    "time_min": TableRow("time", "time_s_min"),
    "time_max": TableRow("time", "time_s_max"),
    "spread": TableRow("ratio", "spread"),
    "first_request": TableRow("time", "first_request_s"),
    "request_median": TableRow("time", "request_s_median"),
    "open": TableRow("time", "open_s"),
    "close": TableRow("time", "close_s"),
    "raw_reads": TableRow("count", "raw_reads"),
    "raw_reads_per_request": TableRow("ratio"),
    "raw_read_bytes": TableRow("bytes", "raw_read_bytes"),
    "raw_writes": TableRow("count", "raw_writes"),
    "raw_write_bytes": TableRow("bytes", "raw_write_bytes"),
    "meta_reads": TableRow("count", "meta_reads"),
    "meta_read_bytes": TableRow("bytes", "meta_read_bytes"),
    "meta_writes": TableRow("count", "meta_writes"),
    "meta_write_bytes": TableRow("bytes", "meta_write_bytes"),
    "io_ops": TableRow("count"),
    "read_amplification": TableRow("ratio"),
    "chunk_loads": TableRow("count", "predicted_chunk_loads"),
    "chunk_hits": TableRow("count", "predicted_chunk_hits"),
    "evictions": TableRow("count", "predicted_evictions"),
    "predicted_raw_reads": TableRow("count", "predicted_raw_reads"),
    "predicted_time": TableRow("time", "predicted_time_s"),
    "chunk_bytes": TableRow("bytes", "chunk_bytes"),
    "nchunks": TableRow("count", "nchunks"),
    "logical_bytes": TableRow("bytes", "logical_bytes"),
    "storage_bytes": TableRow("bytes", "storage_bytes"),
    "file_bytes": TableRow("bytes", "file_bytes"),
    "compression_ratio": TableRow("ratio", "compression_ratio"),
    "meta_overhead_ppm": TableRow("ratio"),
    "raw_overhead_ppm": TableRow("ratio"),
    "repack": TableRow("time", "repack_s"),
    "elapsed": TableRow("time", "elapsed_s"),
    "status": TableRow("text", "status"),
    "flags": TableRow("text", "flags"),
    # files in object storage (the storage axes and the HTTP columns of S3 cells)
    "storage": TableRow("text", "storage"),
    "fsspec": TableRow("text", "fsspec"),
    "latency": TableRow("text", "latency"),
    "bandwidth": TableRow("text", "bandwidth"),
    "file_space": TableRow("text", "file_space"),
    "page_buffer": TableRow("text", "page_buffer"),
    "http_gets": TableRow("count", "http_gets"),
    "http_open_gets": TableRow("count", "http_open_gets"),
    "http_bytes": TableRow("bytes", "http_bytes"),
    "http_bytes_used": TableRow("bytes", "http_bytes_used"),
    "http_wait": TableRow("time", "http_wait_s"),
    "network": TableRow("text", "network"),
}
# other names people will write for a row: every column a row shows, and the papers' wording
ALIASES: dict[str, str] = {r.column: name for name, r in TABLE_ROWS.items() if r.column and r.column not in TABLE_ROWS}
ALIASES.update({"cache_size": "cache", "chunk_size": "chunks", "access_pattern": "access", "hyperslab": "block",
                "read_time": "time", "write_time": "time", "repack_time": "repack", "file_name": "file",
                "compression": "filters", "predicted_chunk_loads": "chunk_loads", "predicted_time_s": "predicted_time"})
ROW_NAMES = tuple(TABLE_ROWS) + tuple(ALIASES)

TABLE_KEYS = ("title", "rows", "columns", "labels", "reference", "note")
DEFAULT_ROWS = ("file", "chunks", "filters", "cache", "access", "time", "raw_reads")


def row_name(name) -> str | None:
    """The canonical row for a name or alias, or None."""
    name = str(name)
    return name if name in TABLE_ROWS else ALIASES.get(name)


@dataclass(frozen=True)
class TableSpec:
    title: str
    rows: tuple[str, ...]
    columns: tuple[tuple[tuple[str, object], ...], ...]   # each: ((key, normalised value), ...)
    labels: tuple[str, ...] = ()
    reference: tuple[tuple[tuple[str, float], ...], ...] = ()
    note: str = ""


def _norm_selector(key: str, value, where: str):
    """A column selector's value as the cells column holds it (the axis that owns the key parses it)."""
    return matrix_axes.selector_axis(key).parse_selector(key, value, where)


def _reference_value(row: str, value, where: str) -> float:
    kind = TABLE_ROWS[row].kind
    if kind == "text":
        raise ConfigError(where, f"row {row!r} is text; a reference needs a number (time, count, bytes or ratio)")
    if isinstance(value, bool):
        raise ConfigError(where, f"expected a number, got {value!r}")
    if isinstance(value, (int, float)):
        if not math.isfinite(value) or value < 0:
            raise ConfigError(where, f"expected a number >= 0, got {value!r}")
        return float(value)
    if isinstance(value, str) and kind == "bytes":
        return float(parse_size(value, where))
    if isinstance(value, str) and kind == "time":
        return parse_duration(value, where)
    raise ConfigError(where, f"expected a number, got {value!r}")


def _check_keys(d: dict, allowed, where: str, what: str = "key") -> None:
    for k in d:
        if k not in allowed:
            raise ConfigError(f"{where}.{k}", f"unknown {what}{suggest(k, allowed)}; allowed: {', '.join(allowed)}")


def parse_tables(raw) -> tuple[TableSpec, ...]:
    """Validate a sweep's ``tables:``; every error names the key at fault (``tables[0].columns[1].cache``)."""
    if not isinstance(raw, list):
        raise ConfigError("tables", "expected a list of tables, each {title, rows, columns}")
    out = []
    for i, t in enumerate(raw):
        where = f"tables[{i}]"
        if not isinstance(t, dict):
            raise ConfigError(where, "expected a mapping with title, rows and columns")
        _check_keys(t, TABLE_KEYS, where)
        title = t.get("title", f"Table {i + 1}")
        if not isinstance(title, (str, int, float)) or isinstance(title, bool):
            raise ConfigError(f"{where}.title", f"expected text, got {title!r}")
        rows = t.get("rows", list(DEFAULT_ROWS))
        if not isinstance(rows, list) or not rows:
            raise ConfigError(f"{where}.rows", f"expected a list of row names like [cache, chunks, time]; rows: {', '.join(TABLE_ROWS)}")
        canon = []
        for j, r in enumerate(rows):
            name = row_name(r) if isinstance(r, str) else None
            if name is None:
                raise ConfigError(f"{where}.rows[{j}]", f"unknown row {r!r}{suggest(r, ROW_NAMES)}; rows: {', '.join(TABLE_ROWS)}")
            canon.append(name)
        cols = t.get("columns")
        if not isinstance(cols, list) or not cols:
            raise ConfigError(f"{where}.columns", "expected a list of cell selectors like {cache: 1MiB, block: 1x1x1x717}")
        columns = []
        for j, sel in enumerate(cols):
            w = f"{where}.columns[{j}]"
            if not isinstance(sel, dict) or not sel:
                raise ConfigError(w, f"expected a mapping of axis values, keys from: {', '.join(matrix_axes.selector_keys())}")
            _check_keys(sel, matrix_axes.selector_keys(), w, "axis")
            columns.append(tuple((k, _norm_selector(k, v, f"{w}.{k}")) for k, v in sel.items()))
        labels = t.get("labels") or []
        if not isinstance(labels, list):
            raise ConfigError(f"{where}.labels", "expected a list of column labels")
        if labels and len(labels) != len(columns):
            raise ConfigError(f"{where}.labels", f"has {len(labels)} labels for {len(columns)} columns")
        refs = t.get("reference") or []
        if not isinstance(refs, list):
            raise ConfigError(f"{where}.reference", "expected a list, one mapping per column, like [{time: 345}, {}]")
        if refs and len(refs) != len(columns):
            raise ConfigError(f"{where}.reference", f"has {len(refs)} entries for {len(columns)} columns (use {{}} for none)")
        reference = []
        for j, ref in enumerate(refs):
            w = f"{where}.reference[{j}]"
            ref = ref or {}
            if not isinstance(ref, dict):
                raise ConfigError(w, "expected a mapping of row name to published value, like {time: 345}")
            entry = []
            for k, v in ref.items():
                name = row_name(k)
                if name is None:
                    raise ConfigError(f"{w}.{k}", f"unknown row{suggest(k, ROW_NAMES)}; rows: {', '.join(TABLE_ROWS)}")
                entry.append((name, _reference_value(name, v, f"{w}.{k}")))
            reference.append(tuple(entry))
        note = t.get("note", "")
        if not isinstance(note, str):
            raise ConfigError(f"{where}.note", f"expected text, got {note!r}")
        out.append(TableSpec(str(title), tuple(canon), tuple(columns), tuple(str(x) for x in labels), tuple(reference), note))
    return tuple(out)
