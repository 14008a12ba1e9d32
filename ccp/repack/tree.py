"""The file tree: groups, links, attributes and datasets copied in link order."""

from __future__ import annotations

import time

import h5py
from h5py import h5, h5l, h5o, h5p

from ccp.errors import CcpError, ConfigError
from ccp.hdf5 import lowlevel as low
from ccp.hdf5.h5types import commit_anonymous
from ccp.repack.chunks import DatasetWriter
from ccp.repack.decide import _h5_message, _Planner, _Target
from ccp.repack.references import fix_references

# a named datatype whose link comes after a dataset that uses it is linked here meanwhile (no input name
# starts so: a link name cannot hold "/", and this one is dropped before the copy is renamed into place)
_TYPE_LINK = ".ccp-named-type-"


def _link_names(gid) -> list[bytes]:
    order = gid.get_create_plist().get_link_creation_order()
    idx = h5.INDEX_CRT_ORDER if order & h5p.CRT_ORDER_TRACKED else h5.INDEX_NAME
    names: list[bytes] = []
    gid.links.iterate(names.append, idx_type=idx)
    return names


def _join(parent: str, name: bytes) -> str:
    n = name.decode("utf-8", "surrogateescape")
    return "/" + n if parent == "/" else f"{parent}/{n}"


def _lcpl(cset: int):
    lcpl = h5p.create(h5p.LINK_CREATE)
    lcpl.set_char_encoding(cset)
    return lcpl


def _copy_attrs(src_obj, dst_obj) -> None:
    """Copy every attribute, in creation order when the source tracks it."""
    sid = src_obj.id
    try:
        tracked = sid.get_create_plist().get_attr_creation_order() & h5p.CRT_ORDER_TRACKED
    except (ValueError, RuntimeError):  # pragma: no cover - objects without creation properties
        tracked = 0
    names: list[bytes] = []
    h5py.h5a.iterate(sid, names.append, index_type=h5.INDEX_CRT_ORDER if tracked else h5.INDEX_NAME)
    for name in names:
        _copy_attr(sid, dst_obj, name)


def _copy_attr(sid, dst_obj, name: bytes) -> None:
    """One attribute, in its file datatype: byte order, string padding, sizes, odd types
    (128-bit, H5T_TIME ...) and variable-length data are moved as HDF5 stores them."""
    aid = h5py.h5a.open(sid, name)
    tid = low.file_type(aid.get_type())
    new = h5py.h5a.create(dst_obj.id, name, tid, aid.get_space())
    buf = low.read_attr(aid, tid)
    if buf is None:
        return
    try:
        new.write(buf, mtype=tid)
    finally:
        low.reclaim(tid, buf)


