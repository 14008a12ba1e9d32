"""The recorder's patches of h5py (stdlib at import: loaded into traced programs; h5py imported once the program
has): the user-level dataset calls (the fast path's ``__getitem__``: :mod:`ccp.trace.fastpath`), the low-level reads
and writes under them, ``set_extent`` (a resize gives the handles their new shape), file opens and closes.

Low-level methods live on Cython extension types, which refuse ``setattr``; they are replaced in the type's dict
(then ``PyType_Modified`` drops CPython's method cache). This is CPython-only.
"""

from __future__ import annotations

import ctypes
import gc
import operator
import os
import time

from ccp.trace.fastpath import fast_getitem
from ccp.trace.named import like
from ccp.trace.remote_files import file_space, fileobj_name, fsspec_info, instrument
from ccp.trace.selections import _file_name, describe_key, kept_space
from ccp.trace.unnamed import linked


def _set_type_attr(cls, name: str, value) -> None:
    """``cls.name = value`` for an extension type (CPython: its dict, then invalidate caches)."""
    d = gc.get_referents(cls.__dict__)[0]
    d[name] = value
    ctypes.pythonapi.PyType_Modified(ctypes.py_object(cls))


_PLAIN_KEYS = (int, slice, type(Ellipsis))


def index_once(args: tuple) -> tuple:
    """The fast reader's key with every object that is an index by ``__index__`` alone (not an int, a slice, a bool,
    a numpy array or scalar) made its int, once: h5py asks it once untraced, and the recorder describing the key
    after the read would ask it again (a key whose ``__index__`` counts its calls, or answers anew each time, would
    see the trace). Called where the fast reader is, so an ``__index__`` that raises reaches h5py from the same
    place, once, as untraced (a TypeError sends h5py to its Python path, which asks again, as it does untraced)."""
    out = None
    for i, a in enumerate(args):
        t = type(a)
        if t in _PLAIN_KEYS or t is bool or not hasattr(t, "__index__") or t.__module__ == "numpy":
            continue
        out = list(args) if out is None else out
        out[i] = operator.index(a)
    return args if out is None else tuple(out)


def patch_links(rec, Group, h5o) -> None:
    """``g[name] = data`` names its dataset by the link it makes: h5py creates the dataset unnamed, writes it, then
    links it (``h5o.link``), so the write's records are held until the link renames them (:func:`ccp.trace.unnamed.linked`);
    if it never comes (the name was taken), they say so in words (breaker6 F6). A dataset made by
    ``create_dataset(None, ...)`` and linked later by ``g[name] = d`` takes its name from then on."""
    link_orig = h5o.link

    def link(obj, *args, **kwargs):
        link_orig(obj, *args, **kwargs)
        try:
            linked(rec, obj)
        except Exception as exc:  # the program must never see the recorder fail
            rec.failed(exc)

    h5o.link = like(link_orig, link)
    setitem_orig = Group.__setitem__

    def __setitem__(self, name, obj):
        local = rec.local
        saved, local.linking = local.linking, True
        try:
            setitem_orig(self, name, obj)
        finally:
            rec.local.linking = saved
            if not saved:
                try:
                    rec.flush_if_due()
                except Exception as exc:  # the program must never see the recorder fail
                    rec.failed(exc)

    Group.__setitem__ = like(setitem_orig, __setitem__)


