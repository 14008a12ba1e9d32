"""References in the output point at the copied objects.

An object reference (``H5T_STD_REF_OBJ``) is the address of an object header; a region
reference (``H5T_STD_REF_DSETREG``) is a global-heap id holding an address and a selection.
Copies live at other addresses, and ``H5Ocopy`` writes null references (it does not follow
them) or, inside compound members, stale addresses. So after the copy every dataset and
attribute of the source whose datatype holds a reference anywhere (a reference dataset,
netCDF-4's ``DIMENSION_LIST`` (variable-length sequences of references) and
``REFERENCE_LIST`` (a compound with a reference member), arrays of references ...) is read
again in its file type, each reference is made again for the same object (and selection)
in the output, and the values are written over the copy's.

A reference to an object that is not in the output (not linked from the root, or left out by
``only``) becomes a null reference and is counted. References of HDF5 1.12's new kind
(``H5T_STD_REF``) are copied as HDF5 copies them and counted as not remapped.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import h5py
import numpy as np
from h5py import h5a, h5o, h5s, h5t

from ccp.hdf5 import lowlevel as low
from ccp.repack.plan import plan_slabs

_REF_BUFFER = 16 * 1024 * 1024


def _plan(tid, offset: int, out: list) -> None:
    cls = tid.get_class()
    if cls == h5t.REFERENCE:
        if tid.equal(h5t.STD_REF_OBJ):
            out.append(("obj", offset))
        elif tid.equal(h5t.STD_REF_DSETREG):
            out.append(("reg", offset))
        else:
            out.append(("new", offset))
    elif cls == h5t.COMPOUND:
        for i in range(tid.get_nmembers()):
            _plan(tid.get_member_type(i), offset + tid.get_member_offset(i), out)
    elif cls == h5t.ARRAY:
        base = tid.get_super()
        sub: list = []
        _plan(base, 0, sub)
        if sub:
            size = base.get_size()
            for k in range(int(np.prod(tid.get_array_dims()))):
                out.extend(_shift(sub, offset + k * size))
    elif cls == h5t.VLEN:
        base = tid.get_super()
        sub = []
        _plan(base, 0, sub)
        if sub:
            out.append(("vlen", offset, tuple(sub), base.get_size()))


def _shift(plan, by: int):
    for item in plan:
        yield (item[0], item[1] + by, *item[2:])


def reference_plan(tid) -> tuple:
    """Where references sit in one element of ``tid`` (in its memory form): a tuple of
    ``("obj"|"reg"|"new", offset)`` and ``("vlen", offset, sub_plan, base_size)``."""
    out: list = []
    _plan(tid, 0, out)
    return tuple(out)


@dataclass
class RefCounts:
    remapped: int = 0
    nulled: int = 0
    not_remapped: int = 0     # new-style references


class ReferenceMapper:
    """Source object and region references -> the same references in the output."""

    def __init__(self, src: h5py.File, dst: h5py.File):
        self.src, self.dst = src, dst
        self.lib = low.library()
        self.paths: dict[int, str] = {h5o.get_info(src.id).addr: "/"}
        h5o.visit(src.id, self._visit, info=True)
        self.dst_addr: dict[str, int | None] = {}
        self.counts = RefCounts()

    def _visit(self, name, info):
        self.paths.setdefault(info.addr, "/" + name.decode("utf-8", "surrogateescape"))

    def _dst_address(self, path: str) -> int | None:
        if path not in self.dst_addr:
            try:
                self.dst_addr[path] = h5o.get_info(self.dst.id, path.encode("utf-8", "surrogateescape")).addr
            except (KeyError, ValueError, RuntimeError):
                self.dst_addr[path] = None
        return self.dst_addr[path]

    def object_address(self, addr: int) -> int:
        if addr == 0:
            return 0
        path = self.paths.get(addr)
        new = self._dst_address(path) if path is not None else None
        if new is None:
            self.counts.nulled += 1
            return 0
        self.counts.remapped += 1
        return new

    def region(self, raw: bytes) -> bytes:
        null = bytes(len(raw))
        if raw == null:
            return raw
        lib = self.lib
        ref = ctypes.create_string_buffer(raw, len(raw))
        oid = lib.H5Rdereference2(self.src.id.id, low.H5P_DEFAULT, low.H5R_DATASET_REGION1, ref)
        if oid < 0:
            self.counts.nulled += 1
            return null
        try:
            addr = self._addr_of(oid)
        finally:
            lib.H5Oclose(oid)
        path = self.paths.get(addr)
        if path is None or self._dst_address(path) is None:
            self.counts.nulled += 1
            return null
        space = lib.H5Rget_region(self.src.id.id, low.H5R_DATASET_REGION1, ref)
        if space < 0:
            self.counts.nulled += 1
            return null
        try:
            out = ctypes.create_string_buffer(len(raw))
            if lib.H5Rcreate(out, self.dst.id.id, path.encode("utf-8", "surrogateescape"),
                             low.H5R_DATASET_REGION1, space) < 0:
                self.counts.nulled += 1
                return null
        finally:
            lib.H5Sclose(space)
        self.counts.remapped += 1
        return out.raw

    def _addr_of(self, oid: int) -> int:
        info = low._ObjInfo()
        self.lib.H5Oget_info3(oid, ctypes.byref(info), 0x0001)  # H5O_INFO_BASIC: the token is the address
        return int.from_bytes(bytes(info.token)[:8], "little")

    # ------------------------------------------------------------ patching buffers
    def patch(self, rows: np.ndarray, plan) -> None:
        """Rewrite the references of ``rows`` (an (n, element size) uint8 view) in place."""
        n = rows.shape[0]
        if n == 0:
            return
        for item in plan:
            kind, off = item[0], item[1]
            if kind == "obj":
                vals = np.ascontiguousarray(rows[:, off:off + 8]).view("<u8").reshape(n)
                uniq, inverse = np.unique(vals, return_inverse=True)
                mapped = np.array([self.object_address(int(a)) for a in uniq], dtype="<u8")
                rows[:, off:off + 8] = mapped[inverse].reshape(n, 1).view(np.uint8)
            elif kind == "reg":
                for i in range(n):
                    rows[i, off:off + 12] = np.frombuffer(self.region(rows[i, off:off + 12].tobytes()), np.uint8)
            elif kind == "new":
                self.counts.not_remapped += n
            else:  # vlen: (size_t length, void *pointer) per element
                sub, size = item[2], item[3]
                head = np.ascontiguousarray(rows[:, off:off + 16]).view("<u8").reshape(n, 2)
                for length, ptr in head.tolist():
                    if length and ptr:
                        mem = (ctypes.c_ubyte * (length * size)).from_address(ptr)
                        self.patch(np.frombuffer(mem, dtype=np.uint8).reshape(length, size), sub)


def _has_new_refs(plan) -> bool:
    return any(item[0] == "new" or (item[0] == "vlen" and _has_new_refs(item[2])) for item in plan)


def _rows(buf: np.ndarray, size: int) -> np.ndarray:
    return buf.reshape(-1).view(np.uint8).reshape(-1, size)


def fix_references(src: h5py.File, dst: h5py.File, objects: dict) -> RefCounts:
    """Rewrite every reference-holding dataset and attribute of the output from the source.

    ``objects``: source path -> output path of every object copied (first path of each)."""
    mapper = ReferenceMapper(src, dst)
    for spath, dpath in objects.items():
        sobj = h5o.open(src.id, spath.encode("utf-8", "surrogateescape"))
        try:
            dobj = h5o.open(dst.id, dpath.encode("utf-8", "surrogateescape"))
        except (KeyError, ValueError, RuntimeError):
            continue
        for i in range(h5a.get_num_attrs(sobj)):
            aid = h5a.open(sobj, index=i)
            tid = low.file_type(aid.get_type())
            plan = reference_plan(tid)
            if not plan or _has_new_refs(plan) or not h5a.exists(dobj, aid.get_name()):
                if plan and _has_new_refs(plan):
                    mapper.counts.not_remapped += 1
                continue
            buf = low.read_attr(aid, tid)
            if buf is None:
                continue
            try:
                mapper.patch(_rows(buf, tid.get_size()), plan)
                h5a.open(dobj, aid.get_name()).write(buf, mtype=tid)
            finally:
                low.reclaim(tid, buf)
        if isinstance(sobj, h5py.h5d.DatasetID):
            _fix_dataset(mapper, sobj, dobj)
    return mapper.counts


def _fix_dataset(mapper: ReferenceMapper, sid, did) -> None:
    tid = low.file_type(sid.get_type())
    plan = reference_plan(tid)
    if not plan:
        return
    if _has_new_refs(plan):
        mapper.counts.not_remapped += 1
        return
    if sid.get_space().get_simple_extent_type() == h5s.NULL:
        return
    shape = sid.shape
    if shape and 0 in shape:
        return
    if not shape:
        slabs = [()]
    else:
        slabs = [s.slices for s in plan_slabs(shape, None, tid.get_size(), _REF_BUFFER)]
    for slices in slabs:
        buf = low.read_slab(sid, tid, slices)
        try:
            mapper.patch(_rows(buf, tid.get_size()), plan)
            low.write_slab(did, tid, slices, buf)
        finally:
            low.reclaim(tid, buf)
