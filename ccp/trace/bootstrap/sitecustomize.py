"""Put first on PYTHONPATH by `ccp trace`: starts ccp's h5py recorder in every Python process.

Python imports ``sitecustomize`` at startup of every interpreter that inherits the environment
(spawned multiprocessing workers and subprocesses included). After starting the recorder this
module runs the sitecustomize it shadows, if there is one, so the program's own setup still happens.
"""

import os
import sys


def _start():
    out_dir = os.environ.get("CCP_TRACE_DIR")
    if not out_dir:
        return
    # ccp itself is found in CCP_TRACE_ROOT after sys.path (never shadowing the program's own modules), and nothing
    # else there: with the root on sys.path a traced program could import the checkout's tests, benchmarks or
    # examples, which fail to import untraced
    _NamedForTools.root = os.environ.get("CCP_TRACE_ROOT")
    sys.meta_path.insert(0, _NamedForTools)
    try:
        from ccp.trace.exec_flush import continue_seq, flush_before_exec
        from ccp.trace.recorder import install
    except Exception as exc:  # never stop the program; say why nothing is recorded
        sys.stderr.write(f"ccp trace: recorder not started in pid {os.getpid()}: {exc}\n")
        return
    rec = install(out_dir)
    continue_seq(rec)           # an exec of a traced process: its calls follow the old image's
    flush_before_exec(rec)      # os.exec* would drop the buffer


# The code file name of ccp's modules in a traced process. "<": not a real file, which tracers (coverage.py) leave
# out. "importlib._bootstrap": CPython's warnings skip such frames when they count a warning's stacklevel, as they
# skip the import system's, so a warning h5py raises for its caller (stacklevel 2 or 3) names the program's line,
# not the recorder's wrapper between them.
CODE_NAME = "<ccp trace, skipped as importlib._bootstrap is>"


class _NamedForTools:
    """Loads ccp's modules with code file names starting ``CODE_NAME``, the source still found through the loader.

    The program's own ``coverage run`` measured the recorder as the program's code (13 of ccp's modules in its report,
    TOTAL 100% -> 28%, when ccp is installed editable, outside site-packages): coverage.py, like other tracers, leaves
    out code whose file name starts with ``<`` (not a real file). Tracebacks still show the lines (linecache asks the
    loader); ``__file__`` stays the real path.
    """

    # a type comment, not an annotation: this file runs under the traced program's own Python, maybe before 3.10
    root = None  # type: str | None

    @staticmethod
    def find_spec(name, path=None, target=None):
        import importlib.machinery

        if name != "ccp" and not name.startswith("ccp."):
            return None
        if path is None and _NamedForTools.root:
            path = [*sys.path, _NamedForTools.root]
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is not None and type(spec.loader) is importlib.machinery.SourceFileLoader:
            spec.loader = _SourceNamedForTools(spec.loader.name, spec.loader.path)
        return spec


def _renamed(code, name):
    import types

    consts = tuple(_renamed(c, name) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=name, co_consts=consts)


def _source_loader():
    import importlib.machinery

    class SourceNamedForTools(importlib.machinery.SourceFileLoader):
        def get_code(self, fullname):
            code = super().get_code(fullname)      # from __pycache__ when fresh: renaming costs no compile
            return _renamed(code, CODE_NAME + self.path) if code is not None else None

    return SourceNamedForTools


def _chain():
    """Run the next sitecustomize on sys.path (the one this file hides)."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


def _leave_as_interrupted():
    """Ctrl-C while the recorder loads: leave as Python leaves on an uncaught Ctrl-C (killed by SIGINT),
    not with site's "Fatal Python error: init_import_site" and status 1 (the recorder widened that window)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)


_SourceNamedForTools = _source_loader()
for _f in (_NamedForTools.find_spec, _SourceNamedForTools.get_code, _renamed):   # run later, inside the program
    _f.__code__ = _renamed(_f.__code__, CODE_NAME + __file__)

try:
    _start()
    _chain()
except KeyboardInterrupt:
    _leave_as_interrupted()
