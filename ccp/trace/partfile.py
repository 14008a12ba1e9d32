"""Appending to a part file all or nothing, and telling the program's exceptions from the recorder's own (stdlib at
import: loaded into traced programs).

A traced program is never disturbed: an exception its own signal handler raises (a ``TimeoutError`` from SIGALRM, a
``KeyboardInterrupt``) may land anywhere, the recorder's bookkeeping included, and must reach the program as it would
untraced; an exception of the recorder's own (a full disk, a bug) must not. CPython runs a signal handler only at a
call or a loop's jump, so the recorder's straight-line code between two calls is never cut; its calls can be.
"""

from __future__ import annotations

import os
import signal  # here, not where it is used: a read in a __del__ at interpreter exit cannot import any more


def raised_by_program(exc: BaseException) -> bool:
    """Whether ``exc`` is the program's to see: a BaseException that is not an Exception (KeyboardInterrupt,
    SystemExit, a program's own), or an exception raised by (or under) a Python signal handler of the program's,
    found by its traceback passing through the code of a handler. The traceback starts at the frame that caught
    ``exc``, so a recorder's failure inside a handler's own h5py call is still the recorder's.

    Quick when it is the program's (a traceback's few frames looked up in the handlers' code seen before): while the
    exception is on its way out of the recorder the program's handler may fire again and replace it."""
    if not isinstance(exc, Exception):
        return True
    for refresh in (False, True):
        if refresh:
            _handler_codes.update(_installed_handler_codes())
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code in _handler_codes:
                return True
            tb = tb.tb_next
    return False


_handler_codes: set = set()     # the code of every Python signal handler seen installed (one seen once stays)


def _installed_handler_codes() -> set:
    codes = set()
    for signum in signal.valid_signals():
        handler = signal.getsignal(signum)     # never in a try: a handler's OSError (TimeoutError) would be caught
        code = getattr(getattr(handler, "__func__", handler), "__code__", None)
        if code is not None:
            codes.add(code)
    return codes


def write_at(path: str, data: bytes, end: int, owner) -> bool:
    """Write ``data`` to ``path`` at ``end``, the length its committed lists take, first cutting off whatever lies
    past it: a write an exception cut short, or one done but not yet counted when the exception landed, is written
    again in full by the next flush and a torn list never hides the ones after it. The caller counts the write done
    (its new length ``end + len(data)``) right after this returns, with no call in between.

    Whether it wrote: not if ``owner.part`` (the recorder's part file) stopped being ``path`` meanwhile, which is what
    a fork does in the child (ccp.trace.recorder.install): the program's signal handler called ``os.fork`` during the
    write, and the child must neither cut nor write the parent's file; the test comes right before each change to the
    file, with no call in between, so a fork cannot come after it."""
    if owner.part is not path:
        return False
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    except FileNotFoundError:   # its folder removed: made again (os.makedirs on every write would catch OSErrors,
        os.makedirs(os.path.dirname(path), exist_ok=True)     # a TimeoutError from the program's handler among them)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        if owner.part is not path:
            return False
        os.ftruncate(fd, end)
        view, at = memoryview(data), end
        while view:
            if owner.part is not path:
                return False
            k = os.pwrite(fd, view, at)
            at += k
            view = view[k:]
        return True
    finally:
        os.close(fd)
