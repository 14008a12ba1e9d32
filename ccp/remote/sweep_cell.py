"""What the sweep's runner calls for a cell read over S3, and the prediction beside it.

Per sweep (before any cell; one line and exit 2 when the endpoint, bucket or credentials are wrong)::

    with remote_session(s3_settings) as session:            # None settings: no S3 cell, nothing started
        ...per cell with setting.remote:
        remote = session.cell(work_file, dataset_path, setting)   # uploads once per layout file
        ...per pass (the runner's read loop):
        fid = remote.open_file()                  # fresh fsspec file (cold cache), h5py's file-object driver
        ds = h5d.open(fid, path, dapl); remote.load_index(ds)   # the open phase brings the chunk index in
        remote.mark()                             # after the open, after each request: outside timed calls
        ...
        fid.close(); counts = remote.end_pass()   # CellCounts: open + per request, GETs/bytes/used/wait
        pred = remote.predict(starts, counts, cache)   # Prediction; predict_http(...) for the columns

:func:`open_dataset` is the one open path of a remote cell, used by the runner's pass and by the local
trace the prediction replays, so both make the same metadata reads. Emulated latency and bandwidth are
slept inside the GET (so inside the timed call that caused it) and recorded apart as ``wait_s``.
The counts start before ``h5f.open`` (the file open's GETs belong to the cell's open phase), and so does the
runner's timed open phase (results schema 4; before it, ``time_s`` started at the dataset open and a cell's wait
could exceed its time by the file open's GETs): every GET of a pass is inside its time.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ccp.config.storage import EmulatedNetwork, FsspecOptions
from ccp.errors import CcpError
from ccp.hdf5 import plists
from ccp.remote.axes import StorageSetting, check_effective_page_buffer
from ccp.remote.cell import CellCounts, RequestCount
from ccp.remote.layout import FileSpace, cloud_optimized_copy, file_page_size
from ccp.remote.network import TracedFile
from ccp.remote.predict import NotModelled, Prediction, dataset_layout, predict_gets
from ccp.remote.s3 import Credentials, RemoteFile, S3Settings, S3Store


def s3_options(setting: StorageSetting) -> tuple[FsspecOptions, EmulatedNetwork]:
    """An s3 setting's fsspec options and emulated network (``storage_cells`` sets both for every s3 cell)."""
    network = setting.network
    if setting.fsspec is None or network is None:
        raise ValueError(f"not an s3 storage setting: {setting}")
    return setting.fsspec, network


def file_space_variant(work_file, file_space: FileSpace | None, out_dir) -> Path:
    """The file a cell with ``file_space`` reads: ``work_file`` itself (default), or a copy of it with that
    strategy in ``out_dir`` (the sweep's work folder: never beside a user's file), made once, atomically.
    The copy's name carries a hash of the source's path, so two sources of one name never share a copy."""
    import hashlib

    work_file = Path(work_file)
    if file_space is None:
        return work_file
    from ccp.remote.axes import file_space_label

    tag = file_space_label(file_space).replace("/", "-")
    where = hashlib.sha1(str(work_file.resolve()).encode()).hexdigest()[:8]
    out = Path(out_dir) / f"{work_file.stem}-{where}.fs-{tag}{work_file.suffix or '.h5'}"
    if not out.exists() or out.stat().st_mtime < work_file.stat().st_mtime:
        cloud_optimized_copy(work_file, out, file_space)          # writes a temporary name, then renames
    return out


def lowlevel_fapl(fileobj=None, page_buffer: int = 0, fapl=None):
    """A file-access list: h5py's file-object driver over ``fileobj`` (None: keep ``fapl``'s driver) and
    the page buffer (``H5Pset_page_buffer_size(size, 0, 0)``: metadata and raw data share it)."""
    from h5py import h5fd, h5p

    fapl = fapl if fapl is not None else h5p.create(h5p.FILE_ACCESS)
    if fileobj is not None:
        fapl.set_fileobj_driver(h5fd.fileobj_driver, fileobj)
    if page_buffer:
        fapl.set_page_buffer_size(int(page_buffer), 0, 0)
    return fapl


