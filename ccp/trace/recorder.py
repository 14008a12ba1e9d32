"""The recorder: patches h5py inside a traced process and writes one part file per process.

Loaded by ``ccp/trace/bootstrap/sitecustomize.py`` when ``CCP_TRACE_DIR`` names a folder. It
must stay cheap and self-contained: stdlib at import, h5py patched only once the program itself
imports h5py (a meta-path hook), never numpy/pandas of its own. A program that never touches h5py
pays for one import hook and one empty part file at most.

What is recorded (``<CCP_TRACE_DIR>/<pid>-<n>.part``, one pickled list of dicts per flush: pickle
costs a fraction of json per record, and only ``ccp trace`` itself reads these files):

* ``kind="call"``: every h5py dataset call. A user's call (``depth == 0``) is recorded once;
  the calls it makes inside h5py (``Dataset.__getitem__`` under ``astype(...)[...]``, the
  low-level ``DatasetID.read``/``write`` and h5py's C fast reader under ``__getitem__``) are
  recorded too, with ``depth > 0`` and ``parent`` the seq of the user's call. Selections come
  from what HDF5 was given (the file dataspace), so low-level rows are the I/O that happened.
* ``kind="event"``: file open/close (with the file's ``rdcc_*``), dataset open/close (the first
  handle's chunk cache is the one HDF5 keeps for all handles; when the last handle closes the
  cache is gone).
* ``kind="layout"``: shape, dtype, chunks, filters, fill value of each dataset touched.

Part files are written when the buffer fills, at exit (``atexit``; ``multiprocessing``'s own
exit hook for its forked children, which leave by ``os._exit``) and before a process puts
anything on a multiprocessing queue (a worker's result: see :func:`_patch_queues`).

Low-level methods live on Cython extension types, which refuse ``setattr``; they are replaced in
the type's dict (then ``PyType_Modified`` drops CPython's method cache). This is CPython-only.
"""

from __future__ import annotations

import atexit
import ctypes
import gc
import itertools
import os
import pickle
import sys
import threading
import time
import weakref

FLUSH_EVERY = 4096          # records buffered before a write to the part file
MAX_LISTED = 4096           # points or hyperslab blocks listed per call; beyond, bounds only
ENV_DIR = "CCP_TRACE_DIR"

_recorder: Recorder | None = None


def _set_type_attr(cls, name: str, value) -> None:
    """``cls.name = value`` for an extension type (CPython: its dict, then invalidate caches)."""
    d = gc.get_referents(cls.__dict__)[0]
    d[name] = value
    ctypes.pythonapi.PyType_Modified(ctypes.py_object(cls))


class _Local(threading.local):
    def __init__(self) -> None:
        self.stack: list[dict] = []      # open calls of this thread, outermost first
        self.dataset = None              # the Dataset whose __getitem__ is running (fast reader)


