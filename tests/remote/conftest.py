"""Fixtures for the storage tests: one loopback S3 server per module, small files of each layout."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

NEEDS_S3 = pytest.mark.skipif(
    importlib.util.find_spec("moto") is None or importlib.util.find_spec("s3fs") is None
    or importlib.util.find_spec("flask") is None,
    reason="needs the s3 extra (pip install 'ccp[s3]': moto[server], s3fs)")

SHAPE = (24, 30, 9, 7)
CHUNKS = (4, 30, 9, 7)


@pytest.fixture(scope="module")
def s3():
    """(endpoint, store) of a fresh moto server on 127.0.0.1 with the bucket made."""
    from ccp.remote.s3 import Credentials, S3Settings, S3Store
    from ccp.remote.server import S3Server

    with S3Server() as ep:
        store = S3Store(S3Settings(ep.url, "ccp-test"), Credentials(ep.access_key, ep.secret_key, ep.region))
        store.create_bucket()
        yield ep, store
        store.close()


def cris_like(shape=SHAPE) -> np.ndarray:
    rng = np.random.default_rng(15)
    # smooth plus noise: gzip compresses it a little, chunk sizes differ
    base = np.linspace(200, 300, shape[-1], dtype=np.float32)
    return (base + rng.normal(0, 1, shape)).astype(">f4")


@pytest.fixture(scope="module")
def layouts(tmp_path_factory):
    """{name: path}: chunked gzip, contiguous, chunked gzip in a paged file (small pages)."""
    import h5py

    from ccp.remote.layout import FileSpace, create_file

    d = tmp_path_factory.mktemp("layouts")
    data = cris_like()
    out = {}
    with h5py.File(d / "gzip.h5", "w") as f:
        f.create_dataset("x", data=data, chunks=CHUNKS, compression="gzip")
    out["gzip"] = d / "gzip.h5"
    with h5py.File(d / "contiguous.h5", "w") as f:
        f.create_dataset("x", data=data)
    out["contiguous"] = d / "contiguous.h5"
    with create_file(d / "paged.h5", FileSpace(page_size=8192)) as f:
        f.create_dataset("x", data=data, chunks=(1, 30, 9, 7), compression="gzip")
    out["paged"] = d / "paged.h5"
    return out


@pytest.fixture
def creds(monkeypatch):
    """Credentials the loopback server accepts, and no profile of the machine's own."""
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                 "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
