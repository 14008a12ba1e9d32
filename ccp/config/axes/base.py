"""What every axis of the matrix is: :class:`Axis`, and the helpers the axes parse with.

An axis is one field of a matrix cell (``Cell.<name>``) and owns everything the house does with it: its sweep
keys parsed (``parse``) with their default, its YAML form in the run folder's ``sweep.yaml`` (``as_yaml``, read
back by ``parse``), its part of the cell id (``key``: nothing at the value every cell had before the axis
existed, so old ids stay), its part of the run's progress line (``label``), its ``cells.csv`` columns (``row``)
and what a run written before them reads as (``read_back``), its ``exclude:`` match (``parse_rule``,
``excluded``), what ``--scale`` does to it (``scale_*``), the report tables' selectors of it, and how the
report writes it (``text``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ccp.errors import ConfigError, suggest


def check_keys(raw, allowed, where: str) -> None:
    """``raw`` is a mapping whose keys are all ``allowed`` (an unknown key is one line with a suggestion)."""
    if not isinstance(raw, dict):
        raise ConfigError(where, f"expected a mapping, got {type(raw).__name__} {raw!r}")
    for key in raw:
        if key not in allowed:
            prefix = f"{where}." if where else ""
            raise ConfigError(f"{prefix}{key}", f"unknown key{suggest(key, allowed)}; allowed: {', '.join(allowed)}")


def as_list(value, where: str) -> list:
    """A sweep key's value as a list: one value stands for a list of one; an empty list is an error."""
    if isinstance(value, list):
        if not value:
            raise ConfigError(where, "is an empty list; omit the key to use the default")
        return value
    return [value]


def is_missing(value) -> bool:
    """None, NaN or '': what an empty cells.csv cell reads as."""
    return value is None or value == "" or (isinstance(value, float) and value != value)


def distinct(rows: Sequence[Mapping[str, Any]], column: str) -> int:
    """How many different values ``column`` holds over ``rows`` (missing values not counted)."""
    return len({r.get(column) for r in rows if not is_missing(r.get(column))})


@dataclass(frozen=True)
class ParseContext:
    """What an axis's parser may need of the rest of the sweep."""

    sweep: Mapping[str, Any]         # the whole raw sweep mapping (the top-level ``s3:`` belongs to storage)
    from_file: bool = False          # ``dataset.file``: chunks and filters default to the stored ones
    stored_layout: bool = False      # ``source`` means something: a user's file, or ``dataset.generate.chunks``


#: ``Axis.before`` of an axis every cell has had since the first schema: no value reads it as a default.
ALWAYS = object()


class Axis:
    """One axis of the matrix (see the module docstring). Subclasses set the attributes and override what
    differs from a plain list of values under one matrix key."""

    name: str = ""                                    # the Cell and Sweep field, and its matrix key
    keys: tuple[str, ...] = ()                        # the matrix keys it owns (default: its name)
    columns: tuple[str, ...] = ()                     # its cells.csv columns, in order
    text_columns: tuple[str, ...] = ()                # those that hold text (the rest are numbers)
    selectors: Mapping[str, str] = {}                 # a report table's column selector key -> cells column
    report_column: str = ""                           # the report frame's column holding its text
    describes_work: bool = False                      # what a cell does (access), not how it is set up
    default: Any = None                               # a Cell's value when none is given
    before: Any = ALWAYS                              # the value of every cell made before the axis existed

    @property
    def matrix_keys(self) -> tuple[str, ...]:
        return self.keys or (self.name,)

    # ---------------------------------------------------------------- the sweep file
    def parse(self, matrix: Mapping[str, Any], ctx: ParseContext) -> Any:
        """The axis's setting from the ``matrix:`` mapping (its default when its keys are absent)."""
        raise NotImplementedError

    def values(self, parsed: Any) -> tuple:
        """The values cells are multiplied by (the parsed setting, for a plain axis)."""
        return tuple(parsed)

    def as_yaml(self, parsed: Any) -> dict[str, Any]:
        """Its matrix keys as run, every default spelled out; ``parse`` reads them back to the same setting."""
        raise NotImplementedError

    def parse_rule(self, rule: Mapping[str, Any], where: str) -> dict[str, Any]:
        """Its keys of one ``exclude:`` entry, parsed (other keys are other axes')."""
        return {}

    def excluded(self, rule: Mapping[str, Any], value: Any, raw: Any = None) -> bool:
        """Whether every key of a parsed rule that is this axis's matches ``value`` (no key: True). ``raw`` is
        the value as the sweep wrote it (``source`` before the stored layout replaced it)."""
        return True

    # ---------------------------------------------------------------- --scale (raw mappings, in place)
    def scale_matrix(self, matrix: dict, factor: float, volume: float) -> None:
        """Shrink its values in a raw ``matrix:`` by ``factor`` per dimension (``volume`` for sizes)."""

    def scale_rule(self, rule: dict, factor: float, volume: float) -> None:
        """The same for its keys of a raw ``exclude:`` entry."""

    def scale_selector(self, selector: dict, factor: float, volume: float) -> None:
        """The same for its keys of a raw report table column selector."""

    def parse_selector(self, key: str, value: Any, where: str) -> Any:
        """A table column selector's value as its cells column holds it."""
        return str(value)

    # ---------------------------------------------------------------- one cell
    def key(self, value: Any) -> list[str]:
        """Its parts of the cell key (the cell id is its hash)."""
        raise NotImplementedError

    def label(self, value: Any) -> str:
        """Its part of the progress line ('' adds nothing)."""
        raise NotImplementedError

    def row(self, value: Any) -> dict[str, Any]:
        """Its cells.csv columns for a cell with ``value``."""
        raise NotImplementedError

    def read_back(self) -> dict[str, Any]:
        """What its columns read as in a run written before it existed (empty: it always existed)."""
        return {} if self.before is ALWAYS else self.row(self.before)

    # ---------------------------------------------------------------- the report
    def text_context(self, rows: Sequence[Mapping[str, Any]]) -> Any:
        """What its text needs to know of all the cells being labelled together (which parts vary)."""
        return None

    def text(self, row: Mapping[str, Any], context: Any) -> str:
        """The report's words for its value in one row of cells.csv."""
        value = row.get(self.report_column or self.name)
        return "" if is_missing(value) else str(value)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def scale_dims(value, factor: float):
    """Scale whole dimensions only (a shape text like 4x30x9 or a list of ints); anything else (8.5, "8.5x6",
    true, contiguous, source) is left for the parser to refuse or keep."""
    if isinstance(value, str):
        parts = value.lower().split("x")
        if "x" not in value.lower() or not all(p.strip().isdigit() for p in parts):
            return value
        return "x".join(str(max(1, round(int(v) * factor))) for v in parts)
    if isinstance(value, list) and all(v is None or _is_int(v) for v in value):
        return [None if v is None else max(1, round(v * factor)) for v in value]
    return value
