"""A SIGTERM keeps a traced process's calls (stdlib at import: loaded into traced programs).

SIGTERM's default action kills a process with no exit hook run, so the calls the recorder had buffered were lost
(the trace said INCOMPLETE). Every traced process whose SIGTERM is at the default gets a Python handler that writes
the buffer, says "end" to ``ccp trace`` and then dies of the signal with the default action: the same death (status
-15 / 143), nothing printed, no finally block or exit hook of the program's run. ``Pool.terminate`` ends its workers
this way, and a user's ``kill`` or a batch system's ends the program this way.

What a Python-level handler would change, and how each is kept as it was:

* ``signal.getsignal(SIGTERM)`` would answer the recorder's handler, and ``signal.signal(SIGTERM, h)`` return it:
  both answer ``SIG_DFL`` instead (:func:`hide_from_program`). A program's own handler, ``SIG_IGN`` or anything it
  sets is installed as asked and runs and decides as untraced; setting ``SIG_DFL`` (the classic "clean up, then
  ``signal(SIGTERM, SIG_DFL)``; ``kill(getpid(), SIGTERM)``") puts the recorder's back, which dies the same way.
* Python runs a handler only when the main thread runs Python again: one blocked in a C call that waits again after
  a signal interrupts it (glibc's ``system()``, a ``sem_wait`` woken at the wrong moment) would never die where the
  default action kills it. :func:`term_backstop` ends it after 1 s from a thread. That thread is made with
  ``_thread`` (not in ``threading.enumerate()``) and reads Python's wakeup fd, which ``signal.set_wakeup_fd``
  hides in turn (a program's own fd replaces it, as asyncio's does; the backstop is then idle).
* A process ignoring SIGTERM when it starts (``SIG_IGN`` inherited) is left alone; so is one whose SIGTERM is
  blocked (the handler never runs; ``sigwait`` takes the signal as untraced).

What stays different: a SIGTERM landing while the main thread holds the GIL in a long C call (a numpy operation, an
HDF5 read) kills the process when that call returns, not at once; a C library's system call it interrupts returns
EINTR instead of being restarted, as with the SIGINT handler every Python program has. A SIGKILL, a crash or a
C-level ``_exit`` still lose what is buffered, and the trace says so.
"""

from __future__ import annotations

import functools
import os
from typing import Any

GRACE_S = 1.0       # how long a SIGTERM's Python handler may take to run before the backstop ends the process


def keep_calls_on_sigterm(rec) -> None:
    """In a new process (``install``): the SIGTERM handler when SIGTERM is at its default, and the program's view of
    the ``signal`` module that hides it."""
    hide_from_program(rec)
    flush_on_sigterm(rec)


def flush_on_sigterm(rec) -> None:
    """SIGTERM writes the buffer and says "end" first, then kills the process as the default action would.

    Left alone when the process already handles or ignores SIGTERM (a program's initializer, ``SIG_IGN`` inherited);
    with the recorder's handler in force (inherited at a fork) only the backstop is started, this process's own."""
    import _signal

    current = _signal.getsignal(_signal.SIGTERM)
    on_term = _handler(rec)
    if current is on_term:
        term_backstop(rec, on_term)
    elif current == _signal.SIG_DFL:
        _signal.signal(_signal.SIGTERM, on_term)
        term_backstop(rec, on_term)


def _handler(rec):
    """The recorder's SIGTERM handler (one per recorder, so every check can tell it by identity)."""
    known = getattr(rec, "on_term", None)
    if known is not None:
        return known

    def on_term(signum, _frame):
        if rec.finishing or rec.flushing:
            # the signal landed inside finish() or a write (a worker leaving by itself as its parent terminates the
            # pool): killing it now would cut its last write or its "end" line; they end it by this signal when done
            rec.term_pending = signum
            return
        rec.finish_quietly()
        die_of(signum)

    rec.on_term = on_term
    return on_term