def load_index(ds) -> None:
    """The open phase of a remote cell ends with the chunk index in HDF5's metadata cache, so a request
    reads raw data only (what the model predicts); ``H5Dget_num_chunks`` walks the whole index."""
    from h5py import h5d

    if ds.get_create_plist().get_layout() == h5d.CHUNKED:
        ds.get_num_chunks()


def open_dataset(fid, dataset: str, cache):
    """``h5d.open`` with the cell's chunk cache (nbytes, nslots, w0), then :func:`load_index`."""
    from h5py import h5d

    ds = h5d.open(fid, dataset.encode(), plists.cache_dapl(cache))
    load_index(ds)
    return ds


def trace_cell_open(path, dataset: str, cache, page_buffer: int = 0) -> list[tuple[int, int]]:
    """The ``(offset, size)`` reads HDF5 makes to open ``path`` and ``dataset`` as a remote cell does
    (file-object driver, page buffer, chunk cache, index loaded), traced on the local file."""
    from h5py import h5f

    with open(path, "rb") as raw:
        tf = TracedFile(raw)
        fid = h5f.open(repr(tf).encode(), h5f.ACC_RDONLY, lowlevel_fapl(tf, page_buffer))
        try:
            open_dataset(fid, dataset, cache).close()
        finally:
            fid.close()
        return [(r.offset, r.size) for r in tf.reads]


def predict_http(path, dataset: str, starts, counts, cache, setting: StorageSetting) -> Prediction:
    """GETs and bytes of a read cell over S3 (``setting.remote``) from ``path``'s chunk index, the chunk-cache
    model, the page buffer and fsspec's cache rules; the open's metadata reads from a local trace of the
    same open. Raises :class:`NotModelled` where the prediction would not be exact."""
    import h5py

    from ccp.chunkcache import ChunkCache

    if not setting.remote:
        raise ValueError("predict_http is for s3 cells")
    with h5py.File(path, "r") as f:
        layout = dataset_layout(f, dataset)
    if setting.page_buffer and layout.page_size is None:
        raise NotModelled("a page buffer on a file that is not paged (HDF5 drops it)")
    params = ChunkCache(int(cache.nbytes), int(cache.nslots), float(cache.w0))
    requests = list(zip(starts, counts))
    opened = trace_cell_open(path, dataset, cache, setting.page_buffer)
    fsspec, _ = s3_options(setting)
    return predict_gets(layout, requests, params, fsspec.cache_type, fsspec.block_size, opened, setting.page_buffer)


# (GETs, bytes fetched, seconds waiting, bytes HDF5 used, perf_counter) at one point of a pass
Mark = tuple[int, int, float, int, float]


@dataclass
class _Pass:
    remote: RemoteFile
    marks: list[Mark]


