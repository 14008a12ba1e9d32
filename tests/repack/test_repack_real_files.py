"""Real files written by other software: PyTables' 46 test files (several format generations),
netCDF-4 (netCDF4 and h5netcdf) and a pandas HDFStore table. Every repack exits 0 or gives one
clear line with exit 2; outputs equal their inputs value by value (and by h5diff); references
resolve; netCDF-4 outputs open in netCDF4; inputs are unchanged."""

import glob
import hashlib
import os
import re
import shutil
import subprocess

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from ccp.repack.compare import differences

TABLES_DIR = os.path.join(os.path.dirname(pytest.importorskip("tables").__file__), "tests")
PYTABLES_FILES = sorted(glob.glob(os.path.join(TABLES_DIR, "*.h5")))


def sha(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def first_dataset(path):
    """(path, shape, maxshape) of the first non-scalar dataset, or None."""
    found = []

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset) and obj.shape and not found:
            found.append(("/" + name, obj.shape, obj.maxshape))

    with h5py.File(path, "r") as f:
        f.visititems(visit)
    return found[0] if found else None


def option_sets(path):
    sets = {"plain": [], "gzip6": ["-f", "GZIP=6"]}
    first = first_dataset(path)
    if first:
        name, shape, maxshape = first
        # about three chunks per dimension, with edge chunks when it does not divide
        dims = [str(max(1, min(d // 3 or 1, m if m is not None else d or 1))) for d, m in zip(shape, maxshape)]
        sets["chunk"] = ["-l", f"{name}:CHUNK={'x'.join(dims)}"]
    return sets


def check_repacks(src, tmp_path):
    from ccp.cli import main

    before = sha(src)
    for label, opts in option_sets(src).items():
        out = tmp_path / f"out-{label}.h5"
        r = CliRunner().invoke(main, ["repack", "-q", *opts, str(src), str(out)])
        assert "internal error" not in r.output, (label, r.output)
        if r.exit_code == 2:
            lines = [line for line in r.output.splitlines() if line.strip()]
            assert len(lines) == 1 and lines[0].startswith("ccp: error:"), (label, r.output)
            assert not out.exists()
            continue
        assert r.exit_code == 0, (label, r.output)
        assert differences(src, out, layouts_may_differ=bool(opts)) == [], label
        if shutil.which("h5diff") and not opts:  # HDF5's own comparer once per file (ours compares every option)
            h = subprocess.run(["h5diff", "-r", str(src), str(out)], check=False, capture_output=True, text=True)
            found = [line for line in h.stdout.splitlines() if re.match(r"^[1-9]\d* differences? found", line)]
            assert not found, (label, h.stdout[-1500:])
        out.unlink()
    assert sha(src) == before


@pytest.mark.parametrize("name", [os.path.basename(p) for p in PYTABLES_FILES])
def test_pytables_files(tmp_path, name):
    src = tmp_path / name
    shutil.copy(os.path.join(TABLES_DIR, name), src)
    check_repacks(src, tmp_path)


def test_there_are_46_pytables_files():
    assert len(PYTABLES_FILES) == 46


def test_netcdf4_and_h5netcdf_files(tmp_path):
    netCDF4 = pytest.importorskip("netCDF4")
    h5netcdf = pytest.importorskip("h5netcdf")
    a = tmp_path / "netcdf4.nc"
    with netCDF4.Dataset(a, "w") as nc:
        nc.createDimension("t", None)
        nc.createDimension("y", 5)
        nc.createVariable("t", "i4", ("t",))[:] = np.arange(4)
        nc.createVariable("y", "f8", ("y",))[:] = np.linspace(0, 1, 5)
        v = nc.createVariable("v", "f4", ("t", "y"), zlib=True, shuffle=True, fill_value=np.float32(-1))
        v[:] = np.arange(20, dtype="f4").reshape(4, 5)
        s = nc.createVariable("names", str, ("y",))
        s[:] = np.array(["a", "bb", "ccc", "", "é"], dtype=object)
        cmp = nc.createCompoundType(np.dtype([("a", "i2"), ("b", "f8")]), "pair")
        c = nc.createVariable("pairs", cmp, ("y",))
        c[:] = np.array([(i, i / 2) for i in range(5)], dtype=[("a", "i2"), ("b", "f8")])
        nc.setncattr("title", "netCDF4 file")
    b = tmp_path / "h5netcdf.nc"
    with h5netcdf.File(b, "w") as f:
        f.dimensions = {"x": 6, "z": 3}
        x = f.create_variable("x", ("x",), float)
        x[:] = np.arange(6.0)
        d = f.create_variable("data", ("x", "z"), "i8", chunks=(2, 3), compression="gzip")
        d[:] = np.arange(18).reshape(6, 3)
        g = f.create_group("grp")
        g.dimensions = {"w": 2}
        g.create_variable("w", ("w",), "f4", data=np.array([1.5, 2.5], "f4"))
    for src in (a, b):
        check_repacks(src, tmp_path)
        for opts in ([], ["-f", "GZIP=6"], ["-l", "CHUNK=2"]):
            out = tmp_path / "nc-out.nc"
            from ccp.cli import main

            assert CliRunner().invoke(main, ["repack", "-q", *opts, str(src), str(out)]).exit_code == 0
            with netCDF4.Dataset(src) as da, netCDF4.Dataset(out) as db:
                assert set(da.variables) == set(db.variables)
                for name in da.variables:
                    assert np.array_equal(np.asarray(da[name][:]), np.asarray(db[name][:])), (src.name, opts, name)
                for grp in da.groups:
                    for name in da[grp].variables:
                        assert np.array_equal(da[grp][name][:], db[grp][name][:])
            out.unlink()


def test_pandas_hdfstore_table(tmp_path):
    pd = pytest.importorskip("pandas")
    src = tmp_path / "store.h5"
    df = pd.DataFrame({"a": np.arange(50), "b": np.linspace(0, 1, 50), "s": [f"row{i}" for i in range(50)],
                       "t": pd.date_range("2020-01-01", periods=50, freq="h")})
    df.to_hdf(src, key="df", format="table", data_columns=["a"], complib="zlib", complevel=3)
    check_repacks(src, tmp_path)
    out = tmp_path / "out.h5"
    from ccp.cli import main

    assert CliRunner().invoke(main, ["repack", "-q", "-f", "GZIP=6", str(src), str(out)]).exit_code == 0
    pd.testing.assert_frame_equal(pd.read_hdf(out, "df"), df)


@pytest.mark.parametrize("complib", ["bzip2", "blosc"])
def test_pytables_vlarray_filtered_by_a_plugin(tmp_path, complib):
    """H5Ocopy of variable-length data filtered by a plugin aborts the process (free(): invalid pointer;
    h5py's own copy and h5repack too): ccp writes it through the library instead. A subprocess, so a
    regression is a failed test, not a dead test worker."""
    import sys

    import hdf5plugin  # noqa: F401  (h5py reads the plugin's filter below)
    import tables

    src, out = tmp_path / "vla.h5", tmp_path / "out.h5"
    with tables.open_file(src, "w") as f:
        group = f.create_group(f.create_group("/", "grp"), "sub")
        v = f.create_vlarray(group, "vla", tables.Int16Atom(), filters=tables.Filters(complib=complib, complevel=5))
        for row in ([1, 2, 3], [4], []):
            v.append(np.array(row, "i2"))
    before = sha(src)
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "repack", "-q", str(src), str(out)],
                       capture_output=True, text=True, check=False, timeout=300)
    assert r.returncode == 0, (r.returncode, r.stderr)
    assert differences(src, out) == []
    with h5py.File(src, "r") as a, h5py.File(out, "r") as b:
        assert [list(x) for x in b["grp/sub/vla"][:]] == [[1, 2, 3], [4], []]
        ids = [[p.get_filter(i)[0] for i in range(p.get_nfilters())]
               for p in (a["grp/sub/vla"].id.get_create_plist(), b["grp/sub/vla"].id.get_create_plist())]
        assert ids[0] == ids[1] and max(ids[0]) >= 256          # the plugin's filter kept
    assert sha(src) == before
