"""Files nobody here wrote: PyTables' 46 test files (several format generations), netCDF-4 from netCDF4 and
h5netcdf, a pandas HDFStore table, and h5py files with every odd type. `ccp inspect` (whole file and each
dataset) ends in exit 0 or one line with exit 2, never an internal error; a small sweep on a numeric dataset
of representative files finishes; the inputs are unchanged. Every file is copied to tmp_path first.
"""

import hashlib
import importlib.util
import shutil
import warnings
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest
from oddfiles import make_allocation_file, make_odd_file

# located without importing PyTables (its own libhdf5 would be loaded into every later test's process)
_TABLES = importlib.util.find_spec("tables")
TABLES_TESTS = Path(_TABLES.origin).parent / "tests" if _TABLES else Path("/nonexistent")
PYTABLES_FILES = sorted(TABLES_TESTS.glob("*.h5"))


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _netcdf4(path: Path) -> Path:
    import netCDF4

    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.createDimension("time", None)
        nc.createDimension("lat", 18)
        nc.createDimension("lon", 36)
        t = nc.createVariable("time", "f8", ("time",))
        t[:] = np.arange(6)
        v = nc.createVariable("temp", "f4", ("time", "lat", "lon"), zlib=True, complevel=4, shuffle=True,
                              chunksizes=(1, 18, 36), fill_value=-999.0)
        v[:] = np.random.default_rng(0).standard_normal((6, 18, 36)).astype("f4")
        v.units = "K"
        grp = nc.createGroup("obs")
        grp.createDimension("n", 10)
        s = grp.createVariable("station", str, ("n",))
        s[:] = np.array([f"st{i}" for i in range(10)], dtype=object)
        cmp = nc.createCompoundType(np.dtype([("a", "f4"), ("b", "i4")]), "pair")
        c = grp.createVariable("pairs", cmp, ("n",))
        c[:] = np.zeros(10, dtype=[("a", "f4"), ("b", "i4")])
        en = nc.createEnumType(np.uint8, "flag_t", {"clear": 0, "cloud": 1})
        e = grp.createVariable("flags", en, ("n",))
        e[:] = np.zeros(10, np.uint8)
        vl = nc.createVLType(np.int16, "ragged")
        r = grp.createVariable("ragged", vl, ("n",))
        r[:] = np.array([np.arange(i + 1, dtype=np.int16) for i in range(10)], dtype=object)
    return path


def _h5netcdf(path: Path) -> Path:
    import h5netcdf

    with h5netcdf.File(path, "w") as f:
        f.dimensions = {"x": 40, "y": 50}
        v = f.create_variable("field", ("x", "y"), float, chunks=(10, 50), compression="gzip")
        v[...] = np.arange(2000.0).reshape(40, 50)
        f.create_variable("x", ("x",), "i4", data=np.arange(40))
        g = f.create_group("sub")
        g.dimensions = {"z": 5}
        g.create_variable("z", ("z",), "f4", data=np.arange(5.0))
    return path


