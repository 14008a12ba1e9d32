"""Copy an HDF5 file, changing the layout and filters of some datasets: ``ccp repack``.

The whole file is copied: groups (with their creation properties), attributes, soft and
external links, hard links to one object (kept as links), named datatypes, and every
dataset. Datasets that do not change are copied by ``H5Ocopy`` (raw chunks, no filtering).
Datasets that change keep their shape, maximum shape, file datatype (byte order
included), fill value and other creation properties; only the layout and the filter
pipeline are replaced.

Changed datasets are written in hyperslabs of whole destination chunks within a bounded
buffer (:mod:`ccp.repack.plan`, seed 003). Two ways of writing them:

* fast path: source chunks are read raw (``read_direct_chunk``) and decoded in Python, or
  read through the library when their filters have no Python decoder; destination chunks
  are padded to full chunks with the fill value (as HDF5 stores edge chunks), encoded
  by :mod:`ccp.repack.codecs` in a thread pool (zlib, libdeflate and bz2 release the GIL)
  and written raw (``write_direct_chunk``). gzip is encoded by libdeflate when the
  ``deflate`` package is installed (``deflate="auto"``), else by zlib, whose output is
  byte-identical to what HDF5 writes. Destination chunks whose source holds no allocated
  chunk are not written (they read back as the fill value either way).
* library path: hyperslab writes through HDF5, which encodes in one thread. Used when
  a destination filter has no exact Python encoder (szip, nbit, scaleoffset, lzf, blosc,
  lz4, bitshuffle, zstd without the ``zstandard`` package), for contiguous and compact
  destinations, chunks larger than the buffer, scalars, datatypes that are not plain
  numbers or fixed-length strings (compound, variable-length, references...), and
  datasets whose partial edge chunks stay unfiltered (H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS).

Object and region references are rewritten at the end to point at the copied objects.
A repacked dataset that used a named datatype gets an inline copy of that type.

The output is written as ``OUT.ccp-tmp-<pid>`` beside OUT and renamed to OUT only when
complete; on any error or interrupt the temporary file is removed. The input is opened
read-only.
"""

from __future__ import annotations

import concurrent.futures as cf
import math
import os
import time
from collections import deque
from dataclasses import dataclass, field

import h5py
import numpy as np
from h5py import h5, h5d, h5f, h5l, h5o, h5p, h5s, h5t, h5z

from ccp.config.filters import FilterPipeline, parse_filters, pipeline_from_dcpl
from ccp.errors import CcpError, ConfigError
from ccp.repack import codecs
from ccp.repack.options import COMPACT, CONTIGUOUS, Layout, as_layout, normalise_path
from ccp.repack.plan import DEFAULT_BUFFER_BYTES, chunks_in, plan_slabs
from ccp.units import format_bytes, shape_str

_FAST_KINDS = "iufbS"
_MAX_CHUNK_BYTES = 2**32 - 1
_GUESS_CHUNK_BYTES = 1024 * 1024


# ------------------------------------------------------------------ results

@dataclass(frozen=True)
class DatasetResult:
    """What happened to one dataset (or, in a dry run, what would)."""

    path: str
    action: str            # "copied" (unchanged, H5Ocopy) | "repacked"
    method: str            # "copy" | "fast" | "library"
    reason: str            # why the library path / why not changed; "" otherwise
    shape: tuple | None
    dtype: str
    old_layout: str        # "4x30x9x717", "contiguous", "compact", "virtual"
    new_layout: str
    old_filters: str       # ccp spec, "none"
    new_filters: str
    raw_bytes: int         # elements x item size
    old_stored_bytes: int
    new_stored_bytes: int | None = None   # after the repack (None in a dry run)
    estimated_bytes: int | None = None    # dry run: sampled estimate of the new storage
    seconds: float = 0.0
    hyperslabs: int = 0
    notes: tuple[str, ...] = ()
    deflate: str = ""      # gzip encoder on the fast path: "zlib" | "libdeflate"; "hdf5" on the library path

    @property
    def changed(self) -> bool:
        return self.action == "repacked"


@dataclass(frozen=True)
class RepackResult:
    src: str
    dst: str
    seconds: float
    dry_run: bool
    threads: int
    buffer_bytes: int
    in_bytes: int
    out_bytes: int | None
    datasets: tuple[DatasetResult, ...] = field(default_factory=tuple)

    @property
    def repacked(self) -> tuple[DatasetResult, ...]:
        return tuple(d for d in self.datasets if d.changed)

    def dataset(self, path: str) -> DatasetResult:
        path = normalise_path(path)
        for d in self.datasets:
            if d.path == path:
                return d
        raise KeyError(path)


# ------------------------------------------------------------------ helpers

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


def _dtype_label(dt) -> str:
    if dt.fields:
        return "compound"
    if h5py.check_string_dtype(dt) is not None:
        info = h5py.check_string_dtype(dt)
        return f"string({'vlen' if info.length is None else info.length}, {info.encoding})"
    if h5py.check_vlen_dtype(dt) is not None:
        return f"vlen({h5py.check_vlen_dtype(dt).str})"
    return dt.str


def _fast_dtype(ds) -> bool:
    dt = ds.dtype
    if dt.kind not in _FAST_KINDS or dt.hasobject or dt.fields or dt.subdtype:
        return False
    if dt.kind == "S" and h5py.check_string_dtype(dt) is None:
        return False
    try:
        return ds.id.get_type().get_size() == dt.itemsize
    except Exception:  # pragma: no cover - exotic types
        return False


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
    from ccp.repack.options import _parse_filter_body

    return FilterPipeline(_parse_filter_body(str(value), where))


def _link_names(gid) -> list[bytes]:
    order = gid.get_create_plist().get_link_creation_order()
    idx = h5.INDEX_CRT_ORDER if order & h5p.CRT_ORDER_TRACKED else h5.INDEX_NAME
    names: list[bytes] = []
    gid.links.iterate(names.append, idx_type=idx)
    return names


def _join(parent: str, name: bytes) -> str:
    n = name.decode("utf-8", "surrogateescape")
    return "/" + n if parent == "/" else f"{parent}/{n}"