def patch_h5py(rec) -> None:
    """Wrap h5py's dataset calls, file opens and closes so that ``rec`` (a :class:`ccp.trace.recorder.Recorder`)
    records them."""
    import h5py
    from h5py import _selector, h5d, h5f, h5i, h5o
    from h5py._hl import dataset as hl_dataset
    from h5py._hl import files as hl_files
    from h5py._hl import group as hl_group

    rec.h5py_modules = (h5f, h5i)
    perf = time.perf_counter_ns
    Dataset = hl_dataset.Dataset

    def low(api, op, orig):
        # a low-level call has no recorded call inside it: its record is made whole once it returns, never put on
        # the thread's stack of open calls (a begin and an end cost it twice the rest of its recording)
        def wrapper(self, mspace, fspace, arr_obj, *args, **kwargs):
            entry = perf()
            seq = next(rec.seq)         # numbered as it starts, as every call: before a handle it registers after
            t0 = perf()
            try:
                return orig(self, mspace, fspace, arr_obj, *args, **kwargs)
            finally:
                t1 = perf()
                try:
                    _file, _name, _itemsize, shape = info = rec.handle_info(self)
                    rec.low_call(seq, api, op, t0, t1, entry, info, kept_space(fspace, shape))  # described at merge
                except Exception as exc:  # the program must never see the recorder fail
                    rec.failed(exc)
        return like(orig, wrapper)

    _set_type_attr(h5d.DatasetID, "read", low("DatasetID.read", "read", h5d.DatasetID.__dict__["read"]))
    _set_type_attr(h5d.DatasetID, "write", low("DatasetID.write", "write", h5d.DatasetID.__dict__["write"]))

    set_extent_orig = h5d.DatasetID.__dict__["set_extent"]

    def set_extent(self, shape):
        set_extent_orig(self, shape)
        try:
            rec.resized(self)
        except Exception as exc:  # the program must never see the recorder fail
            rec.failed(exc)

    set_extent = like(set_extent_orig, set_extent)
    _set_type_attr(h5d.DatasetID, "set_extent", set_extent)

    refresh_orig = h5d.DatasetID.__dict__.get("refresh")

    def refresh(self):
        # an SWMR reader's refresh() takes the shape another process's appends gave the dataset: later keys
        # (d[-1], slices to the end) are described against it, as after set_extent (breaker6 F0)
        refresh_orig(self)
        try:
            rec.resized(self)
        except Exception as exc:  # the program must never see the recorder fail
            rec.failed(exc)

    if refresh_orig is not None:
        _set_type_attr(h5d.DatasetID, "refresh", like(refresh_orig, refresh))

    fast_orig = _selector.Reader.__dict__["read"]

    def fast_read(self, args):
        entry = perf()
        dset = rec.local.dataset
        args = index_once(args)
        t0 = perf()
        try:
            out = fast_orig(self, args)
        except BaseException:
            # refused (a mask: h5py reads the key again by its Python path, recorded there) or failed: no read to
            # record (a refused d[mask] was replayed twice by --verify); what it cost the recorder is its own
            t1 = perf()
            try:
                rec.spent(t0 - entry + perf() - t1)
            except Exception as exc:  # the program must never see the recorder fail
                rec.failed(exc)
            raise
        t1 = perf()
        r = rec.begin("fast_reader", "read")
        try:
            if dset is not None:
                file, name, itemsize, shape = rec.handle_info(dset.id)
                sel = describe_key(args, shape)
                r.update(sel, file=file, dataset=name, bytes=sel["nelems"] * itemsize)
        except Exception as exc:  # the program must never see the recorder fail
            rec.failed(exc)
        rec.end(r, t0, t1, low=True, entry=entry)
        return out

    fast_read = like(fast_orig, fast_read)
    _set_type_attr(_selector.Reader, "read", fast_read)

    def high(api, op, orig):
        def wrapper(self, *args, **kwargs):
            entry = perf()
            dset = self if type(self) is Dataset else getattr(self, "_dset", self)
            r = rec.begin(api, op)
            local = rec.local
            saved, local.dataset = local.dataset, dset
            t0 = perf()
            try:
                return orig(self, *args, **kwargs)
            finally:
                t1 = perf()
                rec.local.dataset = saved
                try:
                    info = rec.handle_info(dset._id)        # not .id: a property that takes h5py's lock again
                    r["file"], r["dataset"] = info[0], info[1]
                except Exception as exc:  # the program must never see the recorder fail
                    rec.failed(exc)
                rec.end(r, t0, t1, low=False, entry=entry)
        return like(orig, wrapper)

    Dataset.__getitem__ = fast_getitem(rec, high("Dataset.__getitem__", "read", Dataset.__getitem__), fast_orig)
    Dataset.__setitem__ = high("Dataset.__setitem__", "write", Dataset.__setitem__)
    Dataset.read_direct = high("Dataset.read_direct", "read", Dataset.read_direct)
    Dataset.write_direct = high("Dataset.write_direct", "write", Dataset.write_direct)
    for cls_name, api in (("AsTypeView", "astype"), ("FieldsView", "fields"), ("AsStrView", "asstr"),
                          ("AstypeWrapper", "astype"), ("FieldsWrapper", "fields"), ("AsStrWrapper", "asstr")):
        cls = getattr(hl_dataset, cls_name, None)
        if cls is not None and "__getitem__" in cls.__dict__:
            cls.__getitem__ = high(f"{api}.__getitem__", "read", cls.__dict__["__getitem__"])

    create_orig = hl_group.Group.create_dataset

    def create_dataset(self, *args, **kwargs):
        # create_dataset(data=...) writes: a user call when (and only when) it reaches HDF5
        r = rec.begin("Group.create_dataset", "write")
        r["drop_if_no_io"] = True
        t0 = perf()
        try:
            out = orig_result = create_orig(self, *args, **kwargs)
        except BaseException:
            rec.end(r, t0, perf(), low=False)
            raise
        t1 = perf()
        try:
            file, name, _itemsize, _shape = rec.handle_info(orig_result.id)
            r.update(file=file, dataset=name)
        except Exception as exc:  # the program must never see the recorder fail
            rec.failed(exc)
        rec.end(r, t0, t1, low=False)
        return out

    hl_group.Group.create_dataset = create_dataset
    patch_links(rec, hl_group.Group, h5o)
    init_orig = Dataset.__init__

    def dataset_init(self, bind, *args, **kwargs):
        init_orig(self, bind, *args, **kwargs)
        try:
            rec.handle_info(bind)
        except Exception as exc:  # never break the user's program over bookkeeping
            rec.failed(exc)

    Dataset.__init__ = dataset_init

    File = hl_files.File
    file_init = File.__init__

    def file_init_wrapper(self, *args, **kwargs):
        obj = args[0] if args else kwargs.get("name")
        remote = None
        if obj is not None and not isinstance(obj, (str, bytes, os.PathLike, h5py.h5f.FileID)):
            try:                # a file object: recorded as what it is, its reads and GETs counted from the open on
                remote = fsspec_info(obj)
                if remote is not None and getattr(obj.read, "__name__", "") != "recorded_read":
                    instrument(rec, obj, remote["url"])
            except Exception as exc:  # never break the user's program over bookkeeping
                rec.failed(exc)
                remote = None
        file_init(self, *args, **kwargs)
        if args and isinstance(args[0], h5py.h5f.FileID):     # File(fid): a new wrapper, not an open
            return
        try:
            name = _file_name(self.filename)
            if name != self.filename and isinstance(self.filename, str):
                # the local file's real path, for its name once it is deleted (then h5py's name is all that is left:
                # a relative one made the trace list the file twice)
                rec.alias[self.filename] = name
            if remote is not None:
                rec.alias[name] = name = remote["url"]
                rec.remote[name] = {**remote, **file_space(self.id)}
            elif callable(getattr(obj, "read", None)) and callable(getattr(obj, "seek", None)):
                rec.alias[name] = name = fileobj_name(obj)   # h5py names a file object by its repr, new per object
            _mdc, nslots, nbytes, w0 = self.id.get_access_plist().get_cache()
            rec.event("file_open", name, mode=self.mode, rdcc_nbytes=int(nbytes), rdcc_nslots=int(nslots),
                      rdcc_w0=float(w0))
        except Exception as exc:  # never break the user's program over bookkeeping
            rec.failed(exc)

    File.__init__ = file_init_wrapper
    file_close = File.close

    def file_close_wrapper(self):
        try:
            name = _file_name(self.filename) if self.id.valid else None
            name = rec.alias.get(name, name) if name is not None else None
        except Exception:  # the program must never see the recorder fail
            name = None
        file_close(self)
        if name is not None:
            try:
                rec.file_closed(name)
                rec.event("file_close", name)
            except Exception as exc:  # the program must never see the recorder fail
                rec.failed(exc)

    File.close = file_close_wrapper
    rec.patched = True
    rec.h5py_version = h5py.__version__


