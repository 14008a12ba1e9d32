"""The ``s3:`` setting, endpoint checks, uploads and remote files for h5py.

``s3: local`` starts moto's server on loopback (:mod:`ccp.remote.server`); ``s3: {endpoint: URL,
bucket: NAME}`` uses an existing endpoint, with credentials from the usual environment
(``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` / ``AWS_PROFILE`` ...). :func:`check_endpoint`
turns an unreachable endpoint, a missing bucket or rejected credentials into one line (exit 2)
before any cell runs.
"""

from __future__ import annotations

import hashlib
import os
import socket
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ccp.config.storage import (
    CACHE_TYPES,
    NO_NETWORK,
    EmulatedNetwork,
    FsspecOptions,
    S3Settings,
    parse_fsspec,
    parse_s3,
)
from ccp.errors import CcpError
from ccp.remote.network import RequestLog, TracedFile, instrument

CONNECT_TIMEOUT_S = 5.0


class S3Error(CcpError):
    """The S3 endpoint, bucket or credentials cannot be used."""


@dataclass(frozen=True)
class Credentials:
    """Explicit keys (the loopback server's), or None for botocore's usual chain (environment, profile)."""

    access_key: str | None = None
    secret_key: str | None = None
    region: str | None = None


def _client(endpoint: str, creds: Credentials):
    import boto3
    from botocore.config import Config

    cfg = Config(connect_timeout=CONNECT_TIMEOUT_S, read_timeout=30, retries={"max_attempts": 1})
    session = boto3.session.Session()
    return session.client("s3", endpoint_url=endpoint, aws_access_key_id=creds.access_key,
                          aws_secret_access_key=creds.secret_key,
                          region_name=creds.region or session.region_name or "us-east-1", config=cfg)


def _reachable(endpoint: str, where: str) -> None:
    url = urllib.parse.urlparse(endpoint)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname, port), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise S3Error(f"{where}.endpoint: cannot reach {endpoint}: {reason.lower()}") from None


_CRED_CODES = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "InvalidToken", "ExpiredToken",
               "AuthFailure", "403"}


def check_endpoint(settings: S3Settings, creds: Credentials = Credentials(), where: str = "s3") -> None:
    """One line (:class:`S3Error`, exit 2) if the endpoint is unreachable, the credentials are
    refused or missing, or the bucket does not exist; nothing when a listing of the bucket works."""
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        EndpointConnectionError,
        NoCredentialsError,
        PartialCredentialsError,
    )

    if settings.endpoint is None:
        raise S3Error(f"{where}: 'local' has no endpoint until the loopback server starts")
    _reachable(settings.endpoint, where)
    client = _client(settings.endpoint, creds)
    try:
        client.list_objects_v2(Bucket=settings.bucket, MaxKeys=1)
    except (NoCredentialsError, PartialCredentialsError):
        raise S3Error(f"{where}: no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
                      "(or AWS_PROFILE)") from None
    except EndpointConnectionError as exc:
        raise S3Error(f"{where}.endpoint: cannot reach {settings.endpoint}: {exc}") from None
    except ClientError as exc:
        err = exc.response.get("Error", {})
        code = str(err.get("Code", ""))
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code in ("NoSuchBucket", "404") or status == 404:
            raise S3Error(f"{where}.bucket: no bucket {settings.bucket!r} at {settings.endpoint}") from None
        if code in _CRED_CODES or status in (401, 403):
            raise S3Error(f"{where}: credentials refused by {settings.endpoint} ({code or status}): check "
                          "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY") from None
        raise S3Error(f"{where}: {settings.endpoint} answered {code or status}: "
                      f"{err.get('Message', '')}".rstrip(": ")) from None
    except BotoCoreError as exc:
        raise S3Error(f"{where}: {settings.endpoint}: {exc}") from None
    finally:
        client.close()


