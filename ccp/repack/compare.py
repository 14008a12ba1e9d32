"""Two HDF5 files hold the same things: value by value, in the file datatypes.

Used by the tests and the differential benchmark to check a repack. Values are read with
each object's file datatype as memory type (:mod:`ccp.hdf5.lowlevel`), so nothing is
compared through a numpy dtype: fixed-size values compare as their stored bytes;
variable-length data compares element by element; a reference compares as the path of the
object it points at (and, for a region reference, the selection), since copies live at
other addresses.

``differences(a, b)`` lists what differs (empty: the same). Layout and filters may differ
when ``layouts_may_differ`` (a repack with options); datatypes, shapes, maximum shapes,
fill values, attributes, links, link order and time tracking may not.
"""

from __future__ import annotations

import ctypes
import struct

import h5py
from h5py import h5, h5a, h5d, h5l, h5o, h5p, h5s, h5t

from ccp.hdf5 import lowlevel as low
from ccp.hdf5 import plists
from ccp.hdf5.filters import FilterPipeline, missing_decoder, pipeline_from_dcpl, register_plugins, register_plugins_for
from ccp.repack.plan import plan_slabs
from ccp.repack.readback import SAMPLE_SLAB_BYTES, WrittenChunks, check_written

_SLAB_BYTES = 8 * 1024 * 1024


class _Names:
    """Object addresses of one file -> a path (the first found)."""

    def __init__(self, f: h5py.File):
        self.f = f
        self.paths: dict[int, str | None] = {h5o.get_info(f.id).addr: "/"}

        def visit(name, info):
            self.paths.setdefault(info.addr, "/" + name.decode("utf-8", "surrogateescape"))

        h5o.visit(f.id, visit, info=True)

    def obj(self, addr: int):
        return None if addr == 0 else self.paths.get(addr, f"<unreachable {addr}>")

    def only_those_in(self, other: h5py.File) -> None:
        """A partial copy (``repack(only=...)``) leaves objects out, and a reference to one of them is written
        null: compare the source's references to left-out objects as null too."""
        self.paths = {addr: (path if path == "/" or path in other else None) for addr, path in self.paths.items()}

    def region(self, raw: bytes):
        if raw == bytes(len(raw)):
            return None
        lib = low.library()
        ref = ctypes.create_string_buffer(raw, len(raw))
        oid = lib.H5Rdereference2(self.f.id.id, low.H5P_DEFAULT, low.H5R_DATASET_REGION1, ref)
        if oid < 0:
            return "<bad region reference>"
        info = low._ObjInfo()
        lib.H5Oget_info3(oid, ctypes.byref(info), 0x0001)
        lib.H5Oclose(oid)
        sid = lib.H5Rget_region(self.f.id.id, low.H5R_DATASET_REGION1, ref)
        space = h5s.SpaceID(sid)
        kind = space.get_select_type()
        if kind == h5s.SEL_HYPERSLABS:
            sel = space.get_select_hyper_blocklist().tolist()
        elif kind == h5s.SEL_POINTS:
            sel = space.get_select_elem_pointlist().tolist()
        else:
            sel = None
        return (self.obj(int.from_bytes(bytes(info.token)[:8], "little")), space.shape, kind, sel)


def _canon(tid, raw: bytes, names: _Names):
    """One element (its memory form after a read in the file type) as a comparable value."""
    if not low.has_vlen(tid) and not low.has_reference(tid):
        return raw
    cls = tid.get_class()
    if cls == h5t.COMPOUND:
        out = []
        for i in range(tid.get_nmembers()):
            mt = tid.get_member_type(i)
            off = tid.get_member_offset(i)
            out.append(_canon(mt, raw[off:off + mt.get_size()], names))
        return tuple(out)
    if cls == h5t.ARRAY:
        base = tid.get_super()
        size = base.get_size()
        n = len(raw) // size
        return [_canon(base, raw[k * size:(k + 1) * size], names) for k in range(n)]
    if cls == h5t.VLEN:
        base = tid.get_super()
        size = base.get_size()
        length, ptr = struct.unpack("<QQ", raw[:16])
        data = ctypes.string_at(ptr, length * size) if length and ptr else b""
        return [_canon(base, data[k * size:(k + 1) * size], names) for k in range(length)]
    if cls == h5t.STRING:
        (ptr,) = struct.unpack("<Q", raw[:8])
        return None if ptr == 0 else ctypes.string_at(ptr)
    if cls == h5t.REFERENCE:
        if tid.equal(h5t.STD_REF_OBJ):
            return ("obj", names.obj(struct.unpack("<Q", raw[:8])[0]))
        if tid.equal(h5t.STD_REF_DSETREG):
            return ("region", names.region(raw))
        return ("new-reference", raw)
    return raw  # pragma: no cover


