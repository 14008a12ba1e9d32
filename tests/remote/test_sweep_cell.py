"""The runner's remote read API: GETs and bytes predicted by ``predict_http`` equal those counted through the
loopback S3 server, pass by pass, on a matrix of fsspec cache types x block sizes x page buffer x row/chunk
reads x a CrIS-like file and a multi-dataset netCDF-4 file written by the netCDF4 library."""

from __future__ import annotations

import numpy as np
import pytest

from tests.remote.conftest import NEEDS_S3

pytestmark = NEEDS_S3

CRIS = "/All_Data/CrIS-SDR_All/ES_RealLW"
CRIS_SHAPE = (12, 30, 9, 40)
NC_SHAPE = (24, 16, 32)


class Cache:          # the runner's ChunkCache has these three fields
    def __init__(self, nbytes, nslots=521, w0=0.75):
        self.nbytes, self.nslots, self.w0 = nbytes, nslots, w0


def _cris(path):
    import h5py

    rng = np.random.default_rng(3)
    data = (50 + rng.normal(0, 0.5, CRIS_SHAPE)).astype(">f4")
    with h5py.File(path, "w") as f:
        g = f.create_group("All_Data/CrIS-SDR_All")
        g.create_dataset("ES_RealLW", data=data, chunks=(4, 30, 9, 40), compression="gzip", compression_opts=4)
        g.create_dataset("ES_ImaginaryLW", data=data[::-1], chunks=(4, 30, 9, 40), compression="gzip")
        f.create_dataset("All_Data/CrIS-SDR_All/QF1", data=np.arange(12, dtype="u1"))
    return data


def _netcdf(path):
    """A small multi-dataset netCDF-4 product, written by the netCDF4 library."""
    pytest.importorskip("netCDF4")
    import h5py

    from ccp.remote.product import write_netcdf_product

    write_netcdf_product(path, NC_SHAPE, chunk_time=4)
    with h5py.File(path, "r") as f:
        assert {"pr", "tas", "huss", "lat", "lon", "time", "quality"} <= set(f)
        return f["pr"][()]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """{name: (path, dataset, data)}: each file plain and as a paged copy (8 KiB pages)."""
    from ccp.remote.layout import FileSpace
    from ccp.remote.sweep_cell import file_space_variant

    d = tmp_path_factory.mktemp("remote")
    out = {}
    cris = _cris(d / "cris.h5")
    nc = _netcdf(d / "product.nc")
    for name, path, ds, data in (("cris", d / "cris.h5", CRIS, cris), ("netcdf", d / "product.nc", "/pr", nc)):
        out[name] = (path, ds, data)
        out[f"{name}-paged"] = (file_space_variant(path, FileSpace(page_size=8192), d), ds, data)
    return out


def _requests(shape, pattern):
    if pattern == "rows":
        return [((i,) + (0,) * (len(shape) - 1), (1, *shape[1:])) for i in range(shape[0])]
    return [((i,) + (0,) * (len(shape) - 1), (min(4, shape[0] - i), *shape[1:])) for i in range(0, shape[0], 4)]


def _runner_pass(remote, dataset, requests, cache, dtype):
    """What the runner's read pass does, with the remote calls it will make (marks outside the reads)."""
    from h5py import h5s

    from ccp.remote.sweep_cell import open_dataset

    fid = remote.open_file()
    out = []
    try:
        ds = open_dataset(fid, dataset, cache)
        remote.mark()
        fspace = ds.get_space()
        for start, count in requests:
            arr = np.empty(count, dtype=dtype)
            fspace.select_hyperslab(start, count)
            ds.read(h5s.create_simple(count), fspace, arr)
            remote.mark()
            out.append(arr)
        ds.close()
    finally:
        fid.close()
    return remote.end_pass(), out


CASES = [(ct, bs) for ct in ("none", "readahead", "blockcache", "first") for bs in (4096, 65536)]


