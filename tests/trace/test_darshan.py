"""`ccp from-darshan` on the real logs shipped with pydarshan, and on those logs damaged."""

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ccp.errors import CcpError

darshan = pytest.importorskip("darshan")
LOGS = Path(darshan.__file__).parent / "examples" / "example_logs"
IOR = LOGS / "ior_hdf5_example.darshan"            # IOR, 3 ranks, one 1-D dataset read and written
MACSIO = LOGS / "shane_macsio_id29959_5-22-32552-7035573431850780836_1590156158.darshan"   # id >= 2**63
ROOT = Path(__file__).resolve().parents[2]


def ccp(*args, env=None):
    return subprocess.run([sys.executable, "-m", "ccp.cli", *map(str, args)], check=False, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", **(env or {})}, timeout=300)


def one_line_error(r, *words):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ccp: error: "), r.stderr
    for w in words:
        assert w in lines[0], lines[0]


def test_h5d_records_become_a_sweep(tmp_path):
    from ccp.config.sweep import parse_sweep

    out = tmp_path / "sweep.yaml"
    r = ccp("from-darshan", IOR, "-o", out, "--file", tmp_path / "mine.h5")
    assert r.returncode == 0, r.stderr
    raw = yaml.safe_load(out.read_text())
    assert raw["dataset"] == {"file": str(tmp_path / "mine.h5"), "path": "/Dataset-0000.0000"}
    # IOR wrote and read 32768-element blocks, 8 times per rank on 3 ranks (the log's own counters)
    assert raw["matrix"]["access"] == [{"op": "read", "block": [32768]}]
    assert "x 24 in the log" in out.read_text()
    assert "skip data" not in out.read_text()      # stride 32768 = length: consecutive blocks
    # IOR's dataset is contiguous: no chunk cache to vary (three cache cells were one configuration run three
    # times, labelled alike in the report: breaker5)
    assert raw["matrix"]["chunks"] == ["contiguous"] and raw["matrix"]["cache"] == ["8MiB"]
    parse_sweep(raw, tmp_path)          # a valid sweep file


def test_record_ids_past_int64_keep_their_names(tmp_path):
    """MACSio's dataset id is 9271460256448564466 > 2**63: it must name /constant, not become a number."""
    out = tmp_path / "sweep.yaml"
    r = ccp("from-darshan", MACSIO, "-o", out)
    assert r.returncode == 0, r.stderr
    raw = yaml.safe_load(out.read_text())
    assert raw["dataset"] == {"file": "/tmp/test/macsio_hdf5_000.h5", "path": "/constant"}
    # the log holds 80 writes and no reads; its one common access is 24x31x31, 72 times, stride 1
    assert raw["matrix"]["access"] == [{"op": "write", "block": [24, 31, 31]}]
    assert "x 72 in the log" in out.read_text() and "skip data" not in out.read_text()
    assert "sweep for /tmp/test/macsio_hdf5_000.h5:/constant" in r.stdout


def test_ids_are_exact_in_the_library(monkeypatch):
    """The id 13528006827535894528 (float64 would make it ...894528.0 of another id) names its dataset."""
    from ccp.trace import darshan as mod
    from ccp.trace.darshan_log import DarshanLog, H5DRecord

    rec_id, neighbour = 13528006827535894528, 13528006827535894529
    counters = {k: 0 for k in _h5d_counter_names()}
    counters.update({"H5D_DATASPACE_NDIMS": 2, "H5D_DATASPACE_NPOINTS": 100, "H5D_DATATYPE_SIZE": 4,
                     "H5D_READS": 5, "H5D_ACCESS1_COUNT": 5, "H5D_ACCESS1_LENGTH_D4": 2, "H5D_ACCESS1_LENGTH_D5": 10,
                     "H5D_ACCESS1_ACCESS": 80})
    log = DarshanLog(h5d=(H5DRecord(rec_id, 0, counters),), partial=False,
                     names={rec_id: "/f.h5:/right", neighbour: "/f.h5:/wrong"})
    monkeypatch.setattr(mod, "read_log", lambda path: log)
    (d,), _ = mod.h5d_patterns(Path("x.darshan"))
    assert d["name"] == "/f.h5:/right"


def _h5d_counter_names():
    from darshan.backend.cffi_backend import counter_names
    return counter_names("H5D")


@pytest.mark.parametrize("change,message", [
    ({"H5D_ACCESS1_ACCESS": 81}, "H5D_ACCESS1_ACCESS = 81"),
    ({"H5D_ACCESS1_COUNT": 6}, "counts 6 common accesses but only 5 reads and writes"),
    ({"H5D_ACCESS1_COUNT": -1}, "H5D_ACCESS1_COUNT = -1"),
    ({"H5D_DATASPACE_NDIMS": -3}, "-3 dimensions"),
    ({"H5D_READS": -5, "H5D_WRITES": 10}, "H5D_READS = -5"),
    ({"H5D_CHUNK_SIZE_D5": -1}, "chunk shape"),
], ids=["access-bytes", "more-accesses-than-ops", "negative-count", "negative-ndims", "negative-reads", "negative-chunk"])
def test_counters_that_contradict_each_other_are_a_damaged_log(monkeypatch, change, message):
    from ccp.trace import darshan as mod
    from ccp.trace.darshan_log import DarshanLog, H5DRecord

    counters = {k: 0 for k in _h5d_counter_names()}
    counters.update({"H5D_DATASPACE_NDIMS": 2, "H5D_DATASPACE_NPOINTS": 100, "H5D_DATATYPE_SIZE": 4,
                     "H5D_READS": 5, "H5D_ACCESS1_COUNT": 5, "H5D_ACCESS1_LENGTH_D4": 2, "H5D_ACCESS1_LENGTH_D5": 10,
                     "H5D_ACCESS1_ACCESS": 80, **change})
    log = DarshanLog(h5d=(H5DRecord(7, 0, counters),), partial=False, names={7: "/f.h5:/d"})
    monkeypatch.setattr(mod, "read_log", lambda path: log)
    with pytest.raises(CcpError, match="damaged Darshan log") as info:
        mod.h5d_patterns(Path("x.darshan"))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_record_without_a_name_is_a_damaged_log(monkeypatch):
    from ccp.trace import darshan as mod
    from ccp.trace.darshan_log import DarshanLog, H5DRecord

    log = DarshanLog(h5d=(H5DRecord(7, 0, {"H5D_DATASPACE_NDIMS": 1}),), partial=False, names={})
    monkeypatch.setattr(mod, "read_log", lambda path: log)
    with pytest.raises(CcpError, match="H5D record id 7 has no name record"):
        mod.h5d_patterns(Path("x.darshan"))


@pytest.mark.parametrize("log,message", [
    (LOGS / "example.darshan", "no H5D records"),
    (Path("/etc/hostname"), "not a Darshan log"),
    (Path("/no/such.darshan"), "no such file"),
], ids=["no-h5d-module", "not-a-log", "missing"])
def test_unusable_logs_get_one_line(tmp_path, log, message):
    r = ccp("from-darshan", log, "-o", tmp_path / "s.yaml")
    one_line_error(r, message)
    assert not (tmp_path / "s.yaml").exists()


# ---- -o: never over an existing file without --force, never over the log ----

def test_existing_output_is_kept_without_force(tmp_path):
    out = tmp_path / "sweep.yaml"
    out.write_text("mine\n")
    one_line_error(ccp("from-darshan", IOR, "-o", out), "exists", "--force")
    assert out.read_text() == "mine\n"
    r = ccp("from-darshan", IOR, "-o", out, "--force")
    assert r.returncode == 0, r.stderr
    assert "Dataset-0000.0000" in out.read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["sweep.yaml"]       # no temporary file left


@pytest.mark.parametrize("force", [False, True], ids=["plain", "force"])
@pytest.mark.parametrize("how", ["same-path", "symlink", "hardlink"])
def test_the_input_log_is_never_overwritten(tmp_path, how, force):
    log = tmp_path / "job.darshan"
    log.write_bytes(IOR.read_bytes())
    out = {"same-path": log, "symlink": tmp_path / "s.yaml", "hardlink": tmp_path / "h.yaml"}[how]
    if how == "symlink":
        out.symlink_to(log)
    elif how == "hardlink":
        os.link(log, out)
    r = ccp("from-darshan", log, "-o", out, *(["--force"] if force else []))
    one_line_error(r, "-o")
    assert log.read_bytes() == IOR.read_bytes()


@pytest.mark.parametrize("how", ["fifo", "link-to-fifo"])
def test_an_output_that_is_not_a_file_is_refused_and_left_as_it_was(tmp_path, how):
    """The sweep is renamed into place: over a device or a pipe (``-o /dev/null --force`` as root) it would
    replace the node itself, so anything but a regular file is refused, with or without --force."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    out = fifo if how == "fifo" else tmp_path / "link.yaml"
    if how == "link-to-fifo":
        out.symlink_to(fifo)
    one_line_error(ccp("from-darshan", IOR, "-o", out, "--force"), "-o", "a pipe, not a file")
    assert fifo.is_fifo() and (how == "fifo" or out.is_symlink())
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted({"pipe", out.name})   # no temporary file left


def test_a_link_to_a_file_is_written_through_and_stays_a_link(tmp_path):
    real, link = tmp_path / "real.yaml", tmp_path / "link.yaml"
    real.write_text("old\n")
    link.symlink_to(real)
    r = ccp("from-darshan", IOR, "-o", link, "--force")
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and "Dataset-0000.0000" in real.read_text()


def test_the_sweep_gets_the_mode_open_would_give(tmp_path):
    out = tmp_path / "sweep.yaml"
    mask = os.umask(0o022)
    try:
        r = ccp("from-darshan", IOR, "-o", out)
    finally:
        os.umask(mask)
    assert r.returncode == 0, r.stderr
    assert out.stat().st_mode & 0o777 == 0o644       # not mkstemp's 0600: a sweep is shared


def _ior_file(path, shape):
    import h5py

    with h5py.File(path, "w") as f:
        f.create_dataset("Dataset-0000.0000", shape=shape, dtype="f8")
    return path


@pytest.mark.parametrize("make,message", [
    pytest.param(lambda d: d, "is a folder", marks=pytest.mark.slow),
    (lambda d: (d / "t.txt", (d / "t.txt").write_text("x"))[0], "not an HDF5 file"),
    (lambda d: _ior_file(d / "other.h5", (100,)), "524288 elements"),
    pytest.param(lambda d: _ior_file(d / "two.h5", (512, 1024)), "in 1 dims", marks=pytest.mark.slow),
], ids=["folder", "text-file", "other-size", "other-rank"])
def test_a_file_that_cannot_be_the_jobs_is_refused(tmp_path, make, message):
    """A sweep over a file that does not hold the logged dataset at its size is one ``ccp check`` refuses."""
    data = make(tmp_path)
    one_line_error(ccp("from-darshan", IOR, "-o", tmp_path / "s.yaml", "--file", data), "--file", message)
    assert not (tmp_path / "s.yaml").exists()


def test_the_jobs_file_at_its_size_makes_a_sweep_ccp_check_takes(tmp_path):
    data = _ior_file(tmp_path / "mine.h5", (524288,))
    r = ccp("from-darshan", IOR, "-o", tmp_path / "s.yaml", "--file", data)
    assert r.returncode == 0, r.stderr
    r = ccp("check", tmp_path / "s.yaml")
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("args,message", [
    (["-o", ""], "-o"),
    (["-o", "{tmp}"], "directory"),
    (["-o", "{tmp}/no/such/dir/s.yaml"], "does not exist"),
    (["-o", "{tmp}/s.yaml", "--file", ""], "--file"),
    (["-o", "{tmp}/s.yaml", "--dataset", "/nope"], "--dataset"),
], ids=["empty-out", "out-is-folder", "out-folder-missing", "empty-file", "unknown-dataset"])
def test_bad_options_get_one_line(tmp_path, args, message):
    r = ccp("from-darshan", IOR, *[a.format(tmp=tmp_path) for a in args])
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and message in r.stderr
    assert not (tmp_path / "s.yaml").exists()


def test_dataset_option_picks_by_path(tmp_path):
    r = ccp("from-darshan", IOR, "-o", tmp_path / "s.yaml", "--dataset", "/Dataset-0000.0000")
    assert r.returncode == 0, r.stderr


# ---- damaged logs: one line, exit 2, no sweep; never a crash or a sweep with wrong counts ----

def _regions(path: Path):
    from ccp.trace.darshan_log import _regions
    data = path.read_bytes()
    return {r: (o, n) for r, o, n in _regions(path, data, len(data))[1]}


def _damaged(kind: str, tmp_path: Path) -> Path:
    data = bytearray(IOR.read_bytes())
    regions = _regions(IOR)
    out = tmp_path / f"{kind}.darshan"
    if kind == "empty":
        data = bytearray()
    elif kind == "random":
        data = bytearray(random.Random(1).randbytes(4000))
    elif kind.startswith("truncated"):
        data = data[:int(kind.removeprefix("truncated"))]
    elif kind.startswith("flip-"):        # one bit in the middle of a region
        off, n = regions[{"job": "job", "names": "names", "h5d": 4}[kind.removeprefix("flip-")]]
        data[off + n // 2] ^= 0x10
    elif kind == "bad-magic":
        data[8] ^= 0xFF
    elif kind == "huge-region":          # the header claims a region far past the end
        data[40 + 16 * 4 + 8: 40 + 16 * 4 + 16] = (2**62).to_bytes(8, "little")     # H5D's length
    out.write_bytes(bytes(data))
    return out


DAMAGED = [
    ("empty", "not a Darshan log"),
    ("random", "not a Darshan log"),
    ("bad-magic", "not a Darshan log"),
    ("truncated100", "truncated"),
    ("truncated500", "truncated"),       # the library itself aborts (SIGABRT) on this one
    ("truncated1000", "truncated"),      # and segfaults on this one
    ("truncated3000", "truncated"),
    ("truncated3966", "truncated"),      # one byte short: the library returns the H5D records, a sweep
    ("flip-job", "job region"),
    ("flip-names", "names region"),
    ("flip-h5d", "damaged Darshan log"),
    ("huge-region", "truncated"),
]


@pytest.mark.parametrize("kind,message", DAMAGED, ids=[k for k, _ in DAMAGED])
def test_damaged_logs_get_one_line(tmp_path, kind, message):
    log = _damaged(kind, tmp_path)
    before = log.read_bytes()
    r = ccp("from-darshan", log, "-o", tmp_path / "s.yaml")
    one_line_error(r, message)
    assert not (tmp_path / "s.yaml").exists()
    assert log.read_bytes() == before


def test_damage_in_a_module_ccp_does_not_read_is_said_and_the_sweep_is_the_same(tmp_path):
    good = tmp_path / "good.yaml"
    assert ccp("from-darshan", IOR, "-o", good).returncode == 0
    data = bytearray(IOR.read_bytes())
    off, n = _regions(IOR)[1]             # POSIX
    data[off + n // 2] ^= 0x10
    log = tmp_path / "posix-damaged.darshan"
    log.write_bytes(bytes(data))
    out = tmp_path / "s.yaml"
    r = ccp("from-darshan", log, "-o", out)
    assert r.returncode == 0, r.stderr
    assert "POSIX region is damaged" in r.stdout
    body = [ln for ln in out.read_text().splitlines() if not ln.startswith("#") and not ln.startswith("name:")]
    assert body == [ln for ln in good.read_text().splitlines() if not ln.startswith("#") and not ln.startswith("name:")]


@pytest.mark.parametrize("script,message", [
    ("kill -ABRT $$", "crashed reading it (SIGABRT)"),
    ("kill -SEGV $$", "crashed reading it (SIGSEGV)"),
    ("echo 'ccp-darshan: damaged Darshan log: H5D record 2 cannot be read' >&2; exit 3", "H5D record 2 cannot be read"),
    ("echo '{\"names\": [' ; exit 0", "cut short or garbled"),
    ("sleep 30", "did not finish reading it in 1 s"),
], ids=["abort", "segfault", "read-error", "garbled", "hang"])
def test_the_parser_child_dying_is_one_line(tmp_path, monkeypatch, script, message):
    """However the child ends (a signal, an error, half an answer, a hang), the parent says one line."""
    from ccp.trace import darshan_log

    fake = tmp_path / "fake-python"
    fake.write_text(f"#!/bin/sh\n{script}\n")
    fake.chmod(0o755)
    monkeypatch.setattr(darshan_log.sys, "executable", str(fake))
    monkeypatch.setenv("CCP_DARSHAN_TIMEOUT", "1")
    with pytest.raises(CcpError) as info:
        darshan_log.read_log(IOR)
    assert message in str(info.value) and "\n" not in str(info.value)


# ---- breaker7: names with control characters, a file too small for the log, bzip2 logs ----

def _one_record_log(monkeypatch, name: str, **change):
    from ccp.trace import darshan as mod
    from ccp.trace.darshan_log import DarshanLog, H5DRecord

    counters = {k: 0 for k in _h5d_counter_names()}
    counters.update({"H5D_DATASPACE_NDIMS": 1, "H5D_DATASPACE_NPOINTS": 100, "H5D_DATATYPE_SIZE": 4,
                     "H5D_READS": 5, "H5D_ACCESS1_COUNT": 5, "H5D_ACCESS1_LENGTH_D5": 10, "H5D_ACCESS1_ACCESS": 40,
                     **change})
    log = DarshanLog(h5d=(H5DRecord(7, 0, counters),), partial=False, names={7: name})
    monkeypatch.setattr(mod, "read_log", lambda path: log)
    return mod


def test_a_name_or_log_path_with_a_newline_never_becomes_yaml(tmp_path, monkeypatch):
    """breaker7 D1: a newline in the dataset's name or the log's path ended the sweep's header comment, and what
    followed became the sweep's own keys (``cold: false``), or YAML ccp could not parse."""
    import yaml

    mod = _one_record_log(monkeypatch, "/f.h5:/d\ncold: false")
    with pytest.raises(CcpError, match="holds a control character") as info:
        mod.darshan_to_sweep(tmp_path / "x.darshan", tmp_path / "a.yaml")
    assert "\n" not in str(info.value)
    mod = _one_record_log(monkeypatch, "/f.h5:/d")
    mod.darshan_to_sweep(tmp_path / "weird\nname: injected.darshan", tmp_path / "b.yaml")
    assert set(yaml.safe_load((tmp_path / "b.yaml").read_text())) == {"name", "dataset", "matrix", "repeats"}


@pytest.mark.parametrize("change,message", [
    ({"H5D_ACCESS1_LENGTH_D5": 200, "H5D_ACCESS1_ACCESS": 800}, "access 200 exceeds the dataset's shape 100"),
    ({"H5D_CHUNK_SIZE_D5": 128}, "chunk shape 128 exceeds the dataset's fixed shape 100"),
], ids=["block", "chunk"])
def test_a_logged_block_or_chunk_beyond_the_files_dataset_is_one_line(tmp_path, monkeypatch, change, message):
    """breaker7 D2: the sweep was written, and ``ccp check`` refused it."""
    import h5py

    with h5py.File(tmp_path / "f.h5", "w") as f:
        f.create_dataset("d", shape=(100,), dtype="f4")
    mod = _one_record_log(monkeypatch, "/f.h5:/d", **change)
    with pytest.raises(CcpError, match=message):
        mod.darshan_to_sweep(tmp_path / "x.darshan", tmp_path / "s.yaml", str(tmp_path / "f.h5"))
    assert not (tmp_path / "s.yaml").exists()


def test_a_bzip2_log_the_library_cannot_read_is_named_as_such(tmp_path):
    """breaker7 D3: a bzip2-compressed log (darshan-convert --bzip2), intact by its own checksums, was called
    "damaged, or from another Darshan version" by a Darshan library built without bzip2."""
    import bz2
    import struct
    import zlib

    from ccp.trace.darshan_log import _regions

    data = IOR.read_bytes()
    header_end = min(o for r, o, _ in _regions(IOR, data, len(data))[1])
    head, body, at = bytearray(data[:header_end]), b"", header_end
    head[16] = 1                                          # the header's compression type: bzip2
    for region, off, length in _regions(IOR, data, len(data))[1]:
        blob, out = data[off:off + length], b""
        while blob:                                       # a region is one or more zlib streams
            d = zlib.decompressobj()
            out += bz2.compress(d.decompress(blob))
            blob = d.unused_data
        if region != "job":
            struct.pack_into("<QQ", head, 24 + 16 * (0 if region == "names" else region + 1), at, len(out))
        body, at = body + out, at + len(out)
    log = tmp_path / "bz2.darshan"
    log.write_bytes(bytes(head) + body)
    r = ccp("from-darshan", log, "-o", tmp_path / "s.yaml")
    if r.returncode == 0:
        pytest.skip("this Darshan library reads bzip2")
    one_line_error(r, "a bzip2-compressed Darshan log")