def _lcpl(cset: int):
    lcpl = h5p.create(h5p.LINK_CREATE)
    lcpl.set_char_encoding(cset)
    return lcpl


def _copy_attrs(src_obj, dst_obj) -> None:
    """Copy every attribute, in creation order when the source tracks it."""
    sid = src_obj.id
    try:
        tracked = sid.get_create_plist().get_attr_creation_order() & h5p.CRT_ORDER_TRACKED
    except Exception:
        tracked = 0
    names: list[bytes] = []
    h5py.h5a.iterate(sid, names.append, index_type=h5.INDEX_CRT_ORDER if tracked else h5.INDEX_NAME)
    for name in names:
        _copy_attr(sid, dst_obj, name)


def _has_vlen_or_ref(tid) -> bool:
    cls = tid.get_class()
    if cls in (h5t.VLEN, h5t.REFERENCE):
        return True
    if cls == h5t.STRING:
        return tid.is_variable_str()
    if cls == h5t.COMPOUND:
        return any(_has_vlen_or_ref(tid.get_member_type(i)) for i in range(tid.get_nmembers()))
    if cls == h5t.ARRAY:
        return _has_vlen_or_ref(tid.get_super())
    return False


def _copy_attr(sid, dst_obj, name: bytes) -> None:
    aid = h5py.h5a.open(sid, name)
    tid = aid.get_type()
    if not _has_vlen_or_ref(tid) and name.isascii():
        # raw copy in the file's own type: byte order, string padding and sizes stay as they are
        ftype = tid.copy() if tid.committed() else tid
        space = aid.get_space()
        new = h5py.h5a.create(dst_obj.id, name, ftype, space)
        if space.get_simple_extent_type() != h5s.NULL:
            buf = np.empty(aid.shape, dtype=np.dtype(f"V{tid.get_size()}"))
            aid.read(buf, mtype=ftype)
            new.write(buf, mtype=ftype)
        return
    # variable-length data or a UTF-8 name: let h5py convert (it keeps the string encoding and vlen-ness)
    key = name.decode("utf-8", "surrogateescape")
    src_attrs = h5py.AttributeManager(_Holder(sid))
    dst_obj.attrs.create(key, src_attrs[key], dtype=aid.dtype)


class _Holder:
    """Minimal object with an ``id`` for h5py.AttributeManager."""

    def __init__(self, oid):
        self.id = oid


_HDF5_LIB = None


def _hdf5_library():
    """The libhdf5 that h5py itself loaded (for the few calls h5py does not wrap), or None."""
    global _HDF5_LIB
    if _HDF5_LIB is None:
        import ctypes

        _HDF5_LIB = False
        try:
            with open("/proc/self/maps") as maps:
                paths = {line.split()[-1] for line in maps if "libhdf5" in line and ".so" in line}
            paths = [p for p in paths if not os.path.basename(p).startswith("libhdf5_hl")]
            if len(paths) == 1:
                lib = ctypes.CDLL(paths[0])
                lib.H5Pget_chunk_opts.argtypes = (ctypes.c_int64, ctypes.POINTER(ctypes.c_uint))
                _HDF5_LIB = lib
        except (OSError, AttributeError):  # pragma: no cover - no /proc, or a static build
            _HDF5_LIB = False
    return _HDF5_LIB or None


def _chunk_opts(dcpl) -> int:
    """H5Pget_chunk_opts (h5py does not wrap it); 0 when unknown."""
    if dcpl.get_layout() != h5d.CHUNKED:
        return 0
    lib = _hdf5_library()
    if lib is None:  # pragma: no cover
        return 0
    import ctypes

    opts = ctypes.c_uint(0)
    if lib.H5Pget_chunk_opts(dcpl.id, ctypes.byref(opts)) < 0:  # pragma: no cover
        return 0
    return int(opts.value)


def _set_chunk_opts(dcpl, opts: int) -> None:
    lib = _hdf5_library()
    if lib is not None and opts:
        import ctypes

        lib.H5Pset_chunk_opts(ctypes.c_int64(dcpl.id), ctypes.c_uint(opts))


def _unfiltered_edges(dcpl) -> bool:
    """H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS: partial edge chunks are stored without filters."""
    return bool(dcpl.get_nfilters()) and bool(_chunk_opts(dcpl) & 0x0002)


def _fill_array(ds, dtype) -> np.ndarray:
    """The fill value as a one-element array in the file's representation."""
    fill = np.zeros((), dtype=dtype)
    dcpl = ds.id.get_create_plist()
    if dcpl.fill_value_defined() in (h5d.FILL_VALUE_DEFAULT, h5d.FILL_VALUE_USER_DEFINED):
        try:
            dcpl.get_fill_value(fill)
        except Exception:  # pragma: no cover
            fill = np.zeros((), dtype=dtype)
    return fill


# ------------------------------------------------------------------ per-dataset decisions

@dataclass
class _Target:
    path: str
    key: tuple
    shape: tuple | None
    maxshape: tuple | None
    dtype: np.dtype
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

    def result(self, **kw) -> DatasetResult:
        new_layout = self.new_layout.spec if (self.changed and self.new_layout) else self.old_layout
        new_filters = self.new_pipeline.spec if (self.changed and self.new_pipeline is not None) else self.old_pipeline.spec
        deflate = ""
        if self.changed and self.new_pipeline is not None and any(s.name == "gzip" for s in self.new_pipeline.steps):
            deflate = self.deflate if self.method == "fast" else "hdf5"
        return DatasetResult(
            deflate=deflate, path=self.path, action="repacked" if self.changed else "copied", method=self.method, reason=self.reason,
            shape=self.shape, dtype=_dtype_label(self.dtype), old_layout=self.old_layout, new_layout=new_layout,
            old_filters=self.old_pipeline.spec, new_filters=new_filters, raw_bytes=self.raw_bytes,
            old_stored_bytes=self.stored_bytes, notes=tuple(self.notes), **kw)


