"""Write a traced process's buffered calls before it execs (loaded into traced programs: stdlib only).

``os.exec*`` replaces the process image: atexit and every buffer go with it, so the calls a process made since its
recorder's last write were lost (a forked child that reads, then execs another program, kept none of its reads;
the trace still said complete). ``os.execv`` and ``os.execve`` are wrapped (``os.execl*``, ``os.execvp*`` reach them
through ``os``'s globals): the recorder writes its buffer and says "end" first; an exec that fails leaves the process
recording as before. An exec'd Python gets the recorder again under the same pid: the seq the calls reached is
handed to it (``CCP_TRACE_EXEC_SEQ``, only to an image whose environment starts the recorder) so its calls follow
the old image's and never repeat their (pid, seq).
"""

from __future__ import annotations

import itertools
import os

ENV_EXEC_SEQ = "CCP_TRACE_EXEC_SEQ"
ENV_DIR = "CCP_TRACE_DIR"       # ccp.trace.recorder.ENV_DIR


def flush_before_exec(rec) -> None:
    """Wrap ``os.execv``/``os.execve`` (once per interpreter): ``rec`` writes and ends before the image goes."""
    for name in ("execv", "execve"):
        real = getattr(os, name)
        if getattr(real, "__wrapped__", None) is not None:
            continue
        setattr(os, name, _wrapped(rec, real, name == "execve"))


def continue_seq(rec) -> None:
    """In a process that is an exec of a traced one (same pid): number calls on from where the old image stopped."""
    handed = os.environ.pop(ENV_EXEC_SEQ, "")
    pid, _, seq = handed.partition(":")
    if pid == str(os.getpid()) and seq.isdigit():
        rec.seq = itertools.count(int(seq), 2)


def _wrapped(rec, real, with_env: bool):
    def exec_(path, args, *rest, _real=real):
        seq = f"{os.getpid()}:{next(rec.seq)}"      # even, as the recorder's seq are: the new image goes on from it
        rec.finish_quietly()
        if with_env and rest and hasattr(rest[0], "keys"):
            env = rest[0]
            if ENV_DIR in env:
                env = {**env, ENV_EXEC_SEQ: seq}
            rest = (env, *rest[1:])
        elif ENV_DIR in os.environ:
            os.environ[ENV_EXEC_SEQ] = seq
        try:
            return _real(path, args, *rest)
        except BaseException:
            os.environ.pop(ENV_EXEC_SEQ, None)
            rec.ended = False       # the image stayed: its later calls are written at its exit, as before
            raise

    exec_.__wrapped__ = real  # type: ignore[attr-defined]
    exec_.__name__ = real.__name__
    exec_.__doc__ = real.__doc__
    return exec_