class RemoteCell:
    """One S3 cell's file: opened fresh for each pass, every GET counted, snapshots between requests."""

    def __init__(self, store: S3Store, key: str, local_path: Path, dataset: str, setting: StorageSetting):
        self.store, self.key, self.local_path, self.dataset, self.setting = store, key, Path(local_path), dataset, setting
        self._pass: _Pass | None = None
        self._connected = False
        self.page_buffer_effective: int | None = None

    def connect(self) -> None:
        """Make this process's S3 client and reach the object once (a HEAD), outside any pass: the first use of
        s3fs in a worker imports it, builds its botocore session and starts its event loop and connection
        (seconds, once per process), which is no file's cost. :meth:`RemoteTarget.open` calls it. Opening the
        file stays the pass's: fsspec's own HEAD and HDF5's GETs."""
        if not self._connected:
            self.store.fs.info(f"{self.store.settings.bucket}/{self.key}")
            self._connected = True

    def open_file(self):
        """A new fsspec file (so each pass starts with fsspec's cache empty), h5f.open'ed read-only through
        h5py's file-object driver with the cell's page buffer. Returns the FileID; close it, then :meth:`end_pass`."""
        from h5py import h5f

        if self._pass is not None:
            raise CcpError("remote cell: end_pass() before opening the next pass")
        remote = self.store.open(self.key, *s3_options(self.setting))
        self._pass = _Pass(remote, [])
        self.mark()
        try:
            fid = h5f.open(remote.name, h5f.ACC_RDONLY, lowlevel_fapl(remote.fileobj, self.setting.page_buffer))
        except BaseException:
            self._pass = None
            remote.close()
            raise
        self.page_buffer_effective = int(fid.get_access_plist().get_page_buffer_size()[0])
        try:
            check_effective_page_buffer(self.setting, self.page_buffer_effective, f"s3://{self.store.settings.bucket}/{self.key}")
        except CcpError:
            fid.close()
            self.end_pass()
            raise
        return fid

    load_index = staticmethod(load_index)

    def mark(self) -> None:
        """Snapshot (GETs, bytes, seconds waiting, bytes HDF5 asked for, wall time): outside timed calls."""
        import time

        p = self._pass
        if p is None:
            raise CcpError("remote cell: mark() outside a pass (open_file() first)")
        g, b, w = p.remote.log.snapshot()
        p.marks.append((g, b, w, p.remote.fileobj.bytes_used, time.perf_counter()))

    def end_pass(self) -> CellCounts:
        """Close the pass's file object. Marks: open_file's, the runner's after the open and after each
        request, and this one (the close): the counts of the open, of each request, and of the close
        (which must be none: a read-only close reads nothing)."""
        if self._pass is None:
            raise CcpError("remote cell: end_pass() without open_file()")
        self.mark()
        p, self._pass = self._pass, None
        p.remote.close()
        diffs = [_diff(a, b) for a, b in zip(p.marks, p.marks[1:])]
        if len(diffs) == 1:                           # the runner marked nothing: all of it is the open
            diffs.append(RequestCount(0, 0, 0, 0.0, 0.0))
        opened, reqs, close = diffs[0], diffs[1:-1], diffs[-1]
        if close.gets:
            raise CcpError(f"s3://{self.store.settings.bucket}/{self.key}: {close.gets} GETs after the last request "
                           "(HDF5 read while closing): not accounted")
        return CellCounts(opened, tuple(reqs), s3_options(self.setting)[1].label)

    def predict(self, starts, counts, cache) -> Prediction | None:
        """:func:`predict_http` for this cell, None where it is not modelled (the reason is lost: see NotModelled)."""
        try:
            return predict_http(self.local_path, self.dataset, starts, counts, cache, self.setting)
        except NotModelled:
            return None


def _diff(a: Mark, b: Mark) -> RequestCount:
    return RequestCount(b[0] - a[0], b[1] - a[1], b[3] - a[3], b[2] - a[2], b[4] - a[4])


def prediction_columns(pred: Prediction | None) -> dict:
    """``predicted_http_*`` of a cell (open included; None where the access is not modelled)."""
    if pred is None:
        return {"predicted_http_gets": None, "predicted_http_bytes": None, "predicted_http_open_gets": None}
    return {"predicted_http_gets": pred.open_cost.gets + pred.http_gets,
            "predicted_http_bytes": pred.open_cost.fetched + pred.http_bytes,
            "predicted_http_open_gets": pred.open_cost.gets}


def measured_columns(passes, effective_page_buffer: int | None = None) -> tuple[dict, list[str]]:
    """The measured ``http_*`` columns of an S3 cell from its timed passes' :class:`CellCounts` (the
    first pass's counts, the median wait) and its flags: ``http-counts-vary`` when passes differ."""
    import statistics

    passes = list(passes)
    first = passes[0]
    flags = []
    if any((c.open.gets + c.http_gets, c.open.fetched + c.http_bytes)
           != (first.open.gets + first.http_gets, first.open.fetched + first.http_bytes) for c in passes[1:]):
        flags.append("http-counts-vary")
    return {"http_gets": first.open.gets + first.http_gets, "http_bytes": first.open.fetched + first.http_bytes,
            "network": first.network, "http_open_gets": first.open.gets,
            "http_bytes_used": first.open.used + first.bytes_used,
            "http_wait_s": statistics.median(c.open.wait_s + c.wait_s for c in passes),
            "page_buffer_effective": effective_page_buffer}, flags


def result_columns(counts: CellCounts, pred: Prediction | None, effective_page_buffer: int | None = None) -> dict:
    """The cells.csv columns of an S3 cell from one pass (``measured_columns`` for several) and the prediction."""
    measured, _ = measured_columns([counts], effective_page_buffer)
    return {**measured, **prediction_columns(pred)}


