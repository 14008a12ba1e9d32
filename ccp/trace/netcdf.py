"""The recorder's netCDF4-python patches (stdlib at import: loaded into traced programs).

netCDF4-python reaches HDF5 through netCDF-C and its own copy of libhdf5, so h5py's patches never see
its reads. Its calls are recorded one level up, in the recorder's format (``ccp.trace.recorder``):

* ``Variable.__getitem__`` / ``__setitem__``: the program's call (``depth == 0``), op read / write. A call
  that raised (an index out of bounds) is a ``call_failed`` event instead, its ``reason`` naming it: it
  moved no data, and the model, the boxes and the cures leave it out.
* ``Variable._get`` / ``_put``: what netCDF4-python asked netCDF-C for (one ``nc_get_vars`` /
  ``nc_put_vars`` each: start, count, stride), ``depth == 1``: the selection rows ``ccp diagnose``
  replays. A list or mask index becomes several of them (netCDF4-python loops), a negative stride
  is written as the same elements read forwards.
* A variable is named by its HDF5 path in the file (group path + name; netCDF-C's
  ``_nc4_non_coord_`` prefix for a variable named like a dimension it is not the coordinate of),
  and its layout comes from ``chunking()``, ``filters()``, ``dtype`` (``ccp trace`` checks the path
  with h5py after the run and takes the stored filters from the file: :mod:`ccp.trace.after_run`).
* The chunk cache is netCDF-C's per variable (``get_var_chunk_cache()``), recorded when a variable
  is first used in an open file; ``set_var_chunk_cache`` reopens the HDF5 dataset in netCDF-C, so it
  is recorded as a close and an open with the new cache; ``Dataset.close`` closes them all.

Files that are not HDF5 (netCDF-3, CDF5) have no chunk cache: their open is recorded with the
reason, their calls are not. A dataset made in memory (``memory=``, or ``diskless=True`` created without
``persist``) is not the file of that name on disk, if there is one: it is named ``<in memory: NAME>``,
which no after-run check or checksum takes for a path.
"""

from __future__ import annotations

import ctypes
import os
import time
from typing import Any

from ccp.trace.hdf5_types import VLEN_SEQUENCE_SIZE, VLEN_STRING_SIZE
from ccp.trace.named import like

IMMUTABLE = 1 << 8                 # Py_TPFLAGS_IMMUTABLETYPE
TP_FLAGS_OFFSET = 168              # offsetof(PyTypeObject, tp_flags) on 64-bit CPython 3.8-3.13
DATASET_ARGS = ("filename", "mode", "clobber", "format", "diskless", "persist", "keepweakref", "memory")
FILTER_IDS = {"shuffle": 2, "fletcher32": 3, "szip": 4, "bzip2": 307, "blosc": 32001, "zstd": 32015}


def set_slot(cls, name: str, value) -> None:
    """``cls.name = value`` for an extension type, slots (``__getitem__``, ``__init__``) included: through
    ``type.__setattr__`` so CPython updates the slot; an immutable type is unlocked for that one call."""
    try:
        setattr(cls, name, value)
        return
    except TypeError:
        pass
    flags = ctypes.c_ulong.from_address(id(cls) + TP_FLAGS_OFFSET)
    if flags.value != cls.__flags__:
        raise TypeError(f"{cls.__name__}: type layout not recognised, cannot patch {name}")
    old = flags.value
    flags.value = old & ~IMMUTABLE
    try:
        setattr(cls, name, value)
    finally:
        flags.value = old


def in_memory(args: tuple, kwargs: dict) -> bool:
    """Whether ``Dataset(*args, **kwargs)`` lives in memory only: ``memory=`` given, or a diskless dataset
    created without ``persist`` (a diskless read or append loads the file on disk: that file's layout)."""
    given = {**dict(zip(DATASET_ARGS, args)), **kwargs}
    if given.get("memory") is not None:
        return True
    mode = str(given.get("mode", "r"))
    return bool(given.get("diskless")) and not given.get("persist") and mode.startswith(("w", "x"))