def _values(buf, tid, names: _Names):
    if buf is None:
        return None
    if not low.has_vlen(tid) and not low.has_reference(tid):
        return buf.tobytes()
    size = tid.get_size()
    flat = buf.reshape(-1).view("u1").reshape(-1, size)
    return [_canon(tid, row.tobytes(), names) for row in flat]


def _share_chunks(regions, chunks) -> bool:
    """Whether two of ``regions`` (tuples of slices) lie in a common chunk of the grid ``chunks`` (None: one
    contiguous layout, shared by all)."""
    if chunks is None:
        return len(regions) > 1
    spans = [[(r.start // c, (r.stop - 1) // c) for r, c in zip(region, chunks)] for region in regions]
    return any(all(a0 <= b1 and b0 <= a1 for (a0, a1), (b0, b1) in zip(p, q))
               for i, p in enumerate(spans) for q in spans[i + 1:])


def _read_regions(dsid, tid, regions):
    """The elements of the union of ``regions`` (tuples of slices), in the dataset's C order, one read."""
    if len(regions) == 1:
        return low.read_slab(dsid, tid, regions[0])
    fspace = dsid.get_space()
    fspace.select_none()
    for sl in regions:
        fspace.select_hyperslab(tuple(s.start for s in sl), tuple(s.stop - s.start for s in sl), op=h5s.SELECT_OR)
    count = fspace.get_select_npoints()
    buf = low.raw_buffer((count,), tid)
    dsid.read(h5s.create_simple((count,)), fspace, buf, mtype=tid)
    return buf


def _type_text(tid) -> str:
    try:
        return str(tid.dtype)
    except Exception:  # types h5py cannot map
        return f"class {tid.get_class()} size {tid.get_size()}"


class _Diff:
    def __init__(self, a: h5py.File, b: h5py.File, layouts_may_differ: bool):
        self.a, self.b = a, b
        self.na, self.nb = _Names(a), _Names(b)
        self.layouts_may_differ = layouts_may_differ
        self.out: list[str] = []
        self.tolerances: dict[str, float] = {}   # path -> largest difference a lossy filter may make
        self.verified: set[str] = set()           # paths whose values the copy read back and compared already
        self.max_error: dict[str, float] = {}    # path -> largest difference found there
        self.written: dict[str, WrittenChunks] = {}   # path -> the output's chunks to check by CRC
        self.threads = 1

    def note(self, text: str) -> None:
        self.out.append(text)

    def attrs(self, path: str, oa, ob) -> None:
        names_a = [h5a.open(oa, index=i).get_name() for i in range(h5a.get_num_attrs(oa))]
        names_b = [h5a.open(ob, index=i).get_name() for i in range(h5a.get_num_attrs(ob))]
        if sorted(names_a) != sorted(names_b):
            self.note(f"{path}: attributes {sorted(names_a)} != {sorted(names_b)}")
            return
        for name in names_a:
            aa, ab = h5a.open(oa, name), h5a.open(ob, name)
            ta, tb = low.file_type(aa.get_type()), low.file_type(ab.get_type())
            where = f"{path} attribute {name.decode(errors='replace')}"
            if not ta.equal(tb):
                self.note(f"{where}: type {_type_text(ta)} != {_type_text(tb)}")
                continue
            if aa.shape != ab.shape or aa.get_space().get_simple_extent_type() != ab.get_space().get_simple_extent_type():
                self.note(f"{where}: shape {aa.shape} != {ab.shape}")
                continue
            ba, bb = low.read_attr(aa, ta), low.read_attr(ab, tb)
            try:
                if _values(ba, ta, self.na) != _values(bb, tb, self.nb):
                    self.note(f"{where}: values differ")
            finally:
                if ba is not None:
                    low.reclaim(ta, ba)
                if bb is not None:
                    low.reclaim(tb, bb)

    def dataset(self, path: str, da, db) -> None:
        ta, tb = low.file_type(da.get_type()), low.file_type(db.get_type())
        if not ta.equal(tb):
            self.note(f"{path}: type {_type_text(ta)} != {_type_text(tb)}")
            return
        sa, sb = da.get_space(), db.get_space()
        if sa.get_simple_extent_type() != sb.get_simple_extent_type() or da.shape != db.shape:
            self.note(f"{path}: shape {da.shape} != {db.shape}")
            return
        if sa.get_simple_extent_type() == h5s.SIMPLE and sa.get_simple_extent_dims(True) != sb.get_simple_extent_dims(True):
            self.note(f"{path}: maxshape differs")
        pa, pb = da.get_create_plist(), db.get_create_plist()
        if pa.fill_value_defined() != pb.fill_value_defined():
            self.note(f"{path}: fill value defined {pa.fill_value_defined()} != {pb.fill_value_defined()}")
        elif low.fill_bytes(pa, ta).tobytes() != low.fill_bytes(pb, tb).tobytes():
            self.note(f"{path}: fill value differs")
        if pa.get_fill_time() != pb.get_fill_time():
            self.note(f"{path}: fill time differs")
        if not self.layouts_may_differ:
            if pa.get_layout() != pb.get_layout() or (pa.get_layout() == h5d.CHUNKED and pa.get_chunk() != pb.get_chunk()):
                self.note(f"{path}: layout differs")
            fa, fb = pipeline_from_dcpl(pa), pipeline_from_dcpl(pb)
            if _filter_ids(fa) != _filter_ids(fb):
                self.note(f"{path}: filters {fa.spec} != {fb.spec}")
        if sa.get_simple_extent_type() == h5s.NULL or path in self.verified:
            return      # (verified: each hyperslab's values were read back from the output as it was written)
        if pa.get_layout() == h5d.CHUNKED and missing_decoder(pa):
            return self._same_raw_chunks(path, da, db)
        shape = da.shape
        if shape and 0 in shape:
            return
        tolerance = self.tolerances.get(path)
        if path in self.written and tolerance is None and pb.get_layout() == h5d.CHUNKED:
            # the fast path's chunks: each decoded once from the output and checked against what was encoded.
            # Unwritten elements of a source without a defined fill value may hold any bytes: no sampled
            # regions then, the source's written chunks are compared below instead
            undefined = pa.fill_value_defined() == h5d.FILL_VALUE_UNDEFINED or pa.get_fill_time() == h5d.FILL_TIME_NEVER
            why = check_written(db, self.written[path], ta.get_size(), self.threads,
                                None if undefined else (lambda regions: self._same_regions(da, db, ta, tb, regions)),
                                self.b.filename)
            if why is None and not undefined:
                return
            if why not in (None, "unchecked"):
                self.note(f"{path}: {why}")
                return
        if pa.get_layout() == h5d.CHUNKED and da.get_num_chunks() == 0 and db.get_storage_size() == 0:
            return      # neither holds a chunk: both read as their fill value, compared with the properties above
        if pa.fill_value_defined() == h5d.FILL_VALUE_UNDEFINED or pa.get_fill_time() == h5d.FILL_TIME_NEVER:
            # unwritten elements have no defined value: compare what is allocated in the source only
            if pa.get_layout() == h5d.CHUNKED and da.get_num_chunks() < _total_chunks(shape, pa.get_chunk()):
                return self._chunked_written_only(path, da, db, ta, pa.get_chunk())
            if da.get_storage_size() == 0:
                return
        # whole source chunks per slab: each is decoded once (with the read-back's cache, the copy's too)
        src_chunks = pa.get_chunk() if pa.get_layout() == h5d.CHUNKED else None
        slabs = [()] if not shape else [s.slices for s in plan_slabs(shape, src_chunks, ta.get_size(), _SLAB_BYTES)]
        for slices in slabs:
            same = self._same_slab(da, db, ta, tb, slices) if tolerance is None else \
                self._close_slab(path, da, db, ta, slices, tolerance)
            if not same:
                self.note(f"{path}: values differ in {slices}" + ("" if tolerance is None else
                                                                  f" by more than {tolerance:g} (or NaN moved)"))
                return

    def _same_regions(self, da, db, ta, tb, regions) -> bool:
        """Whether the regions (tuples of slices) hold the same values in both datasets. Read a hyperslab of
        whole source chunks at a time (about SAMPLE_SLAB_BYTES), the regions' union within it in one read: a
        source chunk under several regions is decoded once, and HDF5 (which decodes every chunk a read
        touches before placing any: 20 MiB for a daily-map file's time series) holds one such hyperslab."""
        pa = da.get_create_plist()
        src_chunks = pa.get_chunk() if pa.get_layout() == h5d.CHUNKED else None
        for slab in plan_slabs(da.shape, src_chunks, ta.get_size(), SAMPLE_SLAB_BYTES):
            parts = []
            for region in regions:
                lo = [max(r.start, s) for r, s in zip(region, slab.start)]
                hi = [min(r.stop, s + n) for r, s, n in zip(region, slab.start, slab.count)]
                if all(a < b for a, b in zip(lo, hi)):
                    parts.append(tuple(slice(a, b) for a, b in zip(lo, hi)))
            # parts sharing a source chunk are read together (HDF5 walks a union selection element row by
            # element row: 4x the time of separate reads for 6458's 20000x10 chunks), the others one by one
            groups = [parts] if _share_chunks(parts, src_chunks) else [[p] for p in parts]
            for group in groups:
                ba, bb = _read_regions(da, ta, group), _read_regions(db, tb, group)
                try:
                    if _values(ba, ta, self.na) != _values(bb, tb, self.nb):
                        return False
                finally:
                    low.reclaim(ta, ba)
                    low.reclaim(tb, bb)
        return True

    def _same_slab(self, da, db, ta, tb, slices) -> bool:
        ba, bb = low.read_slab(da, ta, slices), low.read_slab(db, tb, slices)
        try:
            return _values(ba, ta, self.na) == _values(bb, tb, self.nb)
        finally:
            low.reclaim(ta, ba)
            low.reclaim(tb, bb)

    def _close_slab(self, path, da, db, ta, slices, tolerance: float) -> bool:
        """A lossy filter's output: every value within ``tolerance`` of the source's, NaN where it was NaN."""
        import numpy as np

        dtype = ta.dtype
        a = low.read_slab(da, ta, slices).view(dtype).astype("f8")
        b = low.read_slab(db, ta, slices).view(dtype).astype("f8")
        nan_a, nan_b = np.isnan(a), np.isnan(b)
        if not np.array_equal(nan_a, nan_b):
            return False
        if not nan_a.all():
            err = float(np.max(np.abs(a[~nan_a] - b[~nan_b])))
            self.max_error[path] = max(self.max_error.get(path, 0.0), err)
            # plus the stored float's own rounding at the largest magnitude
            return err <= tolerance + 4 * float(np.finfo(dtype).eps) * float(np.max(np.abs(a[~nan_a])))
        return True

    def _same_raw_chunks(self, path, da, db) -> None:
        """A filter HDF5 cannot decode here: the stored chunks must be the same bytes."""
        chunks_a, chunks_b = [], []
        da.chunk_iter(lambda info: chunks_a.append(tuple(info.chunk_offset)))
        db.chunk_iter(lambda info: chunks_b.append(tuple(info.chunk_offset)))
        if sorted(chunks_a) != sorted(chunks_b):
            self.note(f"{path}: allocated chunks differ (undecodable filter)")
            return
        if _filter_ids(pipeline_from_dcpl(db.get_create_plist())) != _filter_ids(pipeline_from_dcpl(da.get_create_plist())):
            self.note(f"{path}: filters changed on a dataset whose filter cannot be decoded")
            return
        for off in chunks_a:
            if da.read_direct_chunk(off) != db.read_direct_chunk(off):
                self.note(f"{path}: raw chunk at {off} differs (undecodable filter)")
                return

    def _chunked_written_only(self, path, da, db, ta, chunks) -> None:
        offsets = []
        da.chunk_iter(lambda info: offsets.append(tuple(info.chunk_offset)))
        for off in offsets:
            sl = tuple(slice(o, min(o + c, d)) for o, c, d in zip(off, chunks, da.shape))
            if not self._same_slab(da, db, ta, low.file_type(db.get_type()), sl):
                self.note(f"{path}: values differ in the chunk at {off}")
                return

    def group(self, path: str, ga, gb) -> None:
        la, lb = _links(ga), _links(gb)
        if [n for n, _ in la] != [n for n, _ in lb]:
            self.note(f"{path}: links {[n for n, _ in la]} != {[n for n, _ in lb]}")
            return
        for (name, ia), (_, ib) in zip(la, lb):
            child = ("/" if path == "/" else path + "/") + name.decode("utf-8", "surrogateescape")
            if ia.type != ib.type:
                self.note(f"{child}: link type {ia.type} != {ib.type}")
                continue
            if ia.type in (h5l.TYPE_SOFT, h5l.TYPE_EXTERNAL):
                if ga.links.get_val(name) != gb.links.get_val(name):
                    self.note(f"{child}: link value differs")
                continue

    def run(self) -> list[str]:
        seen: dict = {}
        todo = [("/", h5o.open(self.a.id, b"/"), h5o.open(self.b.id, b"/"))]
        while todo:
            path, oa, ob = todo.pop(0)
            ia, ib = h5o.get_info(oa), h5o.get_info(ob)
            if ia.addr in seen:
                if seen[ia.addr] != ib.addr:
                    self.note(f"{path}: a hard link to {self.na.obj(ia.addr)} became a separate object")
                continue
            seen[ia.addr] = ib.addr
            if ia.type != ib.type:
                self.note(f"{path}: object type {ia.type} != {ib.type}")
                continue
            if low.tracks_times(oa) != low.tracks_times(ob):
                self.note(f"{path}: time tracking {low.tracks_times(oa)} != {low.tracks_times(ob)}")
            self.attrs(path, oa, ob)
            if ia.type == h5o.TYPE_DATASET:
                self.dataset(path, oa, ob)
            elif ia.type == h5o.TYPE_GROUP:
                self.group(path, oa, ob)
                for name, info in _links(oa):
                    if info.type == h5l.TYPE_HARD and name in {n for n, _ in _links(ob)}:
                        child = ("/" if path == "/" else path + "/") + name.decode("utf-8", "surrogateescape")
                        todo.append((child, h5o.open(oa, name), h5o.open(ob, name)))
            elif ia.type == h5o.TYPE_NAMED_DATATYPE and not oa.equal(ob):
                self.note(f"{path}: named datatype differs")
        return self.out


def _total_chunks(shape, chunks) -> int:
    n = 1
    for d, c in zip(shape, chunks):
        n *= -(-d // c)
    return n


def _links(gid) -> list:
    order = gid.get_create_plist().get_link_creation_order()
    idx = h5.INDEX_CRT_ORDER if order & h5p.CRT_ORDER_TRACKED else h5.INDEX_NAME
    names: list[bytes] = []
    gid.links.iterate(names.append, idx_type=idx)
    return [(n, gid.links.get_info(n)) for n in names]


def differences(a, b, layouts_may_differ: bool = False) -> list[str]:
    """What differs between HDF5 files ``a`` and ``b`` (paths); empty when they hold the same."""
    register_plugins()    # the plugin filters other writers use
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        return _Diff(fa, fb, layouts_may_differ).run()


def lossy_tolerance(pipeline: FilterPipeline, tid) -> float | None:
    """How far a value may move through ``pipeline`` on type ``tid``: scaleoffset on floats keeps N decimal
    digits (HDF5 truncates ``(x - chunk minimum) * 10**N``: under one unit of the last digit, plus the
    float's own rounding); None: values must be exact."""
    if tid.get_class() != h5t.FLOAT:
        return None
    for step in pipeline.steps:
        if step.id == 6:
            digits = int(step.args[0]) if step.args and step.args[0].isdigit() else 0
            return 10.0 ** -digits * (1 + 1e-6)
    return None


def verify_written(src: h5py.File, out_path, targets, partial: bool = False, threads: int = 1) -> list[str]:
    """Read back what a repack wrote, before it says done: for each dataset it rewrote (``targets``, the
    planner's decisions), the output's datatype (and its link to a named datatype), shape, maximum shape,
    fill value, filters, attributes and every value are compared with the source's. Values compare
    exactly (references by what they point at), except through a lossy filter (scaleoffset on floats),
    where each must lie within the filter's rounding. Returns notes (a lossy filter's largest error);
    raises ``CcpError`` naming the first difference."""
    from ccp.errors import CcpError

    changed = [t for t in targets if t.changed]
    if not changed:
        return []
    # the plugin filters the rewritten datasets had or have, if any
    register_plugins_for(s.id for t in changed for p in (t.old_pipeline, t.new_pipeline) if p is not None
                         for s in p.steps)
    notes = []
    with h5py.File(out_path, "r") as out:
        diff = _Diff(src, out, layouts_may_differ=True)
        diff.threads = threads
        diff.written = {t.path: t.written for t in changed if t.written is not None}
        diff.verified = {t.path for t in changed if t.verified}
        if partial:         # only some objects were copied (a sweep's work file): references to the rest are null
            diff.na.only_those_in(out)
        for tgt in changed:
            try:
                db = h5o.open(out.id, tgt.path.encode("utf-8", "surrogateescape"))
            except (KeyError, ValueError, RuntimeError):
                raise CcpError(f"{tgt.path}: not found when the output was read back; nothing written") from None
            name = tgt.path.encode("utf-8", "surrogateescape")
            # a chunk cache that holds a slab's chunks of both files: nothing decoded twice. The fast path's
            # chunks are checked by their CRC and a few regions read a hyperslab of whole source chunks at a
            # time (Diff._same_regions), each source chunk decoded once without a cache: HDF5 2.0 kept every
            # chunk such reads decoded with a 1 MiB cache (+20 MiB for a daily-map file's four time series)
            dapl = plists.dapl(12421, 4 * _SLAB_BYTES, 1.0)
            checked = tgt.written is not None and tgt.written.decode is not None
            da = h5d.open(src.id, name, dapl=plists.dapl(0, 0, 1.0) if checked else dapl)
            db.close()
            db = h5d.open(out.id, name, dapl=dapl)
            if da.get_type().committed() and not db.get_type().committed():
                diff.note(f"{tgt.path}: lost the link to its named datatype")
            pipeline = tgt.new_pipeline if tgt.new_pipeline is not None else FilterPipeline()
            wrote = pipeline_from_dcpl(db.get_create_plist())
            if _filter_ids(wrote) != _filter_ids(pipeline):
                diff.note(f"{tgt.path}: filters {wrote.spec} written, {pipeline.spec} asked for")
            tolerance = lossy_tolerance(pipeline, da.get_type())
            if tolerance is not None:
                diff.tolerances[tgt.path] = tolerance
            diff.attrs(tgt.path, da, db)
            diff.dataset(tgt.path, da, db)
            if diff.out:
                detail = diff.out[0].removeprefix(f"{tgt.path}: ")
                if "values differ" in detail and any(s.id == 6 for s in pipeline.steps) and tolerance is None:
                    detail += (f"; scaleoffset:{pipeline.steps[0].args[0] if pipeline.steps[0].id == 6 else 'N'} "
                               "keeps too few bits for these integers: give SOFF=0,IN (automatic)")
                raise CcpError(f"{tgt.path}: the copy read back differs from the input ({detail}); nothing written")
            if tgt.path in diff.max_error:
                notes.append(f"{tgt.path}: lossy filter {pipeline.spec}: values changed by at most "
                             f"{diff.max_error[tgt.path]:.3g} (read back and checked)")
    return notes


__all__ = ["differences", "lossy_tolerance", "verify_written"]


def _filter_ids(pipeline: FilterPipeline) -> list[int]:
    """Which filters, in order: the stored cd_values may differ (set_local fills them per chunk shape)."""
    return [step.id for step in pipeline.steps]
