"""The copy keeps the input's file format (breaker4's F6: superblock 0 inputs came out as superblock 2,
which a reader linked with HDF5 before 1.8 cannot open); -S PAGE, which needs superblock 2, still gets it."""

import subprocess
import warnings

import h5py
import numpy as np
import pytest
from click.testing import CliRunner


def cli(*args):
    from ccp.cli import main

    return CliRunner().invoke(main, ["repack", *map(str, args)])


def superblock(path) -> int:
    with h5py.File(path, "r") as f:
        return f.id.get_create_plist().get_version()[0]


def make_h5py(path, libver=None):
    with h5py.File(path, "w", libver=libver) as f:
        f.create_dataset("x", data=np.arange(400.0).reshape(20, 20), chunks=(5, 20))
        f.create_dataset("grow", data=np.arange(10), maxshape=(None,), chunks=(4,))


def make_pytables(path):
    tables = pytest.importorskip("tables")
    with tables.open_file(path, "w") as h:
        h.create_carray("/", "c", obj=np.arange(400.0).reshape(20, 20), chunkshape=(5, 20))
        h.create_earray("/", "e", obj=np.arange(10), expectedrows=100)


def make_netcdf4(path):
    netCDF4 = pytest.importorskip("netCDF4")
    with netCDF4.Dataset(path, "w") as d:
        d.createDimension("t", None)
        d.createDimension("y", 20)
        v = d.createVariable("x", "f8", ("t", "y"), chunksizes=(5, 20))
        v[:] = np.arange(400.0).reshape(20, 20)


def make_h5netcdf(path):
    h5netcdf = pytest.importorskip("h5netcdf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with h5netcdf.File(path, "w") as d:
            d.dimensions = {"t": 20, "y": 20}
            v = d.create_variable("x", ("t", "y"), float, chunks=(5, 20))
            v[...] = np.arange(400.0).reshape(20, 20)


MAKERS = {
    "h5py-default": make_h5py,
    "h5py-latest": lambda p: make_h5py(p, libver="latest"),
    "h5py-v18": lambda p: make_h5py(p, libver=("v108", "latest")),
    "pytables": make_pytables,
    "netcdf4": make_netcdf4,
    "h5netcdf": make_h5netcdf,
}
OPTIONS = {"plain": [], "gzip": ["-f", "GZIP=1"]}


@pytest.mark.parametrize("opts", OPTIONS)
@pytest.mark.parametrize("maker", MAKERS)
def test_copy_keeps_the_superblock_version(tmp_path, maker, opts):
    src, out = tmp_path / "in.h5", tmp_path / "out.h5"
    MAKERS[maker](src)
    r = cli(*OPTIONS[opts], src, out)
    assert r.exit_code == 0, r.output
    assert superblock(out) == superblock(src)
    if maker in ("netcdf4", "h5netcdf"):
        header = subprocess.run(["ncdump", "-s", "-h", str(out)], capture_output=True, text=True, check=False)
        if header.returncode == 0:  # ncdump (netcdf-bin) installed: the header reads the same version
            assert f":_SuperblockVersion = {superblock(src)} ;" in header.stdout


def test_paged_copy_takes_the_format_it_needs(tmp_path):
    src, out = tmp_path / "in.h5", tmp_path / "out.h5"
    make_h5py(src)
    assert superblock(src) == 0
    r = cli("-S", "PAGE", "-G", "4096", src, out)
    assert r.exit_code == 0, r.output
    assert superblock(out) >= 2
    with h5py.File(out, "r") as f:
        assert f.id.get_create_plist().get_file_space_strategy()[0] == h5py.h5f.FSPACE_STRATEGY_PAGE