def _python_encodable(pipeline: FilterPipeline) -> str:
    """'' when every step has an exact Python encoder, else the reason."""
    for step in pipeline.steps:
        if step.name in ("gzip", "shuffle", "fletcher32", "bzip2"):
            continue
        if step.name == "zstd" and codecs._zstd_module() is not None:
            continue
        if step.name == "zstd":
            return "zstd needs the zstandard package for a Python encoder"
        return f"{step.name} has no Python encoder"
    return ""


class _Planner:
    """Turns the options into a decision per dataset (pure with respect to the output file)."""

    def __init__(self, src: h5py.File, layouts, filters, buffer_bytes: int, deflate: str = "zlib"):
        self.src = src
        self.deflate = deflate
        self.buffer_bytes = buffer_bytes
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
        except Exception:
            obj = None
        if obj is None:
            raise ConfigError(f"{opt} {name}", f"no dataset {path} in {self.src.filename}")
        if not isinstance(obj, h5py.Dataset):
            raise ConfigError(f"{opt} {name}", f"{path} is a {type(obj).__name__.lower()}, not a dataset")
        info = h5o.get_info(obj.id)
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

    def decide(self, path: str, key: tuple, ds: h5py.Dataset) -> _Target:
        dcpl = ds.id.get_create_plist()
        shape = ds.shape
        itemsize = ds.dtype.itemsize
        tgt = _Target(path=path, key=key, shape=shape, maxshape=ds.maxshape if shape is not None else None,
                      dtype=ds.dtype, itemsize=itemsize, old_layout=_layout_of(dcpl, ds),
                      old_pipeline=pipeline_from_dcpl(dcpl),
                      raw_bytes=(math.prod(shape) * itemsize) if shape is not None else 0,
                      stored_bytes=ds.id.get_storage_size(), fast_dtype=_fast_dtype(ds))
        lay_req, l_explicit = self.layouts.get(key, (self.global_layout, None))
        pipe_req, f_explicit = self.filters.get(key, (self.global_filters, None))
        if lay_req is None and pipe_req is None:
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
        if new_layout is not None and new_layout.kind == "chunked":
            chunks = new_layout.chunks
            if len(chunks) != len(shape):
                if l_explicit:
                    raise ConfigError(f"-l {l_explicit}", f"chunk {shape_str(chunks)} has rank {len(chunks)}, "
                                      f"the dataset has rank {len(shape)} (shape {shape_str(shape)})")
                tgt.notes.append(f"layout kept: chunk {shape_str(chunks)} has rank {len(chunks)}, dataset rank {len(shape)}")
                new_layout = old
                if new_layout is not None and new_layout.kind != "chunked" and not new_pipe.is_none:
                    new_layout = Layout("chunked", _guess_chunks(shape, tgt.maxshape, itemsize))
            else:
                too_big = [i for i, (c, m) in enumerate(zip(chunks, tgt.maxshape)) if m is not None and c > m]
                if too_big:
                    if l_explicit:
                        i = too_big[0]
                        raise ConfigError(f"-l {l_explicit}", f"chunk dimension {i} is {chunks[i]}, larger than "
                                          f"the fixed maximum size {tgt.maxshape[i]} (maxshape "
                                          f"{'x'.join('inf' if m is None else str(m) for m in tgt.maxshape)})")
                    clipped = tuple(min(c, m) if m is not None else c for c, m in zip(chunks, tgt.maxshape))
                    if any(c == 0 for c in clipped):
                        tgt.notes.append("layout kept: a fixed dimension of size 0 cannot be chunked")
                        return tgt
                    tgt.notes.append(f"chunk {shape_str(chunks)} clipped to {shape_str(clipped)} (fixed maxshape)")
                    new_layout = Layout("chunked", clipped)
        if new_layout is not None and new_layout.kind == "chunked":
            if math.prod(new_layout.chunks) * itemsize > _MAX_CHUNK_BYTES:
                raise ConfigError(f"-l {l_explicit or ''}".strip(), f"{path}: chunk {shape_str(new_layout.chunks)} is "
                                  f"{format_bytes(math.prod(new_layout.chunks) * itemsize)}; HDF5 chunks must be < 4 GiB")
        elif new_layout is not None:  # contiguous / compact
            if tuple(tgt.maxshape) != tuple(shape):
                ms = "x".join("inf" if m is None else str(m) for m in tgt.maxshape)
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
        if (old is None or old.kind != "chunked") and lay_req is None and new_layout.kind == "chunked":
            tgt.notes.append(f"chunked {shape_str(new_layout.chunks)} to take filters {new_pipe.spec}")
        if new_layout == old and new_pipe.spec == tgt.old_pipeline.spec:
            tgt.notes.append("already in the requested layout and filters")
            return tgt
        tgt.keep_filters = new_pipe is tgt.old_pipeline and new_layout.kind == "chunked"
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

    def _method(self, tgt: _Target) -> tuple[str, str]:
        lay = tgt.new_layout
        if not tgt.shape:
            return "library", "scalar"
        if lay.kind != "chunked":
            return "library", f"{lay.kind} destination"
        if not tgt.fast_dtype:
            return "library", f"datatype {_dtype_label(tgt.dtype)}"
        chunk_bytes = math.prod(lay.chunks) * tgt.itemsize
        if chunk_bytes > self.buffer_bytes:
            return "library", (f"chunk of {format_bytes(chunk_bytes)} is larger than the "
                               f"{format_bytes(self.buffer_bytes)} buffer: element blocks")
        why = _python_encodable(tgt.new_pipeline)
        if why:
            return "library", why
        if _unfiltered_edges(self.make_dcpl(self.src[tgt.path], lay, None if tgt.keep_filters else tgt.new_pipeline)):
            return "library", "partial edge chunks stay unfiltered (H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS)"
        return "fast", ""

    def make_dcpl(self, ds, layout: Layout, pipeline: FilterPipeline | None):
        """The source's creation properties with the new layout and filters (None: keep the source's)."""
        src = ds.id.get_create_plist()
        fresh = src.get_layout() == h5d.VIRTUAL or src.get_external_count() > 0
        dcpl = src if not fresh else _fresh_dcpl(src, ds.dtype)
        opts = _chunk_opts(src)  # H5Pset_chunk forgets them; keep them
        if layout.kind == "chunked" and pipeline is None and not fresh:
            dcpl.set_chunk(layout.chunks)
            _set_chunk_opts(dcpl, opts)
            return dcpl
        if dcpl.get_nfilters():
            dcpl.remove_filter(0)  # H5Z_FILTER_ALL
        if layout.kind == "chunked":
            dcpl.set_chunk(layout.chunks)
            _set_chunk_opts(dcpl, opts)
            pipeline.apply(dcpl, ds.dtype)
            _plugins_optional(dcpl)
        else:
            dcpl.set_layout(h5d.CONTIGUOUS if layout.kind == "contiguous" else h5d.COMPACT)
        return dcpl

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
        except Exception as exc:
            raise CcpError(f"HDF5 cannot create it as {layout.spec} with filters {pipeline.spec}: {_h5_message(exc)}") from None

    def estimate(self, ds, tgt: _Target) -> int | None:
        """Sampled estimate of the new storage size (bytes)."""
        lay = tgt.new_layout
        if not tgt.fast_dtype and tgt.dtype.hasobject:
            return None
        if lay.kind != "chunked":
            return tgt.raw_bytes
        chunks = lay.chunks
        shape = tgt.shape
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
            data = ds[sl]
            self._probe_n += 1
            name = f"p{self._probe_n}"
            dcpl = self.make_dcpl(ds, lay, None if tgt.keep_filters else tgt.new_pipeline)
            tid = ds.id.get_type()
            tid = tid.copy() if tid.committed() else tid
            space = h5s.create_simple(chunks, chunks)
            dsid = h5d.create(f.id, name.encode(), tid, space, dcpl=dcpl)
            probe = h5py.Dataset(dsid)
            probe[tuple(slice(0, n) for n in data.shape)] = data
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


