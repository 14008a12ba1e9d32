"""Deterministic synthetic data: the same value at the same position, whatever the layout or block.

Values are generated in fixed slabs along dimension 0 (the slab size depends only on the dataset
shape), each from its own seeded generator, so any hyperslab can be produced in bounded memory.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

SLAB_BYTES = 4 * 1024 * 1024


class Generator:
    """Produce ``spec.data`` values for any hyperslab of a dataset of ``spec.shape``."""

    def __init__(self, spec):
        self.spec = spec
        self.shape = tuple(spec.shape)
        self.dtype = np.dtype(spec.dtype)
        row_bytes = int(np.prod(self.shape[1:], dtype=np.int64)) * self.dtype.itemsize
        self.slab_rows = max(1, SLAB_BYTES // max(1, row_bytes))
        self._slabs: OrderedDict[int, np.ndarray] = OrderedDict()

    def _slab(self, k: int) -> np.ndarray:
        if k in self._slabs:
            self._slabs.move_to_end(k)
            return self._slabs[k]
        r0 = k * self.slab_rows
        r1 = min(self.shape[0], r0 + self.slab_rows)
        slab = self._make((r1 - r0, *self.shape[1:]), r0, np.random.default_rng([self.spec.seed, k]))
        self._slabs[k] = slab
        if len(self._slabs) > 4:
            self._slabs.popitem(last=False)
        return slab

    def _make(self, shape, row0: int, rng) -> np.ndarray:
        kind, _, arg = self.spec.data.partition(":")
        dt = self.dtype
        if kind == "normal":
            x = rng.standard_normal(shape)
            x = np.rint(x * 1000) if dt.kind in "iu" else x
        elif kind == "uniform":
            x = rng.random(shape)
            x = np.floor(x * 100) if dt.kind in "iu" else x
        elif kind == "randint":
            lo, hi = (int(v) for v in arg.split(":"))
            x = rng.integers(lo, hi, size=shape)
        elif kind == "constant":
            x = np.full(shape, float(arg))
        else:  # smooth: a sum of slow waves over the global index, compressible like real fields
            grids = np.meshgrid(*[np.arange(n) + (row0 if i == 0 else 0) for i, n in enumerate(shape)],
                                indexing="ij", sparse=True)
            x = sum(np.sin(g * (0.05 + 0.03 * i)) for i, g in enumerate(grids))
            x = np.rint(x * 100) if dt.kind in "iu" else x
        if dt.kind in "iu":
            info = np.iinfo(dt)
            x = np.clip(x, info.min, info.max)
        return np.asarray(x).astype(dt)

    def read(self, start, count) -> np.ndarray:
        """Values of the hyperslab ``start``/``count``, as a new C-contiguous array."""
        start, count = tuple(int(s) for s in start), tuple(int(c) for c in count)
        if len(self.shape) == 0:
            return self._make((), 0, np.random.default_rng([self.spec.seed, 0]))
        out = np.empty(count, dtype=self.dtype)
        rest = tuple(slice(s, s + c) for s, c in zip(start[1:], count[1:]))
        r, end = start[0], start[0] + count[0]
        while r < end:
            k = r // self.slab_rows
            slab = self._slab(k)
            r0 = k * self.slab_rows
            r1 = min(end, r0 + slab.shape[0])
            out[r - start[0]:r1 - start[0]] = slab[(slice(r - r0, r1 - r0), *rest)]
            r = r1
        return out


class DatasetReader:
    """The same ``read(start, count)`` interface over a user's HDF5 dataset (opened read-only).

    Numeric data comes back as numpy values; any other type (compound, string, vlen, enum, opaque,
    types numpy cannot hold) as raw records of its file type, read with that type as memory type so
    nothing is converted. A caller done with a block of vlen data gives it back with :meth:`release`.
    """

    def __init__(self, dset, source=None):
        from ccp.hdf5 import h5types

        self.dset = dset
        self.shape = tuple(dset.id.shape)
        tid = dset.id.get_type()
        if h5types.is_numeric(tid):
            self.mtype, self.dtype, self._reclaim = None, dset.dtype, None
        else:
            self.mtype, self.dtype = tid, None
            self._reclaim = h5types.reclaimer(tid)

    def read(self, start, count) -> np.ndarray:
        if self.mtype is None:
            sel = tuple(slice(int(s), int(s) + int(c)) for s, c in zip(start, count))
            return np.ascontiguousarray(self.dset[sel])
        from h5py import h5s

        from ccp.hdf5.h5types import memory_buffer

        start, count = tuple(int(s) for s in start), tuple(int(c) for c in count)
        fspace = self.dset.id.get_space()
        fspace.select_hyperslab(start, count)
        buf = memory_buffer(count, self.mtype)
        self.dset.id.read(h5s.create_simple(count), fspace, buf, self.mtype)
        return buf

    def release(self, mspace, block) -> None:
        """Free the vlen data a :meth:`read` allocated in ``block`` (nothing for other types)."""
        if self._reclaim is not None:
            self._reclaim(mspace, block)