def hide_from_program(rec) -> None:
    """``signal.signal``, ``signal.getsignal`` and ``signal.set_wakeup_fd`` as the program would see them untraced:
    the recorder's SIGTERM handler reads as ``SIG_DFL``, its wakeup fd as none (-1). Once per interpreter (a forked
    child inherits the wrappers, which read the recorder's state of the process they run in)."""
    import _signal
    import signal

    if getattr(signal.signal, "__ccp_trace__", False):
        return
    real_signal, real_getsignal, real_wakeup = signal.signal, signal.getsignal, signal.set_wakeup_fd

    def ours(handler) -> bool:
        return handler is not None and handler is getattr(rec, "on_term", None)

    @functools.wraps(real_signal)
    def signal_(signalnum, handler):
        if signalnum == _signal.SIGTERM and _is_default(handler):
            handler = _handler(rec)         # the default's death, the calls kept
        old = real_signal(signalnum, handler)
        if handler is getattr(rec, "on_term", None):
            term_backstop(rec, handler)     # none yet in a process that started with SIGTERM ignored
        return signal.Handlers.SIG_DFL if ours(old) else old

    @functools.wraps(real_getsignal)
    def getsignal(signalnum):
        handler = real_getsignal(signalnum)
        return signal.Handlers.SIG_DFL if ours(handler) else handler

    @functools.wraps(real_wakeup)
    def set_wakeup_fd(fd, /, *, warn_on_full_buffer=True):
        mine = _backstop_fd(rec)
        if fd == -1 and mine != -1 and ours(_signal.getsignal(_signal.SIGTERM)):
            fd, warn_on_full_buffer = mine, False       # the program gives its fd up: the backstop's is back
        old = real_wakeup(fd, warn_on_full_buffer=warn_on_full_buffer)
        return -1 if old == mine and mine != -1 else old

    wrappers: dict[str, Any] = {"signal": signal_, "getsignal": getsignal, "set_wakeup_fd": set_wakeup_fd}
    for name, wrapper in wrappers.items():
        wrapper.__ccp_trace__ = True
        setattr(signal, name, wrapper)


def _is_default(handler) -> bool:
    """``SIG_DFL`` as ``signal.signal`` takes it: the ``Handlers`` member or the int 0."""
    return isinstance(handler, int) and not callable(handler) and handler == 0


def _backstop_fd(rec) -> int:
    """The write end of this process's backstop pipe (Python's wakeup fd while it is in force), or -1."""
    pid, _r, w, _pipe = getattr(rec, "backstop", None) or (0, -1, -1, None)
    return w if pid == os.getpid() else -1


def _identity(fd: int):
    """(st_dev, st_ino) of what descriptor ``fd`` is now, None when it is closed."""
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def drop_inherited_backstop(rec) -> None:
    """In a forked child: the parent's backstop pipe closed and Python's wakeup fd reset if it was that pipe (the
    thread reading it stayed in the parent). Idempotent: the state says whose the pipe is."""
    backstop = getattr(rec, "backstop", None)
    if backstop is None or backstop[0] == os.getpid():
        return
    _let_go(rec, backstop)


def keep_backstop_own(rec) -> None:
    """At a write: a backstop pipe whose descriptors the program closed (``os.closerange``, as python-daemon does),
    the numbers perhaps its own files now, is let go without a close, and Python's wakeup fd no longer names it."""
    backstop = getattr(rec, "backstop", None)
    if backstop is None or backstop[0] != os.getpid():
        return
    _pid, r, w, pipe = backstop
    if _identity(r) != pipe or _identity(w) != pipe:
        _let_go(rec, backstop, close=False)


def _let_go(rec, backstop, close: bool = True) -> None:
    """Forget the backstop pipe: Python's wakeup fd reset if it is the pipe's number, its descriptors closed only
    where they are still the pipe (a number the program closed and opened again is the program's file)."""
    import _signal

    rec.backstop = None
    _pid, r, w, pipe = backstop
    try:
        old = _signal.set_wakeup_fd(-1)
        if old != w:
            _signal.set_wakeup_fd(old)
    except ValueError:      # not the main thread (forked from another one, or a write on another thread)
        pass
    for fd in (r, w):
        if close and _identity(fd) == pipe:
            try:
                os.close(fd)
            except OSError:
                pass


