"""The matrix: the cartesian product of the sweep's axes, minus excludes, each cell validated."""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from ccp.chunkcache import ChunkCache
from ccp.config import axes as matrix_axes
from ccp.config.axes import Axis
from ccp.config.axes.storage import STORAGE
from ccp.config.shapes import SOURCE
from ccp.config.storage import StorageSetting, storage_cells
from ccp.config.sweep import DEFAULT_CLIENT, AccessSpec, Sweep
from ccp.errors import ConfigError
from ccp.hdf5.filters import FilterPipeline, check_for_type
from ccp.units import shape_str

MAX_CHUNK_BYTES = 2**32 - 1   # HDF5's limit on one chunk


@dataclass(frozen=True)
class Cell:
    chunks: tuple[int, ...] | None      # None = contiguous
    filters: FilterPipeline
    cache: ChunkCache
    access: AccessSpec
    from_source: bool = False           # the user's file already has this layout: no repack
    client: str = DEFAULT_CLIENT        # how requests reach HDF5 (ccp.config.sweep.CLIENTS)
    storage: StorageSetting = StorageSetting()   # where the file is read from and its file-level layout
    more: tuple[tuple[str, Any], ...] = ()      # (name, value) of each axis registered beyond these fields

    def value(self, axis: Axis) -> Any:
        """The cell's value on ``axis`` (an axis registered later and not given: its default)."""
        if axis.name in matrix_axes.BUILT_IN:
            return getattr(self, axis.name)
        return dict(self.more).get(axis.name, axis.default)

    @property
    def key(self) -> str:
        # each axis adds nothing at the value every cell had before it existed: old cells keep their ids
        return "|".join(part for a in matrix_axes.axes() for part in a.key(self.value(a)))

    @property
    def cell_id(self) -> str:
        return hashlib.sha1(self.key.encode()).hexdigest()[:12]

    @property
    def layout(self) -> tuple:
        return (self.chunks, self.filters.spec)

    def label(self) -> str:
        """What the cell does, then how it is set up: 'read 1x717 | chunks 4x30 | gzip:4 | cache 1 MiB/521/0.75'."""
        axes = sorted(matrix_axes.axes(), key=lambda a: not a.describes_work)
        return " | ".join(part for a in axes if (part := a.label(self.value(a))))

    def columns(self) -> dict[str, Any]:
        """The cells.csv columns of its parameters, axis by axis (``ccp.store.row.cell_columns`` adds the id)."""
        return {k: v for a in matrix_axes.axes() for k, v in a.row(self.value(a)).items()}


def _excluded(rule: dict, values: dict[str, Any], raw: dict[str, Any], axes) -> bool:
    """Whether ``rule`` drops a cell with these values on ``axes`` (every key of the rule's matches)."""
    return all(a.excluded(rule, values[a.name], raw.get(a.name)) for a in axes)


