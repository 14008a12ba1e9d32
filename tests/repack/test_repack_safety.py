"""The input is never modified; an interrupted repack leaves no OUT; a dry run writes nothing."""

import hashlib
import os
import signal
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest
from click.testing import CliRunner
from repack_helpers import CRIS

from ccp.errors import CcpError
from ccp.repack import repack
from ccp.repack.options import parse_options


def digest(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest(), os.stat(path).st_mtime_ns


def leftovers(folder):
    return [p.name for p in folder.iterdir() if ".ccp-tmp-" in p.name]


def test_input_is_not_modified(rich, tmp_path):
    before = digest(rich)
    o = parse_options([f"{CRIS}:CHUNK=1x6x3x17", "/contig:CHUNK=3x3"], ["GZIP=1"])
    repack(rich, tmp_path / "out.h5", o.layouts, o.filters)
    repack(rich, tmp_path / "out2.h5", o.layouts, o.filters, dry_run=True)
    assert digest(rich) == before


def test_dry_run_writes_nothing(rich, tmp_path):
    out = tmp_path / "out.h5"
    o = parse_options([f"{CRIS}:CHUNK=1x6x3x17"], [f"{CRIS}:SHUF", f"{CRIS}:GZIP=6", "/strings:GZIP=1"])
    before = sorted(p.name for p in tmp_path.iterdir())
    res = repack(rich, out, o.layouts, o.filters, dry_run=True)
    assert res.dry_run and res.out_bytes is None
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    d = res.dataset(CRIS)
    assert d.changed and d.new_layout == "1x6x3x17" and d.new_filters == "shuffle+gzip:6"
    assert 0.5 * d.old_stored_bytes < d.estimated_bytes < 1.5 * d.raw_bytes
    assert res.dataset("/strings").estimated_bytes is None  # variable-length: no estimate


@pytest.mark.parametrize("exc", [KeyboardInterrupt, RuntimeError])
def test_interrupted_repack_leaves_no_out_and_keeps_an_old_out(rich, tmp_path, exc):
    out = tmp_path / "out.h5"
    out.write_bytes(b"previous output")
    calls = []

    def progress(event, value):
        if event == "advance":
            calls.append(value)
            if len(calls) == 2:
                raise exc("stop")

    o = parse_options([f"{CRIS}:CHUNK=1x6x3x17"], [f"{CRIS}:GZIP=6"])
    # KeyboardInterrupt goes through; any other failure inside a dataset is one line naming it
    with pytest.raises(exc if exc is KeyboardInterrupt else CcpError):
        repack(rich, out, o.layouts, o.filters, progress=progress, buffer_bytes=2 * 1224)
    assert out.read_bytes() == b"previous output"
    assert leftovers(tmp_path) == []


def test_failure_in_a_worker_cleans_up(rich, tmp_path, monkeypatch):
    import ccp.repack.chunks as copy_mod
    import ccp.repack.pipeline as pipeline_mod

    def boom(*a, **k):
        raise ValueError("encoder broke")

    monkeypatch.setattr(copy_mod, "_encode_chunk", boom)      # a source HDF5 reads
    monkeypatch.setattr(pipeline_mod.ChunkPipeline, "_target", boom)   # a source ccp decodes
    o = parse_options([f"{CRIS}:CHUNK=1x6x3x17"], [f"{CRIS}:GZIP=6"])
    with pytest.raises(CcpError, match=f"{CRIS}: could not be repacked .*encoder broke"):  # one line, not internal
        repack(rich, tmp_path / "out.h5", o.layouts, o.filters)
    assert not (tmp_path / "out.h5").exists() and leftovers(tmp_path) == []


def test_sigterm_leaves_no_out(tmp_path):
    src = tmp_path / "big.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("x", data=np.random.default_rng(0).standard_normal((256, 256, 64)).astype("f4"))
    out = tmp_path / "out.h5"
    proc = subprocess.Popen([sys.executable, "-m", "ccp.repack", "-q", "--threads", "1", "--buffer", "256KiB", "--deflate", "zlib",
                             "-l", "x:CHUNK=4x256x64", "-f", "x:GZIP=9", str(src), str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while not leftovers(tmp_path) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert leftovers(tmp_path), "the repack finished before it could be interrupted"
    time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert not out.exists() and leftovers(tmp_path) == []


def test_cli(rich, tmp_path):
    from ccp.repack.command import repack_command

    runner = CliRunner()
    out = tmp_path / "out.h5"
    r = runner.invoke(repack_command, ["-l", f"{CRIS}:CHUNK=1x6x3x17", "-f", f"{CRIS}:GZIP=6", str(rich), str(out)])
    assert r.exit_code == 0, r.output
    assert "1 dataset(s) repacked" in r.output and "fast" in r.output
    assert out.exists()
    r = runner.invoke(repack_command, ["--dry-run", "-l", f"{CRIS}:CHUNK=2x6x3x17", str(rich), str(tmp_path / "d.h5")])
    assert r.exit_code == 0 and "4x6x3x17 -> 2x6x3x17" in r.output and "nothing written" in r.output
    assert not (tmp_path / "d.h5").exists()
    r = runner.invoke(repack_command, ["-q", "-f", "/floats:SZIP=8,NN", str(rich), str(tmp_path / "q.h5")])
    assert r.exit_code == 0 and r.output == ""


@pytest.mark.parametrize("args,needle", [
    (["-l", f"{CRIS}:CHUNK=1x6x3", "IN", "OUT"], "rank 3"),
    (["-l", f"{CRIS}:CHUNK=1x0x3x17", "IN", "OUT"], "> 0"),
    (["-l", "/missing:CONTI", "IN", "OUT"], "no dataset /missing"),
    (["-f", "/floats:GZIP=11", "IN", "OUT"], "0-9"),
    (["IN", "IN"], "is the input"),
    (["MISSING", "OUT"], "does not exist"),
    (["--buffer", "lots", "IN", "OUT"], "--buffer"),
    (["IN", "DIR"], "give -o"),
    (["DIR", "OUT"], "give -o OUTDIR"),
])
def test_cli_errors_are_one_line_exit_2(rich, tmp_path, args, needle):
    from ccp.cli import main

    args = [str(rich) if a == "IN" else str(tmp_path / "out.h5") if a == "OUT" else
            str(tmp_path / "missing.h5") if a == "MISSING" else str(tmp_path) if a == "DIR" else a for a in args]
    r = CliRunner().invoke(main, ["repack", *args])
    assert r.exit_code == 2, r.output
    lines = [line for line in r.output.splitlines() if line.strip()]
    assert len(lines) == 1 and needle in lines[0], r.output
    assert not (tmp_path / "out.h5").exists()


def one_line_error(r, needle):
    lines = [line for line in r.output.splitlines() if line.strip()]
    assert r.exit_code == 2, r.output
    assert len(lines) == 1 and needle in lines[0], r.output
    assert "internal error" not in r.output


def cli(*args):
    from ccp.cli import main

    return CliRunner().invoke(main, ["repack", *map(str, args)])


def test_write_protected_out_is_refused(rich, tmp_path):
    out = tmp_path / "out.h5"
    out.write_bytes(b"keep me")
    out.chmod(0o444)
    one_line_error(cli(rich, out), "write-protected")
    assert out.read_bytes() == b"keep me"


def test_an_out_that_is_a_pipe_is_refused_and_left_as_it_was(rich, tmp_path):
    """The copy is renamed onto OUT: over a device or a pipe it would replace the node itself."""
    fifo = tmp_path / "pipe.h5"
    os.mkfifo(fifo)
    one_line_error(cli(rich, fifo), "a pipe, not a file")
    assert fifo.is_fifo() and leftovers(tmp_path) == []


def test_an_out_that_links_to_a_file_is_written_through(rich, tmp_path):
    real, link = tmp_path / "real.h5", tmp_path / "link.h5"
    real.write_bytes(b"old")
    link.symlink_to(real)
    r = cli(rich, link)
    assert r.exit_code == 0, r.output
    assert link.is_symlink() and h5py.is_hdf5(real)


def test_stale_temp_of_a_dead_repack_is_removed(rich, tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    out = tmp_path / "out.h5"
    stale = tmp_path / f"out.h5.ccp-tmp-{dead.pid}"
    stale.write_bytes(b"half a file")
    alive = tmp_path / f"out.h5.ccp-tmp-{os.getppid()}"  # a live process's temp is not ours to remove
    alive.write_bytes(b"busy")
    assert cli(rich, out).exit_code == 0
    assert not stale.exists() and alive.exists() and out.exists()


def test_only_ccps_own_stale_temps_are_removed_never_the_input(rich, tmp_path):
    """breaker7 R1: a copy from ``keep.h5.ccp-tmp-999999`` to ``keep.h5`` deleted its own input, and an unrelated
    ``keep.h5.ccp-tmp-4242.notes-v2`` with it: the clean-up took any name starting with the tag."""
    import shutil

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    src = tmp_path / f"keep.h5.ccp-tmp-{dead.pid}"
    shutil.copy(rich, src)
    notes = tmp_path / f"keep.h5.ccp-tmp-{dead.pid}.notes-v2"
    notes.write_bytes(b"the user's")
    stage = tmp_path / "keep.h5.ccp-tmp-99999999.stage1"      # a dead repack's stage (no such pid): removed
    stage.write_bytes(b"half a stage")
    assert cli(src, tmp_path / "keep.h5").exit_code == 0
    assert src.exists() and h5py.is_hdf5(src) and notes.read_bytes() == b"the user's" and not stage.exists()


def test_too_little_free_space_is_refused_before_writing(rich, tmp_path, monkeypatch):
    import ccp.repack.copy as copy_mod

    class Tiny:
        f_bavail, f_frsize = 10, 4096

    monkeypatch.setattr(copy_mod.os, "statvfs", lambda path: Tiny())
    one_line_error(cli(rich, tmp_path / "out.h5"), "only 40 KiB is free")
    assert not (tmp_path / "out.h5").exists() and leftovers(tmp_path) == []


@pytest.fixture
def small_tmpfs(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("a 5 MiB tmpfs needs root (mount -t tmpfs)")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=5m", "tmpfs", str(mnt)], check=False, capture_output=True)
    if r.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode(errors='replace').strip()}")
    yield mnt
    subprocess.run(["umount", str(mnt)], check=False)


@pytest.fixture
def eight_mib(tmp_path):
    src = tmp_path / "big.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("x", data=np.random.default_rng(0).random((1000, 1000)), chunks=(100, 1000))
    return src


def test_full_disk_is_refused_up_front(small_tmpfs, eight_mib):
    one_line_error(cli(eight_mib, small_tmpfs / "out.h5"), "is free")
    assert list(small_tmpfs.iterdir()) == []


@pytest.mark.parametrize("opts", [[], ["-l", "CHUNK=50x1000", "-f", "SHUF"], ["-f", "GZIP=1"]],
                         ids=["no-option", "fast-path", "gzip"])
def test_disk_full_mid_write_is_one_line_and_leaves_nothing(small_tmpfs, eight_mib, monkeypatch, opts):
    import ccp.repack.copy as copy_mod

    monkeypatch.setattr(copy_mod, "_check_free_space", lambda *a: None)  # another writer filled the disk meanwhile
    before = digest(eight_mib)
    one_line_error(cli("-q", *opts, eight_mib, small_tmpfs / "out.h5"), "no space left")
    assert list(small_tmpfs.iterdir()) == []
    assert digest(eight_mib) == before


def test_an_object_hdf5_cannot_copy_is_named_in_one_line(rich, tmp_path, monkeypatch):
    from ccp.repack import tree

    real_h5o = tree.h5o

    class FailingH5o:  # h5py.h5o whose copy of /contig fails as HDF5 does, in two lines
        def __getattr__(self, name):
            return getattr(real_h5o, name)

        @staticmethod
        def copy(src, name, dst, dname, **kw):
            if name == b"contig":
                raise RuntimeError("Unable to copy object (something odd)\nsecond line")
            return real_h5o.copy(src, name, dst, dname, **kw)

    monkeypatch.setattr(tree, "h5o", FailingH5o())
    one_line_error(cli(rich, tmp_path / "out.h5"), "/contig: HDF5 cannot copy it: Unable to copy object")
    assert not (tmp_path / "out.h5").exists() and leftovers(tmp_path) == []
