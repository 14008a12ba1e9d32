"""Run a program with the recorder on in it and in every Python process it starts.

The program runs in its own process group (given the terminal's foreground when there is one), so
``ccp trace`` can stop all of it: SIGTERM and Ctrl-C are passed on to the group, every Ctrl-C as it would come
untraced (a program may quit cleanly on its own second one), a third Ctrl-C sends SIGTERM (the recorder writes
what it buffered, then the process dies as untraced), and a program still running 10 s after a SIGTERM (or at a
fourth Ctrl-C) is killed; a watchdog process kills the group when ``ccp trace`` itself dies (kill -9). Whatever
was recorded up to then is merged into the trace.

The recorders write into a private folder outside ``-o`` (:mod:`ccp.trace.parts_folder`: a program that empties
its output folder where ``-o`` is keeps every call), moved to ``-o/parts`` and merged when the program has ended.

While the program runs, ``ccp trace`` listens on a status socket (start, end and error lines from each
process's recorder: they need no disk space) and watches /proc for Python processes among the
program's descendants, so the trace can say which processes ran without the recorder.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from ccp.errors import CcpError
from ccp.trace.after_run import annotate, imported_libraries
from ccp.trace.libraries import untraced_note
from ccp.trace.parts_folder import PartsFolder
from ccp.trace.store import PARTS, merge_or_explain

BOOTSTRAP = Path(__file__).resolve().parent / "bootstrap"
PACKAGE_ROOT = Path(__file__).resolve().parents[2]
ENV_SOCK = "CCP_TRACE_SOCK"      # the recorder's name for it too (ccp.trace.recorder.ENV_SOCK)
TERM_GRACE_S = 10.0             # after passing SIGTERM on, how long the program may take to leave
# after the program left, how long its recorded processes may take to say "end" (waited only while one is alive and
# has not said it: a pool's forkserver or a terminated worker ending on a loaded machine took over 2 s in CI)
END_GRACE_S = 10.0
INTS_PASSED_ON = 2              # Ctrl-Cs passed on as SIGINT before ccp trace sends SIGTERM
GROUP_GRACE_S = 3.0             # after a stopped program left, how long the rest of its group may take (twice)


def traced_env(parts_dir: Path, base: dict | None = None, sock_name: str | None = None) -> dict:
    """The environment that starts the recorder in every Python interpreter that inherits it."""
    env = dict(os.environ if base is None else base)
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(BOOTSTRAP) + (os.pathsep + old if old else "")
    env["CCP_TRACE_DIR"] = os.path.abspath(parts_dir)      # the program may chdir before its first flush
    env["CCP_TRACE_ROOT"] = str(PACKAGE_ROOT)
    if sock_name:
        env[ENV_SOCK] = sock_name
    else:
        env.pop(ENV_SOCK, None)
    return env


def resolve_command(cmd: list[str]) -> list[str]:
    """A bare ``script.py`` runs with this Python; anything else runs as given."""
    if not cmd:
        raise CcpError("no command given: ccp trace -o TRACE -- python your_program.py ARGS")
    if cmd[0].endswith(".py") and not shutil.which(cmd[0]):
        return [sys.executable, *cmd]
    return list(cmd)


def prepare_dir(out: Path, force: bool) -> Path:
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise CcpError(f"{out}: exists and is not a folder")
    if (out / "trace.json").exists() or (out / PARTS).exists():
        if not force:
            raise CcpError(f"{out}: already holds a trace (use --force to replace it)")
        for name in ("trace.json", "calls.parquet"):
            (out / name).unlink(missing_ok=True)
        shutil.rmtree(out / PARTS, ignore_errors=True)
    try:        # an empty placeholder while the program runs (the recorders write elsewhere: ccp.trace.parts_folder)
        (out / PARTS).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CcpError(f"{out}: cannot create the trace folder ({exc.strerror or exc})") from None
    return out


def _is_python(argv0: str) -> bool:
    return os.path.basename(argv0).startswith("python")


class StatusListener:
    """Collects the recorders' status lines (``pid<TAB>what<TAB>...``) from a Linux abstract socket."""

    def __init__(self) -> None:
        self.name = f"ccp-trace-{os.getpid()}-{secrets.token_hex(6)}"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind("\0" + self.name)
        self.sock.settimeout(0.1)
        self.lines: list[list[str]] = []
        self.still_running: list[int] = []      # started, silent and alive when close() stopped waiting
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, name="ccp-trace-status", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        while not self.done.is_set():
            self._receive()

    def _receive(self) -> bool:
        try:
            data = self.sock.recv(8192)
        except (TimeoutError, BlockingIOError, OSError):
            return False
        self.lines.append(data.decode("utf-8", "replace").split("\t"))
        return True

    def unended(self) -> set[int]:
        """Live processes that may still say "end": more "start" lines than "end" lines, or one that said "end" and
        still runs Python (an exec'd Python, which says "start" again under the pid whose old image said "end" before
        the exec: ccp.trace.exec_flush, and may not have said it yet; or a Python about to leave)."""
        open_images: dict[int, int] = {}
        for x in list(self.lines):
            if len(x) > 1 and x[0].isdigit() and x[1] in ("start", "end"):
                open_images[int(x[0])] = open_images.get(int(x[0]), 0) + (1 if x[1] == "start" else -1)
        return {pid for pid, n in open_images.items() if _alive(pid) and (n > 0 or _runs_python(pid))}

    def close(self, grace_s: float) -> list[list[str]]:
        """Stop listening once every started process said "end", is gone, or ``grace_s`` passed."""
        deadline = time.monotonic() + grace_s
        waiting = sorted(self.unended())
        while waiting and time.monotonic() < deadline:
            time.sleep(0.05)
            waiting = sorted(self.unended())
        self.still_running = sorted(waiting)
        self.done.set()
        self.thread.join()
        self.sock.settimeout(0)
        while self._receive():
            pass
        self.sock.close()
        return list(self.lines)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _runs_python(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return _is_python(f.read().split(b"\0", 1)[0].decode("utf-8", "replace"))
    except OSError:
        return False


def _group_members(pgid: int) -> set[int]:
    """The live (not zombie) processes of process group ``pgid``."""
    found: set[int] = set()
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                state, _ppid, pgrp = f.read().rsplit(")", 1)[1].split()[:3]
        except (OSError, ValueError):
            continue
        if int(pgrp) == pgid and state != "Z":
            found.add(int(name))
    return found


class DescendantWatch:
    """Polls /proc for the program's descendants and keeps the last command line of each Python one."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.python: dict[int, str] = {}
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, name="ccp-trace-watch", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        delay = 0.02
        while not self.done.wait(delay):
            self.poll()
            delay = min(delay * 1.5, 0.25)

    def poll(self) -> None:
        parent: dict[int, int] = {}
        try:
            names = os.listdir("/proc")
        except OSError:
            return
        for name in names:
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat") as f:
                    parent[int(name)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
        mine = {self.root}
        grew = True
        while grew:
            new = {p for p, pp in parent.items() if pp in mine and p not in mine}
            grew = bool(new)
            mine |= new
        cmdline: dict[int, bytes] = {}
        for pid in mine:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmdline[pid] = f.read()
            except OSError:
                continue
        for pid, raw in cmdline.items():
            if pid == self.root:
                continue
            argv = raw.split(b"\0")
            # a child still showing its parent's command line is a fork's image: one that runs Python code (os.fork,
            # multiprocessing) announces itself to the recorder at once, from its at-fork hook; one that never does
            # was forked to exec (subprocess without a preexec_fn) and seen before its exec (breaker5: botocore's
            # `uname -p`, reported as a Python process without the recorder)
            if argv and argv[0] and _is_python(argv[0].decode("utf-8", "replace")) and raw != cmdline.get(parent[pid]):
                self.python[pid] = b" ".join(argv).decode("utf-8", "replace").strip()[:200]
            else:
                self.python.pop(pid, None)

    def stop(self) -> dict[int, str]:
        self.done.set()
        self.thread.join()
        return dict(self.python)


def _watchdog(keep=None) -> int:
    """A forked process that kills the program's group if ``ccp trace`` dies without saying "done", then
    runs ``keep(pgid)`` (merge what was recorded). Forked before the program starts (the program itself
    writes ``pgid N`` into the pipe before its exec: no moment where ccp trace dies and it runs on) and
    before ccp trace starts any thread."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:       # the watchdog: no Python objects touched but the pipe and the group id
        try:
            os.close(w)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            try:
                os.setpgid(0, 0)          # out of the terminal's way: Ctrl-C and kill -TERM -PGID spare it
            except OSError:
                pass
            data = b""
            while True:
                chunk = os.read(r, 64)
                if not chunk:
                    break
                data += chunk
            said = data.split(b"pgid ", 1)[1].split(b"\n", 1)[0] if b"pgid " in data else b""
            if b"done" not in data and said.isdigit():
                try:
                    os.killpg(int(said), signal.SIGKILL)
                except OSError:
                    pass
                if keep is not None:
                    keep(int(said))
        finally:
            os._exit(0)
    os.close(r)
    return w


def _nth(n: int) -> str:
    return {1: "first", 2: "second", 3: "third", 4: "fourth"}.get(n, f"{n}th")


def _tty_fd() -> int | None:
    try:
        return 0 if os.isatty(0) and os.tcgetpgrp(0) == os.getpgrp() else None
    except OSError:
        return None


def _give_terminal(fd: int | None, pgid: int) -> None:
    if fd is None:
        return
    old = signal.signal(signal.SIGTTOU, signal.SIG_IGN)   # a background group may not set the foreground
    try:
        os.tcsetpgrp(fd, pgid)
    except OSError:
        pass
    finally:
        signal.signal(signal.SIGTTOU, old)


class _Stopper:
    """ccp trace's SIGINT/SIGTERM while the program runs: pass them on, escalate, remember why."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.reason: str | None = None
        self.interrupts = 0
        self.kill_at: float | None = None

    def _group(self, sig: int) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except OSError:
            pass

    def on_int(self, _signum, _frame) -> None:
        """Ctrl-C 1 and 2 go to the program as they would untraced (its own handler may quit on the second: a
        SIGKILL there lost its cleanup and every buffered call); 3 sends SIGTERM, which the recorder answers by
        writing its buffer before the process dies; 4 kills the group at once."""
        self.interrupts += 1
        if self.interrupts <= INTS_PASSED_ON:
            if self.interrupts == 1:
                self.reason = "interrupted (Ctrl-C)"
                sys.stderr.write(f"\nccp trace: interrupted; passing Ctrl-C to the program (as untraced: every Ctrl-C "
                                 f"is; a {_nth(INTS_PASSED_ON + 1)} one sends it SIGTERM); what it recorded will be "
                                 "kept\n")
            else:
                self.reason = f"interrupted {self.interrupts} times (Ctrl-C), each passed on to the program"
            self._group(signal.SIGINT)
        elif self.interrupts == INTS_PASSED_ON + 1:
            self.reason = f"interrupted {self.interrupts} times (Ctrl-C): the program was sent SIGTERM"
            sys.stderr.write(f"\nccp trace: Ctrl-C {self.interrupts} times: sending SIGTERM to the program; it is "
                             f"killed if still running in {TERM_GRACE_S:.0f} s (Ctrl-C once more kills it now, "
                             "losing what it has not written)\n")
            self._group(signal.SIGTERM)
            self.kill_at = time.monotonic() + TERM_GRACE_S
        else:
            self.reason = f"interrupted {self.interrupts} times (Ctrl-C): the program was killed"
            self._group(signal.SIGKILL)

    def on_term(self, _signum, _frame) -> None:
        self.reason = "sent SIGTERM: passed on to the program"
        self._group(signal.SIGTERM)
        if self.kill_at is None:
            self.kill_at = time.monotonic() + TERM_GRACE_S

    def finish_group(self) -> str | None:
        """After a program ccp trace stopped has left: stop what is left of its process group too.

        A child can miss the passed-on signal: CPython drops a signal that arrives between ``fork`` and the
        child's after-fork reset (and an exception in an after-fork hook is printed and ignored), so a child
        forked just before Ctrl-C sleeps on. It gets GROUP_GRACE_S to leave, then the signal once more and as
        long again, then SIGKILL. A program that was not stopped keeps its background children.
        """
        if self.reason is None:
            return None
        sig = signal.SIGTERM if self.kill_at is not None or "SIGTERM" in self.reason else signal.SIGINT
        for step in (None, sig, signal.SIGKILL):
            if step is not None:
                self._group(step)
            deadline = time.monotonic() + (GROUP_GRACE_S if step != signal.SIGKILL else 1.0)
            while _group_members(self.proc.pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            left = _group_members(self.proc.pid)
            if not left:
                return None if step is None else (f"{signal.Signals(step).name} sent again to the rest of the "
                                                  f"program's process group after the program left")
        return f"{len(left)} process(es) of the program's group still running after SIGKILL: {sorted(left)}"

    def wait(self) -> int:
        while True:
            timeout = None if self.kill_at is None else max(self.kill_at - time.monotonic(), 0.01)
            try:
                return self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.reason = f"{self.reason}; still running {TERM_GRACE_S:.0f} s later, it was killed"
                self._group(signal.SIGKILL)
                self.kill_at = None


def run_traced(cmd: list[str], out: Path, force: bool = False, checksum: bool = True) -> tuple[int, dict]:
    """Run ``cmd`` with recording on; its stdin/stdout/stderr are the caller's. Returns (status, header).

    Status is the program's exit status, or 128 + N when a signal N killed it (as a shell says).
    """
    argv = resolve_command(cmd)
    parts = PartsFolder(out)
    try:
        out = prepare_dir(out, force)
    except BaseException:
        parts.discard()
        raise
    listener = StatusListener()
    env = traced_env(parts.path, sock_name=listener.name)
    tty = _tty_fd()
    t0 = time.perf_counter()

    def keep_orphaned(pid: int) -> None:        # in the watchdog, after ccp trace died (kill -9)
        try:
            time.sleep(0.2)
            lost = parts.lost()
            parts.move_to_out()
            merge_or_explain(out, argv, 128 + 9, time.perf_counter() - t0, checksum=checksum,
                             run={"returncode": -9, "pid": pid, "top_is_python": False, "status_lines": [],
                                  "python_seen": {}, "reasons": [lost] if lost else [],
                                  "stopped_by": "killed (kill -9): its watchdog killed the program and kept what "
                                  "was recorded"})
        except Exception as exc:  # nobody is left to tell but stderr
            sys.stderr.write(f"ccp trace: {exc}\n")

    watchdog = _watchdog(keep_orphaned)

    def in_child() -> None:       # already in its own group (process_group=0); runs before close_fds and exec
        try:
            os.write(watchdog, f"pgid {os.getpid()}\n".encode())
        except OSError:
            pass
        _give_terminal(tty, os.getpid())      # take the terminal if we had it

    try:
        proc = subprocess.Popen(argv, env=env, process_group=0, preexec_fn=in_child)
    except BaseException as exc:
        listener.sock.close()
        parts.discard()
        os.write(watchdog, b"done")        # nothing started: the watchdog leaves
        os.close(watchdog)
        if isinstance(exc, FileNotFoundError):
            raise CcpError(f"{argv[0]}: command not found") from None
        if isinstance(exc, PermissionError):
            raise CcpError(f"{argv[0]}: permission denied") from None
        raise
    listener.start()
    watch = DescendantWatch(proc.pid)
    watch.start()
    stopper = _Stopper(proc)
    old_int = signal.signal(signal.SIGINT, stopper.on_int)
    old_term = signal.signal(signal.SIGTERM, stopper.on_term)
    try:
        rc = stopper.wait()
        group_note = stopper.finish_group()
    finally:
        _give_terminal(tty, os.getpgrp())
        try:
            os.write(watchdog, b"done")
        finally:
            os.close(watchdog)
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)
    wall = time.perf_counter() - t0
    status = rc if rc >= 0 else 128 - rc
    python_seen = watch.stop()
    lines = listener.close(END_GRACE_S)
    top_python = any(_is_python(a) for a in argv[:4])
    lost = parts.lost()
    try:
        parts.move_to_out()
        header = merge_or_explain(out, argv, status, wall, checksum=checksum,
                                  run={"returncode": rc, "pid": proc.pid, "top_is_python": top_python,
                                       "status_lines": lines, "python_seen": python_seen,
                                       "reasons": [lost] if lost else [],
                                       "still_running": listener.still_running, "end_grace_s": END_GRACE_S,
                                       "stopped_by": stopper.reason + (f"; {group_note}" if group_note else "")
                                       if stopper.reason else None})
    except CcpError as exc:
        raise TraceNotWritten(str(exc), status) from None
    try:        # the libraries the processes imported; netCDF4 variables' HDF5 paths and stored layouts, read-only
        header = annotate(out, imported_libraries(lines))
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"ccp trace: the trace's libraries and netCDF4 variables were not checked: {exc}\n")
    if note := untraced_note(header):
        sys.stderr.write(f"ccp trace: {note}\n")
    return status, header


class TraceNotWritten(CcpError):
    """The program ran (``status``) but its trace could not be written."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status
        self.exit_code = status or 2