def _http_cases() -> list:
    """Every fsspec cache and block size x file x page buffer x pattern. fsspec's 4 KiB blocks over CrIS row by row
    are the loopback server's thousands of GETs (the slowest cases by far): slow, run by make test-slow; the same
    cache over the same file by chunks, and by rows with 64 KiB blocks, stay in make test."""
    out = []
    for ct, bs in CASES:
        for name in ("cris", "netcdf"):
            for pb, pb_id in ((0, "no-pb"), (65536, "pb64KiB")):
                for pattern in ("rows", "chunks"):
                    # the netCDF file through the page buffer too: make test-slow (cris covers the page buffer)
                    heavy = (ct, bs, name, pattern) == ("blockcache", 4096, "cris", "rows") or (name == "netcdf" and pb)
                    out.append(pytest.param(ct, bs, name, pb, pattern, id=f"{ct}-{bs // 1024}KiB-{name}-{pb_id}-{pattern}",
                                            marks=[pytest.mark.slow] if heavy else []))
    return out


@pytest.mark.parametrize(("cache_type", "block_size", "name", "page_buffer", "pattern"), _http_cases())
def test_predicted_http_equals_measured(s3, files, name, page_buffer, pattern, cache_type, block_size):
    from ccp.remote.axes import StorageSetting
    from ccp.remote.s3 import FsspecOptions
    from ccp.remote.sweep_cell import RemoteSession, result_columns

    _, store = s3
    path, dataset, data = files[f"{name}-paged" if page_buffer else name]
    setting = StorageSetting("s3", FsspecOptions(cache_type, block_size), 0.0, None, None, page_buffer)
    requests = _requests(data.shape, pattern)
    # rows with no chunk cache: every row loads its chunk again (GETs depend on fsspec's cache alone)
    cache = Cache(0 if pattern == "rows" else 1 << 20)
    session = RemoteSession(store)
    remote = session.cell(path, dataset, setting)
    passes = [_runner_pass(remote, dataset, requests, cache, data.dtype) for _ in range(2)]
    counts, arrays = passes[0]
    assert passes[1][0].http_gets == counts.http_gets and passes[1][0].open.gets == counts.open.gets  # every pass alike
    for (start, count), arr in zip(requests, arrays):
        np.testing.assert_array_equal(arr, data[tuple(slice(s, s + c) for s, c in zip(start, count))])
    pred = remote.predict([s for s, _ in requests], [c for _, c in requests], cache)
    assert pred is not None
    assert counts.open.gets == pred.open_cost.gets and counts.open.fetched == pred.open_cost.fetched
    assert [r.gets for r in counts.requests] == [c.gets for c in pred.per_request]
    assert [r.fetched for r in counts.requests] == [c.fetched for c in pred.per_request]
    assert [r.used for r in counts.requests] == [sum(s for _, s in reads) for reads in pred.reads]
    cols = result_columns(counts, pred, remote.page_buffer_effective)
    assert cols["http_gets"] == cols["predicted_http_gets"] > 0
    assert cols["http_bytes"] == cols["predicted_http_bytes"]
    assert remote.page_buffer_effective == page_buffer


def test_upload_once_per_layout_file(s3, files, monkeypatch):
    from ccp.remote.sweep_cell import RemoteSession

    _, store = s3
    session = RemoteSession(store)
    calls = []
    real = store.upload
    monkeypatch.setattr(store, "upload", lambda *a, **k: calls.append(a) or real(*a, **k))
    path = files["cris"][0]
    keys = {session.upload(path) for _ in range(3)}
    assert len(keys) == 1 and len(calls) == 1
    key = keys.pop()
    assert key.startswith(f"ccp/{path.stem}-") and key.endswith(path.suffix)


def test_two_files_of_one_name_are_two_objects(s3, files, tmp_path):
    import shutil

    from ccp.remote.sweep_cell import RemoteSession

    _, store = s3
    session = RemoteSession(store)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = shutil.copy(files["cris"][0], tmp_path / "a" / "granule.h5")
    b = shutil.copy(files["cris-paged"][0], tmp_path / "b" / "granule.h5")
    assert session.upload(a) != session.upload(b)


def test_page_buffer_on_unpaged_file_is_refused(s3, files):
    """HDF5 2.0 opens a file that is not paged with a page buffer and drops it: the cell must not run so."""
    from ccp.errors import CcpError
    from ccp.remote.axes import StorageSetting
    from ccp.remote.s3 import FsspecOptions
    from ccp.remote.sweep_cell import RemoteSession

    _, store = s3
    path, dataset, _ = files["cris"]
    remote = RemoteSession(store).cell(path, dataset, StorageSetting("s3", FsspecOptions("none", 4096), 0.0, None,
                                                                     None, 65536))
    with pytest.raises(CcpError, match="page_buffer 64KiB was not applied"):
        remote.open_file()
    with pytest.raises(CcpError, match="was not applied"):    # not "end_pass() before ...": no pass left open
        remote.open_file()


