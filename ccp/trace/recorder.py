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

The buffers are written every ``BATCH`` (2,048) records or fast calls of one kind of key, and whenever a call finds
the last write older than ``BATCH_AGE_NS`` (0.2 s): a process killed in any way (SIGKILL, a segfault, an abort, a
C-level ``_exit``) loses at most that last batch of each, and the recorder's memory does not grow with the calls. The
fast path's calls go as committed int64 rows to the part's journal files (:mod:`ccp.trace.journal`; a key the rows
cannot hold, to the part file), the records to the part file. They are also written at exit (``atexit``;
``multiprocessing``'s own exit hook for its forked children, which leave by ``os._exit``), before a process puts
anything on a multiprocessing queue (a worker's result: see :func:`ccp.trace.hooks.patch_queues`)
and when the process gets SIGTERM (a user's ``kill``, ``Pool.terminate``: :mod:`ccp.trace.sigterm`; it then dies of
the signal as untraced).

h5py is patched by :mod:`ccp.trace.h5py_patch`. The program's own signal handler may raise anywhere, in the
recorder's bookkeeping too: such an exception reaches the program as it would untraced, and a write it cuts short
leaves the buffer whole and the part file as it was (:mod:`ccp.trace.partfile`). A forked child records into its own
part file and never writes its parent's, even when the program's signal lands in the recorder as it forks
(:func:`install`, :meth:`Recorder._take_process`).
"""

from __future__ import annotations

import _socket  # here, not in status(): an import at interpreter exit (the end line from atexit) can fail
import atexit
import functools
import itertools
import os
import pickle
import sys
import threading
import time
import weakref
from typing import Any

from ccp.trace.calls import CallRecords
from ccp.trace.fastpath import BATCH_AGE_NS, FAST_CAPACITY, WIDTH, FastColumns
from ccp.trace.h5py_patch import _set_type_attr, patch_h5py  # noqa: F401 (_set_type_attr: benchmarks)
from ccp.trace.hdf5_types import vlen_info
from ccp.trace.hooks import ImportHook, patch_exit, patch_library
from ccp.trace.journal import Journal
from ccp.trace.netcdf import patch_netcdf4
from ccp.trace.partfile import raised_by_program, write_at
from ccp.trace.rawfork import own_calls, own_records, start_window_ns
from ccp.trace.selections import MAX_LISTED, _file_name, _layout, describe_key, describe_space  # noqa: F401
from ccp.trace.sigterm import die_of, flush_on_sigterm, keep_backstop_own, keep_calls_on_sigterm
from ccp.trace.unnamed import unnamed_name

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


class _Local(threading.local):
    def __init__(self) -> None:
        self.stack: list[dict] = []      # open calls of this thread, outermost first
        self.dataset = None              # the Dataset whose __getitem__ is running (fast reader)
        self.linking = False             # in ``g[name] = data``: records held until the link names its dataset


class Recorder(CallRecords):
    """Buffers records of one process and appends them to its part file."""

    def __init__(self, out_dir: str) -> None:
        self.out_dir = out_dir
        self.sock_name = os.environ.get(ENV_SOCK) or None
        self.stopped: str | None = None      # why recording stopped in this process (None: recording)
        self.h5py_modules: Any = None        # (h5f, h5i), set by ccp.trace.h5py_patch once h5py is imported
        self.lost = 0                        # records dropped after recording stopped
        self.written = 0                     # records written to the part file
        self.local = _Local()
        self.lock = threading.RLock()
        self.flushing = False
        self.pid = 0                         # this process's (0: none yet; another's: a fork not yet taken over)
        self.part = ""                       # its part file ("": none; emptied at a fork: see install)
        self.part_end = 0                    # bytes of the part file its written lists take
        self.flush_calls = 0                 # fast calls of each kind a write takes at most
        self.ended = self.finishing = self.announced = False
        self.term_pending = 0
        self.buf: list = []                  # never replaced: emptied in place, at a fork too (see install)
        # the fast path's calls (ccp.trace.fastpath): held by it, never replaced; a small capacity in tests only
        self.columns = FastColumns(int(os.environ.get("CCP_TRACE_TEST_CAPACITY") or FAST_CAPACITY))
        self.journal = Journal()             # the fast path's calls in file-backed memory (ccp.trace.journal)
        self.seq = itertools.count(2, 2)     # even: a fast-path call's fast_reader row takes seq + 1
        self.handles: dict[int, tuple] = {}        # token -> (key, dsid weakref)
        self.handle_of: dict[int, int] = {}        # id(dsid) -> token
        self.renamed: dict[int, int] = {}          # token -> the handle's token after a resize
        self.open_count: dict[tuple, int] = {}     # (file, dataset) -> live handles
        self.layouts: set[tuple] = set()
        self.unnamed: dict[tuple, int] = {}        # (file, dataset) met before any link named it -> written then
        self.unnamed_count = itertools.count(1)
        self.alias: dict[str, str] = {}            # h5py's name of a file object (its repr) -> its URL
        self.remote: dict[str, dict] = {}          # URL -> what the file object is (ccp.trace.remote_files)
        self.tokens = itertools.count(1)
        self.patched = False
        self.errors = 0
        self.h5py_version: str | None = None     # the h5py (netCDF4) this process recorded through
        self.netcdf4_version: str | None = None
        self.netcdf: Any = None                  # ccp.trace.netcdf.NcState once netCDF4 is patched
        self._take_process()
        self.announced = True       # its creator says it started (install)

    # ------------------------------------------------------------------ process and part file
    def _take_process(self, at_fork: bool = False) -> None:
        """This process's own part file, counters and lock. Everything is made first, then stored with no call in
        between and the pid last: CPython runs a signal handler only at a call or a loop's jump, so a program's
        exception landing in a forked child's reset (a Ctrl-C to the process group as it forks) leaves the parent's
        pid, and a process whose pid is not its own writes nothing until this has run (:meth:`flush`,
        :meth:`finish`). Never the parent's part file with the child's records.

        The child's buffers hold only the child's records: the at-fork hooks :func:`install` registers before
        :meth:`after_fork` emptied them (C functions: nothing can land in them), so calls the child made before a
        cut-short reset ended are kept, renamed to its pid; their seq go on from the parent's, so the child's are
        never counted again from 2 and stay unique. A fork those hooks did not see (a C library's ``fork()``) left the
        parent's records buffered, the child's own after them: the parent's are dropped, the child's kept, those made
        too near the fork to tell counted as lost (:mod:`ccp.trace.rawfork`)."""
        pid = os.getpid()
        part = os.path.join(self.out_dir, f"{pid}-{time.time_ns()}.part")
        lock, local = threading.RLock(), _Local()
        layouts: set[tuple] = set()
        inherited = self.pid != 0 and self.part != ""   # "": emptied at the fork (see install); 0: a new recorder
        if not inherited:   # the child's own calls, made before a cut-short reset ran (buffered, or open around
            for r in (*self.buf, *self.local.stack):        # the write that brought it here): its pid, not the parent's
                if type(r) is dict and r.get("pid") == self.pid:
                    r["pid"] = pid
            for r in self.local.stack if at_fork else ():   # open at the fork itself (the program's handler forked
                if type(r) is dict:                         # in a write): begun by the parent, the parent's call;
                    r.pop("seq", None)                      # never recorded by the child too (end() skips it)
        handles = [_handle_record(token, info) for token, (info, _ref, _ident) in list(self.handles.items())]
        capacity = self.columns.capacity
        columns = self.columns
        lanes, records, untold = [columns.index, columns.slice, columns.tuple], self.buf, 0
        if inherited:       # a fork no hook saw: the parent's calls dropped, the child's own kept (ccp.trace.rawfork)
            window = start_window_ns()
            records, untold = own_records(self.buf, window)
            for r in records:
                if r.get("pid") == self.pid:
                    r["pid"] = pid
            for i, flat in enumerate(lanes):
                lanes[i], unknown = own_calls(flat, window)
                untold += unknown
        self.journal.switch(part)   # the child's own journal (the parent's files are never written by it)
        # no call from here on
        if inherited:
            self.buf[:], columns.index[:], columns.slice[:], columns.tuple[:] = records, *lanes
        self.buf[:0] = handles      # before the calls naming them: the child's part names its live handles
        self.part, self.part_end, self.flush_calls = part, 0, capacity
        self.lock, self.local, self.flushing, self.layouts = lock, local, False, layouts
        self.stopped, self.lost, self.written, self.ended, self.finishing, self.term_pending = None, untold, 0, False, False, 0
        self.announced = False
        self.pid = pid

    def after_fork(self) -> None:
        """In a forked child: its own part file; the parent's buffer is the parent's to write (emptied at the fork).

        Not in the child subprocess forks to run a ``preexec_fn`` and then exec another program: it runs no program
        code of the traced kind and never reaches the exit hook, so announcing it made the trace INCOMPLETE for
        every such child (breaker5: 40 of them, every call recorded). Were it to make a dataset call, its first
        write would take the process then (:meth:`_own_process`)."""
        caller = sys._getframe(1)
        if caller.f_code.co_name == "_execute_child" and caller.f_globals.get("__name__") == "subprocess":
            return
        self._become_child(at_fork=True)

    def _become_child(self, at_fork: bool = False) -> None:
        """:meth:`_take_process` in a forked child, then say so to ``ccp trace``."""
        self._take_process(at_fork)
        self._announce("fork")
        if self.lost:       # a fork no hook saw: the calls made as it forked could not be told (ccp.trace.rawfork)
            self.status("problem", f"forked by a fork() Python did not see: {self.lost} call(s) or event(s) made "
                        "within 10 ms of the fork could not be told from the parent's; dropped, up to that many of "
                        "this process's own are missing")

    def _announce(self, how: str) -> None:
        """The start line (once the process has its own state) and multiprocessing's exit hook for a forked child."""
        if how == "fork":   # before "start": a forkserver's child imports the program, and Pool.terminate may come
            flush_on_sigterm(self)          # before multiprocessing runs its after-fork hooks (its own backstop)
        self.status("start", os.getppid(), how)
        mp_util = sys.modules.get("multiprocessing.util")
        if mp_util is not None and how == "fork":   # multiprocessing children end with os._exit: atexit never runs
            mp_util.register_after_fork(self, Recorder._register_mp_finalizer)
        self.announced = True

    def _own_process(self) -> None:
        """Before a write: a forked child whose reset the program's signal cut short (in :meth:`after_fork`) takes its
        own state now; a failure of the recorder's own there stops recording in it."""
        if os.getpid() == self.pid:
            return
        try:
            self._become_child()
        except BaseException as exc:
            if raised_by_program(exc):
                raise
            self.stop(f"after fork: {type(exc).__name__}: {exc}")

    def _register_mp_finalizer(self) -> None:
        import multiprocessing.util as mp_util

        mp_util.Finalize(None, self.finish_quietly, exitpriority=-100)
        flush_on_sigterm(self)      # a pool worker its parent terminates

    # ------------------------------------------------------------------ status channel
    def status(self, *fields) -> None:
        """One line to ``ccp trace`` (pid first): never blocks, never raises, needs no disk space."""
        if not self.sock_name:
            return
        # a socket per line, closed at once (a process says a few): one kept open had its number closed under it by
        # a program closing every descriptor past stderr, then sent to (and closed, in a forked child) the program's
        # own file on that number (breaker6 F1, F2)
        try:
            sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_DGRAM)     # close-on-exec, as Python makes them
        except Exception:  # no descriptor left: the part file still says what it can
            return
        try:
            sock.settimeout(1.0)      # its queue holds 10 lines: wait a little for ccp trace to read
            line = "\t".join(str(f).replace("\t", " ").replace("\n", " ") for f in (self.pid, *fields))
            sock.sendto(line.encode("utf-8", "replace")[:4000], "\0" + self.sock_name)
        except Exception:  # ccp trace gone or its queue full: the part file still says what it can
            pass
        finally:
            sock.close()

    def stop(self, reason: str) -> None:
        """Recording failed in this process: drop what is buffered, record nothing more, tell ccp trace."""
        if self.stopped is None:
            self.stopped = reason
            self.status("error", reason)
        self.lost += len(self.buf) + len(self.columns)
        del self.buf[:]
        self.columns.clear()

    def finish(self) -> None:
        """The process is leaving: write what is buffered and say how it went (once per process)."""
        self._own_process()
        if os.getpid() != self.pid or self.ended or self.finishing:
            return
        self.finishing = True       # a SIGTERM now waits for the end line (ccp.trace.sigterm)
        try:
            self.flush()
            if not self.announced:      # a fork's reset cut short before its start line
                self._announce("fork")
            self.ended = True
            self.status("modules", ",".join(m for m in LIBRARIES if m in sys.modules))
            self.status("end", self.written, self.lost, self.stopped or "")
        finally:
            self.finishing = False
            if self.term_pending:
                die_of(self.term_pending)

    def finish_quietly(self) -> None:
        """:meth:`finish` at the process's end (atexit, os._exit, a SIGTERM): an exception the program's signal
        handler raises meanwhile has no one left to reach and must never be printed on the program's stderr; the
        interrupted write left the buffer whole, so it is tried again."""
        for _attempt in range(5):
            try:
                self.finish()
                return
            except BaseException:  # the process is leaving: nothing to hand it to
                continue

    def buffered(self) -> int:
        """Records waiting for the next write."""
        return len(self.buf) + len(self.columns)

    def add(self, rec) -> None:
        if self.stopped is not None:
            self.lost += 1
            return
        buf = self.buf
        buf.append(rec)
        if (len(buf) >= self.columns.batch or time.perf_counter_ns() > self.columns.due) and not self.local.linking:
            self.flush()        # (in g[name] = data: kept until the link names them, ccp.trace.unnamed)

    def flush_if_due(self) -> None:
        if len(self.buf) >= self.columns.batch or time.perf_counter_ns() > self.columns.due:
            self.flush()

    def flush(self) -> None:
        """Append the buffer to the part file; a failure of the recorder's own stops recording, never reaches the
        program. An exception of the program's (its signal handler raising meanwhile) reaches it as untraced, with
        nothing written or forgotten: the buffer is emptied only once the part file holds it (no call in between)."""
        self._own_process()
        with self.lock:
            # ended: the process said what it wrote (a read in a __del__ at interpreter exit is not recorded: an
            # import on the write's path fails by then)
            if self.flushing or os.getpid() != self.pid or self.stopped is not None or self.ended:
                return
            if not self.buf and not len(self.columns):
                return
            self.columns.due = time.perf_counter_ns() + BATCH_AGE_NS
            self.flushing = True
            try:
                keep_backstop_own(self)     # a SIGTERM's wakeup byte never goes to a program's file on its number
                if self.buf:    # the records first: a handle is in the part file before the journal's calls name it
                    while self._write_some(records_only=True):
                        pass
                self._journal()
                while self._write_some():       # a write cut short by the program left it fewer calls to take
                    pass
            except BaseException as exc:
                if raised_by_program(exc):
                    # the next write takes fewer calls (at least 64): a handler raising more often than a write
                    # of 16,384 calls takes must not stop the program's reads from ever getting past it
                    self.flush_calls = max(64, self.flush_calls // 4)
                    raise
                # ENOSPC, EIO, EACCES, a bug: the program runs on (stop counts what is buffered as lost)
                self.stop(f"writing {self.part}: {type(exc).__name__}: {exc}")
            finally:
                self.flushing = False
        if self.term_pending and not self.finishing:    # a SIGTERM arrived during this write: end as it asked
            self.finish()

    def _journal(self) -> None:
        """The fast path's buffered calls as committed rows of the journal (:mod:`ccp.trace.journal`), each kind that
        it takes; the rest go to the part file."""
        journal = self.journal
        for lane, flat in enumerate((self.columns.index, self.columns.slice, self.columns.tuple)):
            n = len(flat) // WIDTH * WIDTH
            if n:
                if _FAULT is not None:
                    _FAULT(n // WIDTH)
                if journal.put(lane, flat, n):
                    self.written += n // WIDTH

    def _write_some(self, records_only: bool = False) -> bool:
        """One pickled list to the part file: the records, then (unless ``records_only``) up to ``flush_calls`` fast
        calls of each kind; whether some calls were left for another list. A fork while it runs (the program's signal
        handler calling ``os.fork``) leaves the write to the parent: in the child it stops, nothing counted
        (:func:`write_at`)."""
        part, end = self.part, self.part_end
        k = len(self.buf)
        if not k and (records_only or not len(self.columns)):
            return False
        records = self.buf[:k]
        blocks, taken = ([], (0, 0, 0)) if records_only else self.columns.peek(self.flush_calls)
        n = k + sum(taken) // WIDTH
        records += blocks       # after the records: a handle comes before the calls naming it
        if _FAULT is not None:
            _FAULT(n)
        data = pickle.dumps(records, protocol=pickle.HIGHEST_PROTOCOL)     # one pickled list per write
        new_end = end + len(data)
        if not write_at(part, data, end, self) or self.part is not part:
            return False        # a forked child: these were the parent's records, its own buffers emptied at the fork
        self.part_end = new_end         # done: from here no call, so nothing can land before it is all said
        self.written += n
        del self.buf[:k]
        del self.columns.index[:taken[0]], self.columns.slice[:taken[1]], self.columns.tuple[:taken[2]]
        left = max(taken) == self.flush_calls * WIDTH and len(self.columns) > 0
        self.flush_calls = self.columns.capacity
        return left

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
        # kept when h5py was patched: an import (or sys.modules, emptied by then) fails in a read at interpreter
        # exit (a __del__), and the call would be lost
        h5f, h5i = self.h5py_modules

        name = h5i.get_name(dsid)
        file = _file_name(h5f.get_name(dsid))
        file = self.alias.get(file, file)
        if name:
            name = name.decode("utf-8", "replace")
        else:       # not linked yet: named by its link when it gets one (linked), in words, not by a number, if never
            name = unnamed_name(self, self.local.linking)
            self.unnamed[(file, name)] = self.written
        key = (file, name)
        shape = tuple(dsid.shape)
        info = (file, name, dsid.dtype.itemsize, shape)
        token = next(self.tokens)
        n = self.open_count.get(key, 0)
        # the records first, the handle's bookkeeping last: an exception of the program's landing in between leaves
        # the handle unknown (registered again at its next call), never named by calls with no handle record
        self.add(_handle_record(token, info))
        if key not in self.layouts:
            self.add_layout(dsid, file, name)
            self.layouts.add(key)
        if n == 0:
            self.add_open(dsid, file, name)
        ref, ident = weakref.ref(dsid), id(dsid)
        weakref.finalize(dsid, self.handle_gone, token)
        self.handles[token] = (info, ref, ident)        # no call from here on
        self.handle_of[ident] = token
        self.open_count[key] = n + 1
        return info

    def add_layout(self, dsid, file: str, name: str) -> None:
        layout = _layout(dsid, storage_size=file not in self.remote)
        vlen, type_size = vlen_info(dsid.get_type())
        if vlen:            # the HDF5 type's size, not numpy's object pointer (ccp.trace.hdf5_types)
            layout.update(vlen=True, itemsize=type_size)
        if file in self.remote:
            layout["remote"] = self.remote[file]
        self.add({"kind": "layout", "pid": self.pid, "file": file, "dataset": name, **layout})

    def add_open(self, dsid, file: str, name: str) -> None:
        nslots, nbytes, w0 = dsid.get_access_plist().get_chunk_cache()
        self.event("dataset_open", file, name, cache_nbytes=int(nbytes), cache_nslots=int(nslots), cache_w0=float(w0))

    def resized(self, dsid) -> None:
        """After ``set_extent``: every live handle of the dataset gets a new token and handle record with the
        dataset's new shape, so its later calls are described against it (the shape is read at register(), not per
        call: that keeps the fast path cheap); after an SWMR reader's ``refresh()`` too (another process's appends)."""
        token = self.handle_of.get(id(dsid))
        if token is None:
            self.register(dsid)
            return
        key = self.handles[token][0][:2]
        for old, (info, ref, ident) in list(self.handles.items()):
            live = ref()
            if info[:2] != key or live is None:
                continue
            new_info = (*info[:3], tuple(live.shape))
            if new_info != info:
                self.retoken(old, new_info, ref, ident)

    def retoken(self, old: int, new_info: tuple, ref, ident: int) -> None:
        """A live handle's new token and handle record (``new_info``): its later calls are named by it."""
        new = next(self.tokens)
        self.add(_handle_record(new, new_info))
        self.handles[new] = (new_info, ref, ident)     # no call from here on
        del self.handles[old]
        self.renamed[old] = new
        if self.handle_of.get(ident) == old:
            self.handle_of[ident] = new

    def handle_gone(self, token: int, reason: str = "handle") -> None:
        while token in self.renamed:        # the handle's token since a resize (its finalizer holds the first)
            token = self.renamed.pop(token)
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
        """Bookkeeping went wrong: say so once per process, never disturb the program; an exception of the program's
        own that landed in the bookkeeping (its signal handler raising) is raised again, as it would be untraced."""
        if raised_by_program(exc):
            raise exc
        self.errors += 1
        if self.errors == 1:
            msg = f"{type(exc).__name__}: {exc}"
            try:
                self.status("problem", msg)
                self.add({"kind": "error", "pid": self.pid, "error": msg})
            except Exception as again:  # at interpreter exit even saying so can fail: the program's call goes on
                if raised_by_program(again):
                    raise


def install(out_dir: str) -> Recorder:
    """Start recording in this process (idempotent)."""
    global _recorder
    if _recorder is not None:
        return _recorder
    rec = _recorder = Recorder(out_dir)
    rec.status("start", os.getppid(), " ".join(getattr(sys, "argv", []))[:200] or sys.executable)
    later = {}
    for name, patch in (("h5py", patch_h5py), ("netCDF4", patch_netcdf4)):
        if name in sys.modules:         # imported before the recorder started (a sitecustomize of its own)
            patch_library(rec, name, patch)
        else:
            later[name] = patch
    if later:
        sys.meta_path.insert(0, ImportHook(rec, later))
    atexit.register(rec.finish_quietly)
    # in a forked child, before any Python code runs (C functions, so no signal handler can run in between): the
    # parent's part file taken away (a write a fork cut short stops: ccp.trace.partfile.write_at) and the parent's
    # buffered calls forgotten; then after_fork gives the child its own (a signal landing in it: see _take_process)
    columns = rec.columns
    for at_fork in (functools.partial(setattr, rec, "part", ""), rec.journal.out.clear, rec.buf.clear, columns.index.clear,
                    columns.slice.clear, columns.tuple.clear, rec.after_fork):
        os.register_at_fork(after_in_child=at_fork)
    patch_exit(rec)
    keep_calls_on_sigterm(rec)      # after the at-fork hooks above: a child's reset comes before its backstop's
    return rec


def _handle_record(token: int, info: tuple) -> dict:
    file, name, itemsize, shape = info
    return {"kind": "handle", "token": token, "file": file, "dataset": name, "itemsize": itemsize,
            "shape": list(shape)}