class Recorder:
    """Buffers records of one process and appends them to its part file."""

    def __init__(self, out_dir: str) -> None:
        self.out_dir = out_dir
        self.local = _Local()
        self.lock = threading.RLock()
        self.flushing = False
        self._reset_process()
        self.handles: dict[int, tuple] = {}        # token -> (key, dsid weakref)
        self.handle_of: dict[int, int] = {}        # id(dsid) -> token
        self.open_count: dict[tuple, int] = {}     # (file, dataset) -> live handles
        self.layouts: set[tuple] = set()
        self.tokens = itertools.count(1)
        self.patched = False
        self.errors = 0

    # ------------------------------------------------------------------ process and part file
    def _reset_process(self) -> None:
        self.pid = os.getpid()
        self.buf: list[dict] = []
        self.seq = itertools.count(1)
        self.part = os.path.join(self.out_dir, f"{self.pid}-{time.time_ns()}.part")
        self.layouts = set()

    def after_fork(self) -> None:
        """In a forked child: its own part file; the parent's buffer is the parent's to write."""
        self._reset_process()
        self.local = _Local()
        self.lock = threading.RLock()
        self.flushing = False
        mp_util = sys.modules.get("multiprocessing.util")
        if mp_util is not None:   # multiprocessing children end with os._exit: atexit never runs
            mp_util.register_after_fork(self, Recorder._register_mp_finalizer)

    def _register_mp_finalizer(self) -> None:
        import multiprocessing.util as mp_util

        mp_util.Finalize(None, self.flush, exitpriority=-100)

    def add(self, rec: dict) -> None:
        self.buf.append(rec)
        if len(self.buf) >= FLUSH_EVERY:
            self.flush()

    def flush(self) -> None:
        with self.lock:
            if self.flushing or os.getpid() != self.pid:
                return
            self.flushing = True
            try:
                buf, self.buf = self.buf, []
                os.makedirs(self.out_dir, exist_ok=True)
                with open(self.part, "ab") as f:
                    pickle.dump(buf, f, protocol=pickle.HIGHEST_PROTOCOL)   # one pickled list per flush
            finally:
                self.flushing = False

    # ------------------------------------------------------------------ datasets and files
    def event(self, op: str, file: str, dataset: str | None = None, **extra) -> None:
        rec = {"kind": "event", "seq": next(self.seq), "pid": self.pid, "t0_ns": time.perf_counter_ns(),
               "op": op, "file": file, "dataset": dataset}
        rec.update(extra)
        self.add(rec)

    def handle_info(self, dsid) -> tuple:
        """(file, dataset, itemsize, shape) of a dataset handle; registers it on first sight."""
        token = self.handle_of.get(id(dsid))
        if token is not None:
            return self.handles[token][0]
        return self.register(dsid)

    def register(self, dsid) -> tuple:
        from h5py import h5f, h5i

        name = h5i.get_name(dsid)
        name = name.decode("utf-8", "replace") if name else f"<anonymous {dsid.id}>"
        file = _file_name(h5f.get_name(dsid))
        key = (file, name)
        shape = tuple(dsid.shape)
        info = (file, name, dsid.dtype.itemsize, shape)
        token = next(self.tokens)
        self.handles[token] = (info, weakref.ref(dsid), id(dsid))
        self.handle_of[id(dsid)] = token
        weakref.finalize(dsid, self.handle_gone, token)
        n = self.open_count.get(key, 0)
        self.open_count[key] = n + 1
        if key not in self.layouts:
            self.layouts.add(key)
            self.add({"kind": "layout", "pid": self.pid, "file": file, "dataset": name, **_layout(dsid)})
        if n == 0:
            nslots, nbytes, w0 = dsid.get_access_plist().get_chunk_cache()
            self.event("dataset_open", file, name, cache_nbytes=int(nbytes), cache_nslots=int(nslots),
                       cache_w0=float(w0))
        return info

    def handle_gone(self, token: int, reason: str = "handle") -> None:
        entry = self.handles.pop(token, None)
        if entry is None:
            return
        info, _ref, ident = entry
        if self.handle_of.get(ident) == token:     # ref() is already None inside a finalizer
            del self.handle_of[ident]
        key = info[:2]
        n = self.open_count.get(key, 1) - 1
        self.open_count[key] = n
        if n <= 0:
            self.open_count.pop(key, None)
            self.event("dataset_close", key[0], key[1], reason=reason)

    def file_closed(self, file: str) -> None:
        """After File.close: handles HDF5 invalidated are closed (their cache is gone)."""
        for token, (info, ref, _) in list(self.handles.items()):
            dsid = ref()
            if info[0] == file and (dsid is None or not dsid.valid):
                self.handle_gone(token, reason="file_close")

    # ------------------------------------------------------------------ calls
    def failed(self, exc: BaseException) -> None:
        """Bookkeeping went wrong: say so once per process, never disturb the program."""
        self.errors += 1
        if self.errors == 1:
            self.add({"kind": "error", "pid": self.pid, "error": f"{type(exc).__name__}: {exc}"})

    def begin(self, api: str, op: str) -> dict:
        st = self.local.stack
        parent = st[-1] if st else None
        rec = {"kind": "call", "seq": next(self.seq), "pid": self.pid, "depth": len(st),
               "parent": parent["seq"] if parent else 0, "api": api, "op": op, "hdf5_ns": 0, "nlow": 0}
        st.append(rec)
        return rec

    def end(self, rec: dict, t0: int, t1: int, low: bool) -> None:
        st = self.local.stack
        if st and st[-1] is rec:
            st.pop()
        if rec.get("drop_if_no_io") and not rec["nlow"]:
            return
        rec.pop("drop_if_no_io", None)
        rec["t0_ns"] = t0
        # an enclosing call's time excludes the recorder's own work on the calls nested in it
        rec["wall_ns"] = t1 - t0 - rec.pop("rec_ns", 0)
        if low:
            rec["hdf5_ns"] = t1 - t0
            nbytes = rec.get("bytes", 0)
            own = time.perf_counter_ns() - t1      # describing this call's selection, after HDF5 returned
            for outer in st:           # every enclosing call spent this time inside HDF5
                outer["hdf5_ns"] += t1 - t0
                outer["nlow"] += 1
                outer["bytes"] = outer.get("bytes", 0) + nbytes
                outer["rec_ns"] = outer.get("rec_ns", 0) + own
        self.add(rec)


