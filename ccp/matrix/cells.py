"""The matrix: the cartesian product of the sweep's axes, minus excludes, each cell validated."""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass

import numpy as np

from ccp.chunkcache import ChunkCache
from ccp.config.shapes import SOURCE
from ccp.config.storage import StorageSetting, matches_storage, storage_cells
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

    @property
    def key(self) -> str:
        a = self.access
        return "|".join([shape_str(self.chunks), self.filters.spec, str(self.cache.nbytes), str(self.cache.nslots),
                         repr(self.cache.w0), a.op, shape_str(a.block), a.order_str, str(a.random), str(a.seed)]
                        # cells measured with the h5py low-level loop (every run before the client axis) keep their ids
                        + ([] if self.client == "h5py-lowlevel" else [self.client])
                        # the default storage setting adds nothing: every cell before the storage axes keeps its id
                        + self.storage.key_parts)

    @property
    def cell_id(self) -> str:
        return hashlib.sha1(self.key.encode()).hexdigest()[:12]

    @property
    def layout(self) -> tuple:
        return (self.chunks, self.filters.spec)

    def label(self) -> str:
        what = self.access.order_str if self.access.trace is not None else shape_str(self.access.block)
        return (f"{self.access.op} {what} | chunks {shape_str(self.chunks)} | "
                f"{self.filters.spec} | cache {self.cache.label}" + ("" if self.client == DEFAULT_CLIENT else f" | {self.client}")
                + (f" | {self.storage.label()}" if self.storage.label() else ""))


def _matches(rule: dict, chunks, filters, cache, access, raw_chunks, raw_filters, client=None) -> bool:
    if "client" in rule and rule["client"] != client:
        return False
    if "chunks" in rule and rule["chunks"] not in (chunks, raw_chunks):
        return False
    if "filters" in rule:
        want = rule["filters"]
        if want == SOURCE:
            if raw_filters != SOURCE:
                return False
        elif want != filters:
            return False
    if "cache" in rule and rule["cache"] != cache:
        return False
    if "access" in rule:
        for k, v in rule["access"].items():
            if getattr(access, k) != v:
                return False
    return True


def expand(sweep: Sweep, source) -> list[Cell]:
    """All cells of the sweep, in matrix order, each checked against the dataset."""
    shape = source.shape
    rank = len(shape)
    if source.chunks is not None and source.identity.startswith("generate:"):
        check_chunks(source.chunks, source, "dataset.generate.chunks")
    access_list = sweep.access or (AccessSpec(op="read", block=tuple(shape)),)
    cells: list[Cell] = []
    seen = set()
    stored_page = None
    if source.identity.startswith("file:") and any(sweep.storage.axes.page_buffer):
        from ccp.hdf5.plists import file_page_size

        stored_page = file_page_size(source.file)    # a user's paged file read as stored can take a page buffer
    for ci, fi, cache, (ai, access), client in itertools.product(range(len(sweep.chunks)), range(len(sweep.filters)),
                                                                sweep.cache, enumerate(access_list), sweep.client):
        raw_chunks, raw_filters = sweep.chunks[ci], sweep.filters[fi]
        chunks = source.chunks if raw_chunks is SOURCE else raw_chunks
        filters = source.filters if raw_filters is SOURCE else raw_filters
        rules = [rule for rule in sweep.exclude if _matches(rule, chunks, filters, cache, access, raw_chunks, raw_filters, client)]
        from_source = chunks == source.chunks and filters == source.filters and source.identity.startswith("file:")
        settings = [st for st in storage_cells(access.op, sweep.storage.axes, stored_page if from_source else None)
                    if not any(matches_storage(rule, st) for rule in rules)]
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
            raise ConfigError(f"{aw}.trace", "the replay's trace is not loaded: expand a sweep from ccp.workload.sweep.load_sweep")
        if len(access.block) != rank:
            raise ConfigError(f"{aw}.block", f"has rank {len(access.block)} but the dataset {list(shape)} has rank {rank}")
        for d, (b, s) in enumerate(zip(access.block, shape)):
            if b > s:
                raise ConfigError(f"{aw}.block[{d}]", f"{b} exceeds the dataset's dimension {d} ({s})")
        for st in settings:
            cell = Cell(chunks=chunks, filters=filters, cache=cache, access=access, client=client, from_source=from_source,
                        storage=st)
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
