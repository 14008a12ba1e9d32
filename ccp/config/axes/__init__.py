"""The matrix's axes, one object each (:class:`~ccp.config.axes.base.Axis`), in cell-id order.

Everything that used to spell an axis by hand asks the registry instead: the sweep parser (matrix keys,
parse, ``exclude:``, ``sweep.yaml``), ``--scale``, the report tables' selectors, the matrix cell (id, label,
exclude match, row columns), the report's labels and ``ccp compare``'s match. A new axis is a module here with
one :class:`Axis` and its line in :data:`_AXES` (its effect is where it acts; its columns a ``CellRow`` field).
"""

from __future__ import annotations

from ccp.config.axes.access import ACCESS
from ccp.config.axes.base import Axis, ParseContext
from ccp.config.axes.cache import CACHE
from ccp.config.axes.client import CLIENT
from ccp.config.axes.layout import CHUNKS, FILTERS
from ccp.config.axes.storage import STORAGE

# The order is the cell key's (and so every cell id's), the columns' in cells.csv and the keys' in sweep.yaml.
_AXES: list[Axis] = [CHUNKS, FILTERS, CACHE, ACCESS, CLIENT, STORAGE]
#: The axes a Sweep and a Cell have a field for; an axis registered later keeps its values in their ``more``.
BUILT_IN = frozenset(a.name for a in _AXES)


def axes() -> tuple[Axis, ...]:
    """Every registered axis, in cell-key order."""
    return tuple(_AXES)


def axis(name: str) -> Axis:
    for a in _AXES:
        if a.name == name:
            return a
    raise KeyError(name)


def register(new: Axis) -> None:
    """Add an axis after the others (its key parts end every cell key it is not at the default in)."""
    taken = {k for a in _AXES for k in (a.name, *a.matrix_keys, *a.columns, *a.selectors)}
    clash = taken & {new.name, *new.matrix_keys, *new.columns, *new.selectors}
    if clash:
        raise ValueError(f"axis {new.name!r}: {', '.join(sorted(clash))} already belong to another axis")
    _AXES.append(new)


def unregister(name: str) -> None:
    if name in BUILT_IN:
        raise ValueError(f"axis {name!r} is built in")
    _AXES[:] = [a for a in _AXES if a.name != name]


def matrix_keys() -> tuple[str, ...]:
    return tuple(k for a in _AXES for k in a.matrix_keys)


def selector_keys() -> tuple[str, ...]:
    return tuple(k for a in _AXES for k in a.selectors)


def selector_axis(key: str) -> Axis:
    for a in _AXES:
        if key in a.selectors:
            return a
    raise KeyError(key)


def cell_columns() -> tuple[str, ...]:
    """The cells.csv columns the axes fill, in order."""
    return tuple(c for a in _AXES for c in a.columns)


def text_columns() -> tuple[str, ...]:
    return tuple(c for a in _AXES for c in a.text_columns)


def read_back() -> dict:
    """What the axes' columns read as in a run written before they existed."""
    return {k: v for a in _AXES for k, v in a.read_back().items()}


__all__ = ["BUILT_IN", "Axis", "ParseContext", "axes", "axis", "cell_columns", "matrix_keys", "read_back", "register",
           "selector_axis", "selector_keys", "text_columns", "unregister"]