def term_backstop(rec, handler, grace_s: float = GRACE_S) -> None:
    """End the process if a SIGTERM's Python handler has not run ``grace_s`` after the signal came.

    Python runs a handler only when the main thread runs Python again. A Pool worker waiting for the queue's lock
    is woken as another worker leaves, loses the lock to its parent (``Pool.terminate`` takes it) and waits again
    inside glibc's ``sem_wait``: a SIGTERM that lands in between never interrupts the wait, and the worker (and its
    parent joining it) waited forever where the default SIGTERM would have killed it. Python also writes each
    signal's number to its wakeup fd as it comes: a thread reading it writes the buffer, says "end" and kills the
    process by SIGTERM with the default action. Skipped when the program has a wakeup fd of its own (asyncio), idle
    once the program sets one or a SIGTERM handler (``handler`` no longer the one installed) of its own.
    """
    import _signal
    import _thread
    import time

    drop_inherited_backstop(rec)
    if _backstop_fd(rec) != -1:
        return
    r, w = _out_of_the_way(os.pipe())
    os.set_blocking(w, False)
    try:
        old = _signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    except ValueError:      # not the main thread
        old = None
    if old != -1:
        if old is not None:
            _signal.set_wakeup_fd(old)
        os.close(r)
        os.close(w)
        return
    pid = os.getpid()

    pipe = _identity(r)

    def watch() -> None:
        while True:
            if _identity(r) != pipe:        # the program closed it (os.closerange): never read a file of its own
                return
            try:
                got = os.read(r, 64)
            except OSError:
                return
            if not got or os.getpid() != pid:
                return
            if _signal.SIGTERM not in got or _signal.getsignal(_signal.SIGTERM) is not handler:
                continue
            time.sleep(grace_s)             # the handler's own time to run (it kills the process when done)
            if _signal.getsignal(_signal.SIGTERM) is not handler:
                continue
            give_up = time.monotonic() + 10 * grace_s
            while (rec.finishing or rec.flushing) and time.monotonic() < give_up:     # a write under way
                time.sleep(0.05)
            try:
                rec.finish()
            except BaseException:  # the process is being ended: end it whatever happened here
                pass
            die_of(_signal.SIGTERM)

    rec.backstop = (pid, r, w, pipe)
    os.register_at_fork(after_in_child=functools.partial(drop_inherited_backstop, rec))
    _thread.start_new_thread(watch, ())     # not a threading.Thread: the program's thread list stays its own


def _out_of_the_way(pipe: tuple[int, int]) -> tuple[int, int]:
    """The pipe's descriptors moved to numbers half way up the process's limit: a program that closes every
    descriptor past stderr and opens its own takes the lowest free numbers, so until the recorder's next write lets
    the pipe go (:func:`keep_backstop_own`) Python's wakeup byte goes to a file of the program's only if it opened that
    many. Left where they are when they cannot be moved."""
    import fcntl
    import resource

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    floor = max(3, (soft if 0 < soft < 1 << 16 else 1 << 16) // 2)
    moved = []
    for fd in pipe:
        try:
            high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, floor)
        except OSError:
            moved.append(fd)
            continue
        os.close(fd)        # made by this call a moment ago: the recorder's own
        moved.append(high)
    return moved[0], moved[1]


def die_of(signum: int) -> None:
    """End this process by ``signum`` as if no handler had caught it (from any thread: ``signal.signal`` is the main
    thread's, libc's ``signal()`` is anyone's)."""
    import _signal
    import _thread
    import threading

    if threading.main_thread().ident == _thread.get_ident():   # current_thread() would list the backstop's thread
        _signal.signal(signum, _signal.SIG_DFL)
    else:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.signal.restype = ctypes.c_void_p
        libc.signal(int(signum), None)     # SIG_DFL
    os.kill(os.getpid(), signum)
