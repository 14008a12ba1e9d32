"""Sweeps on any dataset h5py can open: odd types read as their file type, links resolved, bad ones refused by name."""

import hashlib

import h5py
import netCDF4
import numpy as np
import pandas as pd
import pytest
from oddfiles import make_odd_file

from ccp.hdf5.dataset import describe_source
from ccp.run import run_sweep
from ccp.workload.datagen import DatasetReader


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _sweep(write_sweep, file, path, block, *, chunks="[source, BLOCK]", filters='[source, "shuffle+gzip:1"]', ops=("read", "copy", "write"),
           exclude=None, name="odd"):
    access = ", ".join(f"{{op: {op}, block: {block}}}" for op in ops)
    text = f"""
        name: {name}
        dataset: {{file: {file}, path: {path}}}
        matrix:
          chunks: {chunks.replace("BLOCK", block)}
          filters: {filters}
          access: [{access}]
        repeats: 1
        cold: false
        """
    if exclude:
        text += f"exclude: {exclude}\n"
    return write_sweep(text, name=f"{name}-{path.strip('/').replace('/', '_')}.yaml")


def _run(sweep, tmp_path, out, quick=False):
    return run_sweep(sweep, out=tmp_path / out, work_dir=tmp_path / "work", report=False, echo=lambda *a: None,
                     isolate=False, quick=quick)


@pytest.fixture
def odd(tmp_path):
    return make_odd_file(tmp_path / "odd.h5")


ODD = [("compound", "[10]"), ("vlen_str", "[8]"), ("vlen_u4be", "[4]"), ("enum", "[5]"), ("opaque", "[5]"), ("quad", "[4]")]


@pytest.mark.parametrize(("path", "block"), ODD, ids=[o[0] for o in ODD])
def test_non_numeric_dataset_sweeps_every_cell_with_its_file_type(odd, tmp_path, write_sweep, path, block):
    before = _sha(odd)
    summary = _run(_sweep(write_sweep, odd, f"/{path}", block), tmp_path, "run")
    assert summary.cells == 6 and summary.failed == 0
    df = pd.read_csv(tmp_path / "run" / "cells.csv")
    assert (df["status"] == "ok").all()
    reads = df[df["op"] == "read"]
    assert (reads["raw_reads"] > 0).all()            # the chunks were really read
    assert _sha(odd) == before


def test_reading_with_the_file_type_returns_the_stored_bytes(odd):
    """The sweep's reader converts nothing: a compound's 6-byte string stays 'Hello!' (not 'Hello')."""
    with h5py.File(odd, "r") as f:
        reader = DatasetReader(f["compound"])
        raw = reader.read((0,), (40,))
        expect = f["compound"][...]
    assert raw.dtype.itemsize == expect.dtype.itemsize
    assert raw.tobytes() == expect.tobytes()
    assert raw.tobytes()[:6] == b"Hello!"


def test_the_work_files_of_a_vlen_dataset_hold_its_values(odd, tmp_path, write_sweep):
    _run(_sweep(write_sweep, odd, "/vlen_u4be", "[4]", ops=("read",)), tmp_path, "run", quick=True)
    with h5py.File(odd, "r") as f:
        want = [list(v) for v in f["vlen_u4be"][...]]
    works = list((tmp_path / "work").glob("odd-*.h5"))
    assert len(works) == 1      # source cells read the user's file; the other layout has a work file
    with h5py.File(works[0], "r") as f:
        assert [list(v) for v in f["vlen_u4be"][...]] == want


@pytest.mark.parametrize("path", ["time"], ids=["h5t-time"])
def test_a_type_numpy_cannot_hold_is_swept_contiguous(odd, tmp_path, write_sweep, path):
    summary = _run(_sweep(write_sweep, odd, f"/{path}", "[3]", filters="[source]"), tmp_path, "run")
    assert summary.failed == 0 and summary.cells == 6
    src = describe_source(type("D", (), {"generate": None, "file": odd, "path": f"/{path}"})())
    assert not src.numeric and src.dtype.itemsize == 4


def test_ordinary_dataset_of_a_file_with_odd_objects_runs_every_cell(odd, tmp_path, write_sweep):
    """128-bit integer and big-endian uint16 array attributes on the dataset and the root cost nothing."""
    sweep = _sweep(write_sweep, odd, "/plain", "[2, 100]", chunks="[source, [4, 100], [1, 50]]")
    summary = _run(sweep, tmp_path, "run")
    assert summary.cells == 18 and summary.failed == 0
    with h5py.File(odd, "r") as f:
        want = f["plain"][...]
    for work in (tmp_path / "work").glob("odd-*.h5"):
        with h5py.File(work, "r") as f:
            np.testing.assert_array_equal(f["plain"][...], want)


