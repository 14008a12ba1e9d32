"""Chunk-grid arithmetic of an HDF5 chunked dataset (pure; no I/O, no h5py).

Coordinates are tuples of ints, one per dimension. A hyperslab is ``(start, count)`` with unit
stride and block, exactly what ``H5Sselect_hyperslab(H5S_SELECT_SET, start, NULL, count, NULL)``
selects. Chunk coordinates are "scaled" coordinates in HDF5's sense: ``element // chunk_dim``.

Two different linearisations of chunk coordinates exist in HDF5 (checked against
``src/H5Dchunk.c`` of the 1.14/2.0 line and verified with HDF5 2.0.0 through h5py):

* :meth:`ChunkGrid.linear_index` -- C order over the grid of chunks of the *current* extent
  (``layout.down_chunks``). HDF5 calls it ``chunk_idx``/``index``; it orders the chunks of one
  H5Dread/H5Dwrite (the per-request skip list is keyed by it), and it is the ``cindex`` of the old
  HDF5 documentation.
* :meth:`ChunkGrid.hash_key` -- what ``H5D__chunk_hash_val`` actually reduces modulo ``nslots``.
  It is **not** ``cindex``: the scaled coordinates are bit-packed,
  ``key = (((s0 << b1) ^ s1) << b2 ^ s2) ...`` where ``b_u = log2(next_pow2(nchunks_u))`` is
  computed from the *current* dims when the dataset is opened (``H5D__chunk_init``; it is
  recomputed on ``H5Dset_extent``, never from the max dims). Since ``s_u < 2**b_u`` the XOR is an
  OR: the key is C order over a grid padded to powers of two. For rank 1 it is ``s0``. The
  documented ``cindex mod nslots`` rule is therefore only right when every non-leading grid
  dimension is a power of two.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Optional

Coords = tuple[int, ...]
Box = tuple[Coords, Coords]          # (lo, hi): half-open per dimension


def _tup(x: Sequence[int]) -> Coords:
    return tuple(int(v) for v in x)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def next_pow2(n: int) -> int:
    """Smallest power of two >= n (1 for n <= 1), like ``H5VM_power2up``."""
    p = 1
    while p < n:
        p <<= 1
    return p


def contiguous_runs(extent: Sequence[int], file_dims: Sequence[int], mem_dims: Sequence[int]) -> tuple[int, int]:
    """Runs of a box that are contiguous both in the file and in memory.

    ``extent`` is the size of a box selected inside an array laid out in C order with dims
    ``file_dims`` on disk and copied to/from a C-order array of dims ``mem_dims`` in memory.
    HDF5 walks the file and memory sequence lists together (``H5VM_opvv``) and issues one block
    operation per piece that is contiguous in both. Returns ``(nruns, run_elements)``; ``(0, 0)`` for
    an empty box.
    """
    n = len(extent)
    if n == 0:
        return 1, 1
    if any(e == 0 for e in extent):
        return 0, 0
    k = n - 1
    # Merge dimension k-1 into the run while every dimension >= k is full in file and in memory.
    while k > 0 and extent[k] == file_dims[k] and extent[k] == mem_dims[k]:
        k -= 1
    return math.prod(extent[:k]), math.prod(extent[k:])


@dataclass(frozen=True)
class ChunkGrid:
    """A dataset ``shape`` cut into chunks of ``chunks`` (same rank, chunk dims >= 1)."""

    shape: Coords
    chunks: Coords

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", _tup(self.shape))
        object.__setattr__(self, "chunks", _tup(self.chunks))
        if len(self.shape) != len(self.chunks):
            raise ValueError(f"rank mismatch: shape {self.shape} vs chunks {self.chunks}")
        if any(c < 1 for c in self.chunks) or any(s < 0 for s in self.shape):
            raise ValueError(f"bad shape/chunks {self.shape}/{self.chunks}")

    # ---- grid ---------------------------------------------------------------------------------
    @property
    def rank(self) -> int:
        return len(self.shape)

    @cached_property
    def grid(self) -> Coords:
        """Number of chunks per dimension (partial edge chunks included)."""
        return tuple(ceil_div(s, c) for s, c in zip(self.shape, self.chunks))

    @property
    def nchunks(self) -> int:
        return math.prod(self.grid)

    @property
    def chunk_elements(self) -> int:
        return math.prod(self.chunks)

    def chunk_nbytes(self, itemsize: int) -> int:
        """Bytes of a chunk in memory / uncompressed on disk: always the *full* chunk, edge or not."""
        return self.chunk_elements * itemsize

    def iter_chunks(self) -> Iterator[Coords]:
        """All chunk coordinates in C order (= ascending :meth:`linear_index`)."""
        return itertools.product(*(range(g) for g in self.grid))

    def linear_index(self, coords: Sequence[int]) -> int:
        """C-order index of a chunk over the current grid (HDF5's ``chunk_idx``/``cindex``)."""
        idx = 0
        for c, g in zip(coords, self.grid):
            idx = idx * g + int(c)
        return idx

    def encode_bits(self) -> Coords:
        """Bits per dimension HDF5 uses to pack scaled coords (``rdcc.scaled_encode_bits``)."""
        return self._bits

    @cached_property
    def _bits(self) -> Coords:
        return tuple(next_pow2(g).bit_length() - 1 for g in self.grid)

    def hash_key(self, coords: Sequence[int]) -> int:
        """The value ``H5D__chunk_hash_val`` reduces modulo nslots (see module docstring)."""
        if self.rank == 1:
            return int(coords[0])
        bits = self.encode_bits()
        val = int(coords[0])
        for u in range(1, self.rank):
            val = (val << bits[u]) ^ int(coords[u])
        return val

    def slot(self, coords: Sequence[int], nslots: int) -> int:
        """Hash-table slot of a chunk in a cache of ``nslots`` slots."""
        if nslots <= 0:
            raise ValueError("a cache with no slots has no slot")
        return self.hash_key(coords) % nslots

    # ---- single chunk -------------------------------------------------------------------------
    def chunk_of(self, element: Sequence[int]) -> Coords:
        return tuple(int(e) // c for e, c in zip(element, self.chunks))

    def chunk_box(self, coords: Sequence[int]) -> Box:
        """Element box of a chunk, clipped to the dataset extent."""
        lo = tuple(int(c) * k for c, k in zip(coords, self.chunks))
        hi = tuple(min(l + k, s) for l, k, s in zip(lo, self.chunks, self.shape))
        return lo, hi

    def chunk_valid_elements(self, coords: Sequence[int]) -> int:
        lo, hi = self.chunk_box(coords)
        return math.prod(h - l for l, h in zip(lo, hi))

    def chunk_valid_nbytes(self, coords: Sequence[int], itemsize: int) -> int:
        """Bytes of a chunk that lie inside the dataset (less than full for edge chunks)."""
        return self.chunk_valid_elements(coords) * itemsize

    def is_edge_chunk(self, coords: Sequence[int]) -> bool:
        return self.chunk_valid_elements(coords) != self.chunk_elements

    # ---- hyperslabs ---------------------------------------------------------------------------
    def check_slab(self, start: Sequence[int], count: Sequence[int]) -> None:
        if len(start) != self.rank or len(count) != self.rank:
            raise ValueError(f"selection rank mismatch: {start}/{count} for shape {self.shape}")
        for s, n, d in zip(start, count, self.shape):
            if s < 0 or n < 0 or s + n > d:
                raise ValueError(f"selection {tuple(start)}+{tuple(count)} outside shape {self.shape}")

    def chunk_ranges(self, start: Sequence[int], count: Sequence[int]) -> tuple[range, ...]:
        """Per dimension, the range of scaled chunk coordinates a hyperslab touches."""
        if any(n == 0 for n in count):
            return tuple(range(0) for _ in count)
        return tuple(range(s // c, (s + n - 1) // c + 1) for s, n, c in zip(start, count, self.chunks))

    def chunks_touched(self, start: Sequence[int], count: Sequence[int]) -> list[Coords]:
        """Chunks a hyperslab touches, in the order HDF5 processes them (ascending linear index)."""
        return list(itertools.product(*self.chunk_ranges(start, count)))

    def intersection(self, start: Sequence[int], count: Sequence[int], coords: Sequence[int]) -> Optional[Box]:
        """Box (absolute element coordinates) where a hyperslab meets a chunk, or None."""
        clo, chi = self.chunk_box(coords)
        lo = tuple(max(s, a) for s, a in zip(start, clo))
        hi = tuple(min(s + n, b) for s, n, b in zip(start, count, chi))
        if any(h <= l for l, h in zip(lo, hi)):
            return None
        return lo, hi

    def selected_in_chunk(self, start: Sequence[int], count: Sequence[int], coords: Sequence[int]) -> int:
        """Number of selected elements inside one chunk (HDF5's ``piece_points``)."""
        box = self.intersection(start, count, coords)
        if box is None:
            return 0
        return math.prod(h - l for l, h in zip(*box))

    def direct_runs(self, start: Sequence[int], count: Sequence[int], coords: Sequence[int]) -> tuple[int, int]:
        """``(nruns, run_elements)`` of a selection read/written straight from/to one chunk on disk.

        File contiguity is relative to the *full* chunk dims (edge chunks are stored full size);
        memory contiguity relative to a dense C-order buffer of shape ``count``.
        """
        box = self.intersection(start, count, coords)
        if box is None:
            return 0, 0
        ext = tuple(h - l for l, h in zip(*box))
        return contiguous_runs(ext, self.chunks, tuple(count))
