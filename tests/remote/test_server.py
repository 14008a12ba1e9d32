"""The loopback S3 server: start, answer, stop; ``ccp s3 serve`` until Ctrl-C; endpoint errors in one line."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.remote.conftest import NEEDS_S3

pytestmark = NEEDS_S3
ROOT = Path(__file__).resolve().parents[2]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_context_manager_starts_and_stops():
    from ccp.remote.server import S3Server

    server = S3Server()
    with server as ep:
        port = int(ep.url.rsplit(":", 1)[1])
        assert ep.url.startswith("http://127.0.0.1:")
        assert _listening(port)
        assert server.running
    assert not server.running
    assert not _listening(port)


def test_busy_port_is_one_line():
    from ccp.errors import CcpError
    from ccp.remote.server import S3Server

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(CcpError) as info:
            S3Server(port, start_timeout=30).start()
    assert "\n" not in str(info.value)


@pytest.mark.slow
def test_serve_command_runs_until_interrupted():
    from ccp.remote.server import free_port

    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "ccp.cli", "s3", "serve", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        first = proc.stdout.readline()
        assert f"http://127.0.0.1:{port}" in first
        exports = [proc.stdout.readline() for _ in range(4)]
        assert f"export AWS_ENDPOINT_URL=http://127.0.0.1:{port}\n" in exports
        assert _listening(port)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    assert not _listening(port)


def _check(cli, endpoint, bucket, env=None):
    env = dict({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"},
               **(env or {}))
    return cli("s3", "check", "--endpoint", endpoint, "--bucket", bucket, env=env)


def _one_line_exit_2(res, *words):
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ccp: error: "), res.output
    for w in words:
        assert w in lines[0]


def test_unreachable_endpoint(cli):
    from ccp.remote.server import free_port

    url = f"http://127.0.0.1:{free_port()}"
    _one_line_exit_2(_check(cli, url, "ccp-test"), "cannot reach", url)


def test_missing_bucket(s3, cli):
    ep, _ = s3
    _one_line_exit_2(_check(cli, ep.url, "no-such-bucket"), "no bucket 'no-such-bucket'")


def test_existing_bucket_passes(s3, cli):
    ep, store = s3
    res = _check(cli, ep.url, store.settings.bucket)
    assert res.exit_code == 0, res.output
    assert "readable" in res.output


def test_wrong_credentials(cli):
    from ccp.remote.server import S3Server

    with S3Server(auth=True) as ep:       # moto with IAM checks on: no key is known
        res = _check(cli, ep.url, "ccp-test", {"AWS_ACCESS_KEY_ID": "AKIAWRONGWRONGWRONG1"})
    _one_line_exit_2(res, "credentials refused")


@pytest.mark.parametrize(("value", "where"), [
    ({"endpoint": "ftp://x", "bucket": "b"}, "s3.endpoint"),
    ({"endpoint": "http://x"}, "s3.bucket"),
    ({"endpoint": "http://x", "bucket": "b", "buket": 1}, "s3.buket"),
    (3, "s3"),
], ids=["scheme", "no-bucket", "typo", "not-a-mapping"])
def test_parse_s3_errors(value, where):
    from ccp.errors import ConfigError
    from ccp.remote.s3 import parse_s3

    with pytest.raises(ConfigError) as info:
        parse_s3(value)
    assert str(info.value).startswith(where + ":")


def test_help_has_examples(cli):

    for cmd in (["s3"], ["s3", "serve"], ["s3", "check"], ["s3", "cloud-copy"]):
        res = cli(*cmd, "--help")
        assert res.exit_code == 0
        assert "Example" in res.output and "ccp s3" in res.output


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["term", "kill-9"])
def test_serve_leaves_no_server_behind(sig):
    """SIGTERM stops ``ccp s3 serve`` cleanly; even SIGKILL takes its moto child down (no orphan)."""
    import time

    from ccp.remote.server import free_port

    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "ccp.cli", "s3", "serve", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        assert f"127.0.0.1:{port}" in proc.stdout.readline()
        proc.send_signal(sig)
        rc = proc.wait(30)
        if sig == signal.SIGTERM:
            assert rc == 0
        deadline = time.monotonic() + 20
        while _listening(port) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _listening(port)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
