"""moto's S3 server on the loopback interface: a real HTTP endpoint in a child process.

s3fs's own test suite reads through moto's server mode the same way. A subprocess (not moto's
in-process mock, not a thread of ours) keeps the server's work off the measuring process's GIL.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import IO

from ccp.errors import CcpError

HOST = "127.0.0.1"
# moto accepts any key unless IAM auth is switched on; these are the names its docs use
ACCESS_KEY = "testing"
SECRET_KEY = "testing"
REGION = "us-east-1"
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0


class ServerError(CcpError):
    """The loopback S3 server could not start."""


def free_port(host: str = HOST) -> int:
    """A port nobody listens on right now (the kernel's pick for port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the server gets SIGTERM if ccp dies without stopping it (kill -9, a crash): no orphans."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _have_moto_server() -> bool:
    import importlib.util

    return importlib.util.find_spec("moto") is not None and importlib.util.find_spec("flask") is not None


@dataclass(frozen=True)
class Endpoint:
    """Where the server listens and the credentials it accepts."""

    url: str
    access_key: str = ACCESS_KEY
    secret_key: str = SECRET_KEY
    region: str = REGION

    def environment(self) -> dict[str, str]:
        """What a shell exports so that boto3 / s3fs / the AWS CLI talk to this endpoint."""
        return {"AWS_ENDPOINT_URL": self.url, "AWS_ACCESS_KEY_ID": self.access_key,
                "AWS_SECRET_ACCESS_KEY": self.secret_key, "AWS_DEFAULT_REGION": self.region}


class S3Server:
    """``with S3Server() as ep:`` moto's server on 127.0.0.1:port until the block ends.

    ``auth=True`` switches on moto's IAM checks (every key is unknown, so every request is refused):
    the tests use it to see how ccp reports rejected credentials.
    """

    def __init__(self, port: int | None = None, *, auth: bool = False, start_timeout: float = START_TIMEOUT_S):
        self.port = port
        self.auth = auth
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen | None = None
        self.endpoint: Endpoint | None = None
        self._log: IO[bytes] | None = None

    def start(self) -> Endpoint:
        if not _have_moto_server():
            raise ServerError("the loopback S3 server needs moto[server]: pip install 'ccp[s3]'")
        port = self.port or free_port()
        env = dict(os.environ)
        if self.auth:
            env["INITIAL_NO_AUTH_ACTION_COUNT"] = "0"
        else:
            env.pop("INITIAL_NO_AUTH_ACTION_COUNT", None)
        self._log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", HOST, "-p", str(port)],
                                     stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                     # its own session: a terminal's Ctrl-C is ccp's to handle (ccp stops the
                                     # server as it leaves); a ccp that ignores SIGINT keeps its server too
                                     start_new_session=True,
                                     preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
        url = f"http://{HOST}:{port}"
        try:
            self._wait_ready(self.proc, url, port)
        except BaseException:
            self.stop()
            raise
        self.endpoint = Endpoint(url)
        return self.endpoint

    def _wait_ready(self, proc: subprocess.Popen, url: str, port: int) -> None:
        deadline = time.monotonic() + self.start_timeout
        while True:
            if proc.poll() is not None:
                raise ServerError(f"S3 server on port {port} exited with status {proc.returncode}: "
                                  f"{self._tail()}")
            try:
                # moto's dashboard-free health answer: a GET on / lists buckets (or 403 with auth on)
                with urllib.request.urlopen(url + "/", timeout=1.0):
                    return
            except urllib.error.HTTPError:
                return                                   # it answered: it is up
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            if time.monotonic() > deadline:
                raise ServerError(f"S3 server on port {port} not ready after {self.start_timeout:g} s: {self._tail()}")
            time.sleep(0.1)

    def _tail(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        lines = [ln for ln in self._log.read().decode("utf-8", "replace").splitlines() if ln.strip()]
        return lines[-1].strip() if lines else "no output"

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(STOP_TIMEOUT_S)
        if self._log is not None:
            self._log.close()
            self._log = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def gone(self) -> str | None:
        """None while the server runs; else one sentence saying it exited (and how), for the run to stop on."""
        proc = self.proc
        if proc is None or proc.poll() is None:
            return None
        how = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit status {proc.returncode}"
        return f"the loopback S3 server (moto, pid {proc.pid}) exited ({how}): {self._tail()}"

    def __enter__(self) -> Endpoint:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


__all__ = ["Endpoint", "S3Server", "ServerError", "free_port", "HOST", "ACCESS_KEY", "SECRET_KEY", "REGION"]
