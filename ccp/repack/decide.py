"""Per-dataset decisions: which layout and filters, and which path writes a dataset.

Pure with respect to the output: it reads the source and probes combinations in an
in-memory file. Datatypes are judged by their HDF5 type, never only by a numpy dtype (h5py
cannot map every type: 128-bit floats, H5T_TIME, ...).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

import h5py
import numpy as np
from h5py import h5d, h5f, h5o, h5p, h5s, h5t

from ccp.errors import CcpError, ConfigError
from ccp.hdf5 import lowlevel as low
from ccp.hdf5 import plists
from ccp.hdf5.dataset import dataset_info
from ccp.hdf5.filters import FilterPipeline, codecs, missing_decoder, register_plugins_early, type_refusal
from ccp.hdf5.filters.plugins import lossy_plugin
from ccp.repack.options import COMPACT, CONTIGUOUS, Layout, as_layout, normalise_path, parse_filter_body
from ccp.repack.pytables_index import chunks_bound_index
from ccp.repack.results import DatasetResult
from ccp.units import format_bytes, shape_str

_FAST_KINDS = "iufbS"
_MAX_CHUNK_BYTES = 2**32 - 1
_GUESS_CHUNK_BYTES = 1024 * 1024
_FIRST_PLUGIN_ID = 256         # ids below are HDF5's own filters (1-6 used); plugins are registered from 256 (H5Zpublic.h)


def _layout_of(dcpl, ds) -> str:
    kind = dcpl.get_layout()
    if kind == h5d.CHUNKED:
        return shape_str(ds.chunks)
    if kind == h5d.COMPACT:
        return "compact"
    if kind == h5d.VIRTUAL:
        return "virtual"
    return "contiguous"


def _as_layout_str(text: str) -> Layout | None:
    if text == "contiguous":
        return CONTIGUOUS
    if text == "compact":
        return COMPACT
    if text == "virtual":
        return None
    return Layout("chunked", tuple(int(d) for d in text.split("x")))


_CLASS_NAMES = {h5t.INTEGER: "integer", h5t.FLOAT: "float", h5t.TIME: "time", h5t.STRING: "string",
                h5t.BITFIELD: "bitfield", h5t.OPAQUE: "opaque", h5t.COMPOUND: "compound", h5t.REFERENCE: "reference",
                h5t.ENUM: "enum", h5t.VLEN: "vlen", h5t.ARRAY: "array"}


def numpy_dtype(tid) -> np.dtype | None:
    """h5py's numpy dtype for a type, or None when h5py cannot map it (128-bit floats, H5T_TIME ...)."""
    try:
        return tid.dtype
    except Exception:  # h5py raises several kinds for types it cannot map
        return None


def type_label(tid) -> str:
    """A short name for an HDF5 datatype, whether or not numpy can hold it."""
    cls = tid.get_class()
    size = tid.get_size()
    if cls == h5t.STRING:
        cset = "utf-8" if tid.get_cset() == h5t.CSET_UTF8 else "ascii"
        return f"string({'vlen' if tid.is_variable_str() else size}, {cset})"
    if cls == h5t.VLEN:
        return f"vlen({type_label(tid.get_super())})"
    if cls == h5t.ARRAY:
        return f"array({type_label(tid.get_super())})"
    if cls in (h5t.INTEGER, h5t.FLOAT):
        dt = numpy_dtype(tid)
        if dt is not None and dt.itemsize == size:
            return dt.str
    if cls in (h5t.COMPOUND, h5t.ENUM, h5t.REFERENCE):
        return _CLASS_NAMES[cls]
    return f"{_CLASS_NAMES.get(cls, f'class {cls}')}({8 * size}-bit)"


def _fast_type(tid) -> bool:
    """Fixed-size values without references: their chunks can be moved as bytes."""
    return not low.has_vlen(tid) and not low.has_reference(tid) and tid.get_size() > 0


