"""A Blosc file repacked while HDF5_PLUGIN_PATH points at another library's plugins: netCDF4's wheel puts its own Blosc
(built against its own libhdf5) on that path when it is imported, and HDF5 loading it for h5py's library failed the
copy ("can't find object for ID ... HDF5 cannot create it"): ccp registers hdf5plugin's filters first."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

hdf5plugin = pytest.importorskip("hdf5plugin")
netCDF4 = pytest.importorskip("netCDF4")


def test_a_blosc_copy_ignores_another_librarys_plugins(tmp_path):
    plugins = Path(netCDF4.__file__).parent / "plugins"
    if not any(plugins.glob("*blosc*")):
        pytest.skip("this netCDF4 ships no Blosc plugin")
    data = np.arange(2000 * 40, dtype="<f4").reshape(2000, 40)
    with h5py.File(tmp_path / "in.h5", "w") as f:
        f.create_dataset("d", data=data, chunks=(2000, 4), **hdf5plugin.Blosc(cname="lz4"))
    env = {**os.environ, "HDF5_PLUGIN_PATH": str(plugins)}
    r = subprocess.run([sys.executable, "-m", "ccp.repack", "-q", "--memory", "96MiB", "-l", "d:CHUNK=100x40",
                        str(tmp_path / "in.h5"), str(tmp_path / "out.h5")], capture_output=True, text=True,
                       env=env, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    with h5py.File(tmp_path / "out.h5", "r") as f:
        assert f["d"].chunks == (100, 40)
        np.testing.assert_array_equal(f["d"][...], data)
