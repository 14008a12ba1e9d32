"""Generated data does not depend on how it is asked for: the same dataset read in any block shape, in any
order, holds the same value at the same position (ccp.workload.datagen.Generator).

Slabs are made small here (a few rows) so blocks cross slab boundaries and the generator's slab cache
(four slabs) evicts and regenerates while a dataset is read.
"""

from __future__ import annotations

import itertools
from unittest import mock

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ccp.config.sweep import parse_generate
from ccp.workload import datagen
from ccp.workload.requests import random_requests, tile_requests

DATA = ["normal", "uniform", "randint:0:120", "smooth", "constant:7"]
DTYPES = ["<f4", ">f8", "<i2", "u1", ">i4"]


@st.composite
def datasets(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 9), min_size=rank, max_size=rank)))
    blocks = [tuple(draw(st.integers(1, n)) for n in shape) for _ in range(2)]
    orders = [tuple(draw(st.permutations(range(rank)))) for _ in range(2)]
    raw = {"shape": list(shape), "dtype": draw(st.sampled_from(DTYPES)), "data": draw(st.sampled_from(DATA)),
           "seed": draw(st.integers(0, 2**32))}
    return raw, blocks, orders, draw(st.sampled_from([1, 16, 64, 4 * 1024 * 1024]))


def assemble(gen, shape, plan, cover: bool = True) -> np.ndarray:
    out = np.full(shape, 99, dtype=gen.dtype)
    seen = np.zeros(shape, bool)
    for start, count in zip(plan.starts, plan.counts):
        sel = tuple(slice(int(s), int(s) + int(c)) for s, c in zip(start, count))
        block = gen.read(start, count)
        assert block.shape == tuple(int(c) for c in count) and block.dtype == gen.dtype
        out[sel] = block
        seen[sel] = True
    assert seen.all() or not cover
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(datasets())
def test_every_block_shape_and_order_gives_the_same_values(case):
    raw, (b1, b2), (o1, o2), slab_bytes = case
    spec = parse_generate(raw, "dataset.generate")
    shape = spec.shape
    with mock.patch.object(datagen, "SLAB_BYTES", slab_bytes):
        whole = datagen.Generator(spec).read((0,) * len(shape), shape)
        by_b1 = assemble(datagen.Generator(spec), shape, tile_requests(shape, b1, o1))
        by_b2 = assemble(datagen.Generator(spec), shape, tile_requests(shape, b2, o2))
        one = datagen.Generator(spec)                   # one generator, its slab cache warm from earlier reads
        assemble(one, shape, random_requests(shape, b1, 5, seed=1), cover=False)
        again = assemble(one, shape, tile_requests(shape, b2, o2[::-1]))
    np.testing.assert_array_equal(by_b1, whole)
    np.testing.assert_array_equal(by_b2, whole)
    np.testing.assert_array_equal(again, whole)


def test_values_are_the_seed_and_shape_not_the_reader():
    """A second generator of the same spec agrees point by point; another seed does not."""
    spec = parse_generate({"shape": [7, 5, 3], "dtype": "<f4", "data": "normal", "seed": 11}, "g")
    other = parse_generate({"shape": [7, 5, 3], "dtype": "<f4", "data": "normal", "seed": 12}, "g")
    with mock.patch.object(datagen, "SLAB_BYTES", 60):           # one row a slab: 7 slabs, cache of 4
        a, b = datagen.Generator(spec), datagen.Generator(spec)
        points = list(itertools.product(range(7), range(5), range(3)))
        va = [a.read(p, (1, 1, 1))[0, 0, 0] for p in points]
        vb = [b.read(p, (1, 1, 1))[0, 0, 0] for p in reversed(points)][::-1]
        vc = datagen.Generator(other).read((0, 0, 0), (7, 5, 3)).ravel()
    assert va == vb
    assert not np.array_equal(np.array(va), vc)
