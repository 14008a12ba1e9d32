"""Shapes, chunk layouts and bounded integers: the values every sweep key is built from.

Each ``parse_*`` takes a raw YAML value and a ``where`` (the key path) and returns a plain value or
raises :class:`ConfigError` naming that key.
"""

from __future__ import annotations

import enum
from typing import Literal

from ccp.errors import ConfigError
from ccp.units import parse_shape_str

MAX_RANK = 32                    # HDF5's H5S_MAX_RANK
MAX_DIM = 2**63 - 1              # hsize_t as h5py and the results files (int64) hold it


class Stored(enum.StrEnum):
    """``source`` in a sweep: the dataset's own stored layout (chunks) or pipeline (filters).

    A type of its own, so a layout is ``tuple | None | FromSource`` rather than ``tuple | None | str``;
    a ``StrEnum``, so it still equals, prints and serialises as the word ``source``.
    """

    SOURCE = "source"


SOURCE = Stored.SOURCE
FromSource = Literal[Stored.SOURCE]
Chunks = tuple[int, ...] | None | FromSource   # a shape, None = contiguous, or SOURCE


def parse_int(value, where: str, lo: int | None = None, hi: int | None = None, why: str = "") -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(where, f"expected an integer, got {value!r}")
    if lo is not None and value < lo:
        raise ConfigError(where, f"must be >= {lo}, got {value}")
    if hi is not None and value > hi:
        raise ConfigError(where, f"must be <= {hi:,}{why}, got {value:,}")
    return value


def parse_shape(value, where: str, allow_none: bool = False) -> tuple:
    """[60, 30, 9, 717] or '60x30x9x717' -> (60, 30, 9, 717)."""
    if isinstance(value, str):
        return parse_shape_str(value, where)
    if not isinstance(value, (list, tuple)) or not value:
        raise ConfigError(where, f"expected a list of dimensions like [60, 30, 9, 717], got {value!r}")
    if len(value) > MAX_RANK:
        raise ConfigError(where, f"has rank {len(value)}; HDF5 datasets have at most {MAX_RANK} dimensions")
    dims: list[int | None] = []
    for i, d in enumerate(value):
        if d is None and allow_none:
            dims.append(None)
            continue
        dims.append(parse_int(d, f"{where}[{i}]", lo=1, hi=MAX_DIM))
    return tuple(dims)


def parse_chunks(value, where: str) -> Chunks:
    if value is None or (isinstance(value, str) and value.lower() == "contiguous"):
        return None
    if isinstance(value, str) and value.lower() == SOURCE.value:
        return SOURCE
    return parse_shape(value, where)