def _guess_chunks(shape, maxshape, itemsize) -> tuple[int, ...]:
    """Chunks for a dataset that gains filters but had none: <= 1 MiB, halving from the first dim."""
    dims = [max(1, d if m is None or d else (m or 1)) for d, m in zip(shape, maxshape)]
    dims = [min(d, m) if m is not None else d for d, m in zip(dims, maxshape)]
    dims = [max(1, d) for d in dims]
    i = 0
    while math.prod(dims) * itemsize > _GUESS_CHUNK_BYTES and any(d > 1 for d in dims):
        if dims[i % len(dims)] > 1:
            dims[i % len(dims)] = -(-dims[i % len(dims)] // 2)
        i += 1
    return tuple(dims)


def _pipeline(value, where: str) -> FilterPipeline:
    if isinstance(value, FilterPipeline):
        return value
    if value is None:
        return FilterPipeline()
    return FilterPipeline(parse_filter_body(str(value), where))

# ------------------------------------------------------------------ per-dataset decisions

@dataclass
class _Target:
    path: str
    key: tuple
    shape: tuple | None
    maxshape: tuple | None
    dtype: np.dtype | None  # h5py's numpy dtype, None when it has none
    label: str
    itemsize: int
    old_layout: str
    old_pipeline: FilterPipeline
    new_layout: Layout | None = None
    new_pipeline: FilterPipeline | None = None
    changed: bool = False
    method: str = "copy"
    reason: str = ""
    notes: list = field(default_factory=list)
    raw_bytes: int = 0
    stored_bytes: int = 0
    fast_dtype: bool = False
    keep_filters: bool = False
    deflate: str = "zlib"
    dst_type: object = None     # the output's named datatype a rewritten dataset is created with (shared)
    written: object = None      # readback.WrittenChunks: CRC-32 of each chunk the fast path encoded
    verified: bool = False      # every value read back and compared while written (the planned library path)

    @property
    def dims(self) -> tuple[int, ...]:
        """The shape of a dataset with a simple dataspace (asked of a null one: a bug)."""
        assert self.shape is not None, f"{self.path}: a null dataspace has no shape"
        return self.shape

    @property
    def layout(self) -> Layout:
        """The new layout of a dataset that changes (asked of one that does not: a bug)."""
        assert self.new_layout is not None, f"{self.path}: no new layout"
        return self.new_layout

    @property
    def pipeline(self) -> FilterPipeline:
        """The new filter pipeline of a dataset that changes."""
        assert self.new_pipeline is not None, f"{self.path}: no new filters"
        return self.new_pipeline

    def result(self, **kw) -> DatasetResult:
        new_layout = self.new_layout.spec if (self.changed and self.new_layout) else self.old_layout
        new_filters = self.new_pipeline.spec if (self.changed and self.new_pipeline is not None) else self.old_pipeline.spec
        deflate = ""
        gzip = [s for s in self.new_pipeline.steps if s.filter.deflate_engine] if self.new_pipeline is not None else []
        if self.changed and gzip:
            # the encoder really used at the step's level (ISA-L encodes level 1 only)
            deflate = codecs.deflate_engine_at(self.deflate, int(gzip[0].args[0])) if self.method == "fast" else "hdf5"
        return DatasetResult(
            deflate=deflate, path=self.path, action="repacked" if self.changed else "copied", method=self.method, reason=self.reason,
            shape=self.shape, dtype=self.label, old_layout=self.old_layout, new_layout=new_layout,
            old_filters=self.old_pipeline.spec, new_filters=new_filters, raw_bytes=self.raw_bytes,
            old_stored_bytes=self.stored_bytes, notes=tuple(self.notes), **kw)


def _python_encodable(pipeline: FilterPipeline) -> str:
    """'' when every step has an exact Python encoder, else the reason."""
    for step in pipeline.steps:
        why = step.filter.codec_missing(step)
        if why:
            return why
    return ""


class _Planner:
    """Turns the options into a decision per dataset (pure with respect to the output file)."""

    def __init__(self, src: h5py.File, layouts, filters, buffer_bytes: int, deflate: str = "zlib"):
        register_plugins_early()    # before any dataset of the source meets HDF5's plugin path
        self.src = src
        self.deflate = deflate
        self.buffer_bytes = buffer_bytes
        self.copies_indexes = True      # the whole file is copied, PyTables' indexes with their tables
        self.layouts: dict = {}
        self.filters: dict = {}
        self.global_layout = None
        self.global_filters = None
        for key, value in (layouts or {}).items():
            where = "-l" if key is None else f"-l {key}"
            lay = as_layout(value, where)
            if key is None:
                self.global_layout = lay
            else:
                self.layouts[self._key_of(key, "-l")] = (lay, normalise_path(key))
        for key, value in (filters or {}).items():
            where = "-f" if key is None else f"-f {key}"
            pipe = _pipeline(value, where)
            if key is None:
                self.global_filters = pipe
            else:
                self.filters[self._key_of(key, "-f")] = (pipe, normalise_path(key))
        self._probe_file = None
        self._probe_n = 0

    def _key_of(self, name: str, opt: str) -> tuple:
        path = normalise_path(name)
        try:
            obj = self.src.get(path)
        except Exception:  # any lookup failure means "no such dataset"
            obj = None
        if obj is None:
            raise ConfigError(f"{opt} {name}", f"no dataset {path} in {self.src.filename}")
        if not isinstance(obj, h5py.Dataset):
            raise ConfigError(f"{opt} {name}", f"{path} is a {type(obj).__name__.lower()}, not a dataset")
        info = h5o.get_info(obj.id)
        if info.fileno != h5o.get_info(self.src["/"].id).fileno:     # reached through an external link
            raise ConfigError(f"{opt} {name}", f"{path} is the dataset {obj.name} of {obj.file.filename}, reached through "
                              f"an external link; the copy keeps the link: repack {obj.file.filename} itself")
        return (info.fileno, info.addr)

    def close(self):
        if self._probe_file is not None:
            self._probe_file.close()
            self._probe_file = None

    def probe_file(self) -> h5py.File:
        if self._probe_file is None:
            fapl = h5p.create(h5p.FILE_ACCESS)
            fapl.set_fapl_core(1024 * 1024, False)
            fid = h5f.create(f"ccp-repack-probe-{os.getpid()}-{id(self)}.h5".encode(), h5f.ACC_TRUNC, fapl=fapl)
            self._probe_file = h5py.File(fid)
        return self._probe_file

    def decide(self, path: str, key: tuple, ds: h5py.Dataset, options: bool = True) -> _Target:
        """What happens to one dataset; ``options=False``: nothing (it is copied as it is)."""
        info = dataset_info(ds.id)
        shape = None if info.extent == "null" else info.shape
        tid = ds.id.get_type()
        itemsize = tid.get_size()
        tgt = _Target(path=path, key=key, shape=shape, maxshape=info.maxshape if shape is not None else None,
                      dtype=numpy_dtype(tid), label=type_label(tid), itemsize=itemsize,
                      old_layout=shape_str(info.chunks) if info.chunks is not None else info.layout,
                      old_pipeline=info.filters,
                      raw_bytes=(math.prod(shape) * itemsize) if shape is not None else 0,
                      stored_bytes=info.storage_bytes or 0, fast_dtype=_fast_type(tid))
        lay_req, l_explicit = self.layouts.get(key, (self.global_layout, None))
        pipe_req, f_explicit = self.filters.get(key, (self.global_filters, None))
        if (lay_req is None and pipe_req is None) or not options:
            return tgt
        explicit = l_explicit or f_explicit

        def refuse(opt_path, opt, message):
            if opt_path:
                raise ConfigError(f"{opt} {opt_path}", message)
            tgt.notes.append(f"kept as it is: {message}")
            return tgt

        if shape is None:
            return refuse(explicit, "-l" if l_explicit else "-f", "has an empty (null) dataspace")
        old = _as_layout_str(tgt.old_layout)
        new_layout = lay_req if lay_req is not None else old
        new_pipe = pipe_req if pipe_req is not None else tgt.old_pipeline
        if not shape:
            if (new_layout is None or new_layout.kind == "chunked") or not new_pipe.is_none:
                if pipe_req is not None and not pipe_req.is_none:
                    return refuse(f_explicit, "-f", "is a scalar: it cannot be chunked or filtered")
                if lay_req is not None and lay_req.kind == "chunked":
                    return refuse(l_explicit, "-l", "is a scalar: it cannot be chunked")
                new_pipe = FilterPipeline()
        elif lay_req is None and (old is None or old.kind != "chunked") and not new_pipe.is_none:
            new_layout = Layout("chunked", _guess_chunks(shape, tgt.maxshape, itemsize))
        maxshape: tuple = tgt.maxshape or ()   # set with the shape: not None here
        if new_layout is not None and new_layout.kind == "chunked":
            chunks = new_layout.chunk_shape
            if len(chunks) != len(shape):
                if l_explicit:
                    raise ConfigError(f"-l {l_explicit}", f"chunk {shape_str(chunks)} has rank {len(chunks)}, "
                                      f"the dataset has rank {len(shape)} (shape {shape_str(shape)})")
                tgt.notes.append(f"layout kept: chunk {shape_str(chunks)} has rank {len(chunks)}, dataset rank {len(shape)}")
                new_layout = old
                if new_layout is not None and new_layout.kind != "chunked" and not new_pipe.is_none:
                    new_layout = Layout("chunked", _guess_chunks(shape, maxshape, itemsize))
            else:
                too_big = [i for i, (c, m) in enumerate(zip(chunks, maxshape)) if m is not None and c > m]
                if too_big:
                    if l_explicit:
                        i = too_big[0]
                        raise ConfigError(f"-l {l_explicit}", f"chunk dimension {i} is {chunks[i]}, larger than "
                                          f"the fixed maximum size {maxshape[i]} (maxshape "
                                          f"{'x'.join('inf' if m is None else str(m) for m in maxshape)})")
                    clipped = tuple(min(c, m) if m is not None else c for c, m in zip(chunks, maxshape))
                    if any(c == 0 for c in clipped):      # named in -l/-f: refused, like a scalar
                        return refuse(explicit, "-l" if l_explicit else "-f",
                                      "has a fixed dimension of size 0: it cannot be chunked or filtered")
                    tgt.notes.append(f"chunk {shape_str(chunks)} clipped to {shape_str(clipped)} (fixed maxshape)")
                    new_layout = Layout("chunked", clipped)
        if new_layout is not None and new_layout.kind == "chunked":
            if math.prod(new_layout.chunk_shape) * itemsize > _MAX_CHUNK_BYTES:
                raise ConfigError(f"-l {l_explicit or ''}".strip(), f"{path}: chunk {shape_str(new_layout.chunk_shape)} is "
                                  f"{format_bytes(math.prod(new_layout.chunk_shape) * itemsize)}; HDF5 chunks must be < 4 GiB")
        elif new_layout is not None:  # contiguous / compact
            if tuple(maxshape) != tuple(shape):
                ms = "x".join("inf" if m is None else str(m) for m in maxshape)
                msg = f"has maxshape {ms}: a {new_layout.kind} dataset cannot be extended; use CHUNK=..."
                if lay_req is not None:
                    return refuse(l_explicit, "-l", msg)
            if not new_pipe.is_none:
                if pipe_req is not None and not pipe_req.is_none:
                    where = f"-f {f_explicit}" if f_explicit else (f"-l {l_explicit}" if l_explicit else "-f")
                    raise ConfigError(where, f"{path}: filters {new_pipe.spec} need a chunked layout, not {new_layout.kind}")
                tgt.notes.append(f"filters {new_pipe.spec} removed: a {new_layout.kind} dataset cannot be filtered")
                new_pipe = FilterPipeline()
        else:  # virtual source, filters only
            new_layout = Layout("chunked", _guess_chunks(shape, tgt.maxshape, itemsize))
        if lay_req is not None and new_layout != old:
            why = chunks_bound_index(ds, path) if self.copies_indexes else ""
            if why and (l_explicit or old is None):
                raise ConfigError(f"-l {l_explicit or ''}".strip(), why)
            if why and old is not None:
                tgt.notes.append(f"layout kept: {why}")
                new_layout = old
        if (old is None or old.kind != "chunked") and lay_req is None and new_layout.kind == "chunked":
            tgt.notes.append(f"chunked {shape_str(new_layout.chunks)} to take filters {new_pipe.spec}")
        if new_layout == old and new_pipe.spec == tgt.old_pipeline.spec:
            tgt.notes.append("already in the requested layout and filters")
            return tgt
        missing = missing_decoder(ds.id.get_create_plist())
        if missing:
            return refuse(explicit, "-f" if f_explicit else "-l", f"{path}: {missing}")
        tgt.keep_filters = new_pipe is tgt.old_pipeline and new_layout.kind == "chunked"
        lossy = next((name for step in new_pipe.steps if (name := lossy_plugin(step.id, step.cd_values or ()))), "")
        if tgt.keep_filters and lossy:
            return refuse(l_explicit, "-l", f"{path} is compressed by {lossy}, which is lossy: re-encoded for chunk "
                          f"{new_layout.spec} its values would not be the input's; its filters can change (-f) with its chunks")
        # filters HDF5 would accept and then crash on, or store wrongly: refused before anything is written
        why = "" if tgt.keep_filters else type_refusal(new_pipe, tid, ds.id.get_create_plist())
        if why:
            return refuse(f_explicit, "-f", f"{path} ({tgt.label}): {why}")
        # let HDF5 judge the combination (filters that do not fit the datatype, compact too large ...)
        try:
            self.probe(ds, new_layout, None if tgt.keep_filters else new_pipe)
        except CcpError as exc:
            where = f"-f {f_explicit}" if f_explicit else (f"-l {l_explicit}" if l_explicit else "")
            if explicit:
                raise ConfigError(where, str(exc)) from None
            tgt.notes.append(f"kept as it is: {exc}")
            return tgt
        tgt.new_layout, tgt.new_pipeline, tgt.changed = new_layout, new_pipe, True
        tgt.method, tgt.reason = self._method(tgt)
        tgt.deflate = self.deflate
        return tgt

    def rewrite_instead_of_copy(self, tgt: _Target, ds) -> None:
        """Two variable-length datasets H5Ocopy cannot copy are written through the library instead, in
        their own layout and filters: one whose fill value is variable-length (netCDF-4 string variables),
        whose copy's fill value message points into the source's global heap (HDF5 2.0: the copy cannot
        be opened); and one filtered by a plugin (a PyTables VLArray with bzip2), which H5Ocopy decodes
        to copy its heap objects and then frees wrongly: the process aborts (h5py's own copy and Debian's
        h5repack too)."""
        if tgt.changed or tgt.shape is None or not low.has_vlen(ds.id.get_type()):
            return
        dcpl = ds.id.get_create_plist()
        plugin = next((step.id for step in tgt.old_pipeline.steps if step.id >= _FIRST_PLUGIN_ID), None)
        if dcpl.fill_value_defined() != h5d.FILL_VALUE_USER_DEFINED and plugin is None:
            return
        old = _as_layout_str(tgt.old_layout)
        if old is None or missing_decoder(dcpl):
            return
        tgt.new_layout, tgt.new_pipeline, tgt.changed = old, tgt.old_pipeline, True
        tgt.keep_filters = old.kind == "chunked"
        tgt.method, tgt.reason = "library", (f"variable-length data filtered by a plugin (id {plugin}), which H5Ocopy "
                                             "would crash on" if plugin is not None else
                                             "a variable-length fill value, which H5Ocopy would leave in the source's heap")

    def _method(self, tgt: _Target) -> tuple[str, str]:
        lay = tgt.layout
        if not tgt.shape:
            return "library", "scalar"
        if lay.kind != "chunked":
            return "library", f"{lay.kind} destination"
        if not tgt.fast_dtype:
            return "library", f"datatype {tgt.label}: HDF5 reads and writes it in its file type"
        chunk_bytes = math.prod(lay.chunk_shape) * tgt.itemsize
        if chunk_bytes > self.buffer_bytes:
            return "library", (f"chunk of {format_bytes(chunk_bytes)} is larger than the "
                               f"{format_bytes(self.buffer_bytes)} buffer: element blocks")
        why = _python_encodable(tgt.pipeline)
        if why:
            return "library", why
        if low.unfiltered_edges(self.make_dcpl(self.src[tgt.path], lay, None if tgt.keep_filters else tgt.new_pipeline)):
            return "library", "partial edge chunks stay unfiltered (H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS)"
        return "fast", ""

    def make_dcpl(self, ds, layout: Layout, pipeline: FilterPipeline | None):
        """The source's creation properties with the new layout and filters (None: keep the source's)."""
        return plists.relaid_dcpl(ds.id, layout.kind, layout.chunks, pipeline)

    def probe(self, ds, layout, pipeline):
        f = self.probe_file()
        self._probe_n += 1
        name = f"p{self._probe_n}".encode()
        try:
            dcpl = self.make_dcpl(ds, layout, pipeline)
            tid = ds.id.get_type()
            tid = tid.copy() if tid.committed() else tid
            dsid = h5d.create(f.id, name, tid, ds.id.get_space(), dcpl=dcpl)
            dsid.close()
            del f[name.decode()]
        except CcpError:
            raise
        except Exception as exc:  # HDF5 says why in its message
            filters = "the source's filters" if pipeline is None else f"filters {pipeline.spec}"
            raise CcpError(f"HDF5 cannot create it as {layout.spec} with {filters}: {_h5_message(exc)}") from None

    def estimate(self, ds, tgt: _Target) -> int | None:
        """Sampled estimate of the new storage size (bytes)."""
        lay = tgt.layout
        tid = low.file_type(ds.id.get_type())
        if not tgt.fast_dtype:
            return None
        if lay.kind != "chunked":
            return tgt.raw_bytes
        chunks = lay.chunk_shape
        shape = tgt.dims
        grid = tuple(-(-d // c) for d, c in zip(shape, chunks))
        ngrid = math.prod(grid)
        if ngrid == 0:
            return 0
        picks = sorted({0, ngrid // 2, max(0, ngrid - 2)})
        f = self.probe_file()
        raw = stored = 0
        for p in picks:
            idx = np.unravel_index(p, grid)
            start = tuple(int(i) * c for i, c in zip(idx, chunks))
            sl = tuple(slice(s, min(s + c, d)) for s, c, d in zip(start, chunks, shape))
            data = low.read_slab(ds.id, tid, sl)
            self._probe_n += 1
            name = f"p{self._probe_n}"
            dcpl = self.make_dcpl(ds, lay, None if tgt.keep_filters else tgt.new_pipeline)
            space = h5s.create_simple(chunks, chunks)
            dsid = h5d.create(f.id, name.encode(), tid, space, dcpl=dcpl)
            probe = h5py.Dataset(dsid)
            low.write_slab(dsid, tid, tuple(slice(0, n) for n in data.shape), data)
            f.flush()
            stored += probe.id.get_storage_size()
            raw += math.prod(chunks) * tgt.itemsize
            dsid.close()
            del probe
            del f[name]
        allocated = ngrid
        src_alloc_fraction = 1.0
        if ds.chunks is not None:
            total_src = math.prod(-(-d // c) for d, c in zip(shape, ds.chunks))
            if total_src:
                src_alloc_fraction = min(1.0, ds.id.get_num_chunks() / total_src)
        allocated = math.ceil(ngrid * src_alloc_fraction)
        return int(allocated * math.prod(chunks) * tgt.itemsize * (stored / raw)) if raw else 0


def _h5_message(exc) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text


