"""Filters written by other software: recognised by id and cd_values, usable as `source`, named when missing."""

import shutil
from pathlib import Path

import h5py
import hdf5plugin
import numpy as np
import pandas as pd
import pytest
from h5py import h5p, h5z
from oddfiles import libhdf5

from ccp.errors import ConfigError
from ccp.hdf5.filters import (
    FilterPipeline,
    FilterStep,
    describe_filters,
    parse_filters,
    pipeline_from_dcpl,
)
from ccp.run import run_sweep

DATA = np.arange(40 * 100, dtype="<f4").reshape(40, 100)

# (id, how another writer stores it, the step ccp reads back); cd_values as those writers store them
WRITERS = [
    ("blosc-hdf5plugin", hdf5plugin.Blosc(cname="zstd", clevel=3, shuffle=hdf5plugin.Blosc.BITSHUFFLE), "blosc:zstd:3:bitshuffle"),
    ("blosc2-hdf5plugin", hdf5plugin.Blosc2(cname="lz4", clevel=7, filters=hdf5plugin.Blosc2.NOFILTER), "blosc2:lz4:7:nofilter"),
    ("zstd", hdf5plugin.Zstd(clevel=5), "zstd:5"),
    ("lz4", hdf5plugin.LZ4(nbytes=1024), "lz4:1024"),
    ("bitshuffle-lz4", hdf5plugin.Bitshuffle(cname="lz4"), "bitshuffle:lz4"),
    ("bitshuffle-zstd", hdf5plugin.Bitshuffle(cname="zstd", clevel=4), "bitshuffle:zstd:4"),
    ("bzip2", hdf5plugin.BZip2(blocksize=5), "bzip2:5"),
    ("lzf", {"compression": "lzf"}, "lzf"),
    ("szip", {"compression": "szip", "compression_opts": ("ec", 16)}, "szip:ec:16"),
    ("gzip+shuffle+fletcher", {"compression": "gzip", "compression_opts": 2, "shuffle": True, "fletcher32": True},
     "shuffle+gzip:2+fletcher32"),
    ("scaleoffset", {"scaleoffset": 2}, "scaleoffset:2"),
]


def _write(path, kwargs, name="d", data=DATA):
    kwargs = dict(kwargs)
    with h5py.File(path, "w") as f:
        f.create_dataset(name, data=data, chunks=(10, 100), **kwargs)
    return path


@pytest.mark.parametrize(("writer", "kwargs", "spec"), WRITERS, ids=[w[0] for w in WRITERS])
def test_foreign_filter_read_back_by_id_and_cd_values(tmp_path, writer, kwargs, spec):
    path = _write(tmp_path / "f.h5", kwargs)
    with h5py.File(path, "r") as f:
        dcpl = f["d"].id.get_create_plist()
        pipeline = pipeline_from_dcpl(dcpl)
        assert pipeline.spec == spec
        assert parse_filters(pipeline.spec) == pipeline          # a spec a sweep file can say
        details = describe_filters(dcpl)
    assert all(d["available"] and d["cd_values"] is not None for d in details)


# cd_values as PyTables stores them (its own set_local: Blosc without the compressor slot means blosclz)
PYTABLES_STORED = [
    ("pytables-blosc-default", 32001, (2, 2, 4, 4000, 5, 1), "blosc:blosclz:5:shuffle"),
    ("pytables-blosc-zstd", 32001, (2, 2, 4, 4000, 5, 1, 5), "blosc:zstd:5:shuffle"),
    ("pytables-blosc2", 32026, (1, 4000, 4, 4000, 5, 1, 0, 2, 10, 100), "blosc2:blosclz:5:shuffle"),
    ("pytables-bzip2", 307, (5, 11, 4), "bzip2:5"),
    ("blosc2-delta", 32026, (1, 0, 4, 4000, 5, 3, 0), "id32026:1:0:4:4000:5:3:0"),
    ("zfp", 32013, (3, 0, 10, 0, 0, 0), "id32013:3:0:10:0:0:0"),
    ("unregistered", 40000, (), "id40000"),
]


@pytest.mark.parametrize(("case", "fid", "values", "spec"), PYTABLES_STORED, ids=[c[0] for c in PYTABLES_STORED])
def test_cd_values_of_other_writers(case, fid, values, spec):
    dcpl = h5p.create(h5p.DATASET_CREATE)
    dcpl.set_chunk((10, 100))
    dcpl.set_filter(fid, h5z.FLAG_OPTIONAL, values)
    assert pipeline_from_dcpl(dcpl).spec == spec