def _plugins_optional(dcpl) -> None:
    """Plugin filters as h5py and hdf5plugin add them: optional, so a chunk that a compressor
    cannot shrink (blosc, lz4 ... return failure) is stored unfiltered instead of failing the write."""
    filters = [dcpl.get_filter(i) for i in range(dcpl.get_nfilters())]
    if not any(code >= 256 and not flags & h5z.FLAG_OPTIONAL for code, flags, _v, _n in filters):
        return
    dcpl.remove_filter(0)
    for code, flags, values, _name in filters:
        if code >= 256:
            flags |= h5z.FLAG_OPTIONAL
        dcpl.set_filter(code, flags, tuple(values))


def _h5_message(exc) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text


def _fresh_dcpl(src, dtype):
    dcpl = h5p.create(h5p.DATASET_CREATE)
    try:
        if src.fill_value_defined() == h5d.FILL_VALUE_USER_DEFINED:
            fill = np.zeros((), dtype=dtype)
            src.get_fill_value(fill)
            dcpl.set_fill_value(fill)
        dcpl.set_fill_time(src.get_fill_time())
        dcpl.set_obj_track_times(src.get_obj_track_times())
        dcpl.set_attr_creation_order(src.get_attr_creation_order())
    except Exception:  # pragma: no cover - best effort for exotic plists
        pass
    return dcpl


# ------------------------------------------------------------------ reading the source