def expand(sweep: Sweep, source) -> list[Cell]:
    """All cells of the sweep, in matrix order, each checked against the dataset."""
    shape = source.shape
    rank = len(shape)
    if source.chunks is not None and source.identity.startswith("generate:"):
        check_chunks(source.chunks, source, "dataset.generate.chunks")
    access_list = sweep.access or (AccessSpec(op="read", block=tuple(shape)),)
    cells: list[Cell] = []
    seen = set()
    other_axes = [a for a in matrix_axes.axes() if a is not STORAGE]     # storage settings are per cell, below
    # a user's paged file read as stored can take a page buffer (the description says; the matrix opens no file)
    stored_page = getattr(source, "page_size", None) if source.identity.startswith("file:") else None
    product_axes = [a for a in matrix_axes.axes() if a.name not in matrix_axes.BUILT_IN]   # registered later
    for ci, fi, cache, (ai, access), client, *more in itertools.product(
            range(len(sweep.chunks)), range(len(sweep.filters)), sweep.cache, enumerate(access_list), sweep.client,
            *(a.values(sweep.setting(a.name)) for a in product_axes)):
        raw_chunks, raw_filters = sweep.chunks[ci], sweep.filters[fi]
        chunks = source.chunks if raw_chunks is SOURCE else raw_chunks
        filters = source.filters if raw_filters is SOURCE else raw_filters
        values = {"chunks": chunks, "filters": filters, "cache": cache, "access": access, "client": client,
                  **{a.name: v for a, v in zip(product_axes, more)}}
        raw = {"chunks": raw_chunks, "filters": raw_filters}
        rules = [rule for rule in sweep.exclude if _excluded(rule, values, raw, other_axes)]
        from_source = chunks == source.chunks and filters == source.filters and source.identity.startswith("file:")
        settings = [st for st in storage_cells(access.op, sweep.storage.axes, stored_page if from_source else None)
                    if not any(STORAGE.excluded(rule, st) for rule in rules)]
        if not settings:
            continue
        check_for_type(filters, source.dtype, getattr(source, "numeric", True), f"matrix.filters[{fi}]")
        where = f"matrix.chunks[{ci}]"
        if chunks is not None and raw_chunks is not SOURCE:
            check_chunks(chunks, source, where)
        if chunks is None and not filters.is_none:
            raise ConfigError(f"matrix.filters[{fi}]", f"filters {filters.spec!r} need chunked storage but matrix.chunks[{ci}] is contiguous; "
                                                       f"add `exclude: [{{chunks: contiguous, filters: {filters.spec!r}}}]`")
        if chunks is None and any(m is None or m != s for m, s in zip(source.maxshape, shape)):
            raise ConfigError(where, f"contiguous storage cannot have maxshape {list(source.maxshape)} (extendible datasets need chunks)")
        aw = f"matrix.access[{ai}]"
        if access.trace is not None and not access.block:
            raise ConfigError(f"{aw}.trace", "the replay's trace is not loaded: expand a sweep from ccp.workload.sweep.load_sweep_with_replays")
        if len(access.block) != rank:
            raise ConfigError(f"{aw}.block", f"has rank {len(access.block)} but the dataset {list(shape)} has rank {rank}")
        for d, (b, s) in enumerate(zip(access.block, shape)):
            if b > s:
                raise ConfigError(f"{aw}.block[{d}]", f"{b} exceeds the dataset's dimension {d} ({s})")
        for st in settings:
            cell = Cell(chunks=chunks, filters=filters, cache=cache, access=access, client=client, from_source=from_source,
                        storage=st, more=tuple((a.name, v) for a, v in zip(product_axes, more)))
            if cell.key in seen:
                continue
            seen.add(cell.key)
            cells.append(cell)
    if not cells:
        raise ConfigError("exclude", "every cell of the matrix is excluded: nothing to run")
    return cells


def check_chunks(chunks, source, where: str) -> None:
    shape, maxshape = source.shape, source.maxshape
    if len(chunks) != len(shape):
        raise ConfigError(where, f"chunk {list(chunks)} has rank {len(chunks)} but the dataset {list(shape)} has rank {len(shape)}")
    for d, (c, _s, m) in enumerate(zip(chunks, shape, maxshape)):
        if c < 1:
            raise ConfigError(f"{where}[{d}]", f"chunk dimensions must be >= 1, got {c}")
        if m is not None and c > m:
            raise ConfigError(f"{where}[{d}]", f"chunk dimension {c} exceeds the fixed dimension {d} of the dataset ({m}); "
                                               "make that dimension extendible (maxshape null) or use a smaller chunk")
    nbytes = int(np.prod(chunks, dtype=np.int64)) * source.dtype.itemsize
    if nbytes > MAX_CHUNK_BYTES:
        raise ConfigError(where, f"chunk {shape_str(chunks)} is {nbytes} bytes; HDF5 chunks must be under 4 GiB")
