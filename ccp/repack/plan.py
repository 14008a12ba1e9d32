"""Hyperslab plans for copying a dataset in bounded memory (seed 003, h5repack's algorithm).

Pure: no I/O. A plan tiles a dataset of ``shape`` with rectangular hyperslabs that each fit
in ``buffer_bytes``, chosen by the rule h5repack adopted in HDFFV-7862:

* destination chunked and one chunk fits in the buffer (mode ``"chunks"``): the largest
  rectangular block of **whole destination chunks** that fits, built from the last
  dimension outward; when a dimension is taken whole, the next one out grows too.
  Every hyperslab starts on a chunk boundary and ends on one (or at the dataset's edge),
  so each destination chunk is written exactly once, completely.
* destination chunked but one chunk does not fit (mode ``"elements-in-chunk"``): the
  largest rectangular block of **elements** bounded by the chunk's dimensions, built from
  the last dimension of the chunk outward; hyperslabs never cross a chunk boundary and
  all hyperslabs of one chunk come one after another.
* destination contiguous (mode ``"elements"``): the largest rectangular block of
  elements bounded by the dataset's dimensions, from the last dimension outward.

Hyperslabs come in C order of their grid, so consecutive hyperslabs are neighbours along
the last dimensions first. A single element larger than the buffer still makes a
one-element hyperslab (there is nothing smaller to read).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

DEFAULT_BUFFER_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class Slab:
    """One hyperslab: ``start`` and ``count`` per dimension (elements)."""

    start: tuple[int, ...]
    count: tuple[int, ...]

    @property
    def size(self) -> int:
        return math.prod(self.count)

    @property
    def slices(self) -> tuple[slice, ...]:
        return tuple(slice(s, s + c) for s, c in zip(self.start, self.count))


def fit_block(bounds: tuple[int, ...], budget: int) -> tuple[int, ...]:
    """Largest block within ``bounds`` holding at most ``budget`` units, last dimension first.

    A dimension is only grown once every dimension after it is taken whole.
    ``budget`` below 1 counts as 1.
    """
    budget = max(1, int(budget))
    block = [1] * len(bounds)
    for i in range(len(bounds) - 1, -1, -1):
        b = max(1, int(bounds[i]))
        if budget >= b:
            block[i] = b
            budget //= b
        else:
            block[i] = budget
            break
    return tuple(block)


@dataclass(frozen=True)
class SlabPlan:
    shape: tuple[int, ...]
    chunks: tuple[int, ...] | None
    itemsize: int
    buffer_bytes: int
    mode: str  # "chunks" | "elements-in-chunk" | "elements"
    block: tuple[int, ...]  # hyperslab shape in elements before clipping at the edges

    @property
    def aligned(self) -> bool:
        """True when every hyperslab is made of whole destination chunks."""
        return self.mode == "chunks"

    @property
    def slab_bytes(self) -> int:
        """Bytes of the largest hyperslab."""
        return math.prod(min(b, max(d, 1)) for b, d in zip(self.block, self.shape)) * self.itemsize

    def _chunks(self) -> tuple[int, ...]:
        """The destination chunks (mode "elements-in-chunk" is only planned for a chunked destination)."""
        assert self.chunks is not None, "elements-in-chunk without chunks"
        return self.chunks

    def grid(self) -> tuple[int, ...]:
        """Hyperslabs per dimension in modes "chunks" and "elements"."""
        return tuple(-(-d // b) for d, b in zip(self.shape, self.block))

    def __len__(self) -> int:
        if any(d == 0 for d in self.shape):
            return 0
        if self.mode != "elements-in-chunk":
            return math.prod(self.grid())
        n = 0
        chunks = self._chunks()
        for cgrid_idx in itertools.product(*(range(-(-d // c)) for d, c in zip(self.shape, chunks))):
            ext = [min(c, d - i * c) for i, c, d in zip(cgrid_idx, chunks, self.shape)]
            n += math.prod(-(-e // b) for e, b in zip(ext, self.block))
        return n

    def __iter__(self):
        if any(d == 0 for d in self.shape):
            return
        if not self.shape:
            yield Slab((), ())
            return
        if self.mode != "elements-in-chunk":
            yield from _grid_slabs((0,) * len(self.shape), self.shape, self.block)
            return
        chunks = self._chunks()
        for cidx in itertools.product(*(range(-(-d // c)) for d, c in zip(self.shape, chunks))):
            origin = tuple(i * c for i, c in zip(cidx, chunks))
            extent = tuple(min(c, d - o) for c, d, o in zip(chunks, self.shape, origin))
            yield from _grid_slabs(origin, extent, self.block)

    def slab_index(self, coord: tuple[int, ...]) -> int:
        """C-order index of the hyperslab holding element ``coord`` (modes "chunks", "elements")."""
        idx = 0
        for c, b, g in zip(coord, self.block, self.grid()):
            idx = idx * g + c // b
        return idx


def _grid_slabs(origin, extent, block):
    ranges = [range(0, e, b) for e, b in zip(extent, block)]
    for offs in itertools.product(*ranges):
        start = tuple(o + x for o, x in zip(origin, offs))
        count = tuple(min(b, e - x) for b, e, x in zip(block, extent, offs))
        yield Slab(start, count)


def plan_slabs(shape, chunks, itemsize: int, buffer_bytes: int = DEFAULT_BUFFER_BYTES) -> SlabPlan:
    """The hyperslab plan for writing a dataset of ``shape`` with destination ``chunks``.

    ``chunks`` None means a contiguous (or compact) destination.
    """
    shape = tuple(int(d) for d in shape)
    itemsize = max(1, int(itemsize))
    buffer_bytes = max(1, int(buffer_bytes))
    if chunks is not None:
        chunks = tuple(int(c) for c in chunks)
        if len(chunks) != len(shape):
            raise ValueError(f"chunk rank {len(chunks)} differs from dataset rank {len(shape)}")
        if any(c <= 0 for c in chunks):
            raise ValueError(f"chunk dimensions must be positive, got {chunks}")
    if chunks is None or not shape:
        block = fit_block(shape, buffer_bytes // itemsize)
        return SlabPlan(shape, chunks, itemsize, buffer_bytes, "elements", block)
    chunk_bytes = math.prod(chunks) * itemsize
    if chunk_bytes <= buffer_bytes:
        nchunks = tuple(max(1, -(-d // c)) for d, c in zip(shape, chunks))
        cblock = fit_block(nchunks, buffer_bytes // chunk_bytes)
        block = tuple(b * c for b, c in zip(cblock, chunks))
        return SlabPlan(shape, chunks, itemsize, buffer_bytes, "chunks", block)
    block = fit_block(chunks, buffer_bytes // itemsize)
    return SlabPlan(shape, chunks, itemsize, buffer_bytes, "elements-in-chunk", block)


def chunks_in(slab: Slab, chunks):
    """Offsets (element coordinates) of the chunks a hyperslab overlaps, in C order."""
    ranges = [range((s // c) * c, s + n, c) for s, n, c in zip(slab.start, slab.count, chunks)]
    return itertools.product(*ranges)
