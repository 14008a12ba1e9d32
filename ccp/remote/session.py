"""The S3 session around all cells of a sweep: the loopback server for ``s3: local``, the checks before any cell.

:func:`ccp.remote.sweep_cell.remote_session` wraps this for the runner (uploads once per layout, remote cells).
"""

from __future__ import annotations

from contextlib import contextmanager

from ccp.remote.s3 import Credentials, S3Settings, S3Store, check_endpoint


@contextmanager
def s3_session(settings: S3Settings):
    """The store every S3 cell uses: ``local`` starts moto on loopback and makes the bucket; then the
    endpoint, bucket and credentials are checked (one line, exit 2, before any cell runs)."""
    if settings.local:
        from ccp.remote.server import S3Server

        server = S3Server()
        with server as ep:
            local = S3Settings(ep.url, settings.bucket, settings.prefix)
            store = S3Store(local, Credentials(ep.access_key, ep.secret_key, ep.region))
            store.server_gone = server.gone
            try:
                store.create_bucket()
                check_endpoint(local, store.creds)
                yield store
            finally:
                store.close()
        return
    check_endpoint(settings)
    store = S3Store(settings)
    try:
        yield store
    finally:
        store.close()


__all__ = ["s3_session"]