def hdf5_path(var) -> str:
    """The variable's dataset path in the HDF5 file netCDF-C wrote."""
    grp = var.group()
    name = var.name
    dims = var.dimensions
    if name in grp.dimensions and (not dims or dims[0] != name):
        name = "_nc4_non_coord_" + name
    base = grp.path.rstrip("/")
    return f"{base}/{name}"


def _root(grp):
    while grp.parent is not None:
        grp = grp.parent
    return grp


def layout_of(var, created: bool) -> dict:
    """shape, dtype, chunks, filters of a variable as netCDF4 reports them, in the trace's layout form."""
    import numpy as np

    vlen = bool(getattr(var, "_isvlen", False)) or var.dtype is str
    if vlen:                   # str: a char* per element; a VLType: an hvl_t (ccp.trace.hdf5_types)
        dt = np.dtype(object)
        itemsize = VLEN_STRING_SIZE if var.dtype is str else VLEN_SEQUENCE_SIZE
    else:
        dt = np.dtype(var.dtype)
        itemsize = int(dt.itemsize)
    chunking = var.chunking()
    chunks = None if chunking in (None, "contiguous") else [int(c) for c in chunking]
    f = var.filters() or {}
    filters = []
    if f.get("fletcher32"):
        filters.append({"id": 3, "name": "fletcher32", "values": []})
    if f.get("shuffle"):
        filters.append({"id": 2, "name": "shuffle", "values": []})
    if f.get("zlib"):
        filters.append({"id": 1, "name": "deflate", "values": [int(f.get("complevel") or 0)]})
    for name in ("szip", "bzip2", "blosc", "zstd"):
        if f.get(name):
            filters.append({"id": FILTER_IDS[name], "name": name, "values": []})
    try:
        raw: Any = var.getncattr("_FillValue") if "_FillValue" in var.ncattrs() else None
        value = raw.item() if hasattr(raw, "item") else raw
        fill = value if isinstance(value, (int, float)) else None
    except Exception:  # the program must never see the recorder fail
        fill = None
    out = {"shape": [int(s) for s in var.shape], "dtype": dt.str, "itemsize": itemsize, "chunks": chunks,
           "filters": filters, "fill_value": fill, "layout": "chunked" if chunks else "contiguous",
           "storage_size": 0 if created else None, "library": "netCDF4", "variable": var.name,
           "group": var.group().path}
    if vlen:
        out["vlen"] = True
    return out


def selection(start, count, stride, rank: int | None = None) -> dict:
    """One nc_get_vars / nc_put_vars request as the trace's selection: a box, or a regular hyperslab.

    ``rank``: the variable's. netCDF4-python asks for a scalar variable with start [0], count [1]; the trace
    holds it at the dataset's rank 0 (an empty box), as h5py's calls on a scalar are recorded."""
    if rank == 0:
        return {"sel": "box", "start": [], "count": [], "nelems": 1}
    st, ct, sd = [], [], []
    for a, c, s in zip(start, count, stride):
        a, c, s = int(a), int(c), int(s)
        if s < 0:                   # netCDF4-python reads these elements forwards, then reverses
            a, s = a + (c - 1) * s, -s
        st.append(a)
        ct.append(c)
        sd.append(s if c > 1 else 1)
    n = 1
    for c in ct:
        n *= c
    if n == 0:
        return {"sel": "none", "nelems": 0}
    if all(s == 1 for s in sd):
        return {"sel": "box", "start": st, "count": ct, "nelems": n}
    return {"sel": "regular", "start": st, "stride": sd, "count": ct, "block": [1] * len(ct), "nelems": n}


