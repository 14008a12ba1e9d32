"""The raw-data chunk cache of one dataset handle (``H5Pset_chunk_cache``): one validated type for the whole house.

A sweep's ``cache:`` values, the model's cache, the library's defaults per version and the cache a traced program
had in force are all a :class:`ChunkCache`. It lives on the ground floor so the pure model can use it too.

HDF5's own defaults (H5Dprivate.h, ``H5D_CHUNK_CACHE_NBYTES_DEFAULT`` / ``H5D_CHUNK_CACHE_NSLOTS_DEFAULT``;
``H5D_CHUNK_CACHE_W0_DEFAULT``) are written here and nowhere else: 1 MiB and 521 slots in every 1.x release,
8 MiB and 8191 slots from 2.0, w0 0.75 in both. :mod:`ccp.hdf5.defaults` says which one the library in this
process gives.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass


def _count(value: object, name: str) -> int:
    """An integer >= 0 (a float that is a whole number is accepted: sizes are often computed in floats)."""
    if isinstance(value, bool):
        raise ValueError(f"chunk cache {name} must be an integer, not {value!r}")
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(f"chunk cache {name} must be a whole number, not {value!r}")
        value = int(value)
    try:
        number = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise ValueError(f"chunk cache {name} must be an integer, not {value!r}") from None
    if number < 0:
        raise ValueError(f"chunk cache {name} must be >= 0, not {number}")
    return number


@dataclass(frozen=True)
class ChunkCache:
    """Bytes, hash slots and preemption weight ``w0`` of a raw-data chunk cache.

    The fields are normalised on construction (``int``, ``int``, ``float``), so two equal settings compare and
    hash equal whatever numeric types they were built from. A value HDF5 would refuse raises ``ValueError``.
    Constructed with no arguments it is HDF5 2.0's default (8 MiB, 8191 slots, 0.75).
    """

    nbytes: int = 8 * 1024 * 1024
    nslots: int = 8191
    w0: float = 0.75

    def __post_init__(self) -> None:
        object.__setattr__(self, "nbytes", _count(self.nbytes, "nbytes"))
        object.__setattr__(self, "nslots", _count(self.nslots, "nslots"))
        if isinstance(self.w0, bool):
            raise ValueError(f"chunk cache w0 must be a number in [0, 1], not {self.w0!r}")
        try:
            w0 = float(self.w0)
        except (TypeError, ValueError):
            raise ValueError(f"chunk cache w0 must be a number in [0, 1], not {self.w0!r}") from None
        if not (math.isfinite(w0) and 0.0 <= w0 <= 1.0):
            raise ValueError(f"chunk cache w0 must be in [0, 1], not {self.w0!r}")
        object.__setattr__(self, "w0", w0)

    @property
    def enabled(self) -> bool:
        """HDF5 sets both to 0 when either is 0: nothing is ever kept."""
        return self.nbytes > 0 and self.nslots > 0

    def holds(self, chunk_bytes: int) -> bool:
        """Whether a chunk of this size can be kept in the cache at all."""
        return self.enabled and chunk_bytes <= self.nbytes

    @property
    def label(self) -> str:
        """``1 MiB/521/0.75``: how reports and messages write a cache."""
        from ccp.units import format_bytes

        return f"{format_bytes(self.nbytes)}/{self.nslots}/{self.w0:g}"


#: The chunk cache every HDF5 1.x release gives a dataset.
HDF5_1X = ChunkCache(1024 * 1024, 521, 0.75)
#: The chunk cache HDF5 2.0 and later give a dataset.
HDF5_2X = ChunkCache(8 * 1024 * 1024, 8191, 0.75)
