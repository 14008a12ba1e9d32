"""Random HDF5 files for the differential repack harness (hypothesis strategies).

A file spec is drawn by hypothesis (types, layouts, filters, fill settings, attributes, links,
references) and written with h5py's low-level API, so types numpy cannot express exactly
(string padding and character set inside compounds, big-endian arrays, opaque tags, float16
big-endian) are written as HDF5 types with raw bytes. Variable-length data (sequences,
strings, compounds with a variable-length member) is written through h5py. The bulk of the
values comes from a numpy generator seeded by hypothesis: shrinking still works on the seed.

``check_example(spec, folder)`` writes the file, repacks it with ccp under the drawn options,
compares value by value (:func:`ccp.repack.compare.differences`) and, where h5repack is
installed, runs h5repack with the same options and h5diff between the two outputs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import h5py
import numpy as np
from h5py import h5d, h5p, h5s, h5t
from hypothesis import strategies as st

from ccp.hdf5 import lowlevel as low

INT_SIZES = (1, 2, 4, 8)
PADS = {"nullterm": h5t.STR_NULLTERM, "nullpad": h5t.STR_NULLPAD, "spacepad": h5t.STR_SPACEPAD}
CSETS = {"ascii": h5t.CSET_ASCII, "utf8": h5t.CSET_UTF8}


# ------------------------------------------------------------------ type specs (plain data, printable)

def fixed_types(depth: int = 0):
    leaves = st.one_of(
        st.tuples(st.just("int"), st.sampled_from(INT_SIZES), st.booleans(), st.sampled_from(["le", "be"])),
        st.tuples(st.just("float"), st.sampled_from([2, 4, 8]), st.sampled_from(["le", "be"])),
        st.tuples(st.just("string"), st.integers(1, 8), st.sampled_from(sorted(PADS)), st.sampled_from(sorted(CSETS))),
        st.tuples(st.just("enum"), st.sampled_from([1, 2, 4]), st.integers(1, 4)),
        st.tuples(st.just("opaque"), st.integers(1, 5)),
    )
    if depth >= 2:
        return leaves
    inner = st.deferred(lambda: fixed_types(depth + 1))
    return st.one_of(
        leaves,
        st.tuples(st.just("array"), inner, st.lists(st.integers(1, 3), min_size=1, max_size=2).map(tuple)),
        st.tuples(st.just("compound"), st.lists(inner, min_size=1, max_size=3).map(tuple)),
    )


def build_type(spec):
    kind = spec[0]
    if kind == "int":
        _, size, signed, order = spec
        return getattr(h5t, f"STD_{'I' if signed else 'U'}{8 * size}{order.upper()}").copy()
    if kind == "float":
        _, size, order = spec
        t = h5py.h5t.py_create(np.dtype(f"<f{size}")).copy()
        t.set_order(h5t.ORDER_BE if order == "be" else h5t.ORDER_LE)
        return t
    if kind == "string":
        _, size, pad, cset = spec
        t = h5t.C_S1.copy()
        t.set_size(size)
        t.set_strpad(PADS[pad])
        t.set_cset(CSETS[cset])
        return t
    if kind == "enum":
        _, size, n = spec
        t = h5t.enum_create(build_type(("int", size, False, "le")))
        for i in range(n):
            t.enum_insert(f"V{i}".encode(), i * 3)
        return t
    if kind == "opaque":
        t = h5t.create(h5t.OPAQUE, spec[1])
        t.set_tag(b"ccp-test")
        return t
    if kind == "array":
        return h5t.array_create(build_type(spec[1]), spec[2])
    members = [build_type(m) for m in spec[1]]
    t = h5t.create(h5t.COMPOUND, sum(m.get_size() for m in members))
    off = 0
    for i, m in enumerate(members):
        t.insert(f"m{i}".encode(), off, m)
        off += m.get_size()
    return t


def element_bytes(spec, rng, n: int) -> np.ndarray:
    """``n`` valid elements of a fixed type spec as an (n, size) uint8 array."""
    kind = spec[0]
    if kind == "int":
        return rng.integers(0, 256, (n, spec[1]), dtype=np.uint8)
    if kind == "float":
        _, size, order = spec
        vals = rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)
        vals[rng.random(n) < 0.05] = np.nan
        dt = np.dtype(f"{'>' if order == 'be' else '<'}f{size}")
        return vals.astype(dt).view(np.uint8).reshape(n, size)
    if kind == "string":
        _, size, pad, _cset = spec
        out = np.zeros((n, size), dtype=np.uint8)
        letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyzHELLO!", dtype=np.uint8)
        for i in range(n):
            length = int(rng.integers(0, size + 1))  # up to the full size: a NULLTERM string with no room for NUL
            out[i, :length] = rng.choice(letters, length)
            if pad == "spacepad":
                out[i, length:] = ord(" ")
        return out
    if kind == "enum":
        _, size, count = spec
        vals = (rng.integers(0, count, n) * 3).astype(f"<u{size}")
        return vals.view(np.uint8).reshape(n, size)
    if kind == "opaque":
        return rng.integers(0, 256, (n, spec[1]), dtype=np.uint8)
    if kind == "array":
        k = int(np.prod(spec[2]))
        base = element_bytes(spec[1], rng, n * k)
        return base.reshape(n, -1)
    parts = [element_bytes(m, rng, n) for m in spec[1]]
    return np.concatenate(parts, axis=1)


# ------------------------------------------------------------------ file specs

VLEN_KINDS = ("vlen-int", "vlen-float-be", "vstring-utf8", "vstring-ascii", "compound-vlen")


@st.composite
def datasets(draw, name):
    rank = draw(st.integers(0, 3))
    shape = tuple(draw(st.lists(st.integers(0 if rank else 1, 7), min_size=rank, max_size=rank)))
    vlen = draw(st.booleans()) if rank else False
    tspec = draw(st.sampled_from(VLEN_KINDS)) if vlen else draw(fixed_types())
    layouts = ["contiguous", "chunked", "unlimited"] + (["compact"] if not vlen else [])
    layout = draw(st.sampled_from(layouts)) if rank else "contiguous"
    chunks = None
    if layout in ("chunked", "unlimited"):
        chunks = tuple(draw(st.integers(1, max(1, d))) for d in shape)
    filters = draw(st.sampled_from(["none", "gzip", "shuffle+gzip", "fletcher32", "lzf", "zstd"])) if chunks else "none"
    fill = draw(st.sampled_from(["default", "user", "undefined", "never-early"])) if not vlen else "default"
    if fill == "never-early" and layout == "compact":
        fill = "default"
    written = draw(st.sampled_from(["all", "part", "none"]))
    attrs = draw(st.lists(fixed_types(1), max_size=2))
    return {"name": name, "shape": shape, "type": tspec, "layout": layout, "chunks": chunks, "filters": filters,
            "fill": fill, "written": written, "attrs": attrs, "track_times": draw(st.booleans())}


@st.composite
def files(draw):
    n = draw(st.integers(1, 4))
    dsets = [draw(datasets(f"g{i % 2}/d{i}" if draw(st.booleans()) else f"d{i}")) for i in range(n)]
    return {"datasets": dsets, "seed": draw(st.integers(0, 2**32 - 1)), "root_attrs": draw(st.lists(fixed_types(1), max_size=2)),
            "refs": draw(st.booleans()), "links": draw(st.booleans()), "vstr_attr": draw(st.booleans())}


OPTION_SETS = {"plain": [], "gzip6": ["-f", "GZIP=6"], "shuf-gzip1": ["-f", "SHUF", "-f", "GZIP=1"],
               "conti": ["-l", "CONTI"], "chunk2": ["-l", "CHUNK=2"], "chunk2x2": ["-l", "CHUNK=2x2"],
               "nofilter": ["-f", "NONE"]}


def options():
    return st.sampled_from(sorted(OPTION_SETS))


# ------------------------------------------------------------------ writing

def _attr(obj, name, tspec, rng):
    tid = build_type(tspec)
    n = int(rng.integers(1, 4))
    data = element_bytes(tspec, rng, n).reshape(-1).tobytes()
    aid = h5py.h5a.create(obj.id, name.encode(), tid, h5s.create_simple((n,)))
    aid.write(np.frombuffer(data, dtype=f"V{tid.get_size()}").copy(), mtype=tid)


def _vlen_dtype(kind):
    return {"vlen-int": h5py.vlen_dtype(np.dtype("<i4")), "vlen-float-be": h5py.vlen_dtype(np.dtype(">f8")),
            "vstring-utf8": h5py.string_dtype("utf-8"), "vstring-ascii": h5py.string_dtype("ascii"),
            "compound-vlen": np.dtype([("a", "<i2"), ("v", h5py.vlen_dtype(np.dtype("<u2")))])}[kind]


def _vlen_values(kind, rng, shape):
    n = int(np.prod(shape))
    items = []
    for _ in range(n):
        k = int(rng.integers(0, 5))
        if kind == "vlen-int":
            items.append(rng.integers(-1000, 1000, k).astype("<i4"))
        elif kind == "vlen-float-be":
            items.append(rng.standard_normal(k).astype(">f8"))
        elif kind == "vstring-utf8":
            items.append("".join(rng.choice(list("abcé€ xyz"), k)).encode())
        elif kind == "vstring-ascii":
            items.append("".join(rng.choice(list("abc xyz!"), k)).encode())
        else:
            items.append((int(rng.integers(-5, 5)), rng.integers(0, 9, k).astype("<u2")))
    if kind == "compound-vlen":
        out = np.empty(n, dtype=_vlen_dtype(kind))
        for i, item in enumerate(items):
            out[i] = item
    else:  # element by element: numpy would unpack arrays of one element
        out = np.frompyfunc(lambda i: items[i], 1, 1)(np.arange(n)).astype(object)
    return out.reshape(shape)


def _dcpl(d, tid, rng):
    dcpl = h5p.create(h5p.DATASET_CREATE)
    dcpl.set_obj_track_times(d["track_times"])
    if d["layout"] == "compact":
        dcpl.set_layout(h5d.COMPACT)
    elif d["chunks"]:
        dcpl.set_chunk(d["chunks"])
        for step in d["filters"].split("+"):
            if step == "gzip":
                dcpl.set_deflate(int(rng.integers(1, 10)))
            elif step == "shuffle":
                dcpl.set_shuffle()
            elif step == "fletcher32":
                dcpl.set_fletcher32()
            elif step == "lzf":
                dcpl.set_filter(32000, h5py.h5z.FLAG_OPTIONAL, ())
            elif step == "zstd":
                import hdf5plugin

                dcpl.set_filter(hdf5plugin.ZSTD_ID, h5py.h5z.FLAG_OPTIONAL, (3,))
    if d["fill"] == "user" and isinstance(d["type"], tuple):
        fill = np.frombuffer(element_bytes(d["type"], rng, 1).tobytes(), dtype=f"V{tid.get_size()}").copy()
        low.library().H5Pset_fill_value(dcpl.id, tid.id, fill.ctypes.data)
    elif d["fill"] == "undefined":
        low.set_fill_undefined(dcpl, tid)
    elif d["fill"] == "never-early":
        dcpl.set_fill_time(h5d.FILL_TIME_NEVER)
        dcpl.set_alloc_time(h5d.ALLOC_TIME_EARLY)
    return dcpl


def write_file(spec, path) -> list[str]:
    """Write the file; returns the paths of datasets whose unwritten elements have no defined value."""
    rng = np.random.default_rng(spec["seed"])
    undefined = []
    with h5py.File(path, "w", track_order=bool(spec["seed"] % 2)) as f:
        for i, tspec in enumerate(spec["root_attrs"]):
            _attr(f, f"ra{i}", tspec, rng)
        if spec["vstr_attr"]:
            f.attrs["vstr"] = np.array(["é", "", "abc"], dtype=h5py.string_dtype())
        for d in spec["datasets"]:
            parent, _, leaf = d["name"].rpartition("/")
            grp = f.require_group(parent) if parent else f
            shape = d["shape"]
            vlen = isinstance(d["type"], str)
            if vlen:
                tid = h5py.h5t.py_create(_vlen_dtype(d["type"]), logical=True)
            else:
                tid = build_type(d["type"])
            maxshape = tuple(h5s.UNLIMITED for _ in shape) if d["layout"] == "unlimited" else shape
            space = h5s.create_simple(shape, maxshape) if shape else h5s.create(h5s.SCALAR)
            if d["layout"] == "compact" and int(np.prod(shape)) * tid.get_size() > 30000:
                d["layout"] = "contiguous"
            try:
                dsid = h5d.create(grp.id, leaf.encode(), tid, space, dcpl=_dcpl(d, tid, rng))
            except ValueError:  # a combination HDF5 refuses (filters on this type ...): no filters then
                d["filters"] = "none"
                dsid = h5d.create(grp.id, leaf.encode(), tid, space, dcpl=_dcpl(d, tid, rng))
            if d["fill"] in ("undefined", "never-early"):
                undefined.append("/" + d["name"])
            n = int(np.prod(shape)) if shape else 1
            region = shape if d["written"] == "all" else tuple(max(1, s // 2) if s else 0 for s in shape)
            if d["written"] != "none" and n and all(region):
                if vlen:  # element by element, as h5py documents for variable-length data
                    ds, values = h5py.Dataset(dsid), _vlen_values(d["type"], rng, region)
                    for idx in np.ndindex(*region):
                        ds[idx] = values[idx]
                else:
                    m = int(np.prod(region)) if region else 1
                    buf = np.frombuffer(element_bytes(d["type"], rng, m).tobytes(), dtype=f"V{tid.get_size()}")
                    buf = buf.reshape(region).copy()
                    if shape:
                        fs = dsid.get_space()
                        fs.select_hyperslab((0,) * len(shape), region)
                        dsid.write(h5s.create_simple(region), fs, buf, mtype=tid)
                    else:
                        dsid.write(h5s.ALL, h5s.ALL, buf, mtype=tid)
            ds = h5py.Dataset(dsid)
            for j, aspec in enumerate(d["attrs"]):
                _attr(ds, f"a{j}", aspec, rng)
        names = ["/" + d["name"] for d in spec["datasets"]]
        if spec["refs"]:
            # h5diff follows references into their datasets: none to a dataset with undefined elements
            names = [n for n in names if n not in undefined] or names[:0]
            f.create_dataset("refs", data=np.array([f[n].ref for n in names] + [h5py.Reference()],
                                                   dtype=h5py.ref_dtype))
            chunky = [n for n in names if f[n].shape and all(f[n].shape)]
            if chunky:
                first = f[chunky[0]]
                f.attrs.create("region", first.regionref[tuple(slice(0, 1) for _ in first.shape)],
                               dtype=h5py.regionref_dtype)
        names = ["/" + d["name"] for d in spec["datasets"]]
        if spec["links"]:
            f["soft"] = h5py.SoftLink(names[0])
            f["dangling"] = h5py.SoftLink("/nowhere")
            f["external"] = h5py.ExternalLink("other.h5", "/x")
            f["alias"] = f[names[-1]]
            if names[-1] in undefined:      # a hard link: the same elements, as undefined under its second name
                undefined.append("/alias")
    return undefined


# ------------------------------------------------------------------ one example

def _h5diff_differences(a, b, exclude) -> list[str]:
    args = ["h5diff", "-r"]
    for path in exclude:
        args += ["--exclude-path", path]
    h = subprocess.run([*args, str(a), str(b)], check=False, capture_output=True, text=True)
    return [line for line in h.stdout.splitlines() if re.match(r"^[1-9]\d* differences? found", line)]


def check_example(spec, option_name: str, folder) -> dict:
    """Repack one generated file; raises AssertionError on any difference. Returns what was checked."""
    from click.testing import CliRunner

    from ccp.cli import main
    from ccp.repack.compare import differences

    folder = os.fspath(folder)
    src = os.path.join(folder, "in.h5")
    out = os.path.join(folder, "ccp.h5")
    for p in (src, out):
        if os.path.exists(p):
            os.unlink(p)
    undefined = write_file(spec, src)
    opts = OPTION_SETS[option_name]
    r = CliRunner().invoke(main, ["repack", "-q", *opts, src, out])
    assert "internal error" not in r.output, r.output
    assert r.exit_code == 0, r.output
    diff = differences(src, out, layouts_may_differ=bool(opts))
    assert diff == [], diff
    checked = {"h5repack": False}
    h5repack = shutil.which("h5repack")
    if h5repack and shutil.which("h5diff"):
        ref = os.path.join(folder, "h5repack.h5")
        if os.path.exists(ref):
            os.unlink(ref)
        hr = subprocess.run([h5repack, *opts, src, ref], check=False, capture_output=True, text=True)
        if hr.returncode == 0:  # h5repack 1.10 refuses some combinations ccp takes (then nothing to compare)
            found = _h5diff_differences(out, ref, undefined)
            assert not found, found
            checked["h5repack"] = True
    return checked