def test_emulated_wait_is_recorded_per_request(s3, files):
    from ccp.remote.axes import StorageSetting
    from ccp.remote.s3 import FsspecOptions
    from ccp.remote.sweep_cell import RemoteSession, request_columns

    _, store = s3
    path, dataset, data = files["cris"]
    setting = StorageSetting("s3", FsspecOptions("none", 4096), 0.02, None, None, 0)
    remote = RemoteSession(store).cell(path, dataset, setting)
    counts, _ = _runner_pass(remote, dataset, _requests(data.shape, "chunks"), Cache(1 << 20), data.dtype)
    cols = request_columns(counts)
    assert cols["http_gets"][1:] == [1, 1, 1]            # a chunk a request, no fsspec cache
    assert all(w >= 0.02 for w in cols["http_wait_s"][1:])
    assert counts.network.startswith("emulated: 20ms")


def test_file_space_variant_is_made_once_and_paged(files, tmp_path):
    import h5py

    from ccp.remote.layout import FileSpace, file_page_size
    from ccp.remote.sweep_cell import file_space_variant

    path = files["netcdf"][0]
    out = file_space_variant(path, FileSpace(page_size=16384), tmp_path)
    assert file_page_size(out) == 16384 and file_page_size(path) is None
    mtime = out.stat().st_mtime_ns
    assert file_space_variant(path, FileSpace(page_size=16384), tmp_path) == out and out.stat().st_mtime_ns == mtime
    assert file_space_variant(path, None, tmp_path) == path
    with h5py.File(out, "r") as f, h5py.File(path, "r") as g:
        assert sorted(f) == sorted(g)
        np.testing.assert_array_equal(f["pr"][()], g["pr"][()])


def test_measured_columns_flag_passes_that_differ():
    from ccp.remote.cell import CellCounts, RequestCount
    from ccp.remote.sweep_cell import measured_columns

    def counts(gets, wait):
        return CellCounts(RequestCount(2, 100, 80, wait, 0.1), (RequestCount(gets, 1000, 900, wait, 0.2),), "none")

    cols, flags = measured_columns([counts(3, 0.1), counts(3, 0.3), counts(3, 0.2)], 0)
    assert (cols["http_gets"], cols["http_bytes"], cols["http_open_gets"], cols["http_bytes_used"]) == (5, 1100, 2, 980)
    assert cols["http_wait_s"] == pytest.approx(0.4) and flags == []
    assert measured_columns([counts(3, 0.1), counts(4, 0.1)])[1] == ["http-counts-vary"]


def _in_forked_child(target, requests, cache, dtype, conn):
    try:
        remote = target.open()
        counts, _ = _runner_pass(remote, target.dataset, requests, cache, dtype)
        remote.store.close()
        conn.send(("ok", counts.open.gets + counts.http_gets, counts.open.fetched + counts.http_bytes))
    except BaseException as exc:  # reported to the parent
        conn.send(("error", repr(exc)))


def test_target_runs_in_a_forked_worker(s3, files):
    """The runner measures each cell in a forked worker: the job carries a RemoteTarget, not a client,
    and the worker's GETs equal the prediction after the parent has used its own client."""
    import multiprocessing

    from ccp.remote.axes import StorageSetting
    from ccp.remote.s3 import FsspecOptions
    from ccp.remote.sweep_cell import RemoteSession

    _, store = s3
    path, dataset, data = files["netcdf"]
    setting = StorageSetting("s3", FsspecOptions("blockcache", 65536), 0.0)
    session = RemoteSession(store)
    target = session.target(path, dataset, setting)
    requests, cache = _requests(data.shape, "rows"), Cache(1 << 20)
    _runner_pass(session.cell(path, dataset, setting), dataset, requests, cache, data.dtype)   # parent's client in use
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_in_forked_child, args=(target, requests, cache, data.dtype, child))
    proc.start()
    assert parent.poll(120), "the forked worker did not answer"
    msg = parent.recv()
    proc.join(30)
    assert msg[0] == "ok", msg
    pred = target.open(store).predict([s for s, _ in requests], [c for _, c in requests], cache)
    assert msg[1:] == (pred.open_cost.gets + pred.http_gets, pred.open_cost.fetched + pred.http_bytes)