# ---------------------------------------------------------------------- selections

def _file_name(raw) -> str:
    name = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    return os.path.realpath(name) if os.path.exists(name) else name


def describe_space(fspace, shape) -> dict:
    """The file-dataspace selection in a compact, replayable form."""
    from h5py import h5s

    if fspace is None or fspace.id == h5s.ALL.id:
        n = 1
        for s in shape:
            n *= s
        return {"sel": "all", "start": [0] * len(shape), "count": list(shape), "nelems": n}
    kind = fspace.get_select_type()
    n = fspace.get_select_npoints()
    if kind == h5s.SEL_NONE or n == 0:
        return {"sel": "none", "nelems": 0}
    if kind == h5s.SEL_ALL:
        return {"sel": "all", "start": [0] * len(shape), "count": list(shape), "nelems": n}
    if kind == h5s.SEL_POINTS:
        out = {"sel": "points", "nelems": n}
        lo, hi = fspace.get_select_bounds()
        out["start"], out["count"] = list(lo), [h - lo_ + 1 for lo_, h in zip(lo, hi)]
        if n <= MAX_LISTED:
            out["points"] = fspace.get_select_elem_pointlist().ravel().tolist()
        return out
    if fspace.is_regular_hyperslab():
        start, stride, count, block = fspace.get_regular_hyperslab()
        if all(c == 1 or s == b for c, s, b in zip(count, stride, block)):
            return {"sel": "box", "start": list(start), "count": [c * b for c, b in zip(count, block)], "nelems": n}
        return {"sel": "regular", "start": list(start), "stride": list(stride), "count": list(count),
                "block": list(block), "nelems": n}
    nblocks = fspace.get_select_hyper_nblocks()
    lo, hi = fspace.get_select_bounds()
    out = {"sel": "blocks", "start": list(lo), "count": [h - lo_ + 1 for lo_, h in zip(lo, hi)], "nelems": n,
           "nblocks": nblocks}
    if nblocks <= MAX_LISTED:
        out["blocks"] = fspace.get_select_hyper_blocklist().ravel().tolist()   # (start, end) corners
    return out


def _simple_key(args, shape):
    """start/count of a key of ints and unit-step slices (the fast reader's usual case), else None."""
    if len(args) == 1 and args[0] is Ellipsis:
        args = ()
    if any(a is Ellipsis for a in args):
        if sum(a is Ellipsis for a in args) > 1:
            return None
        i = next(i for i, a in enumerate(args) if a is Ellipsis)
        args = args[:i] + (slice(None),) * (len(shape) - len(args) + 1) + args[i + 1:]
    if len(args) > len(shape):
        return None
    args = args + (slice(None),) * (len(shape) - len(args))
    start, count = [], []
    for a, n in zip(args, shape):
        if isinstance(a, slice):
            b, e, s = a.indices(n)
            if s != 1:
                return None
            start.append(b)
            count.append(max(e - b, 0))
        elif isinstance(a, int) or type(a).__name__.startswith("int"):
            try:
                i = int(a)
            except TypeError:
                return None
            i = i + n if i < 0 else i
            start.append(i)
            count.append(1)
        else:
            return None
    return start, count


def describe_key(args, shape) -> dict:
    simple = _simple_key(args, shape)
    if simple is not None:
        start, count = simple
        n = 1
        for c in count:
            n *= c
        if n == 0:
            return {"sel": "none", "nelems": 0}
        return {"sel": "box", "start": start, "count": count, "nelems": n}
    from h5py._hl import selections

    try:
        sel = selections.select(shape, args, None)
        return describe_space(sel.id, shape)
    except Exception:  # noqa: BLE001 -- the call itself will raise or fall back; the selection stays unknown
        return {"sel": "unknown", "nelems": 0}


