"""Hypothesis strategies shared by the model's tests: layouts, caches and request lists."""

from __future__ import annotations

import itertools
import math
import os

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from ccp.chunkcache import ChunkCache

# 12 examples per property in `make test` (each reality example runs HDF5, the reference and the compiled
# kernel); `make test-slow` (CI) runs the tests marked `thorough` again with CCP_MODEL_EXAMPLES=150, both drawing
# the same examples every time (tests/conftest.py); `make explore EXAMPLES=2000` draws new ones (LIMITS.md's runs)
SETTINGS = settings(max_examples=int(os.environ.get("CCP_MODEL_EXAMPLES", "12")), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
# The properties that run HDF5 itself under the log driver for every example (reads, many-box calls, strided calls;
# each marked `thorough`): 6 examples in `make test`, where they took ~100 s of its workers' time at 12;
# CCP_MODEL_EXAMPLES sets both, so `make test-slow` runs them with 150 as before
REALITY = settings(SETTINGS, max_examples=int(os.environ.get("CCP_MODEL_EXAMPLES", "6")))
DTYPES = {"i1": 1, "i2": 2, "i4": 4, "f8": 8}
NSLOTS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 11, 16, 17, 521]
W0 = [0.0, 0.3, 0.5, 0.75, 0.9, 1.0]
MAX_REQUESTS = 36


def tiles(shape, block, order):
    """Hyperslabs tiling ``shape`` with ``block`` (edge tiles clipped), in C or Fortran order."""
    ranges = [range(0, s, b) for s, b in zip(shape, block)]
    if order == "F":
        starts = [tuple(reversed(p)) for p in itertools.product(*reversed(ranges))]
    else:
        starts = list(itertools.product(*ranges))
    return [(st_, tuple(min(b, s - o) for o, b, s in zip(st_, block, shape))) for st_ in starts]


@st.composite
def layouts(draw, contiguous_ok=False):
    """Either any shape with any chunks, or a grid of 1-8 chunks per dim with random edge chunks."""
    rank = draw(st.integers(1, 3))
    if draw(st.booleans()):
        hi = {1: 40, 2: 12, 3: 7}[rank]
        shape = tuple(draw(st.lists(st.integers(1, hi), min_size=rank, max_size=rank)))
        chunks = tuple(draw(st.integers(1, s)) for s in shape)
    else:
        hi = {1: 8, 2: 4, 3: 3}[rank]
        chunks = tuple(draw(st.lists(st.integers(1, hi), min_size=rank, max_size=rank)))
        grid = tuple(draw(st.lists(st.integers(1, {1: 8, 2: 4, 3: 3}[rank]), min_size=rank, max_size=rank)))
        shape = tuple(c * n - draw(st.integers(0, c - 1)) for c, n in zip(chunks, grid))
        chunks = tuple(min(c, s) for c, s in zip(chunks, shape))
    if contiguous_ok and draw(st.integers(0, 4)) == 0:
        chunks = None
    dtype = draw(st.sampled_from(sorted(DTYPES)))
    return shape, chunks, dtype


@st.composite
def slabs(draw, shape):
    start = tuple(draw(st.integers(0, s - 1)) for s in shape)
    count = tuple(draw(st.integers(1, s - o)) for s, o in zip(shape, start))
    return start, count


@st.composite
def small_slabs(draw, shape, chunks):
    """A hyperslab of at most about one chunk."""
    lim = chunks or tuple(max(1, s // 3) for s in shape)
    start = tuple(draw(st.integers(0, s - 1)) for s in shape)
    count = tuple(draw(st.integers(1, min(c, s - o))) for c, s, o in zip(lim, shape, start))
    return start, count


@st.composite
def request_lists(draw, shape, chunks, ops=("read",)):
    """Tilings (C, Fortran or shuffled order, one to three passes) plus random hyperslabs, or
    random small hyperslabs revisiting a few chunks (hits, slot collisions and pruning order)."""
    if draw(st.integers(0, 2)) == 0:
        reqs = draw(st.lists(small_slabs(shape, chunks), min_size=8, max_size=MAX_REQUESTS))
        return [(draw(st.sampled_from(ops)), s, c) for s, c in reqs]
    if chunks is not None and draw(st.booleans()):
        block = tuple(draw(st.integers(1, c)) for c in chunks)          # sub-chunk blocks: revisits
    else:
        block = tuple(draw(st.integers(1, s)) for s in shape)
    order = draw(st.sampled_from(["C", "F", "shuffled"]))
    reqs = tiles(shape, block, "F" if order == "F" else "C")
    if order == "shuffled":
        reqs = draw(st.permutations(reqs))
    reqs = (reqs * draw(st.integers(1, 3)))[:MAX_REQUESTS]
    reqs = reqs + draw(st.lists(slabs(shape), max_size=4))
    return [(draw(st.sampled_from(ops)), s, c) for s, c in reqs]


@st.composite
def caches(draw, chunk_bytes):
    """nbytes from 0 to a few chunks (often exactly k chunks, or one byte either side)."""
    if draw(st.booleans()):
        nbytes = max(0, draw(st.integers(0, 5)) * chunk_bytes + draw(st.sampled_from([-1, 0, 0, 1])))
    else:
        nbytes = draw(st.integers(0, 5 * chunk_bytes))
    return ChunkCache(nbytes=nbytes, nslots=draw(st.sampled_from(NSLOTS)), w0=draw(st.sampled_from(W0)))


def sieve_sizes(draw, shape, chunks, itemsize):
    """Contiguous only: the default 64 KiB, or a small sieve (down to one element)."""
    if chunks is not None or draw(st.booleans()):
        return 64 * 1024
    return draw(st.integers(itemsize, 2 * math.prod(shape) * itemsize))
