"""GETs and bytes per request, predicted from the chunk index and fsspec's cache semantics, equal the
GETs counted through the loopback S3 server; emulated latency adds its delay per GET."""

from __future__ import annotations

import time

import h5py
import numpy as np
import pytest

from tests.remote.conftest import NEEDS_S3, SHAPE, cris_like

pytestmark = NEEDS_S3

ROWS = [((i, 0, 0, 0), (1, *SHAPE[1:])) for i in range(SHAPE[0])]
BY_CHUNKS = [((i, 0, 0, 0), (4, *SHAPE[1:])) for i in range(0, SHAPE[0], 4)]
COLUMN = [((0, 0, 0, j), (SHAPE[0], 2, 1, 1)) for j in range(2)]   # a chunk per 4 rows, twice
CACHES = {"big": dict(rdcc_nbytes=1 << 20, rdcc_nslots=521, rdcc_w0=0.75),
          "none": dict(rdcc_nbytes=0, rdcc_nslots=521, rdcc_w0=0.75)}


def _cell(store, path, key, cache_type, block_size, requests, h5kw, page_buffer=0):
    from ccp.chunkcache import ChunkCache
    from ccp.remote.cell import read_cell
    from ccp.remote.predict import dataset_layout, predict_gets, trace_open
    from ccp.remote.s3 import FsspecOptions

    kw = dict(h5kw, **({"page_buf_size": page_buffer} if page_buffer else {}))
    remote = store.open(key, FsspecOptions(cache_type, block_size))
    try:
        counts = read_cell(lambda: remote.h5file(**kw), "x", requests, log=remote.log, fileobj=remote.fileobj)
    finally:
        remote.close()
    with h5py.File(path, "r") as f:
        layout = dataset_layout(f, "x")
    cache = ChunkCache(h5kw["rdcc_nbytes"], h5kw["rdcc_nslots"], h5kw["rdcc_w0"])
    pred = predict_gets(layout, requests, cache, cache_type, block_size, trace_open(path, "x", **kw), page_buffer)
    return counts, pred


@pytest.mark.parametrize("cache_type", ["none", "readahead", "blockcache", "first"])
@pytest.mark.parametrize("block_size", [2048, pytest.param(65536, marks=pytest.mark.slow)], ids=["2KiB", "64KiB"])
@pytest.mark.parametrize("name", ["gzip", "contiguous", pytest.param("paged", marks=pytest.mark.slow)])
@pytest.mark.parametrize("pattern", ["rows", "chunks", "column"])
def test_predicted_gets_equal_measured(s3, layouts, name, cache_type, block_size, pattern):
    _, store = s3
    path = layouts[name]
    key = store.upload(path, f"test-{name}").key
    requests = {"rows": ROWS, "chunks": BY_CHUNKS, "column": COLUMN}[pattern]
    cache = "none" if pattern == "column" else "big"
    counts, pred = _cell(store, path, key, cache_type, block_size, requests, CACHES[cache])
    assert [r.gets for r in counts.requests] == [c.gets for c in pred.per_request]
    assert [r.fetched for r in counts.requests] == [c.fetched for c in pred.per_request]
    assert [r.used for r in counts.requests] == [sum(s for _, s in reads) for reads in pred.reads]
    assert counts.open.gets == pred.open_cost.gets          # the open phase, replayed from a local trace
    assert counts.http_gets > 0


@pytest.mark.parametrize("cache_type", ["none", "readahead", "blockcache"])
def test_page_buffer_prediction(s3, layouts, cache_type):
    """Chunks smaller than a page are read as whole pages through the page buffer."""
    _, store = s3
    path = layouts["paged"]
    key = store.upload(path, "test-paged").key
    counts, pred = _cell(store, path, key, cache_type, 4096, ROWS, CACHES["none"], page_buffer=65536)
    assert [r.gets for r in counts.requests] == [c.gets for c in pred.per_request]
    assert [r.fetched for r in counts.requests] == [c.fetched for c in pred.per_request]
    assert any(size == 8192 for reads in pred.reads for _, size in reads)   # whole pages were read


def test_remote_values_equal_local(s3, layouts):
    _, store = s3
    from ccp.remote.s3 import FsspecOptions

    for name, path in layouts.items():
        key = store.upload(path, f"test-{name}").key
        remote = store.open(key, FsspecOptions("blockcache", 4096))
        with remote.h5file() as f:
            np.testing.assert_array_equal(f["x"][()], cris_like())
        remote.close()


def test_upload_once_per_layout(s3, layouts):
    _, store = s3
    first = store.upload(layouts["gzip"], "test-once")
    again = store.upload(layouts["gzip"], "test-once")
    assert again.skipped and again.key == first.key and again.sha256 == first.sha256
    other = store.upload(layouts["contiguous"], "test-once")     # same key, other bytes: uploaded again
    assert not other.skipped


def test_latency_emulation_adds_n_times_latency(s3, layouts):
    from ccp.remote.network import EmulatedNetwork
    from ccp.remote.s3 import FsspecOptions

    _, store = s3
    key = store.upload(layouts["gzip"], "test-gzip").key
    latency = 0.05
    remote = store.open(key, FsspecOptions("none", 4096), EmulatedNetwork(latency, None))
    t0 = time.perf_counter()
    with remote.h5file(rdcc_nbytes=0) as f:
        f["x"][()]
    elapsed = time.perf_counter() - t0
    remote.close()
    n = remote.log.http_gets
    assert n > 5
    assert remote.log.emulated_s == pytest.approx(n * latency)
    assert elapsed >= n * latency                      # a sleep never returns early


