"""The recorder's process hooks (stdlib at import: loaded into traced programs).

An import hook that patches a library right after the program imports it (h5py, netCDF4), a flush
before anything goes on a multiprocessing queue, a flush before ``os._exit``, and in multiprocessing
children a flush on SIGTERM (what ``Pool.terminate`` sends its workers).
"""

from __future__ import annotations

import os


def patch_queues(rec) -> None:
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
            if rec.buffered():
                rec.flush()
            return _orig(self, *args, **kwargs)

        cls.put = put  # type: ignore[method-assign]


def patch_library(rec, name: str, patch) -> None:
    """``patch(rec)`` for an imported library; one that cannot be patched stops recording (the trace says why)."""
    try:
        patch(rec)
        if not getattr(rec, "queues_patched", False):
            patch_queues(rec)
            rec.queues_patched = True
    except Exception as exc:  # a version the recorder cannot patch: record nothing, say why
        module = __import__("sys").modules.get(name)
        rec.stop(f"{name} {getattr(module, '__version__', '?')} could not be patched: {type(exc).__name__}: {exc}")


class ImportHook:
    """A meta-path finder that patches each library of ``patches`` ({module: patch(rec)}) right after the
    program imports it."""

    def __init__(self, rec, patches: dict) -> None:
        self.rec = rec
        self.patches = dict(patches)
        self.busy = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.patches or self.busy:
            return None
        import importlib.util

        self.busy = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self.busy = False
        if spec is None or spec.loader is None:
            return spec
        loader, rec, patch = spec.loader, self.rec, self.patches.pop(fullname)

        class Loader:
            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                loader.exec_module(module)
                patch_library(rec, fullname, patch)

        spec.loader = Loader()  # type: ignore[assignment]
        return spec


def patch_exit(rec) -> None:
    """``os._exit`` skips atexit: write the buffer first (the exit itself is unchanged)."""
    real_exit = os._exit

    def _exit(status, _real=real_exit):
        rec.finish_quietly()
        _real(status)

    _exit.__wrapped__ = real_exit  # type: ignore[attr-defined]
    os._exit = _exit


def flush_on_sigterm(rec) -> None:
    """In a multiprocessing child: SIGTERM writes the buffer and says "end" first, then kills the process as before.

    ``Pool.terminate`` (which leaving ``with Pool()`` calls) ends its workers with SIGTERM, which skips every exit
    hook: without this each worker of a pool torn down by its own parent read as a process that died unrecorded.
    Left alone when the program (an initializer, say) already handles SIGTERM; a SIGKILL still loses the buffer,
    and the trace says so. A handler that cannot run soon is done by :func:`term_backstop`. Not installed in the
    top-level program: a Python-level handler would show there (``signal.getsignal`` no longer SIG_DFL) and would
    delay its death until a long C call (an HDF5 read, a numpy operation) returns; its buffered calls lost to a
    SIGTERM are said (the trace is INCOMPLETE).
    """
    import signal

    current = signal.getsignal(signal.SIGTERM)
    if current is not signal.SIG_DFL:
        if current is getattr(rec, "on_term", None):    # ours since the fork: a forkserver's child had the
            term_backstop(rec, current)                 # forkserver's wakeup fd then, multiprocessing's reset since
        return

    def on_term(signum, _frame):
        if rec.finishing or rec.flushing:
            # the signal landed inside finish() or a write (a worker leaving by itself as its parent terminates the
            # pool): killing it now would cut its last write or its "end" line; they end it by this signal when done
            rec.term_pending = signum
            return
        rec.finish_quietly()
        die_of(signum)

    signal.signal(signal.SIGTERM, on_term)
    rec.on_term = on_term
    term_backstop(rec, on_term)


def term_backstop(rec, handler, grace_s: float = 1.0) -> None:
    """End the process if a SIGTERM's Python handler has not run ``grace_s`` after the signal came.

    Python runs a handler only when the main thread runs Python again. A Pool worker waiting for the queue's lock
    is woken as another worker leaves, loses the lock to its parent (``Pool.terminate`` takes it) and waits again
    inside glibc's ``sem_wait``: a SIGTERM that lands in between never interrupts the wait, and the worker (and its
    parent joining it) waited forever where the default SIGTERM would have killed it. Python also writes each
    signal's number to its wakeup fd as it comes: a thread reading it writes the buffer, says "end" and kills the
    process by SIGTERM with the default action. Skipped when the program has a wakeup fd of its own (asyncio), idle
    once the program sets one or a SIGTERM handler (``handler`` no longer the one installed) of its own.
    """
    import ctypes
    import signal
    import threading
    import time

    if getattr(rec, "backstop_pid", None) == os.getpid():
        return
    r, w = os.pipe()
    os.set_blocking(w, False)
    try:
        old = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    except ValueError:      # not the main thread
        old = None
    if old != -1:
        if old is not None:
            signal.set_wakeup_fd(old)
        os.close(r)
        os.close(w)
        return
    pid = os.getpid()

    def watch() -> None:
        while True:
            try:
                got = os.read(r, 64)
            except OSError:
                return
            if not got or os.getpid() != pid:
                return
            if signal.SIGTERM not in got or signal.getsignal(signal.SIGTERM) is not handler:
                continue
            time.sleep(grace_s)             # the handler's own time to run (it kills the process when done)
            if signal.getsignal(signal.SIGTERM) is not handler:
                continue
            give_up = time.monotonic() + 10 * grace_s
            while (rec.finishing or rec.flushing) and time.monotonic() < give_up:     # a write under way
                time.sleep(0.05)
            try:
                rec.finish()
            except BaseException:  # the process is being ended: end it whatever happened here
                pass
            libc = ctypes.CDLL(None, use_errno=True)
            libc.signal.restype = ctypes.c_void_p
            libc.signal(int(signal.SIGTERM), None)     # SIG_DFL, from a thread (signal.signal is the main thread's)
            os.kill(pid, signal.SIGTERM)

    pipe_open = [True]      # in this process; a child's copy is closed by its first at-fork run

    def in_child() -> None:     # a fork of this process: the pipe and the thread are this process's
        if not pipe_open[0]:    # a grandchild: r and w may be other files by now
            return
        pipe_open[0] = False
        try:
            old_fd = signal.set_wakeup_fd(-1)
            if old_fd != w:
                signal.set_wakeup_fd(old_fd)
        except ValueError:      # forked from a thread that is not the child's main one
            pass
        for fd in (r, w):
            try:
                os.close(fd)
            except OSError:
                pass

    os.register_at_fork(after_in_child=in_child)
    threading.Thread(target=watch, name="ccp-trace-sigterm", daemon=True).start()
    rec.backstop_pid = pid


def forked_by_multiprocessing() -> bool:
    """Whether the ``os.fork()`` this child (in an at-fork hook) returns from was multiprocessing's: a ``fork``
    Process or Pool worker, or a forkserver's child. Told by the frame that called ``os.fork`` (the hooks run inside
    it), the first one outside the recorder; CPython only, like the recorder."""
    import sys
    import types

    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("ccp.trace."):
        frame = frame.f_back
    return frame is not None and frame.f_globals.get("__name__") in ("multiprocessing.popen_fork",
                                                                     "multiprocessing.forkserver")


def die_of(signum: int) -> None:
    """End this process by ``signum`` as if no handler had caught it."""
    import signal

    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
