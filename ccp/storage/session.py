"""What a sweep calls: the S3 session around all cells, and one remote read cell's result columns.

    with s3_session(parse_s3(cfg.get("s3", "local"))) as store:   # server up (local), checked: before any cell
        ...
        key = store.upload(work_file, layout_key).key              # once per layout
        cols = remote_read(store, key, work_file, dataset, requests, fsspec, network, h5kw, cache, page_buffer)

The sweep's axes map to arguments: ``storage`` (local | s3) picks this path, ``fsspec`` ->
:func:`ccp.storage.s3.parse_fsspec`, ``latency`` / ``bandwidth`` -> :class:`EmulatedNetwork`,
``file_space`` -> :func:`ccp.storage.layout.parse_file_space` (write side), ``page_buffer`` ->
:func:`ccp.storage.layout.parse_page_buffer` (read side).
"""

from __future__ import annotations

from contextlib import contextmanager

from ccp.errors import ConfigError, suggest
from ccp.storage.cell import CellCounts, read_cell
from ccp.storage.network import EmulatedNetwork
from ccp.storage.predict import NotModelled, Prediction, dataset_layout, predict_gets, trace_open
from ccp.storage.s3 import Credentials, FsspecOptions, S3Settings, S3Store, check_endpoint

STORAGES = ("local", "s3")
RESULT_COLUMNS = ("http_gets", "http_bytes", "predicted_http_gets", "predicted_http_bytes", "http_bytes_used",
                  "http_open_gets", "http_wait_s", "network")


def parse_storage(value, where: str = "storage") -> str:
    if value not in STORAGES:
        raise ConfigError(where, f"expected one of {', '.join(STORAGES)}, got {value!r}" + suggest(value, STORAGES))
    return value


@contextmanager
def s3_session(settings: S3Settings):
    """The store every S3 cell uses: ``local`` starts moto on loopback and makes the bucket; then the
    endpoint, bucket and credentials are checked (one line, exit 2, before any cell runs)."""
    if settings.local:
        from ccp.storage.server import S3Server

        with S3Server() as ep:
            local = S3Settings(ep.url, settings.bucket, settings.prefix)
            store = S3Store(local, Credentials(ep.access_key, ep.secret_key, ep.region))
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


def remote_read(store: S3Store, key: str, local_path, dataset: str, requests, fsspec: FsspecOptions,
                network: EmulatedNetwork, h5kw: dict, cache, page_buffer: int = 0) -> tuple[CellCounts, dict]:
    """Read ``requests`` of ``dataset`` from the uploaded ``key``: the per-request counts and the result
    columns (measured beside predicted; predicted None where the access is not modelled)."""
    remote = store.open(key, fsspec, network)
    try:
        counts = read_cell(lambda: remote.h5file(**h5kw), dataset, requests, network.label, remote.log,
                           remote.fileobj)
    finally:
        remote.close()
    pred = predict(local_path, dataset, requests, fsspec, h5kw, cache, page_buffer)
    return counts, columns(counts, pred)


def predict(local_path, dataset: str, requests, fsspec: FsspecOptions, h5kw: dict, cache,
            page_buffer: int = 0) -> Prediction | None:
    import h5py

    try:
        with h5py.File(local_path, "r") as f:
            layout = dataset_layout(f, dataset)
        return predict_gets(layout, requests, cache, fsspec.cache_type, fsspec.block_size,
                            trace_open(local_path, dataset, **h5kw), page_buffer)
    except NotModelled:
        return None


def columns(counts: CellCounts, pred: Prediction | None) -> dict:
    return {"http_gets": counts.http_gets, "http_bytes": counts.http_bytes,
            "predicted_http_gets": None if pred is None else pred.http_gets,
            "predicted_http_bytes": None if pred is None else pred.http_bytes,
            "http_bytes_used": counts.bytes_used, "http_open_gets": counts.open.gets,
            "http_wait_s": counts.wait_s, "network": counts.network}


__all__ = ["RESULT_COLUMNS", "STORAGES", "columns", "parse_storage", "predict", "remote_read", "s3_session"]