def _hdfstore(path: Path) -> Path:
    df = pd.DataFrame({"a": np.arange(100, dtype="i8"), "b": np.linspace(0, 1, 100), "s": [f"r{i}" for i in range(100)]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # PyTables' own warnings are not ccp's to test
        df.to_hdf(path, key="frame", format="table", complib="blosc", complevel=5)
        df.to_hdf(path, key="fixed", format="fixed")
    return path


MADE = {"netcdf4.nc": _netcdf4, "h5netcdf.h5": _h5netcdf, "hdfstore.h5": _hdfstore,
        "odd.h5": make_odd_file, "allocation.h5": make_allocation_file}
CASES = [("pytables", p.name) for p in PYTABLES_FILES] + [("made", name) for name in MADE]


def _get(tmp_path: Path, kind: str, name: str) -> Path:
    out = tmp_path / name
    if kind == "pytables":
        shutil.copyfile(TABLES_TESTS / name, out)
    else:
        MADE[name](out)
    return out


def _datasets(path: Path) -> list[str]:
    names = []
    with h5py.File(path, "r") as f:
        f.visititems(lambda n, o: names.append("/" + n) if isinstance(o, h5py.Dataset) else None)
    return names


def _one_line_or_ok(result) -> None:
    assert result.exit_code in (0, 2), result.output[-2000:]
    assert "internal error" not in result.output and "Traceback" not in result.output
    if result.exit_code == 2:
        assert len(result.output.strip().splitlines()) == 1, result.output


@pytest.mark.parametrize(("kind", "name"), CASES, ids=[c[1] for c in CASES])
def test_inspect_every_real_file_and_dataset(tmp_path, kind, name, cli):
    path = _get(tmp_path, kind, name)
    before = _sha(path)
    whole = cli("inspect", path)
    _one_line_or_ok(whole)
    assert whole.exit_code == 0 and "NOT DESCRIBED" not in whole.output, whole.output[-2000:]
    _one_line_or_ok(cli("inspect", path, "--json"))
    for dset in _datasets(path):
        _one_line_or_ok(cli("inspect", path, dset))
    assert _sha(path) == before


SWEEPS = [
    ("pytables", "attr-u16.h5", None),            # big-endian uint16 array attributes; a chunk larger than the data
    ("pytables", "b2nd-no-chunkshape.h5", None),  # Blosc2 (b2nd) by PyTables
    ("pytables", "test_szip.h5", None),           # SZIP
    ("pytables", "smpl_SDSextendible.h5", None),  # extendible, big-endian
    ("pytables", "ex-noattr.h5", "/detector/table"),  # a PyTables table: compound, read as its file type
    ("made", "netcdf4.nc", "/temp"),
    ("made", "hdfstore.h5", "/frame/table"),      # pandas table format: compound, Blosc
    ("made", "odd.h5", "/plain"),
]


def _first_numeric(path: Path) -> str | None:
    from types import SimpleNamespace

    from ccp.errors import CcpError
    from ccp.hdf5.dataset import describe_source

    for dset in _datasets(path):
        try:
            src = describe_source(SimpleNamespace(generate=None, file=path, path=dset))
        except CcpError:
            continue
        if src.numeric and all(s > 0 for s in src.shape):
            return dset
    return None


@pytest.mark.parametrize(("kind", "name", "dset"), SWEEPS, ids=[s[1] for s in SWEEPS])
def test_a_small_sweep_on_a_dataset_of_each_kind_finishes(tmp_path, write_sweep, kind, name, dset, cli):
    if kind == "pytables" and not (TABLES_TESTS / name).exists():
        pytest.skip(f"{name} is not in this PyTables")
    path = _get(tmp_path, kind, name)
    before = _sha(path)
    dset = dset or _first_numeric(path)
    if dset is None:
        pytest.skip(f"{name} has no numeric dataset ccp can read")
    with h5py.File(path, "r") as f:
        shape = f[dset].shape
    block = [1] * (len(shape) - 1) + [shape[-1]]
    sweep = write_sweep(f"""
        name: real
        dataset: {{file: {path}, path: "{dset}"}}
        matrix:
          chunks: [source, {[max(1, s // 2) for s in shape]}]
          filters: [source, "shuffle+gzip:1"]
          access: [{{op: read, block: {block}}}, {{op: copy, block: {block}}}]
        exclude: [{{chunks: contiguous, filters: "shuffle+gzip:1"}}]
        repeats: 1
        """)
    result = cli("run", str(sweep), "--quick", "--no-report", "--out", str(tmp_path / "run"),
                 "--work", str(tmp_path / "work"))
    assert result.exit_code == 0, result.output[-2000:]
    cells = pd.read_csv(tmp_path / "run" / "cells.csv")
    assert len(cells) >= 4 and (cells["status"] == "ok").all(), cells[["cell_id", "status"]]
    assert _sha(path) == before