class NcState:
    """The variables and files seen in one process."""

    def __init__(self, rec) -> None:
        self.rec = rec
        self.vars: dict[int, tuple] = {}       # id(var) -> (varid, grpid, name, info, hdf5)
        self.files: dict[int, tuple] = {}      # id(root Dataset) -> (file name, mode, is HDF5)
        self.layouts: set[tuple] = set()

    def file_of(self, root) -> tuple:
        got = self.files.get(id(root))
        if got is None:
            got = self.opened(root, "?")
        return got

    def opened(self, root, mode: str, memory: bool = False) -> tuple:
        path = root.filepath()
        if memory:
            name = f"<in memory: {path}>"
        else:
            name = os.path.realpath(path) if os.path.exists(path) else path
        hdf5 = str(getattr(root, "disk_format", "HDF5")) == "HDF5"
        got = (name, mode, hdf5)
        self.files[id(root)] = got
        return got

    def info(self, var):
        """(file, path, itemsize, shape) of a variable of an HDF5 file, registered on first sight; None otherwise."""
        got = self.vars.get(id(var))
        if got is not None and got[0] == var._varid and got[1] == var._grpid and got[2] == var._name:
            return got[3]
        return self.register(var)

    def register(self, var):
        rec = self.rec
        file, mode, hdf5 = self.file_of(_root(var.group()))
        if not hdf5:
            self.vars[id(var)] = (var._varid, var._grpid, var._name, None)
            return None
        path = hdf5_path(var)
        lay = layout_of(var, created=mode.startswith("w"))
        lay["mode"] = mode
        info = (file, path, lay["itemsize"], tuple(lay["shape"]))
        self.vars[id(var)] = (var._varid, var._grpid, var._name, info)
        if (file, path) not in self.layouts:
            self.layouts.add((file, path))
            rec.add({"kind": "layout", "pid": rec.pid, "file": file, "dataset": path, **lay})
        nbytes, nslots, w0 = var.get_var_chunk_cache()
        rec.event("dataset_open", file, path, cache_nbytes=int(nbytes), cache_nslots=int(nslots), cache_w0=float(w0))
        return info

    def closed(self, root) -> None:
        """After Dataset.close: every variable's cache of that file is gone."""
        got = self.files.pop(id(root), None)
        if got is None:
            return
        file = got[0]
        for key, entry in list(self.vars.items()):
            info = entry[3]
            if info is not None and info[0] == file:
                del self.vars[key]
                self.rec.event("dataset_close", file, info[1], reason="file_close")
            elif info is None:
                del self.vars[key]
        self.rec.event("file_close", file)