@NEEDS_S3
def test_the_opens_head_waits_the_emulated_latency_and_is_no_get(s3, layouts):
    """breaker7 S1: fsspec's open makes a HEAD (the object's size) that a real network delays as much as a GET; it
    went through at loopback speed, so a 20 ms cell's open cost 20-40 ms less than over a real 20 ms link."""
    import time

    from ccp.remote.network import EmulatedNetwork
    from ccp.remote.s3 import FsspecOptions

    _, store = s3
    key = store.upload(layouts["gzip"], "test-head").key
    t0 = time.perf_counter()
    remote = store.open(key, FsspecOptions("none", 4096), EmulatedNetwork(0.3, None))
    opened = time.perf_counter() - t0
    remote.close()
    assert opened >= 0.3 and remote.log.http_gets == 0


def test_bandwidth_emulation_is_per_byte():
    from ccp.remote.network import EmulatedNetwork, parse_bandwidth, parse_latency

    net = EmulatedNetwork(parse_latency("20ms"), parse_bandwidth("100MB/s"))
    assert net.delay(1_000_000) == pytest.approx(0.02 + 0.01)
    assert "emulated" in net.label
    assert parse_latency(0) == 0.0 and parse_bandwidth("unlimited") is None


@pytest.mark.parametrize("bad", ["fast", "-3ms", "20 parsecs"])
def test_latency_errors(bad):
    from ccp.errors import ConfigError
    from ccp.remote.network import parse_latency

    with pytest.raises(ConfigError, match="^latency: "):
        parse_latency(bad)


@pytest.mark.parametrize(("value", "where"), [
    ({"cache_type": "bytes"}, "fsspec.cache_type"), ({"block_size": "lots"}, "fsspec.block_size"),
    ({"cache": "none"}, "fsspec.cache"), ({"block_size": 0}, "fsspec.block_size"),
], ids=["cache-type", "block-size", "typo", "zero"])
def test_fsspec_errors(value, where):
    from ccp.errors import ConfigError
    from ccp.remote.s3 import parse_fsspec

    with pytest.raises(ConfigError) as info:
        parse_fsspec(value)
    assert str(info.value).startswith(where + ":")


def test_session_local_starts_checks_and_reads(layouts):
    """``s3: local`` in a sweep: server up, bucket made and checked, a cell's columns measured == predicted."""
    from ccp.remote.axes import StorageSetting
    from ccp.remote.s3 import FsspecOptions, S3Error, S3Settings, check_endpoint, parse_s3
    from ccp.remote.sweep_cell import open_dataset, remote_session, result_columns

    class Cache:
        nbytes, nslots, w0 = 1 << 20, 521, 0.75

    with remote_session(parse_s3("local")) as session:
        remote = session.cell(layouts["gzip"], "x", StorageSetting("s3", FsspecOptions("readahead", 4096), 0.0))
        fid = remote.open_file()
        try:
            open_dataset(fid, "x", Cache).read(h5py.h5s.ALL, h5py.h5s.ALL, np.empty(SHAPE, ">f4"))
        finally:
            fid.close()
        counts = remote.end_pass()
        cols = result_columns(counts, remote.predict([(0, 0, 0, 0)], [SHAPE], Cache))
        url = session.store.settings.endpoint
    assert cols["http_gets"] == cols["predicted_http_gets"] > 0
    assert cols["http_bytes"] == cols["predicted_http_bytes"]
    with pytest.raises(S3Error, match="cannot reach"):     # the server is gone with the session
        check_endpoint(S3Settings(url, "ccp-local"))


def test_low_level_open_counts_like_h5py_file(s3, layouts):
    """The runner's loop opens with h5f.open and a fapl: the same GETs as h5py.File over the object."""
    from h5py import h5d, h5f, h5p, h5s

    from ccp.remote.s3 import FsspecOptions

    _, store = s3
    key = store.upload(layouts["paged"], "test-paged").key
    remote = store.open(key, FsspecOptions("blockcache", 4096))
    fid = h5f.open(remote.name, h5f.ACC_RDONLY, remote.fapl(page_buffer=65536))
    try:
        dapl = h5p.create(h5p.DATASET_ACCESS)
        dapl.set_chunk_cache(521, 0, 0.75)
        ds = h5d.open(fid, b"x", dapl)
        ds.get_num_chunks()
        fspace = ds.get_space()
        out = np.empty((1, *SHAPE[1:]), ">f4")
        fspace.select_hyperslab((3, 0, 0, 0), (1, *SHAPE[1:]))
        before = remote.log.http_gets
        ds.read(h5s.create_simple(out.shape), fspace, out)
        low = remote.log.http_gets - before
    finally:
        fid.close()
        remote.close()
    np.testing.assert_array_equal(out, cris_like()[3:4])
    counts, _ = _cell(store, layouts["paged"], key, "blockcache", 4096, [ROWS[3]], CACHES["none"], page_buffer=65536)
    assert low == counts.http_gets
