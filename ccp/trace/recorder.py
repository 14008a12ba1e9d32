"""The recorder: patches h5py inside a traced process and writes one part file per process.

Loaded by ``ccp/trace/bootstrap/sitecustomize.py`` when ``CCP_TRACE_DIR`` names a folder. It
must stay cheap and self-contained: stdlib at import, h5py patched only once the program itself
imports h5py (a meta-path hook), never numpy/pandas of its own. A program that never touches h5py
pays for one import hook and one empty part file at most.

What is recorded (``<CCP_TRACE_DIR>/<pid>-<n>.part``, one pickled list of records per flush: pickle
costs a fraction of json per record, and only ``ccp trace`` itself reads these files; the fast path's
``d[k]`` calls go as ``kind="fast"`` column blocks, :mod:`ccp.trace.fastpath`):

* ``kind="call"``: every h5py dataset call. A user's call (``depth == 0``) is recorded once;
  the calls it makes inside h5py (``Dataset.__getitem__`` under ``astype(...)[...]``, the
  low-level ``DatasetID.read``/``write`` and h5py's C fast reader under ``__getitem__``) are
  recorded too, with ``depth > 0`` and ``parent`` the seq of the user's call. Selections come
  from what HDF5 was given (the file dataspace), so low-level rows are the I/O that happened.
* ``kind="event"``: file open/close (with the file's ``rdcc_*``), dataset open/close (the first
  handle's chunk cache is the one HDF5 keeps for all handles; when the last handle closes the
  cache is gone).
* ``kind="layout"``: shape, dtype, chunks, filters, fill value of each dataset touched.

netCDF4-python's calls are recorded by :mod:`ccp.trace.netcdf` in the same records (patched when the
program imports netCDF4); a file object from fsspec given to ``h5py.File`` is named by its URL, its reads
and GETs recorded as events (:mod:`ccp.trace.remote_files`); any other file object by its path when it has one
(``open(path, "rb")``), else by its type. Each process says at exit which libraries
it had imported (a status line; ``trace.json``'s ``libraries``).

Part files are written when a buffer fills (``FLUSH_EVERY`` records, or ``FastColumns.capacity`` fast calls
of one kind of key: the recorder's memory does not grow with the calls), at exit (``atexit``; ``multiprocessing``'s own
exit hook for its forked children, which leave by ``os._exit``), before a process puts
anything on a multiprocessing queue (a worker's result: see :func:`ccp.trace.hooks.patch_queues`)
and when a multiprocessing child gets SIGTERM (``Pool.terminate``: :func:`ccp.trace.hooks.flush_on_sigterm`).

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
from typing import Any

from ccp.trace.fastpath import FAST_CAPACITY, FastColumns, fast_getitem
from ccp.trace.hdf5_types import vlen_info
from ccp.trace.hooks import ImportHook, die_of, flush_on_sigterm, forked_by_multiprocessing, patch_exit, patch_library
from ccp.trace.netcdf import patch_netcdf4
from ccp.trace.remote_files import file_space, fileobj_name, fsspec_info, instrument
from ccp.trace.selections import MAX_LISTED, _file_name, _layout, describe_key, describe_space  # noqa: F401

FLUSH_EVERY = 16384         # records buffered before a write to the part file
ENV_DIR = "CCP_TRACE_DIR"
ENV_SOCK = "CCP_TRACE_SOCK"     # ccp trace's status socket (Linux abstract namespace): start/end/error lines

LIBRARIES = ("h5py", "netCDF4", "h5netcdf", "xarray", "fsspec", "s3fs", "tables", "pandas")   # said at exit
_recorder: Recorder | None = None


def _fault_from_env():
    """``CCP_TRACE_FAULT=ENOSPC:N``: the N-th write of the part file fails with that errno (tests only)."""
    spec = os.environ.get("CCP_TRACE_FAULT")
    if not spec:
        return None
    import errno

    name, _, nth = spec.partition(":")
    code, left = getattr(errno, name, errno.EIO), [int(nth or 1)]

    def fault(_n: int) -> None:
        left[0] -= 1
        if left[0] <= 0:
            raise OSError(code, os.strerror(code))
    return fault


_FAULT = _fault_from_env()


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
        self.sock_name = os.environ.get(ENV_SOCK) or None
        self.sock: Any = None
        self.stopped: str | None = None      # why recording stopped in this process (None: recording)
        self.lost = 0                        # records dropped after recording stopped
        self.written = 0                     # records written to the part file
        self.local = _Local()
        self.lock = threading.RLock()
        self.flushing = False
        # the fast path's calls (ccp.trace.fastpath): held by it, never replaced; a small capacity in tests only
        self.columns = FastColumns(int(os.environ.get("CCP_TRACE_TEST_CAPACITY") or FAST_CAPACITY))
        self._reset_process()
        self.handles: dict[int, tuple] = {}        # token -> (key, dsid weakref)
        self.handle_of: dict[int, int] = {}        # id(dsid) -> token
        self.open_count: dict[tuple, int] = {}     # (file, dataset) -> live handles
        self.layouts: set[tuple] = set()
        self.alias: dict[str, str] = {}            # h5py's name of a file object (its repr) -> its URL
        self.remote: dict[str, dict] = {}          # URL -> what the file object is (ccp.trace.remote_files)
        self.tokens = itertools.count(1)
        self.patched = False
        self.errors = 0
        self.h5py_version: str | None = None     # the h5py (netCDF4) this process recorded through
        self.netcdf4_version: str | None = None
        self.netcdf: Any = None                  # ccp.trace.netcdf.NcState once netCDF4 is patched

    # ------------------------------------------------------------------ process and part file
    def _reset_process(self) -> None:
        self.pid = os.getpid()
        self.stopped = None
        self.lost = self.written = 0
        self.ended = False
        self.finishing = False
        self.term_pending = 0
        self.buf: list = []
        self.columns.clear()
        self.seq = itertools.count(2, 2)      # even: a fast-path call's fast_reader row takes seq + 1
        self.part = os.path.join(self.out_dir, f"{self.pid}-{time.time_ns()}.part")
        self.layouts = set()

    def after_fork(self) -> None:
        """In a forked child: its own part file; the parent's buffer is the parent's to write."""
        self._reset_process()
        for token, (info, _ref, _ident) in list(self.handles.items()):   # the child's part names its handles
            self.buf.append(_handle_record(token, info))
        self.local = _Local()
        self.lock = threading.RLock()
        self.flushing = False
        self.sock = None
        if forked_by_multiprocessing():     # before "start": a forkserver's child imports the program before
            flush_on_sigterm(self)          # multiprocessing runs its after-fork hooks, and Pool.terminate may come first
        self.status("start", os.getppid(), "fork")
        mp_util = sys.modules.get("multiprocessing.util")
        if mp_util is not None:   # multiprocessing children end with os._exit: atexit never runs
            mp_util.register_after_fork(self, Recorder._register_mp_finalizer)

    def _register_mp_finalizer(self) -> None:
        import multiprocessing.util as mp_util

        mp_util.Finalize(None, self.finish, exitpriority=-100)
        flush_on_sigterm(self)      # a pool worker its parent terminates

    # ------------------------------------------------------------------ status channel
    def status(self, *fields) -> None:
        """One line to ``ccp trace`` (pid first): never blocks, never raises, needs no disk space."""
        if not self.sock_name:
            return
        try:
            if self.sock is None:
                import _socket

                self.sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_DGRAM)
                self.sock.settimeout(1.0)      # its queue holds 10 lines: wait a little for ccp trace to read
            line = "\t".join(str(f).replace("\t", " ").replace("\n", " ") for f in (self.pid, *fields))
            self.sock.sendto(line.encode("utf-8", "replace")[:4000], "\0" + self.sock_name)
        except Exception:  # ccp trace gone or its queue full: the part file still says what it can
            pass

    def stop(self, reason: str) -> None:
        """Recording failed in this process: drop what is buffered, record nothing more, tell ccp trace."""
        if self.stopped is None:
            self.stopped = reason
            self.status("error", reason)
        self.lost += len(self.buf) + len(self.columns)
        self.buf = []
        self.columns.clear()

    def finish(self) -> None:
        """The process is leaving: write what is buffered and say how it went (once per process)."""
        if os.getpid() != self.pid or self.ended or self.finishing:
            return
        self.finishing = True       # a SIGTERM now waits for the end line (ccp.trace.hooks.flush_on_sigterm)
        try:
            self.flush()
            self.ended = True
            self.status("modules", ",".join(m for m in LIBRARIES if m in sys.modules))
            self.status("end", self.written, self.lost, self.stopped or "")
        finally:
            self.finishing = False
            if self.term_pending:
                die_of(self.term_pending)

    def buffered(self) -> int:
        """Records waiting for the next write."""
        return len(self.buf) + len(self.columns)

    def add(self, rec) -> None:
        if self.stopped is not None:
            self.lost += 1
            return
        self.buf.append(rec)
        if len(self.buf) >= FLUSH_EVERY:
            self.flush()

    def flush(self) -> None:
        """Append the buffer to the part file; any failure stops recording, never reaches the program."""
        try:
            with self.lock:
                if self.flushing or os.getpid() != self.pid or self.stopped is not None:
                    return
                if not self.buf and not len(self.columns):
                    return
                self.flushing = True
                buf, self.buf = self.buf, []
                n = len(buf)
                try:
                    n += len(self.columns)
                    buf += self.columns.take()      # after the records: a handle comes before the calls naming it
                    if _FAULT is not None:
                        _FAULT(n)
                    os.makedirs(self.out_dir, exist_ok=True)
                    with open(self.part, "ab") as f:
                        pickle.dump(buf, f, protocol=pickle.HIGHEST_PROTOCOL)   # one pickled list per flush
                    self.written += n
                except Exception as exc:  # ENOSPC, EIO, EACCES, a bug: the program runs on
                    self.lost += n
                    self.stop(f"writing {self.part}: {type(exc).__name__}: {exc}")
                finally:
                    self.flushing = False
        except Exception as exc:  # even the bookkeeping above must not reach the program
            self.stop(f"{type(exc).__name__}: {exc}")
        if self.term_pending and not self.finishing:    # a SIGTERM arrived during this write: end as it asked
            self.finish()

    # ------------------------------------------------------------------ datasets and files
    def event(self, op: str, file: str, dataset: str | None = None, **extra) -> None:
        rec = {"kind": "event", "seq": next(self.seq), "pid": self.pid, "t0_ns": time.perf_counter_ns(),
               "op": op, "file": file, "dataset": dataset}
        rec.update(extra)
        self.add(rec)

    def token_of(self, dsid) -> int:
        """The token of a dataset handle (registered on first sight)."""
        token = self.handle_of.get(id(dsid))
        if token is None:
            self.register(dsid)
            token = self.handle_of[id(dsid)]
        return token

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
        file = self.alias.get(file, file)
        key = (file, name)
        shape = tuple(dsid.shape)
        info = (file, name, dsid.dtype.itemsize, shape)
        token = next(self.tokens)
        self.handles[token] = (info, weakref.ref(dsid), id(dsid))
        self.handle_of[id(dsid)] = token
        self.add(_handle_record(token, info))
        weakref.finalize(dsid, self.handle_gone, token)
        n = self.open_count.get(key, 0)
        self.open_count[key] = n + 1
        if key not in self.layouts:
            self.layouts.add(key)
            layout = _layout(dsid, storage_size=file not in self.remote)
            vlen, type_size = vlen_info(dsid.get_type())
            if vlen:            # the HDF5 type's size, not numpy's object pointer (ccp.trace.hdf5_types)
                layout.update(vlen=True, itemsize=type_size)
            if file in self.remote:
                layout["remote"] = self.remote[file]
            self.add({"kind": "layout", "pid": self.pid, "file": file, "dataset": name, **layout})
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
            msg = f"{type(exc).__name__}: {exc}"
            self.status("problem", msg)
            self.add({"kind": "error", "pid": self.pid, "error": msg})

    def begin(self, api: str, op: str) -> dict:
        try:
            st = self.local.stack
            parent = st[-1] if st else None
            rec = {"kind": "call", "seq": next(self.seq), "pid": self.pid, "depth": len(st),
                   "parent": parent["seq"] if parent else 0, "api": api, "op": op, "hdf5_ns": 0, "nlow": 0}
            st.append(rec)
        except Exception as exc:  # the program must never see the recorder fail
            self.failed(exc)
            rec = {"kind": "call"}
        return rec

    def end(self, rec: dict, t0: int, t1: int, low: bool) -> None:
        try:
            self._end(rec, t0, t1, low)
        except Exception as exc:  # the program must never see the recorder fail
            self.failed(exc)

    def _end(self, rec: dict, t0: int, t1: int, low: bool) -> None:
        st = self.local.stack
        if st and st[-1] is rec:
            st.pop()
        if "seq" not in rec:           # begin() failed: nothing to record
            return
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
                except Exception as exc:  # the program must never see the recorder fail
                    rec.failed(exc)
                rec.end(r, t0, t1, low=True)
        wrapper.__name__ = orig.__name__
        wrapper.__wrapped__ = orig  # type: ignore[attr-defined]
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
            except Exception as exc:  # the program must never see the recorder fail
                rec.failed(exc)
            rec.end(r, t0, t1, low=True)

    fast_read.__wrapped__ = fast_orig  # type: ignore[attr-defined]
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
                except Exception as exc:  # the program must never see the recorder fail
                    rec.failed(exc)
                rec.end(r, t0, t1, low=False)
        wrapper.__name__ = orig.__name__
        wrapper.__wrapped__ = orig  # type: ignore[attr-defined]
        return wrapper

    Dataset.__getitem__ = fast_getitem(rec, high("Dataset.__getitem__", "read", Dataset.__getitem__), fast_orig)
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
        except Exception as exc:  # the program must never see the recorder fail
            rec.failed(exc)
        rec.end(r, t0, t1, low=False)
        return out

    hl_group.Group.create_dataset = create_dataset
    init_orig = Dataset.__init__

    def dataset_init(self, bind, *args, **kwargs):
        init_orig(self, bind, *args, **kwargs)
        try:
            rec.handle_info(bind)
        except Exception as exc:  # never break the user's program over bookkeeping
            rec.failed(exc)

    Dataset.__init__ = dataset_init

    File = hl_files.File
    file_init = File.__init__

    def file_init_wrapper(self, *args, **kwargs):
        obj = args[0] if args else kwargs.get("name")
        remote = None
        if obj is not None and not isinstance(obj, (str, bytes, os.PathLike, h5py.h5f.FileID)):
            try:                # a file object: recorded as what it is, its reads and GETs counted from the open on
                remote = fsspec_info(obj)
                if remote is not None and getattr(obj.read, "__name__", "") != "recorded_read":
                    instrument(rec, obj, remote["url"])
            except Exception as exc:  # never break the user's program over bookkeeping
                rec.failed(exc)
                remote = None
        file_init(self, *args, **kwargs)
        if args and isinstance(args[0], h5py.h5f.FileID):     # File(fid): a new wrapper, not an open
            return
        try:
            name = _file_name(self.filename)
            if remote is not None:
                rec.alias[name] = name = remote["url"]
                rec.remote[name] = {**remote, **file_space(self.id)}
            elif callable(getattr(obj, "read", None)) and callable(getattr(obj, "seek", None)):
                rec.alias[name] = name = fileobj_name(obj)   # h5py names a file object by its repr, new per object
            _mdc, nslots, nbytes, w0 = self.id.get_access_plist().get_cache()
            rec.event("file_open", name, mode=self.mode, rdcc_nbytes=int(nbytes), rdcc_nslots=int(nslots),
                      rdcc_w0=float(w0))
        except Exception as exc:  # never break the user's program over bookkeeping
            rec.failed(exc)

    File.__init__ = file_init_wrapper
    file_close = File.close

    def file_close_wrapper(self):
        try:
            name = _file_name(self.filename) if self.id.valid else None
            name = rec.alias.get(name, name) if name is not None else None
        except Exception:  # the program must never see the recorder fail
            name = None
        file_close(self)
        if name is not None:
            try:
                rec.file_closed(name)
                rec.event("file_close", name)
            except Exception as exc:  # the program must never see the recorder fail
                rec.failed(exc)

    File.close = file_close_wrapper
    rec.patched = True
    rec.h5py_version = h5py.__version__


def install(out_dir: str) -> Recorder:
    """Start recording in this process (idempotent)."""
    global _recorder
    if _recorder is not None:
        return _recorder
    rec = _recorder = Recorder(out_dir)
    rec.status("start", os.getppid(), " ".join(getattr(sys, "argv", []))[:200] or sys.executable)
    later = {}
    for name, patch in (("h5py", _patch_h5py), ("netCDF4", patch_netcdf4)):
        if name in sys.modules:         # imported before the recorder started (a sitecustomize of its own)
            patch_library(rec, name, patch)
        else:
            later[name] = patch
    if later:
        sys.meta_path.insert(0, ImportHook(rec, later))
    atexit.register(rec.finish)
    os.register_at_fork(after_in_child=rec.after_fork)
    patch_exit(rec)
    if "--multiprocessing-fork" in getattr(sys, "argv", ()):    # a spawned multiprocessing child (no fork hook runs)
        flush_on_sigterm(rec)
    return rec


def _handle_record(token: int, info: tuple) -> dict:
    file, name, itemsize, shape = info
    return {"kind": "handle", "token": token, "file": file, "dataset": name, "itemsize": itemsize,
            "shape": list(shape)}