class _Repacker:
    def __init__(self, src: h5py.File, dst: h5py.File | None, planner: _Planner, pool, buffer_bytes, progress,
                 only: set | None = None):
        self.src = src
        self.dst = dst
        self.planner = planner
        self.pool = pool
        self.buffer = buffer_bytes
        self.progress = progress
        self.only = only
        self.copied: dict = {}      # object key -> destination path
        self.targets: dict = {}     # object key -> _Target
        self.results: list = []
        self.multi_linked = False
        self.named_types: dict = {}  # source named datatype key -> its output copy, committed before its link
        self.type_links: dict = {}   # source named datatype key -> a temporary link to its output copy
        self.types_from_copy: set = set()  # named datatypes whose output copy H5Ocopy made, attributes and all

    def survey(self):
        """Every dataset once (first path), decisions, and whether any object has several links."""
        found = []

        def visit(name, info):
            if info.rc > 1:
                self.multi_linked = True
            if info.type == h5o.TYPE_DATASET:
                found.append(("/" + name.decode("utf-8", "surrogateescape"), (info.fileno, info.addr)))

        h5o.visit(self.src.id, visit, info=True)
        for path, key in found:
            if self.only is not None and key not in self.only:
                continue
            ds = self.src[path]
            try:
                tgt = self.planner.decide(path, key, ds)
            except CcpError:
                raise
            except Exception as exc:  # an odd dataset costs that dataset only: copied as it is
                # HDF5's own errors reach h5py as these; anything else is a fault of ccp, not worded as Python's
                why = (_h5_message(exc) if isinstance(exc, OSError | ValueError | RuntimeError | KeyError)
                       else "ccp could not plan it (a fault in ccp: please report it with the output of h5dump -p -H)")
                named = self.planner.layouts.get(key) or self.planner.filters.get(key)
                if named is not None:
                    opt = "-l" if key in self.planner.layouts else "-f"
                    raise ConfigError(f"{opt} {named[1]}", f"{path}: {why}") from None
                tgt = self.planner.decide(path, key, ds, options=False)
                tgt.notes.append(f"kept as it is (copied by HDF5): {why}")
            self.planner.rewrite_instead_of_copy(tgt, ds)
            self.targets[key] = tgt
        return self.targets

    def total_bytes(self) -> int:
        return sum(t.raw_bytes for t in self.targets.values())

    def _out(self):
        """The output file (set by the caller before ``run``; a plan's survey has none)."""
        assert self.dst is not None, "no output file to copy into"
        return self.dst

    def run(self):
        root_src = self.src["/"]
        root_dst = self._out()["/"]
        _copy_attrs(root_src, root_dst)
        self.changed_prefixes = {p for t in self.targets.values() if t.changed for p in _ancestors(t.path)}
        self._copy_group(root_src, root_dst, "/")
        self.drop_type_links()
        objects = {"/": "/"}

        def visit(name, info):
            path = "/" + name.decode("utf-8", "surrogateescape")
            if info.addr not in seen:
                seen.add(info.addr)
                objects[path] = path

        seen = {h5o.get_info(self.src.id).addr}
        h5o.visit(self.src.id, visit, info=True)
        self.ref_counts = fix_references(self.src, self.dst, objects)

    def _copy_group(self, sgrp, dgrp, path):
        for name in _link_names(sgrp.id):
            child = _join(path, name)
            info = sgrp.id.links.get_info(name)
            if self.only is not None and not self._wanted(child):
                continue
            if info.type == h5l.TYPE_SOFT:
                dgrp.id.links.create_soft(name, sgrp.id.links.get_val(name), lcpl=_lcpl(info.cset))
                continue
            if info.type == h5l.TYPE_EXTERNAL:
                link = sgrp.get(name.decode("utf-8", "surrogateescape"), getlink=True)
                dgrp[name.decode("utf-8", "surrogateescape")] = h5py.ExternalLink(link.filename, link.path)
                continue
            if info.type != h5l.TYPE_HARD:  # pragma: no cover - user-defined links
                continue
            oid = h5o.open(sgrp.id, name)
            oinfo = h5o.get_info(oid)
            key = (oinfo.fileno, oinfo.addr)
            if key in self.copied:
                dgrp.id.links.create_hard(name, self._out()["/"].id, self.copied[key].encode("utf-8", "surrogateescape"),
                                          lcpl=_lcpl(info.cset))
                continue
            self.copied[key] = child
            if oinfo.type == h5o.TYPE_GROUP:
                if self.only is None and not self.multi_linked and child not in self.changed_prefixes:
                    _ocopy(sgrp, dgrp, name, info.cset, child)
                    self._advance_copied(child)
                    continue
                gcpl = oid.get_create_plist()
                gcpl.set_obj_track_times(low.tracks_times(oid))
                gid = h5py.h5g.create(dgrp.id, name, lcpl=_lcpl(info.cset), gcpl=gcpl)
                sub_src = h5py.Group(oid)
                sub_dst = h5py.Group(gid)
                if self.only is None:
                    _copy_attrs(sub_src, sub_dst)
                self._copy_group(sub_src, sub_dst, child)
            elif oinfo.type == h5o.TYPE_DATASET:
                tgt = self.targets.get(key)
                if tgt is None or not tgt.changed:
                    t0 = time.perf_counter()
                    _ocopy(sgrp, dgrp, name, info.cset, child, copypl=self._sharing_named_type(oid))
                    self._keep_copied_type(oid, dgrp, name)
                    if tgt is not None:
                        if self.progress is not None:
                            self.progress("advance", tgt.raw_bytes)
                        new = h5py.Dataset(h5o.open(dgrp.id, name))
                        self.results.append(tgt.result(new_stored_bytes=new.id.get_storage_size(),
                                                       seconds=time.perf_counter() - t0))
                    continue
                self._repack_dataset(h5py.Dataset(oid), dgrp, name, info.cset, tgt)
            elif oinfo.type == h5o.TYPE_NAMED_DATATYPE and key in self.named_types:
                # a rewritten dataset already shares it: its name links to that very object
                h5o.link(self.named_types[key], dgrp.id, name, lcpl=_lcpl(info.cset))
                if key not in self.types_from_copy:     # H5Ocopy brought the type's attributes with it
                    _copy_attrs(h5py.Datatype(oid), h5py.Datatype(self.named_types[key]))
                self._drop_type_link(key)
            else:
                _ocopy(sgrp, dgrp, name, info.cset, child)

    def _dst_named_type(self, src_ds):
        """The output's copy of a dataset's named datatype (its link kept): the one already copied, or
        one committed now, anonymously, that the named datatype's link will point at."""
        tid = src_ds.id.get_type()
        if not tid.committed():
            return None
        info = h5o.get_info(tid)
        key = (info.fileno, info.addr)
        if key in self.named_types:
            return self.named_types[key]
        if key in self.copied:
            try:
                return h5py.h5t.open(self._out().id, self.copied[key].encode("utf-8", "surrogateescape"))
            except (KeyError, ValueError, RuntimeError):   # pragma: no cover - copied inside a group copy
                return None
        new = commit_anonymous(self._out().id, tid)
        if new is not None:
            self.named_types[key] = new
        return new

    def _sharing_named_type(self, oid):
        """For a dataset H5Ocopy copies: a copy list that keeps it sharing its named datatype when the
        output already holds that type, else None. H5Ocopy alone gives it an anonymous copy of the type,
        and the output's dataset no longer names it (h5repack keeps it). A type whose own link comes later
        in link order is shared through a temporary link (``_TYPE_LINK``), dropped when its link is made."""
        tid = oid.get_type()
        if not tid.committed():
            return None
        info = h5o.get_info(tid)
        key = (info.fileno, info.addr)
        path = self.copied.get(key)
        if path is None and key in self.named_types:
            path = self.type_links.get(key)
            if path is None:
                path = self.type_links[key] = f"/{_TYPE_LINK}{len(self.type_links)}"
                h5o.link(self.named_types[key], self._out().id, path.encode())
        return None if path is None else low.copy_plist_sharing(path.encode("utf-8", "surrogateescape"))

    def _keep_copied_type(self, oid, dgrp, name):
        """After H5Ocopy of a dataset whose named datatype the output does not hold yet: that dataset's
        (anonymous) copy of the type is the one the type's own link, later in link order, will name."""
        tid = oid.get_type()
        if not tid.committed():
            return
        info = h5o.get_info(tid)
        key = (info.fileno, info.addr)
        if key not in self.copied and key not in self.named_types:
            self.named_types[key] = h5o.open(dgrp.id, name).get_type()
            self.types_from_copy.add(key)

    def _drop_type_link(self, key):
        path = self.type_links.pop(key, None)
        if path is not None:
            self._out().id.unlink(path.encode())

    def drop_type_links(self):
        """The temporary links of types that never got their own (anonymous committed types in the input)."""
        for key in list(self.type_links):
            self._drop_type_link(key)

    def _wanted(self, path: str) -> bool:
        return any(t.path == path or t.path.startswith(path + "/") for t in self.targets.values())

    def _advance_copied(self, group_path: str):
        prefix = group_path + "/"
        for tgt in self.targets.values():
            if tgt.path.startswith(prefix):
                if self.progress is not None:
                    self.progress("advance", tgt.raw_bytes)
                self.results.append(tgt.result(new_stored_bytes=tgt.stored_bytes))

    def _repack_dataset(self, src_ds, dgrp, name, cset, tgt: _Target):
        t0 = time.perf_counter()
        if self.progress is not None:
            self.progress("dataset", describe(tgt, self.pool._max_workers))
        tgt.dst_type = self._dst_named_type(src_ds)
        writer = DatasetWriter(src_ds, dgrp, name, _lcpl(cset), tgt, self.planner, self.pool, self.buffer, self.progress)
        try:
            writer.run()
        except (CcpError, OSError):
            raise
        except Exception as exc:  # one line naming the dataset, never an internal error
            if low.is_enospc(exc):
                raise
            raise CcpError(f"{tgt.path}: could not be repacked ({tgt.method} path): {_h5_message(exc)}; "
                           f"nothing written") from exc
        _copy_attrs(src_ds, writer.dst)
        stored = writer.dst.id.get_storage_size()
        self.results.append(tgt.result(new_stored_bytes=stored, seconds=time.perf_counter() - t0,
                                       hyperslabs=writer.slabs, buffer_bytes=writer.buffer_used))


