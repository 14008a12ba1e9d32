"""`ccp repack IN... -o OUTDIR`: many files in one invocation; `IN OUT` still works."""

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from ccp.repack.compare import differences


def cli(*args):
    from ccp.cli import main

    return CliRunner().invoke(main, ["repack", *map(str, args)])


def small_files(folder, n):
    folder.mkdir()
    for i in range(n):
        with h5py.File(folder / f"g{i:02d}.h5", "w") as f:
            f.create_dataset("x", data=np.random.default_rng(i).random((20, 8)), chunks=(5, 8))
            f.create_dataset("s", data=np.array([b"Hello!"] * 3, dtype="S6"))
            f.attrs["i"] = i
    return sorted(folder.iterdir())


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_folder_and_files_to_outdir(tmp_path, jobs):
    files = small_files(tmp_path / "in", 5)
    extra = tmp_path / "extra.h5"
    with h5py.File(extra, "w") as f:
        f["y"] = np.arange(3)
    out = tmp_path / "out"
    r = cli("-j", jobs, "-f", "GZIP=6", tmp_path / "in", extra, "-o", out)
    assert r.exit_code == 0, r.output
    assert "6 of 6 file(s) repacked" in r.output
    for src in [*files, extra]:
        assert differences(src, out / src.name, layouts_may_differ=True) == []
    with h5py.File(out / "g00.h5", "r") as f:
        assert f["x"].compression == "gzip"


def test_one_bad_file_costs_that_file(tmp_path):
    files = small_files(tmp_path / "in", 3)
    bad = tmp_path / "bad.h5"
    bad.write_bytes(b"not hdf5 at all")
    r = cli(*files, bad, "-o", tmp_path / "out")
    assert r.exit_code == 2
    errors = [line for line in r.output.splitlines() if line.startswith("ccp: error:")]
    assert any(str(bad) in line and "not an HDF5 file" in line for line in errors), r.output
    assert "internal error" not in r.output
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [f.name for f in files]


@pytest.mark.parametrize("args,needle", [
    (["A", "B", "C"], "-o OUTDIR"),
    (["A", "A2", "-o", "OUT"], "would both be written"),
    (["MISSING", "-o", "OUT"], "does not exist"),
    (["A", "-o", "A"], "not a folder"),
], ids=["three-paths-no-o", "same-name", "missing", "outdir-is-file"])
def test_many_errors_are_one_line(tmp_path, args, needle):
    small_files(tmp_path / "in", 1)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "g00.h5").write_bytes((tmp_path / "in" / "g00.h5").read_bytes())
    names = {"A": tmp_path / "in" / "g00.h5", "A2": tmp_path / "other" / "g00.h5", "B": tmp_path / "b.h5",
             "C": tmp_path / "c.h5", "MISSING": tmp_path / "missing.h5", "OUT": tmp_path / "out"}
    r = cli(*[names.get(a, a) for a in args])
    assert r.exit_code == 2, r.output
    lines = [line for line in r.output.splitlines() if line.strip()]
    assert len(lines) == 1 and needle in lines[0], r.output


def test_help_shows_the_many_files_example():
    r = cli("--help")
    assert r.exit_code == 0 and "-o repacked/" in r.output and "IN... [OUT]" in r.output


def test_a_ctrl_c_to_the_parent_alone_stops_the_files_in_progress(tmp_path, monkeypatch):
    """A SIGINT sent to `ccp repack -o` alone (a supervisor's, not a terminal's) stops the workers' files at once,
    as a terminal's Ctrl-C does, instead of waiting for each to finish (breaker4's F5: 4.8 s, every file written)."""
    import os
    import signal
    import threading
    import time

    from ccp.repack import copy as repack_copy
    from ccp.repack.many import repack_many
    from ccp.repack.options import parse_options

    started = tmp_path / "started"
    started.mkdir()

    def slow_repack(src, dst, *args, **kwargs):
        (started / os.path.basename(src)).touch()
        time.sleep(60)

    for name in ("a.h5", "b.h5"):
        with h5py.File(tmp_path / name, "w") as f:
            f["x"] = np.arange(10)
    monkeypatch.setattr(repack_copy, "repack", slow_repack)

    def ctrl_c_when_both_started():
        deadline = time.monotonic() + 60
        while len(os.listdir(started)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=ctrl_c_when_both_started, daemon=True).start()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        repack_many([tmp_path / "a.h5", tmp_path / "b.h5"], tmp_path / "od", parse_options([], []),
                    buffer_bytes=2**20, jobs=2, quiet=True)
    assert time.monotonic() - t0 < 40
    assert os.listdir(tmp_path / "od") == []