class _SourceReader:
    """Hyperslabs of the source dataset in its file representation (byte order kept)."""

    def __init__(self, ds, pool, cache_budget: int):
        self.ds = ds
        self.pool = pool
        self.dtype = ds.dtype
        self.itemsize = ds.dtype.itemsize
        self.shape = ds.shape
        self.fill = _fill_array(ds, ds.dtype)
        self.chunks = ds.chunks
        self.decode = None
        self.why_library = ""
        self.cache: dict = {}
        self.cache_bytes = 0
        self.cache_budget = cache_budget
        dcpl = ds.id.get_create_plist()
        if self.chunks is None or dcpl.get_layout() != h5d.CHUNKED:
            self.why_library = f"{_layout_of(dcpl, ds)} source"
            return
        if _unfiltered_edges(dcpl):
            self.why_library = "its partial edge chunks are stored unfiltered"
            return
        self.decode, self.why_library = codecs.decoder(codecs.filters_of(dcpl), self.itemsize,
                                                       math.prod(self.chunks) * self.itemsize)
        if self.decode is None:
            return
        self.allocated: set = set()
        if ds.id.get_storage_size() and ds.id.get_num_chunks():
            def add(info):
                self.allocated.add(tuple(info.chunk_offset))
            ds.id.chunk_iter(add)
        self.total_chunks = math.prod(-(-d // c) for d, c in zip(self.shape, self.chunks))
        self.sparse = len(self.allocated) < self.total_chunks

    @property
    def python_decoded(self) -> bool:
        return self.decode is not None

    def read_library(self, slab) -> np.ndarray:
        arr = np.empty(slab.count, dtype=self.dtype)
        if arr.size:
            self.ds.read_direct(arr, source_sel=slab.slices)
        return arr

    def region_allocated(self, start, count) -> bool:
        """Whether any source chunk under this region is allocated (python-decoded sources)."""
        if not self.sparse:
            return True
        ranges = [range((s // c) * c, s + n, c) for s, n, c in zip(start, count, self.chunks)]
        import itertools

        return any(off in self.allocated for off in itertools.product(*ranges))

    def _decode_chunk(self, raw, mask):
        data = self.decode(raw, mask)
        need = math.prod(self.chunks) * self.itemsize
        if len(data) != need:
            raise CcpError(f"{self.ds.name}: a decoded chunk has {len(data)} bytes, expected {need}")
        return np.frombuffer(data, dtype=self.dtype).reshape(self.chunks)

    def _decode_place(self, raw, mask, arr, dst_sl, src_sl, keep: bool):
        chunk = self._decode_chunk(raw, mask)
        arr[dst_sl] = chunk[src_sl]
        return chunk if keep else None

    def read(self, slab, slab_index: int, plan) -> np.ndarray:
        """The slab's data; source chunks read raw here and decoded in the pool, a few at a time.

        Source chunks that later hyperslabs need too are kept decoded (within ``cache_budget``).
        """
        if self.decode is None:
            return self.read_library(slab)
        arr = np.empty(slab.count, dtype=self.dtype)
        dsid = self.ds.id
        chunk_bytes = math.prod(self.chunks) * self.itemsize
        inflight: deque = deque()
        limit = 2 * self.pool._max_workers + 2

        def finish(item):
            off, fut, last = item
            chunk = fut.result()
            if chunk is not None:
                self.cache[off] = (chunk, last)

        for off in chunks_in(slab, self.chunks):
            lo = tuple(max(o, s) for o, s in zip(off, slab.start))
            hi = tuple(min(o + c, s + n, d) for o, c, s, n, d in zip(off, self.chunks, slab.start, slab.count, self.shape))
            dst_sl = tuple(slice(a - s, b - s) for a, b, s in zip(lo, hi, slab.start))
            src_sl = tuple(slice(a - o, b - o) for a, b, o in zip(lo, hi, off))
            cached = self.cache.get(off)
            if cached is not None:
                arr[dst_sl] = cached[0][src_sl]
            elif off not in self.allocated:
                arr[dst_sl] = self.fill
            else:
                while len(inflight) >= limit:
                    finish(inflight.popleft())
                last = self._last_slab(off, plan)
                keep = last > slab_index and self.cache_bytes + chunk_bytes <= self.cache_budget
                if keep:
                    self.cache_bytes += chunk_bytes
                mask, raw = dsid.read_direct_chunk(off)
                inflight.append((off, self.pool.submit(self._decode_place, raw, mask, arr, dst_sl, src_sl, keep), last))
                del raw
        while inflight:
            finish(inflight.popleft())
        for off in [o for o, (_, last) in self.cache.items() if last <= slab_index]:
            del self.cache[off]
            self.cache_bytes -= chunk_bytes
        return arr

    def _last_slab(self, off, plan) -> int:
        end = tuple(min(o + c, d) - 1 for o, c, d in zip(off, self.chunks, self.shape))
        return plan.slab_index(end)


# ------------------------------------------------------------------ writing one dataset

def _encode_chunk(arr, sl, chunk_shape, fill, encode):
    part = arr[sl]
    if part.shape != chunk_shape:
        buf = np.empty(chunk_shape, dtype=arr.dtype)
        buf[...] = fill
        buf[tuple(slice(0, n) for n in part.shape)] = part
    else:
        buf = np.ascontiguousarray(part)
    return encode(buf.reshape(-1).view(np.uint8))


def _recode_chunk(reader, raw, mask, encode):
    data = reader.decode(raw, mask)
    return encode(data)


class _Writer:
    """Runs the fast or library path for one changed dataset."""

    def __init__(self, src_ds, dst_group, name: bytes, lcpl, tgt: _Target, planner: _Planner, pool,
                 buffer_bytes: int, progress):
        self.src = src_ds
        self.tgt = tgt
        self.pool = pool
        self.buffer = buffer_bytes
        self.progress = progress
        self.threads = pool._max_workers
        dcpl = planner.make_dcpl(src_ds, tgt.new_layout, None if tgt.keep_filters else tgt.new_pipeline)
        tid = src_ds.id.get_type()
        if tid.committed():
            tid = tid.copy()
            tgt.notes.append("its named datatype is now stored in the dataset (same type, no longer shared)")
        try:
            dsid = h5d.create(dst_group.id, name, tid, src_ds.id.get_space(), dcpl=dcpl, lcpl=lcpl)
        except Exception as exc:
            raise CcpError(f"{tgt.path}: HDF5 cannot create it as {tgt.new_layout.spec} with filters "
                           f"{tgt.new_pipeline.spec}: {_h5_message(exc)}") from None
        self.dsid = dsid
        self.dst = h5py.Dataset(dsid)
        self.slabs = 0

    def advance(self, nbytes):
        if self.progress is not None and nbytes:
            self.progress("advance", int(nbytes))

    def run(self) -> None:
        tgt = self.tgt
        if tgt.shape == ():
            self.dst[()] = self.src[()]
            self.slabs = 1
            self.advance(tgt.raw_bytes)
            return
        if tgt.raw_bytes == 0 and tgt.shape and 0 in tgt.shape:
            return
        if tgt.method == "fast":
            self.run_fast()
        else:
            self.run_library()

    # -------------------------------------------------- library path
    def run_library(self):
        tgt = self.tgt
        chunks = tgt.new_layout.chunks if tgt.new_layout.kind == "chunked" else None
        plan = plan_slabs(tgt.shape, chunks, max(1, tgt.itemsize), self.buffer)
        if chunks is not None:
            # keep a whole destination chunk in the chunk cache while element blocks fill it
            chunk_bytes = math.prod(chunks) * tgt.itemsize
            dapl = h5p.create(h5p.DATASET_ACCESS)
            dapl.set_chunk_cache(1009, max(chunk_bytes + 1024 * 1024, 2 * 1024 * 1024), 1.0)
            parent = self.dst.parent
            name = self.dst.name.rsplit("/", 1)[-1].encode("utf-8", "surrogateescape")
            self.dsid.close()
            self.dsid = h5d.open(parent.id, name, dapl=dapl)
            self.dst = h5py.Dataset(self.dsid)
        reader = _SourceReader(self.src, self.pool, self.buffer // 2) if tgt.fast_dtype else None
        src_plan = plan if plan.mode != "elements-in-chunk" else None
        for i, slab in enumerate(plan):
            if reader is not None and reader.python_decoded and src_plan is not None:
                arr = reader.read(slab, i, src_plan)
            elif reader is not None:
                arr = reader.read_library(slab)
            else:
                arr = self.src[slab.slices]
            if reader is not None:
                self.dst.write_direct(arr, dest_sel=slab.slices)
            else:
                self.dst[slab.slices] = arr
            self.slabs += 1
            self.advance(slab.size * tgt.itemsize)

    # -------------------------------------------------- fast path
    def run_fast(self):
        tgt = self.tgt
        chunks = tgt.new_layout.chunks
        encode, why = codecs.encoder(codecs.filters_of(self.dsid.get_create_plist()), tgt.itemsize, tgt.deflate)
        if encode is None:  # pragma: no cover - _method checked the pipeline already
            tgt.method, tgt.reason = "library", why
            return self.run_library()
        reader = _SourceReader(self.src, self.pool, self.buffer // 2)
        if reader.python_decoded and tuple(self.src.chunks) == tuple(chunks):
            return self.run_recode(reader, encode)
        if not reader.python_decoded:
            tgt.notes.append(f"source read through the library ({reader.why_library})")
        plan = plan_slabs(tgt.shape, chunks, tgt.itemsize, self.buffer)
        fill = reader.fill
        # a few encoded chunks per thread in flight: enough to keep every thread busy, little memory
        max_pending = 2 * self.threads + 2
        pending: deque = deque()
        dsid = self.dsid

        def write_ready(block_until: int):
            while pending and (len(pending) > block_until or pending[0][1].done()):
                off, fut, nbytes = pending.popleft()
                dsid.write_direct_chunk(off, fut.result(), 0)
                self.advance(nbytes)

        try:
            for i, slab in enumerate(plan):
                if reader.python_decoded and reader.sparse and not reader.region_allocated(slab.start, slab.count):
                    self.advance(slab.size * tgt.itemsize)
                    self.slabs += 1
                    continue
                if reader.python_decoded:
                    arr = reader.read(slab, i, plan)
                else:
                    arr = reader.read_library(slab)
                self.slabs += 1
                for off in chunks_in(slab, chunks):
                    count = tuple(min(c, d - o) for c, d, o in zip(chunks, tgt.shape, off))
                    nbytes = math.prod(count) * tgt.itemsize
                    if reader.python_decoded and reader.sparse and not reader.region_allocated(off, count):
                        self.advance(nbytes)
                        continue
                    sl = tuple(slice(o - s, o - s + n) for o, s, n in zip(off, slab.start, count))
                    fut = self.pool.submit(_encode_chunk, arr, sl, chunks, fill, encode)
                    pending.append((off, fut, nbytes))
                    write_ready(max_pending)
                # finish this hyperslab before reading the next: one hyperslab in memory at a time
                write_ready(0)
                del arr
        finally:
            for _, fut, _ in pending:
                fut.cancel()

    def run_recode(self, reader, encode):
        """Same chunk grid, new filters: each allocated chunk is decoded and re-encoded alone."""
        tgt = self.tgt
        chunks = tgt.new_layout.chunks
        # a few encoded chunks per thread in flight: enough to keep every thread busy, little memory
        max_pending = 2 * self.threads + 2
        pending: deque = deque()
        src_id, dsid = self.src.id, self.dsid
        offsets = sorted(o for o in reader.allocated if all(x < d for x, d in zip(o, tgt.shape)))
        skipped = tgt.raw_bytes
        try:
            for off in offsets:
                count = tuple(min(c, d - o) for c, d, o in zip(chunks, tgt.shape, off))
                mask, raw = src_id.read_direct_chunk(off)
                pending.append((off, self.pool.submit(_recode_chunk, reader, raw, mask, encode),
                                math.prod(count) * tgt.itemsize))
                while pending and (len(pending) > max_pending or pending[0][1].done()):
                    o, fut, nbytes = pending.popleft()
                    dsid.write_direct_chunk(o, fut.result(), 0)
                    self.advance(nbytes)
                    skipped -= nbytes
            while pending:
                o, fut, nbytes = pending.popleft()
                dsid.write_direct_chunk(o, fut.result(), 0)
                self.advance(nbytes)
                skipped -= nbytes
            self.slabs = len(offsets)
            self.advance(skipped)
        finally:
            for _, fut, _ in pending:
                fut.cancel()


# ------------------------------------------------------------------ the whole file

def _check_paths(src, dst, dry_run: bool) -> tuple[str, str]:
    src = os.fspath(src)
    dst = os.fspath(dst)
    if not os.path.exists(src):
        raise CcpError(f"input file {src} does not exist")
    if os.path.isdir(src):
        raise CcpError(f"input {src} is a folder, not an HDF5 file")
    if not h5py.is_hdf5(src):
        raise CcpError(f"input file {src} is not an HDF5 file")
    if os.path.abspath(src) == os.path.abspath(dst) or (os.path.exists(dst) and os.path.samefile(src, dst)):
        raise ConfigError("OUT", f"output {dst} is the input file; write to another file")
    if os.path.isdir(dst):
        raise ConfigError("OUT", f"output {dst} is a folder")
    parent = os.path.dirname(os.path.abspath(dst))
    if not dry_run and not os.path.isdir(parent):
        raise ConfigError("OUT", f"folder {parent} does not exist")
    return src, dst


class _Repacker:
    def __init__(self, src: h5py.File, dst: h5py.File | None, planner: _Planner, pool, buffer_bytes, progress,
                 only: set | None = None):
        self.src = src
        self.dst = dst
        self.planner = planner
        self.pool = pool
        self.buffer = buffer_bytes
        self.progress = progress
        self.only = only
        self.copied: dict = {}      # object key -> destination path
        self.targets: dict = {}     # object key -> _Target
        self.results: list = []
        self.multi_linked = False

    def survey(self):
        """Every dataset once (first path), decisions, and whether any object has several links."""
        found = []

        def visit(name, info):
            if info.rc > 1:
                self.multi_linked = True
            if info.type == h5o.TYPE_DATASET:
                found.append(("/" + name.decode("utf-8", "surrogateescape"), (info.fileno, info.addr)))

        h5o.visit(self.src.id, visit, info=True)
        for path, key in found:
            if self.only is not None and key not in self.only:
                continue
            ds = self.src[path]
            tgt = self.planner.decide(path, key, ds)
            self.targets[key] = tgt
        return self.targets

    def total_bytes(self) -> int:
        return sum(t.raw_bytes for t in self.targets.values())

    def run(self):
        root_src = self.src["/"]
        root_dst = self.dst["/"]
        _copy_attrs(root_src, root_dst)
        self.changed_prefixes = {p for t in self.targets.values() if t.changed for p in _ancestors(t.path)}
        self._copy_group(root_src, root_dst, "/")
        _fix_references(self.src, self.dst)

    def _copy_group(self, sgrp, dgrp, path):
        for name in _link_names(sgrp.id):
            child = _join(path, name)
            info = sgrp.id.links.get_info(name)
            if self.only is not None and not self._wanted(child):
                continue
            if info.type == h5l.TYPE_SOFT:
                dgrp.id.links.create_soft(name, sgrp.id.links.get_val(name), lcpl=_lcpl(info.cset))
                continue
            if info.type == h5l.TYPE_EXTERNAL:
                link = sgrp.get(name.decode("utf-8", "surrogateescape"), getlink=True)
                dgrp[name.decode("utf-8", "surrogateescape")] = h5py.ExternalLink(link.filename, link.path)
                continue
            if info.type != h5l.TYPE_HARD:  # pragma: no cover - user-defined links
                continue
            oid = h5o.open(sgrp.id, name)
            oinfo = h5o.get_info(oid)
            key = (oinfo.fileno, oinfo.addr)
            if key in self.copied:
                dgrp.id.links.create_hard(name, self.dst["/"].id, self.copied[key].encode("utf-8", "surrogateescape"),
                                          lcpl=_lcpl(info.cset))
                continue
            self.copied[key] = child
            if oinfo.type == h5o.TYPE_GROUP:
                if self.only is None and not self.multi_linked and child not in self.changed_prefixes:
                    h5o.copy(sgrp.id, name, dgrp.id, name, lcpl=_lcpl(info.cset))
                    self._advance_copied(child)
                    continue
                gcpl = oid.get_create_plist()
                gid = h5py.h5g.create(dgrp.id, name, lcpl=_lcpl(info.cset), gcpl=gcpl)
                sub_src = h5py.Group(oid)
                sub_dst = h5py.Group(gid)
                if self.only is None:
                    _copy_attrs(sub_src, sub_dst)
                self._copy_group(sub_src, sub_dst, child)
            elif oinfo.type == h5o.TYPE_DATASET:
                tgt = self.targets.get(key)
                if tgt is None or not tgt.changed:
                    t0 = time.perf_counter()
                    h5o.copy(sgrp.id, name, dgrp.id, name, lcpl=_lcpl(info.cset))
                    if tgt is not None:
                        if self.progress is not None:
                            self.progress("advance", tgt.raw_bytes)
                        new = h5py.Dataset(h5o.open(dgrp.id, name))
                        self.results.append(tgt.result(new_stored_bytes=new.id.get_storage_size(),
                                                       seconds=time.perf_counter() - t0))
                    continue
                self._repack_dataset(h5py.Dataset(oid), dgrp, name, info.cset, tgt)
            else:
                h5o.copy(sgrp.id, name, dgrp.id, name, lcpl=_lcpl(info.cset))

    def _wanted(self, path: str) -> bool:
        return any(t.path == path or t.path.startswith(path + "/") for t in self.targets.values())

    def _advance_copied(self, group_path: str):
        prefix = group_path + "/"
        for tgt in self.targets.values():
            if tgt.path.startswith(prefix):
                if self.progress is not None:
                    self.progress("advance", tgt.raw_bytes)
                self.results.append(tgt.result(new_stored_bytes=tgt.stored_bytes))

    def _repack_dataset(self, src_ds, dgrp, name, cset, tgt: _Target):
        t0 = time.perf_counter()
        if self.progress is not None:
            self.progress("dataset", describe(tgt, self.pool._max_workers))
        writer = _Writer(src_ds, dgrp, name, _lcpl(cset), tgt, self.planner, self.pool, self.buffer, self.progress)
        writer.run()
        _copy_attrs(src_ds, writer.dst)
        stored = writer.dst.id.get_storage_size()
        self.results.append(tgt.result(new_stored_bytes=stored, seconds=time.perf_counter() - t0,
                                       hyperslabs=writer.slabs))


def _map_refs(values, src: h5py.File, dst: h5py.File):
    """Object and region references of the source, made again for the same objects in the output."""
    from h5py import h5r

    flat = np.asarray(values, dtype=object).reshape(-1)
    out = np.empty(flat.shape, dtype=object)
    for i, ref in enumerate(flat):
        new = None
        if ref:
            try:
                target = src[ref]
                path = target.name
                if path is not None and path in dst:
                    if isinstance(ref, h5py.RegionReference):
                        space = h5r.get_region(ref, target.id)
                        new = h5r.create(dst[path].id, b".", h5r.DATASET_REGION, space)
                    else:
                        new = dst[path].ref
            except (KeyError, ValueError, RuntimeError):
                new = None
        if new is None:
            new = h5py.RegionReference() if isinstance(ref, h5py.RegionReference) else h5py.Reference()
        out[i] = new
    return out.reshape(np.shape(values))


def _fix_references(src: h5py.File, dst: h5py.File) -> int:
    """References point at objects by address; copies live at other addresses. Rewrite every
    reference dataset and attribute (top-level reference types) of the output. Returns how many."""
    todo = []

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset) and obj.shape and h5py.check_ref_dtype(obj.dtype) is not None:
            todo.append((name, None))
        for key in obj.attrs:
            aid = obj.attrs.get_id(key)
            if aid.shape is not None and h5py.check_ref_dtype(aid.dtype) is not None:
                todo.append((name, key))

    visit("/", src["/"])
    src.visititems(visit)
    fixed = 0
    for name, attr in todo:
        if name not in dst:
            continue
        sobj, dobj = src[name], dst[name]
        if attr is None:
            if not isinstance(dobj, h5py.Dataset) or dobj.shape != sobj.shape:
                continue
            dobj[...] = _map_refs(sobj[()], src, dst)
        elif attr in dobj.attrs:
            dtype = sobj.attrs.get_id(attr).dtype
            dobj.attrs.create(attr, _map_refs(sobj.attrs[attr], src, dst), dtype=dtype)
        fixed += 1
    return fixed


def _ancestors(path: str):
    parts = path.strip("/").split("/")
    for i in range(1, len(parts)):
        yield "/" + "/".join(parts[:i])


def describe(tgt: _Target, threads: int) -> str:
    """One line: what changes in a dataset and which path writes it."""
    change = f"{tgt.old_layout} {tgt.old_pipeline.spec} -> {tgt.new_layout.spec} {tgt.new_pipeline.spec}"
    if tgt.method == "fast":
        how = f"fast path, {threads} thread{'s' if threads != 1 else ''}"
        if any(s.name == "gzip" for s in tgt.new_pipeline.steps):
            how += f", deflate by {tgt.deflate}"
    else:
        how = f"library path: {tgt.reason}"
    return f"{tgt.path}: {change} ({how})"


def _temp_path(dst: str) -> str:
    return f"{dst}.ccp-tmp-{os.getpid()}"


def _create_output(tmp: str, src: h5py.File) -> h5py.File:
    try:
        fcpl = src.id.get_create_plist()
        root = src["/"].id.get_create_plist()  # the file's plist does not report the root group's orders
        fcpl.set_link_creation_order(root.get_link_creation_order())
        fcpl.set_attr_creation_order(root.get_attr_creation_order())
        fid = h5f.create(tmp.encode(), h5f.ACC_TRUNC, fcpl=fcpl)
    except Exception:
        fid = h5f.create(tmp.encode(), h5f.ACC_TRUNC)
    return h5py.File(fid)


def _copy_userblock(src: str, tmp: str, size: int) -> None:
    if size <= 0:
        return
    with open(src, "rb") as fin, open(tmp, "r+b") as fout:
        fout.write(fin.read(size))


def repack(src, dst, layouts=None, filters=None, *, buffer_bytes: int = DEFAULT_BUFFER_BYTES,
           threads: int | None = None, progress=None, dry_run: bool = False, only=None,
           deflate: str = "auto") -> RepackResult:
    """Copy ``src`` to ``dst`` with new layouts / filters for some datasets.

    ``layouts``: ``{dataset path or None (every dataset): Layout | chunk tuple | "CONTI" | None}``.
    ``filters``: ``{dataset path or None: FilterPipeline | spec string ("gzip:6", "GZIP=6", "none")}``.
    ``progress(event, value)`` is called with ``("start", total_bytes)``, ``("dataset", line)``
    for each dataset that changes, and ``("advance", nbytes)``.
    ``only``: dataset paths to copy (with their attributes); the rest of the file is left out.
    ``deflate``: gzip encoder of the fast path: "zlib" (the bytes HDF5 itself writes), "libdeflate"
    (the ``deflate`` package: ~3x faster, equally valid streams) or "auto" (libdeflate if installed).
    """
    t0 = time.perf_counter()
    src, dst = _check_paths(src, dst, dry_run)
    threads = max(1, int(threads or os.cpu_count() or 1))
    engine = codecs.resolve_deflate_engine(deflate)
    buffer_bytes = max(1, int(buffer_bytes))
    try:
        fin = h5py.File(src, "r")
    except Exception as exc:
        raise CcpError(f"cannot open {src}: {_h5_message(exc)}") from None
    planner = None
    tmp = _temp_path(dst)
    fout = None
    done = False
    try:
        planner = _Planner(fin, layouts, filters, buffer_bytes, engine)
        only_keys = None
        if only is not None:
            only_keys = {planner._key_of(p, "dataset") for p in only}
        with cf.ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ccp-repack") as pool:
            rp = _Repacker(fin, None, planner, pool, buffer_bytes, progress, only_keys)
            rp.survey()
            in_bytes = os.path.getsize(src)
            if dry_run:
                results = []
                for tgt in rp.targets.values():
                    est = planner.estimate(fin[tgt.path], tgt) if tgt.changed else None
                    results.append(tgt.result(estimated_bytes=est))
                return RepackResult(src, dst, time.perf_counter() - t0, True, threads, buffer_bytes,
                                    in_bytes, None, tuple(sorted(results, key=lambda r: r.path)))
            if progress is not None:
                progress("start", rp.total_bytes())
            fout = _create_output(tmp, fin)
            rp.dst = fout
            try:
                rp.run()
            except BaseException:
                pool.shutdown(wait=True, cancel_futures=True)
                raise
        userblock = fin.id.get_create_plist().get_userblock()
        fout.close()
        fout = None
        _copy_userblock(src, tmp, userblock)
        os.replace(tmp, dst)
        done = True
        results = {r.path: r for r in rp.results}
        # datasets reached only through a link to an already copied object
        for tgt in rp.targets.values():
            results.setdefault(tgt.path, tgt.result(new_stored_bytes=None))
        return RepackResult(src, dst, time.perf_counter() - t0, False, threads, buffer_bytes, in_bytes,
                            os.path.getsize(dst), tuple(sorted(results.values(), key=lambda r: r.path)))
    finally:
        if fout is not None:
            try:
                fout.close()
            except Exception:  # pragma: no cover
                pass
        if planner is not None:
            planner.close()
        fin.close()
        if not done and os.path.exists(tmp):
            os.unlink(tmp)


def repack_dataset(src_path, dset_path: str, dst_path, chunks: tuple | None, filters: str | None,
                   deflate: str = "auto") -> float:
    """Write ``dst_path`` holding only ``dset_path`` (same path, with its attributes) laid out as
    ``chunks`` (None: contiguous) with ``filters`` (a ccp spec such as ``"shuffle+gzip:6"``;
    ``"none"``: no filters). Returns the seconds taken. For the sweep engine."""
    path = normalise_path(dset_path)
    layout = CONTIGUOUS if chunks is None else as_layout(tuple(int(c) for c in chunks), "chunks")
    pipeline = parse_filters(filters, "filters") if filters is not None else None
    flt = {path: pipeline} if pipeline is not None else {}
    t0 = time.perf_counter()
    res = repack(src_path, dst_path, {path: layout}, flt, only=[path], deflate=deflate)
    # an unchanged dataset is still copied (H5Ocopy): the file holds it either way
    return res.seconds if res.seconds else time.perf_counter() - t0


__all__ = ["DatasetResult", "RepackResult", "repack", "repack_dataset", "describe"]
