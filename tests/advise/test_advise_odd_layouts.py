"""`ccp advise`, `ccp plan` and `ccp inspect` on layouts with no chunk cache or a grid too large for the model: one
line naming what the dataset is, exit 2, never a MemoryError."""

import h5py
import numpy as np
import pytest
from click.testing import CliRunner
from h5py import h5d, h5p, h5s, h5t

from ccp.cli import main


@pytest.fixture(scope="module")
def odd(tmp_path_factory):
    path = tmp_path_factory.mktemp("odd") / "odd.h5"
    with h5py.File(path, "w") as f:
        # a normal extendible dataset, nothing written: 2**40 chunks of 1024x1024
        f.create_dataset("huge", shape=(2**40, 2**20), maxshape=(None, None), chunks=(1024, 1024), dtype="u1")
        f.create_dataset("ext", shape=(100,), dtype="f4", external=[("ext.bin", 0, 400)])
        dcpl = h5p.create(h5p.DATASET_CREATE)
        dcpl.set_layout(h5d.COMPACT)
        dsid = h5d.create(f.id, b"compact", h5t.NATIVE_FLOAT, h5s.create_simple((10,)), dcpl=dcpl)
        dsid.write(h5s.ALL, h5s.ALL, np.arange(10, dtype="f4"))
    return path


def _ccp(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.mark.parametrize("access", ["1x1048576", "1024x1024", "1x1"])
def test_advise_on_a_grid_too_large_for_the_model_is_one_line(odd, access):
    r = _ccp("advise", odd, "/huge", "--access", access, "--no-measure")
    assert r.exit_code == 2, r.output
    assert "/huge" in r.output and "chunks, more than ccp's model holds" in r.output and "Traceback" not in r.output


def test_plan_on_a_grid_too_large_for_the_model_is_one_line(odd, tmp_path):
    sweep = tmp_path / "huge.yaml"
    sweep.write_text(f"name: huge\ndataset: {{file: {odd}, path: /huge}}\nmatrix:\n  chunks: [source]\n  cache: [1MiB]\n"
                     "  access:\n    - {op: read, block: [1, 1048576], random: 10}\nrepeats: 1\n")
    r = _ccp("plan", sweep, "--work", tmp_path / "work")
    assert r.exit_code == 2, r.output
    assert "more than ccp's model holds" in r.output and "MemoryError" not in r.output


def test_advise_names_a_compact_dataset(odd):
    r = _ccp("advise", odd, "/compact", "--access", "2", "--no-measure")
    assert r.exit_code == 2, r.output
    assert "is compact" in r.output


def test_inspect_names_external_storage_and_a_missing_file(odd):
    r = _ccp("inspect", odd, "/ext")
    assert r.exit_code == 0, r.output
    assert "stored in external file ext.bin (not found)" in r.output


def test_a_missing_external_file_is_named_before_any_cell_runs(odd, tmp_path):
    sweep = tmp_path / "ext.yaml"
    sweep.write_text(f"name: ext\ndataset: {{file: {odd}, path: /ext}}\nmatrix:\n  chunks: [source]\n  cache: [1MiB]\n"
                     "  access:\n    - {op: read, block: [10]}\nrepeats: 1\n")
    for args in (["check", sweep], ["advise", odd, "/ext", "--access", "10", "--no-measure"]):
        r = _ccp(*args)
        assert r.exit_code == 2, r.output
        assert "external file ext.bin, which HDF5 cannot read from here" in r.output


@pytest.mark.parametrize("block", ["[1, 1048576]", "[1048576, 1048576]"], ids=["rows", "tiles"])
def test_tune_on_a_grid_too_large_is_one_line_before_any_probe(odd, tmp_path, block):
    says = "chunks, more than ccp's model holds"
    wl = tmp_path / "huge.yaml"
    wl.write_text(f"name: huge\ndataset: {{file: {odd}, path: /huge}}\n"
                  f"workload:\n  - {{access: {{op: read, block: {block}, random: 5}}, weight: 1}}\n")
    r = _ccp("tune", wl, "--no-measure", "--out", tmp_path / "o", "--work", tmp_path / "w")
    assert r.exit_code == 2, r.output
    assert says in r.output and "MemoryError" not in r.output