def request_columns(counts: CellCounts) -> dict:
    """Per-request columns for requests.parquet (the open phase first, as the runner's rows are)."""
    rows = (counts.open, *counts.requests)
    return {"http_gets": [r.gets for r in rows], "http_bytes": [r.fetched for r in rows],
            "http_bytes_used": [r.used for r in rows], "http_wait_s": [r.wait_s for r in rows]}


class RemoteSession:
    """The sweep's S3 store and the layout files uploaded so far (each once, by its path, size and mtime)."""

    def __init__(self, store: S3Store):
        self.store = store
        self._uploaded: dict[tuple, str] = {}

    def upload(self, path) -> str:
        path = Path(path)
        st = path.stat()
        ident = (str(path.resolve()), st.st_size, st.st_mtime_ns)
        if ident not in self._uploaded:
            # a work file's name is its layout key (ccp.workload.files.layout_path); the content hash keeps
            # two files of one name (a user's product.nc from two folders) apart in the bucket
            from ccp.remote.s3 import file_checksum

            digest = file_checksum(path)
            self._uploaded[ident] = self.store.upload(path, f"{path.stem}-{digest[:12]}", digest).key
        return self._uploaded[ident]

    def cell(self, local_path, dataset: str, setting: StorageSetting) -> RemoteCell:
        """A remote cell in this process (uploads first if needed)."""
        return self.target(local_path, dataset, setting).open(self.store)

    def target(self, local_path, dataset: str, setting: StorageSetting) -> RemoteTarget:
        """What a cell job carries to its worker (picklable, fork-safe): uploads here, in the sweep's process."""
        if not setting.remote:
            raise ValueError("a remote cell needs storage s3")
        return RemoteTarget(self.store.settings, self.store.creds, self.upload(local_path), str(local_path), dataset,
                            setting)


@dataclass(frozen=True)
class RemoteTarget:
    """An uploaded layout file and a cell's storage setting, as plain data: a forked or remote worker makes
    its own S3 client from it (s3fs's event loop and botocore's connections do not survive a fork)."""

    settings: S3Settings
    creds: Credentials
    key: str
    local_path: str
    dataset: str
    setting: StorageSetting

    def open(self, store: S3Store | None = None) -> RemoteCell:
        """The :class:`RemoteCell`, connected (:meth:`RemoteCell.connect`); with no ``store``, over a new client of
        this process (close it with the cell). The runner opens it before its first pass's clocks start, so the
        process's one-off S3 setup is in no pass's wall or CPU time (issue 22: it was in the first pass's)."""
        own = store is None
        cell = RemoteCell(store or S3Store(self.settings, self.creds), self.key, Path(self.local_path), self.dataset,
                          self.setting)
        try:
            cell.connect()
        except BaseException:
            if own:
                cell.store.close()
            raise
        return cell


@contextmanager
def remote_session(settings: S3Settings | None):
    """``None``: no S3 cell (yields None, starts nothing). Else :func:`ccp.remote.session.s3_session`:
    the loopback server for ``local``; endpoint, credentials and bucket checked before any cell runs."""
    if settings is None:
        yield None
        return
    from ccp.remote.session import s3_session

    with s3_session(settings) as store:
        yield RemoteSession(store)


def preflight(settings: S3Settings | None) -> None:
    """Only the checks (for ``ccp plan`` or a dry run): one line, exit 2, when an endpoint cannot be used.
    ``local`` is checked by starting and stopping the loopback server."""
    with remote_session(settings):
        pass


def stored_page_size(path) -> int | None:
    """The page size of a file read as stored (the ``stored_page_size`` of :func:`ccp.remote.axes.storage_cells`)."""
    return file_page_size(os.fspath(path))


__all__ = ["RemoteCell", "RemoteSession", "RemoteTarget", "file_space_variant", "load_index", "lowlevel_fapl", "measured_columns",
           "open_dataset", "predict_http", "prediction_columns", "preflight", "remote_session", "request_columns", "result_columns", "stored_page_size",
           "trace_cell_open"]