LINKS = ["soft", "hard", "external"]


@pytest.mark.parametrize("kind", LINKS, ids=LINKS)
def test_a_sweep_through_a_link_runs_every_cell(tmp_path, write_sweep, kind, cli):
    target = tmp_path / "target.h5"
    with h5py.File(target, "w") as f:
        f.create_dataset("g/real", data=np.arange(4000, dtype="<f4").reshape(40, 100), chunks=(10, 100))
        f["g/soft"] = h5py.SoftLink("/g/real")
        f["hard"] = f["g/real"]
    if kind == "external":
        file, path = tmp_path / "ext.h5", "/ext"
        with h5py.File(file, "w") as f:
            f["ext"] = h5py.ExternalLink(target.name, "/g/real")
    else:
        file, path = target, "/g/soft" if kind == "soft" else "/hard"
    sweep = _sweep(write_sweep, file, path, "[10, 100]", chunks="[source, [20, 100]]", filters='[source, "gzip:1"]',
                   name="link")
    check = cli("check", str(sweep))
    assert check.exit_code == 0, check.output
    summary = _run(sweep, tmp_path, "run")
    assert summary.cells == 12 and summary.failed == 0
    df = pd.read_csv(tmp_path / "run" / "cells.csv")
    reads = df[df["op"] == "read"]
    assert (reads["raw_reads"] == reads["predicted_raw_reads"]).all()


@pytest.mark.parametrize(("path", "words"), [
    ("/nofill", ["'/nofill'", "H5D_FILL_VALUE_UNDEFINED"]),
    ("/scalar", ["'/scalar'", "scalar dataspace"]),
    ("/null", ["'/null'", "null dataspace"]),
    ("/dangling", ["'/dangling'"]),
    ("/", ["group"]),
], ids=["undefined-fill", "scalar", "null", "dangling-link", "group"])
def test_a_dataset_ccp_cannot_sweep_is_refused_in_one_line(odd, write_sweep, path, words, cli):
    sweep = write_sweep(f"""
        name: bad
        dataset: {{file: {odd}, path: "{path}"}}
        matrix: {{access: [{{op: read, block: [1]}}]}}
        """)
    for cmd in ("check", "run"):
        result = cli(*[cmd, str(sweep), "--no-report"] if cmd == "run" else [cmd, str(sweep)])
        assert result.exit_code == 2, result.output
        line = result.output.strip()
        assert "\n" not in line and "internal error" not in line and all(w in line for w in words), line


NC3 = [("NETCDF3_CLASSIC", "netCDF-3 classic"), ("NETCDF3_64BIT_OFFSET", "netCDF-3 64-bit offset"),
       ("NETCDF3_64BIT_DATA", "CDF-5")]


@pytest.mark.parametrize(("fmt", "what"), NC3, ids=[n[0] for n in NC3])
def test_netcdf3_is_named_with_what_ccp_needs(tmp_path, fmt, what, cli):
    path = tmp_path / "old.nc"
    with netCDF4.Dataset(path, "w", format=fmt) as nc:
        nc.createDimension("x", 4)
        nc.createVariable("v", "f4", ("x",))[:] = np.arange(4)
    result = cli("inspect", str(path))
    assert result.exit_code == 2
    line = result.output.strip()
    assert "\n" not in line and what in line and "netCDF-4" in line and "nccopy -k nc4" in line


def test_a_file_of_another_kind_says_what_it_is(tmp_path, cli):
    path = tmp_path / "x.h5"
    path.write_bytes(b"PAR1" + bytes(100))
    result = cli("inspect", str(path))
    assert result.exit_code == 2 and "Parquet" in result.output and "HDF5" in result.output


def test_vlen_reads_are_freed_with_h5pys_own_libhdf5():
    """PyTables and netCDF4 load other libhdf5 copies into the process; H5Treclaim must be h5py's (same ids)."""
    import os

    import netCDF4  # noqa: F401
    import tables  # noqa: F401

    from ccp.hdf5 import h5types

    h5types._LIB = None
    lib = h5types.hdf5_library()
    assert lib is not None and os.path.dirname(lib._name) == os.path.dirname(h5py.__file__) + ".libs"
    assert h5types.reclaimer(h5py.h5t.vlen_create(h5py.h5t.STD_I32LE)) is not None
    assert h5types.reclaimer(h5py.h5t.STD_I32LE) is None