def file_checksum(path) -> str:
    """sha256 of a file's bytes (the key an upload is stored under, when no layout key is given)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


@dataclass(frozen=True)
class Uploaded:
    key: str
    size: int
    sha256: str
    skipped: bool            # already there with the same size and checksum


class S3Store:
    """One bucket at one endpoint: uploads once per layout, opens remote files for h5py."""

    def __init__(self, settings: S3Settings, creds: Credentials = Credentials()):
        if settings.endpoint is None:
            raise S3Error("s3: 'local' has no endpoint until the loopback server starts")
        self.settings = settings
        self.endpoint: str = settings.endpoint
        self.creds = creds
        self._client = None
        self._fs = None
        # the loopback server's state when ccp started one (ccp.remote.session): None while it runs
        self.server_gone: Callable[[], str | None] = lambda: None

    @property
    def client(self):
        if self._client is None:
            self._client = _client(self.endpoint, self.creds)
        return self._client

    @property
    def fs(self):
        """An s3fs filesystem for this endpoint; no listing cache (each open sees the bucket as it is)."""
        if self._fs is None:
            import s3fs

            kw: dict[str, Any] = {"client_kwargs": {"endpoint_url": self.endpoint}, "skip_instance_cache": True,
                  "use_listings_cache": False}
            if self.creds.access_key is not None:
                kw.update(key=self.creds.access_key, secret=self.creds.secret_key)
            if self.creds.region:
                kw["client_kwargs"]["region_name"] = self.creds.region
            self._fs = s3fs.S3FileSystem(**kw)
        return self._fs

    def create_bucket(self) -> None:
        """Make the bucket if it is not there (for the loopback server)."""
        from botocore.exceptions import ClientError

        try:
            self.client.create_bucket(Bucket=self.settings.bucket)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                raise

    def key_for(self, path, layout_key: str | None = None, digest: str | None = None) -> tuple[str, str]:
        """(object key, sha256): under the prefix, named by the layout key or the content hash."""
        digest = digest or file_checksum(path)
        name = layout_key or digest
        return f"{self.settings.prefix}/{name}{Path(path).suffix or '.h5'}", digest

    def upload(self, path, layout_key: str | None = None, digest: str | None = None) -> Uploaded:
        """Upload ``path`` once: skipped when the key holds an object of the same size and sha256
        (``digest``: the file's sha256 when the caller has it already)."""
        from botocore.exceptions import ClientError

        key, digest = self.key_for(path, layout_key, digest)
        size = os.path.getsize(path)
        try:
            head = self.client.head_object(Bucket=self.settings.bucket, Key=key)
            if int(head["ContentLength"]) == size and head.get("Metadata", {}).get("sha256") == digest:
                return Uploaded(key, size, digest, True)
        except ClientError as exc:
            if exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") != 404:
                raise
        self.client.upload_file(str(path), self.settings.bucket, key, ExtraArgs={"Metadata": {"sha256": digest}})
        return Uploaded(key, size, digest, False)

    def open(self, key: str, fsspec: FsspecOptions = FsspecOptions(),  # noqa: B008
             network: EmulatedNetwork = NO_NETWORK) -> RemoteFile:
        """The object as a read-only file object for h5py, every GET counted (and emulated delays added). fsspec's
        open makes one HEAD (the object's size): no GET, so in no GET count, but a request a user's network delays
        as much as a GET's first byte: it gets the emulated latency too."""
        raw = self.fs.open(f"{self.settings.bucket}/{key}", "rb", cache_type=fsspec.cache_type,
                           block_size=fsspec.block_size)
        head_delay = network.delay(0)
        if head_delay > 0:
            time.sleep(head_delay)
        log = instrument(raw, network)
        return RemoteFile(TracedFile(raw, log), log, raw.size, fsspec, network)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        self._fs = None


@dataclass
class RemoteFile:
    """``fileobj`` for ``h5py.File(fileobj, 'r')``; ``log`` counts GETs; ``fileobj.reads`` holds HDF5's reads."""

    fileobj: TracedFile
    log: RequestLog
    size: int
    fsspec: FsspecOptions
    network: EmulatedNetwork

    def h5file(self, **kwargs):
        """``h5py.File`` over this object (read-only); kwargs such as rdcc_nbytes or page_buf_size pass through."""
        import h5py

        return h5py.File(self.fileobj, "r", **kwargs)

    def fapl(self, page_buffer: int = 0):
        """A file-access property list for ``h5f.open(self.name, h5f.ACC_RDONLY, fapl)`` (the sweep
        runner's low-level loop): h5py's file-object driver over this object, and the page buffer."""
        from h5py import h5fd, h5p

        fapl = h5p.create(h5p.FILE_ACCESS)
        fapl.set_fileobj_driver(h5fd.fileobj_driver, self.fileobj)
        if page_buffer:
            fapl.set_page_buffer_size(int(page_buffer), 0, 0)
        return fapl

    @property
    def name(self) -> bytes:
        """The name HDF5 is given for the file object (h5py uses the object's repr)."""
        return repr(self.fileobj).encode("ascii", "replace")

    def close(self) -> None:
        self.fileobj.close()


__all__ = ["CACHE_TYPES", "Credentials", "FsspecOptions", "RemoteFile", "S3Error", "S3Settings", "S3Store",
           "Uploaded", "check_endpoint", "file_checksum", "parse_fsspec", "parse_s3"]