def _layout(dsid) -> dict:
    # here, not at the top: the recorder is loaded into a program before it imports anything itself
    from ccp.hdf5.filters import pipeline_from_dcpl, trace_filters

    dcpl = dsid.get_create_plist()
    filters = trace_filters(pipeline_from_dcpl(dcpl))
    chunks = dcpl.get_chunk() if dcpl.get_layout() == 2 else None   # H5D_CHUNKED
    try:
        import numpy as np

        fill = np.zeros((1,), dsid.dtype)
        dcpl.get_fill_value(fill)
        fill_value = fill[0].item() if fill.dtype.kind in "biuf" else None
    except Exception:  # noqa: BLE001 -- the program must never see the recorder fail
        fill_value = None
    return {"shape": list(dsid.shape), "dtype": dsid.dtype.str, "itemsize": dsid.dtype.itemsize,
            "chunks": list(chunks) if chunks else None, "filters": filters, "fill_value": fill_value,
            "layout": {0: "compact", 1: "contiguous", 2: "chunked"}.get(dcpl.get_layout(), "other"),
            "storage_size": int(dsid.get_storage_size())}


# ---------------------------------------------------------------------- patches

def _patch_h5py(rec: Recorder) -> None:
    import h5py
    from h5py import _selector, h5d
    from h5py._hl import dataset as hl_dataset
    from h5py._hl import files as hl_files
    from h5py._hl import group as hl_group

    perf = time.perf_counter_ns
    Dataset = hl_dataset.Dataset

    def low(api, op, orig):
        def wrapper(self, mspace, fspace, arr_obj, *args, **kwargs):
            r = rec.begin(api, op)
            t0 = perf()
            try:
                return orig(self, mspace, fspace, arr_obj, *args, **kwargs)
            finally:
                t1 = perf()
                try:
                    file, name, itemsize, shape = rec.handle_info(self)
                    sel = describe_space(fspace, shape)
                    r.update(sel, file=file, dataset=name, bytes=sel["nelems"] * itemsize)
                except Exception as exc:  # noqa: BLE001 -- the program must never see the recorder fail
                    rec.failed(exc)
                rec.end(r, t0, t1, low=True)
        wrapper.__name__ = orig.__name__
        wrapper.__wrapped__ = orig
        return wrapper

    _set_type_attr(h5d.DatasetID, "read", low("DatasetID.read", "read", h5d.DatasetID.__dict__["read"]))
    _set_type_attr(h5d.DatasetID, "write", low("DatasetID.write", "write", h5d.DatasetID.__dict__["write"]))

    fast_orig = _selector.Reader.__dict__["read"]

    def fast_read(self, args):
        dset = rec.local.dataset
        r = rec.begin("fast_reader", "read")
        t0 = perf()
        try:
            return fast_orig(self, args)
        finally:
            t1 = perf()
            try:
                if dset is not None:
                    file, name, itemsize, shape = rec.handle_info(dset.id)
                    sel = describe_key(args, shape)
                    r.update(sel, file=file, dataset=name, bytes=sel["nelems"] * itemsize)
            except Exception as exc:  # noqa: BLE001 -- the program must never see the recorder fail
                rec.failed(exc)
            rec.end(r, t0, t1, low=True)

    _set_type_attr(_selector.Reader, "read", fast_read)

    def high(api, op, orig):
        def wrapper(self, *args, **kwargs):
            dset = getattr(self, "_dset", self)
            r = rec.begin(api, op)
            saved = rec.local.dataset
            rec.local.dataset = dset
            t0 = perf()
            try:
                return orig(self, *args, **kwargs)
            finally:
                t1 = perf()
                rec.local.dataset = saved
                try:
                    file, name, _itemsize, _shape = rec.handle_info(dset.id)
                    r.update(file=file, dataset=name)
                except Exception as exc:  # noqa: BLE001 -- the program must never see the recorder fail
                    rec.failed(exc)
                rec.end(r, t0, t1, low=False)
        wrapper.__name__ = orig.__name__
        wrapper.__wrapped__ = orig
        return wrapper

    Dataset.__getitem__ = high("Dataset.__getitem__", "read", Dataset.__getitem__)
    Dataset.__setitem__ = high("Dataset.__setitem__", "write", Dataset.__setitem__)
    Dataset.read_direct = high("Dataset.read_direct", "read", Dataset.read_direct)
    Dataset.write_direct = high("Dataset.write_direct", "write", Dataset.write_direct)
    for cls_name, api in (("AsTypeView", "astype"), ("FieldsView", "fields"), ("AsStrView", "asstr"),
                          ("AstypeWrapper", "astype"), ("FieldsWrapper", "fields"), ("AsStrWrapper", "asstr")):
        cls = getattr(hl_dataset, cls_name, None)
        if cls is not None and "__getitem__" in cls.__dict__:
            cls.__getitem__ = high(f"{api}.__getitem__", "read", cls.__dict__["__getitem__"])

    create_orig = hl_group.Group.create_dataset

    def create_dataset(self, *args, **kwargs):
        # create_dataset(data=...) writes: a user call when (and only when) it reaches HDF5
        r = rec.begin("Group.create_dataset", "write")
        r["drop_if_no_io"] = True
        t0 = perf()
        try:
            out = orig_result = create_orig(self, *args, **kwargs)
        except BaseException:
            rec.end(r, t0, perf(), low=False)
            raise
        t1 = perf()
        try:
            file, name, _itemsize, _shape = rec.handle_info(orig_result.id)
            r.update(file=file, dataset=name)
        except Exception as exc:  # noqa: BLE001 -- the program must never see the recorder fail
            rec.failed(exc)
        rec.end(r, t0, t1, low=False)
        return out

    hl_group.Group.create_dataset = create_dataset
    init_orig = Dataset.__init__

    def dataset_init(self, bind, *args, **kwargs):
        init_orig(self, bind, *args, **kwargs)
        try:
            rec.handle_info(bind)
        except Exception as exc:  # noqa: BLE001 -- never break the user's program over bookkeeping
            rec.failed(exc)

    Dataset.__init__ = dataset_init

    File = hl_files.File
    file_init = File.__init__

    def file_init_wrapper(self, *args, **kwargs):
        file_init(self, *args, **kwargs)
        if args and isinstance(args[0], h5py.h5f.FileID):     # File(fid): a new wrapper, not an open
            return
        try:
            name = _file_name(self.filename)
            _mdc, nslots, nbytes, w0 = self.id.get_access_plist().get_cache()
            rec.event("file_open", name, mode=self.mode, rdcc_nbytes=int(nbytes), rdcc_nslots=int(nslots),
                      rdcc_w0=float(w0))
        except Exception as exc:  # noqa: BLE001 -- never break the user's program over bookkeeping
            rec.failed(exc)

    File.__init__ = file_init_wrapper
    file_close = File.close

    def file_close_wrapper(self):
        try:
            name = _file_name(self.filename) if self.id.valid else None
        except Exception:  # noqa: BLE001 -- the program must never see the recorder fail
            name = None
        file_close(self)
        if name is not None:
            try:
                rec.file_closed(name)
                rec.event("file_close", name)
            except Exception as exc:  # noqa: BLE001 -- the program must never see the recorder fail
                rec.failed(exc)

    File.close = file_close_wrapper
    _patch_queues(rec)
    rec.patched = True
    rec.h5py_version = h5py.__version__


