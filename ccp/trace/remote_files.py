"""The recorder's view of remote files: fsspec file objects handed to ``h5py.File`` (stdlib at import).

A file object is recorded as what it is, never as its repr: its URL (``fs.unstrip_protocol(path)``),
filesystem, size, block size and cache type (``file.cache.name``), and the file's free-space strategy
and page size (a paged file is what ``ccp s3 cloud-copy`` writes). Two things are wrapped on that one
object, nowhere else:

* ``file.read``: each read HDF5 makes through the object (offset, size) as an ``fsspec_read`` event;
  ``readinto`` goes through it. ``ccp diagnose`` replays these through fsspec's cache rules
  (:mod:`ccp.remote.fsspec_model`) for other block sizes and cache types.
* ``file.cache.fetcher``: each byte range fsspec's cache fetches, one GET for s3fs, http and gcsfs, as
  a ``get`` event (start, size, bytes received, time on the wire). An empty range sends no request and
  is not counted (as ``ccp.remote.network`` counts them).

Events carry the URL as their file and ``t0_ns``/``wall_s``: a GET belongs to the dataset call whose
time span holds it (same process), which is how ``ccp diagnose`` counts GETs per call. Their ``api``
names the file object they went through, ``fsspec:CACHE_TYPE:BLOCK_SIZE:N`` (N counts the objects
instrumented in the process): a program may open one URL several times with other cache settings, and
each open has a cache of its own.
"""

from __future__ import annotations

import itertools
import time

_OBJECTS = itertools.count(1)


def fsspec_info(obj) -> dict | None:
    """What an fsspec buffered file is, or None for any other object."""
    fs, cache = getattr(obj, "fs", None), getattr(obj, "cache", None)
    if fs is None or cache is None or not hasattr(cache, "fetcher") or not callable(getattr(obj, "read", None)):
        return None
    path = str(getattr(obj, "path", ""))
    proto = getattr(fs, "protocol", "file")
    proto = proto[0] if isinstance(proto, (tuple, list)) else str(proto)
    try:
        url = str(fs.unstrip_protocol(path))
    except Exception:  # an older fsspec: spell the URL from the protocol
        url = f"{proto}://{path}"
    return {"url": url, "protocol": proto, "filesystem": type(fs).__name__,
            "block_size": int(getattr(obj, "blocksize", 0) or 0),
            "cache_type": str(getattr(cache, "name", type(cache).__name__)),
            "size": int(getattr(obj, "size", 0) or 0)}


def fileobj_name(obj) -> str:
    """A file object that is not fsspec's: the real path of the file it reads (``open(path, "rb")``: its ``name``),
    so its reopens are one file; a local copy an fsspec caching filesystem made (simplecache, filecache) by the URL
    it is a copy of (:func:`cached_copy_url`); else ``<BytesIO file object>`` (its repr names a new object each time)."""
    import os

    name = getattr(obj, "name", None)
    if isinstance(name, str) and os.path.isfile(name):
        return cached_copy_url(obj, name) or os.path.realpath(name)
    return f"<{type(obj).__name__} file object>"


def cached_copy_url(obj, name: str) -> str | None:
    """``simplecache::s3://bucket/key`` for a local file an fsspec caching filesystem (simplecache, filecache) handed
    out as its copy of a remote object, None for any other file. fsspec names the copy by a hash; the URL comes from
    the ``fsspec.open`` that opened it (its OpenFile holds the object), or from filecache's ``original``; a copy whose
    URL is not found is ``<simplecache copy of a s3:// object>``: never a path (it is not the program's file)."""
    import gc
    import os
    import sys

    cached = sys.modules.get("fsspec.implementations.cached")
    if cached is None:
        return None
    base = cached.CachingFileSystem
    folder = os.path.realpath(os.path.dirname(name))

    def holds(fs) -> bool:
        return isinstance(fs, base) and any(os.path.realpath(str(s)) == folder for s in getattr(fs, "storage", []))

    def url(fs, path) -> str:
        inner = fs.fs.unstrip_protocol(fs.fs._strip_protocol(path))
        proto = fs.protocol[0] if isinstance(fs.protocol, (tuple, list)) else fs.protocol
        return f"{proto}::{inner}"

    for ref in gc.get_referrers(obj):       # OpenFile.fobjects, the list fsspec.open's context manager keeps
        if not isinstance(ref, list):
            continue
        for owner in gc.get_referrers(ref):
            if getattr(owner, "fobjects", None) is ref and holds(getattr(owner, "fs", None)):
                return url(owner.fs, owner.path)
    for cls in (base, *base.__subclasses__(), *(c for sub in base.__subclasses__() for c in sub.__subclasses__())):
        for fs in list(getattr(cls, "_cache", {}).values()):
            if holds(fs):
                original = getattr(obj, "original", None)     # filecache's: the remote path
                if isinstance(original, str):
                    return url(fs, original)
                proto = fs.protocol[0] if isinstance(fs.protocol, (tuple, list)) else fs.protocol
                inner = fs.fs.protocol[0] if isinstance(fs.fs.protocol, (tuple, list)) else fs.fs.protocol
                return f"<{proto} copy of a {inner}:// object>"
    return None


def file_space(fid) -> dict:
    """The HDF5 file's free-space strategy and page size (PAGE: a paged, cloud-optimized file)."""
    try:
        fcpl = fid.get_create_plist()
        strategy = fcpl.get_file_space_strategy()[0]
        names = {0: "FSM_AGGR", 1: "PAGE", 2: "AGGR", 3: "NONE"}
        out: dict = {"file_space": names.get(int(strategy), str(strategy))}
        if out["file_space"] == "PAGE":
            out["page_size"] = int(fcpl.get_file_space_page_size())
        return out
    except Exception:  # an HDF5 without these calls: say nothing
        return {}


def instrument(rec, obj, url: str) -> None:
    """Record each read HDF5 makes through ``obj`` and each GET fsspec's cache makes for it."""
    perf = time.perf_counter_ns
    cache = obj.cache
    fetch = cache.fetcher
    read = obj.read
    api = (f"fsspec:{getattr(cache, 'name', type(cache).__name__)}:{int(getattr(obj, 'blocksize', 0) or 0)}:"
           f"{next(_OBJECTS)}")

    def fetcher(start, end):
        t0 = perf()
        data = fetch(start, end)
        t1 = perf()
        if start < end:
            try:
                rec.event("get", url, api=api, start=[int(start)], count=[int(end) - int(start)], bytes=len(data), t0_ns=t0,
                          wall_ns=t1 - t0)
            except Exception as exc:  # the program must never see the recorder fail
                rec.failed(exc)
        return data

    def recorded_read(length=-1):
        try:
            loc = int(obj.loc)
            n = int(obj.size) - loc if length is None or int(length) < 0 else int(length)
        except Exception:  # the program must never see the recorder fail
            loc = n = -1
        t0 = perf()
        out = read(length)
        t1 = perf()
        if n > 0 and loc >= 0:
            try:
                rec.event("fsspec_read", url, api=api, start=[loc], count=[n], bytes=len(out), t0_ns=t0, wall_ns=t1 - t0)
            except Exception as exc:  # the program must never see the recorder fail
                rec.failed(exc)
        return out

    cache.fetcher = fetcher
    obj.read = recorded_read
