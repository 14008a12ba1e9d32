"""Before any cell runs: an unreachable endpoint, a missing bucket, refused credentials are one line each
(a CcpError: the CLI prints it and exits 2); ``s3: local`` starts the loopback server for the session only."""

from __future__ import annotations

import pytest

from tests.remote.conftest import NEEDS_S3

pytestmark = NEEDS_S3


def _one_line(exc_info, *words):
    msg = str(exc_info.value)
    assert "\n" not in msg and exc_info.value.exit_code == 2
    for w in words:
        assert w in msg, msg




def test_unreachable_endpoint(creds):
    from ccp.errors import CcpError
    from ccp.remote.s3 import parse_s3
    from ccp.remote.server import free_port
    from ccp.remote.sweep_cell import preflight

    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(CcpError) as info:
        preflight(parse_s3({"endpoint": url, "bucket": "b"}))
    _one_line(info, "s3.endpoint", "cannot reach", url)


def test_missing_bucket(s3, creds):
    from ccp.errors import CcpError
    from ccp.remote.s3 import parse_s3
    from ccp.remote.sweep_cell import preflight

    ep, _ = s3
    with pytest.raises(CcpError) as info:
        preflight(parse_s3({"endpoint": ep.url, "bucket": "no-such-bucket"}))
    _one_line(info, "s3.bucket", "no bucket 'no-such-bucket'", ep.url)


@pytest.mark.slow
def test_wrong_credentials(monkeypatch):
    from ccp.errors import CcpError
    from ccp.remote.s3 import parse_s3
    from ccp.remote.server import S3Server
    from ccp.remote.sweep_cell import preflight

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAWRONGWRONGWRONG1")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    with S3Server(auth=True) as ep, pytest.raises(CcpError) as info:      # moto with IAM on: no key is known
        preflight(parse_s3({"endpoint": ep.url, "bucket": "ccp-test"}))
    _one_line(info, "credentials refused")


def test_missing_credentials(s3, monkeypatch, tmp_path):
    from ccp.errors import CcpError
    from ccp.remote.s3 import parse_s3
    from ccp.remote.sweep_cell import preflight

    ep, store = s3
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(CcpError) as info:
        preflight(parse_s3({"endpoint": ep.url, "bucket": store.settings.bucket}))
    _one_line(info, "no S3 credentials")


def test_good_endpoint_yields_a_session(s3, creds):
    from ccp.remote.s3 import parse_s3
    from ccp.remote.sweep_cell import RemoteSession, remote_session

    ep, store = s3
    with remote_session(parse_s3({"endpoint": ep.url, "bucket": store.settings.bucket})) as session:
        assert isinstance(session, RemoteSession)


def test_no_s3_cells_start_nothing():
    from ccp.remote.sweep_cell import remote_session

    with remote_session(None) as session:
        assert session is None


def test_local_server_lives_for_the_session_only():
    from ccp.remote.s3 import S3Settings, check_endpoint, parse_s3
    from ccp.remote.sweep_cell import remote_session

    with remote_session(parse_s3("local")) as session:
        url = session.store.settings.endpoint
        check_endpoint(session.store.settings, session.store.creds)       # up, bucket made
    from ccp.errors import CcpError

    with pytest.raises(CcpError, match="cannot reach"):
        check_endpoint(S3Settings(url, "ccp-local"))