def _ocopy(sgrp, dgrp, name: bytes, cset: int, path: str, copypl=None) -> None:
    """H5Ocopy of one object; a failure is one line naming it (HDF5's reason in it)."""
    try:
        h5o.copy(sgrp.id, name, dgrp.id, name, copypl=copypl, lcpl=_lcpl(cset))
    except (ValueError, RuntimeError, KeyError, TypeError) as exc:
        if low.is_enospc(exc):
            raise
        raise CcpError(f"{path}: HDF5 cannot copy it: {_h5_message(exc)}; nothing written") from exc


def _ancestors(path: str):
    parts = path.strip("/").split("/")
    for i in range(1, len(parts)):
        yield "/" + "/".join(parts[:i])


def describe(tgt: _Target, threads: int) -> str:
    """One line: what changes in a dataset and which path writes it."""
    change = f"{tgt.old_layout} {tgt.old_pipeline.spec} -> {tgt.layout.spec} {tgt.pipeline.spec}"
    if tgt.method == "fast":
        how = f"fast path, {threads} thread{'s' if threads != 1 else ''}"
        if any(s.name == "gzip" for s in tgt.pipeline.steps):
            how += f", deflate by {tgt.deflate}"
    else:
        how = f"library path: {tgt.reason}"
    return f"{tgt.path}: {change} ({how})"

