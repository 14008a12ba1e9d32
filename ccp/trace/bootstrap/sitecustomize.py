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
    root = os.environ.get("CCP_TRACE_ROOT")
    if root and root not in sys.path:
        sys.path.append(root)          # appended: never shadows the program's own modules
    try:
        from ccp.trace.exec_flush import continue_seq, flush_before_exec
        from ccp.trace.recorder import install
    except Exception as exc:  # never stop the program; say why nothing is recorded
        sys.stderr.write(f"ccp trace: recorder not started in pid {os.getpid()}: {exc}\n")
        return
    rec = install(out_dir)
    continue_seq(rec)           # an exec of a traced process: its calls follow the old image's
    flush_before_exec(rec)      # os.exec* would drop the buffer


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


try:
    _start()
    _chain()
except KeyboardInterrupt:
    _leave_as_interrupted()