@pytest.mark.slow   # a whole sweep: make test-slow (CI); the blosc filter is read fast in tests/hdf5
def test_pytables_blosc_file_as_source_runs_every_cell(tmp_path, write_sweep):
    tables = pytest.importorskip("tables")
    path = tmp_path / "pt.h5"
    with tables.open_file(path, "w") as f:
        for lib in ("blosc", "blosc2:zstd"):
            f.create_carray("/", lib.replace(":", "_"), obj=DATA, chunkshape=(10, 100),
                            filters=tables.Filters(complevel=5, complib=lib, shuffle=True))
    with h5py.File(path, "r") as f:     # PyTables' own cd_values, not hdf5plugin's
        assert len(f["blosc"].id.get_create_plist().get_filter(0)[2]) == 6
    for name in ("blosc", "blosc2_zstd"):
        sweep = write_sweep(f"""
            name: pt
            dataset: {{file: {path}, path: /{name}}}
            matrix:
              chunks: [source, [20, 100]]
              filters: [source, "gzip:1"]
              access: [{{op: read, block: [10, 100]}}, {{op: copy, block: [10, 100]}}]
            repeats: 1
            cold: false
            """, name=f"{name}.yaml")
        summary = run_sweep(sweep, out=tmp_path / f"run-{name}", work_dir=tmp_path / "work", report=False,
                            echo=lambda *a: None, isolate=False)
        assert summary.cells == 8 and summary.failed == 0
        df = pd.read_csv(tmp_path / f"run-{name}" / "cells.csv")
        assert df["filters"].str.startswith("blosc").sum() == 4 and (df["status"] == "ok").all()


def test_generic_filter_step_reapplies_the_writers_cd_values(tmp_path):
    step = parse_filters("id32015:7")              # Zstandard by id: what a source step looks like for an unmapped filter
    assert step == FilterPipeline((FilterStep("id32015", ("7",)),))
    dcpl = h5p.create(h5p.DATASET_CREATE)
    dcpl.set_chunk((10,))
    step.apply(dcpl, np.dtype("f4"))
    assert dcpl.get_filter(0)[0] == 32015 and tuple(dcpl.get_filter(0)[2]) == (7,)


@pytest.mark.parametrize(("spec", "words"), [
    ("id305", ["LZO (id 305)", "PyTables"]),
    ("id32020:1", ["VBZ (id 32020)", "vbz plugin"]),
    ("id40000", ["filter id 40000", "HDF5_PLUGIN_PATH"]),
    ("id70000", ["out of range"]),
    ("id32015:x", ["not an integer"]),
], ids=["lzo", "vbz", "unregistered", "bad-id", "bad-cd-value"])
def test_a_filter_not_available_names_its_provider(spec, words):
    with pytest.raises(ConfigError) as err:
        parse_filters(spec)
    assert all(w in str(err.value) for w in words) and "\n" not in str(err.value)


def test_source_compressed_with_a_missing_filter_is_refused_by_name(tmp_path, write_sweep, cli):
    tables = pytest.importorskip("tables")
    lzo = Path(tables.__file__).parent / "tests" / "Tables_lzo1.h5"
    if not lzo.exists():
        pytest.skip("PyTables' LZO test file is not installed")
    path = tmp_path / "lzo.h5"
    shutil.copyfile(lzo, path)
    sweep = write_sweep(f"""
        name: lzo
        dataset: {{file: {path}, path: /tuple0}}
        repeats: 1
        """)
    result = cli("check", str(sweep))
    assert result.exit_code == 2
    assert "LZO (id 305)" in result.output and "PyTables" in result.output and "internal" not in result.output
    inspected = cli("inspect", str(path), "/tuple0")
    assert inspected.exit_code == 0 and "NOT AVAILABLE" in inspected.output


def test_inspect_reports_filter_parameters(tmp_path, cli):
    path = _write(tmp_path / "b.h5", hdf5plugin.Blosc2(cname="zstd", clevel=4))
    result = cli("inspect", str(path), "d")
    assert result.exit_code == 0, result.output
    assert "blosc2:zstd:4:shuffle" in result.output and "Blosc2 (id 32026" in result.output and "cd_values [" in result.output


def test_nbit_is_what_h5pset_nbit_makes(tmp_path):
    """h5py has no set_nbit; the set_filter that replaces it must build the same pipeline as HDF5's own call."""
    lib = libhdf5()
    ours, theirs = h5p.create(h5p.DATASET_CREATE), h5p.create(h5p.DATASET_CREATE)
    for dcpl in (ours, theirs):
        dcpl.set_chunk((10,))
    parse_filters("nbit").apply(ours, np.dtype("<i4"))
    assert lib.H5Pset_nbit(theirs.id) >= 0
    assert ours.get_filter(0) == theirs.get_filter(0)


def test_a_sweep_with_nbit_runs(tmp_path, write_sweep):
    sweep = write_sweep("""
        name: nbit
        dataset:
          generate: {shape: [40, 50], dtype: "<i4", data: "randint:0:1000"}
        matrix:
          chunks: [[10, 50]]
          filters: [nbit, "nbit+gzip:1"]
          access: [{op: read, block: [10, 50]}, {op: write, block: [10, 50]}]
        repeats: 1
        cold: false
        """)
    summary = run_sweep(sweep, out=tmp_path / "run", work_dir=tmp_path / "work", report=False, echo=lambda *a: None,
                        isolate=False)
    assert summary.cells == 4 and summary.failed == 0
    found = []
    for work in (tmp_path / "work").glob("nbit-*.h5"):
        with h5py.File(work, "r") as f:
            f.visititems(lambda n, o: found.append(o.id.get_create_plist().get_filter(0)[0])
                         if isinstance(o, h5py.Dataset) else None)
    assert found and all(fid == h5z.FILTER_NBIT for fid in found)