def patch_netcdf4(rec) -> None:
    """Wrap netCDF4's Dataset open/close and Variable reads and writes (see the module's docstring)."""
    import importlib

    m: Any = importlib.import_module("netCDF4._netCDF4")

    Variable, Dataset = m.Variable, m.Dataset
    perf = time.perf_counter_ns
    state = NcState(rec)
    rec.netcdf = state

    def failed_call(api, op, info, exc) -> None:
        """A program call that raised (an index out of bounds): recorded as a ``call_failed`` event (the reason names
        the call and the exception), never as a call the model, the boxes or the cures would count."""
        try:
            rec.event("call_failed", info[0], info[1], reason=f"{api} ({op}) raised {type(exc).__name__}")
        except Exception as err:  # the program must never see the recorder fail
            rec.failed(err)

    def user(api, op, orig):
        def wrapper(self, *args):
            try:            # first: a variable's open (its cache) comes before its first call
                info = state.info(self)
            except Exception as exc:  # the program must never see the recorder fail
                rec.failed(exc)
                info = None
            r = rec.begin(api, op)
            t0 = perf()
            raised = None
            try:
                return orig(self, *args)
            except BaseException as exc:
                raised = exc
                raise
            finally:
                t1 = perf()
                if info is None:
                    r.clear()           # not an HDF5 file (or not known): nothing to record
                elif raised is not None:
                    r.clear()           # it moved no data the program got: an event, not a call, so no model counts it
                    failed_call(api, op, info, raised)
                else:
                    r.update(file=info[0], dataset=info[1])
                rec.end(r, t0, t1, low=False)
        return like(orig, wrapper)

    def low(api, op, orig, data_first):
        def wrapper(self, *args):
            try:        # before the call: netCDF4-python turns a negative stride around in place
                info = state.info(self)
                start, count, stride = args[1:4] if data_first else args[0:3]
                sel = selection(start, count, stride, rank=len(info[3])) if info is not None else None
            except Exception as exc:  # the program must never see the recorder fail
                rec.failed(exc)
                info = sel = None
            r = rec.begin(api, op)
            t0 = perf()
            raised = False
            try:
                return orig(self, *args)
            except BaseException:
                raised = True
                raise
            finally:
                t1 = perf()
                if info is None or sel is None or raised:
                    r.clear()           # not an HDF5 file (or not known), or it raised: nothing to record
                else:
                    r.update(sel, file=info[0], dataset=info[1], bytes=sel["nelems"] * info[2])
                rec.end(r, t0, t1, low=True)
        return like(orig, wrapper)

    get_item, set_item = Variable.__dict__["__getitem__"], Variable.__dict__["__setitem__"]
    get, put = Variable.__dict__["_get"], Variable.__dict__["_put"]
    set_cache = Variable.__dict__["set_var_chunk_cache"]
    init, close = Dataset.__dict__["__init__"], Dataset.__dict__["close"]

    def dataset_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        try:
            mode = kwargs.get("mode", args[1] if len(args) > 1 else "r")
            file, _mode, hdf5 = state.opened(self, str(mode), in_memory(args, kwargs))
            nbytes, nslots, w0 = m.get_chunk_cache()
            extra = {} if hdf5 else {"reason": f"{self.data_model} ({self.disk_format} on disk): not an HDF5 file, "
                                               "its calls are not recorded"}
            rec.event("file_open", file, mode=str(mode), rdcc_nbytes=int(nbytes), rdcc_nslots=int(nslots),
                      rdcc_w0=float(w0), **extra)
        except Exception as exc:  # never break the user's program over bookkeeping
            rec.failed(exc)

    def dataset_close(self):
        out = close(self)
        try:
            state.closed(self)
        except Exception as exc:  # never break the user's program over bookkeeping
            rec.failed(exc)
        return out

    def set_var_chunk_cache(self, *args, **kwargs):
        try:                    # first seen here: its open (with netCDF-C's cache) comes before the change
            info = state.info(self)
        except Exception as exc:  # never break the user's program over bookkeeping
            rec.failed(exc)
            info = None
        out = set_cache(self, *args, **kwargs)
        try:                    # netCDF-C reopens the HDF5 dataset with the new cache: the old one is gone
            if info is not None:
                nbytes, nslots, w0 = self.get_var_chunk_cache()
                rec.event("dataset_close", info[0], info[1], reason="set_var_chunk_cache")
                rec.event("dataset_open", info[0], info[1], cache_nbytes=int(nbytes), cache_nslots=int(nslots),
                          cache_w0=float(w0))
        except Exception as exc:  # never break the user's program over bookkeeping
            rec.failed(exc)
        return out

    dataset_init = like(init, dataset_init)
    dataset_close = like(close, dataset_close)
    set_var_chunk_cache = like(set_cache, set_var_chunk_cache)
    set_slot(Variable, "_get", low("Variable._get", "read", get, False))
    set_slot(Variable, "_put", low("Variable._put", "write", put, True))
    set_slot(Variable, "__getitem__", user("Variable.__getitem__", "read", get_item))
    set_slot(Variable, "__setitem__", user("Variable.__setitem__", "write", set_item))
    set_slot(Variable, "set_var_chunk_cache", set_var_chunk_cache)
    set_slot(Dataset, "__init__", dataset_init)
    set_slot(Dataset, "close", dataset_close)
    rec.netcdf4_version = getattr(m, "__version__", "?")
