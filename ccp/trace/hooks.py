"""The recorder's process hooks (stdlib at import: loaded into traced programs).

An import hook that patches a library right after the program imports it (h5py, netCDF4), a flush
before anything goes on a multiprocessing queue, a flush before ``os._exit``, and telling a fork by
multiprocessing from the program's own (the flush on SIGTERM: :mod:`ccp.trace.sigterm`).
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