def _patch_queues(rec: Recorder) -> None:
    """Flush before a process hands anything to another through a multiprocessing queue.

    Pool and ProcessPoolExecutor workers send each result through a ``SimpleQueue``; their parent
    may then kill them (``Pool.terminate``, which ``with Pool()`` calls) before any exit hook
    runs. Writing the buffer before each result leaves the part file complete by the time the
    parent knows the work is done.
    """
    import multiprocessing.queues as mpq

    for cls in (mpq.SimpleQueue, mpq.Queue):
        orig = cls.put

        def put(self, *args, _orig=orig, **kwargs):
            if rec.buf:
                rec.flush()
            return _orig(self, *args, **kwargs)

        cls.put = put


class _H5pyHook:
    """A meta-path finder that patches h5py right after the program imports it."""

    def __init__(self, rec: Recorder) -> None:
        self.rec = rec
        self.busy = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "h5py" or self.busy:
            return None
        import importlib.util

        self.busy = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self.busy = False
        if spec is None or spec.loader is None:
            return spec
        loader, rec = spec.loader, self.rec

        class Loader:
            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                loader.exec_module(module)
                _patch_h5py(rec)

        spec.loader = Loader()
        return spec


def install(out_dir: str) -> Recorder:
    """Start recording in this process (idempotent)."""
    global _recorder
    if _recorder is not None:
        return _recorder
    rec = _recorder = Recorder(out_dir)
    if "h5py" in sys.modules:
        _patch_h5py(rec)
    else:
        sys.meta_path.insert(0, _H5pyHook(rec))
    atexit.register(rec.flush)
    os.register_at_fork(after_in_child=rec.after_fork)
    return rec
