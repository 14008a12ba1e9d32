"""HDF5's log driver output -> operations (ccp.measurement.iolog.parse_log): line by line, and logs cut short.

The line format is the driver's (H5FD__log_read/write with LOG_LOC_IO | LOG_TIME_IO, summary from
H5FD__log_close with LOG_NUM_IO); the first test parses a log HDF5 itself wrote.
"""

from __future__ import annotations

import gc

import h5py
import numpy as np
import pytest
from h5py import h5f

from ccp.measurement.iolog import IoLogError, log_fapl, parse_log, totals

HEAD = b"Open took: (0.000009 s)\nStat took: (0.000002 s)\n"


def summary(nread: int, nwrite: int) -> bytes:
    return (b"Close took: (0.000006 s)\n"
            b"Total number of read operations: %d\nTotal number of write operations: %d\n"
            b"Total number of seek operations: 0\nTotal number of truncate operations: 0\n"
            b"Total time in read operations: 0.000036 s\nTotal time in write operations: 0.000000 s\n"
            b"Total time in seek operations: 0.000000 s\nTotal time in truncate operations: 0.000000 s\n") % (nread, nwrite)


def line(start: int, size: int, mem: str, kind: str = "Read", t: str = "11568.756628") -> bytes:
    return b"%10d-%10d (%10d bytes) (H5FD_MEM_%s) %s (0.000002s @ %s)\n" % (
        start, start + size - 1, size, mem.encode(), kind.encode(), t.encode())


def test_a_log_hdf5_wrote_parses_to_the_drivers_own_totals(tmp_path):
    path, log = tmp_path / "d.h5", tmp_path / "log.txt"
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=np.arange(1000.0).reshape(10, 100), chunks=(2, 100))
    fid = h5f.open(str(path).encode(), h5f.ACC_RDONLY, log_fapl(log))
    with h5py.File(fid) as f:
        f["d"][:]
    del fid
    gc.collect()
    ops = parse_log(log)                      # complete=True: its summary agrees with its lines
    t = totals(ops)
    assert (t["raw_reads"], t["raw_read_bytes"]) == (5, 5 * 2 * 100 * 8)     # five chunks, read once each
    assert t["meta_reads"] > 0 and t["raw_writes"] == t["meta_writes"] == 0
    assert np.all(np.diff(ops.t_us) >= 0)


@pytest.mark.parametrize("text, offset, size, mem, write, t_us", [
    (line(4016, 1600, "DRAW"), 4016, 1600, "draw", False, 11568756628),
    (line(0, 8, "SUPER"), 0, 8, "super", False, 11568756628),
    (line(136, 544, "BTREE", "Written", "0.000001"), 136, 544, "btree", True, 1),
    (line(96, 512, "OHDR", t="7.0000005"), 96, 512, "ohdr", False, 7000000),       # rounded to the microsecond
    (line(680, 512, "LHEAP"), 680, 512, "lheap", False, 11568756628),
    (line(2048, 4096, "GHEAP", "Written"), 2048, 4096, "gheap", True, 11568756628),
    (line(1, 1, "DEFAULT"), 1, 1, "default", False, 11568756628),
    (line(1, 1, "NOLIST"), 1, 1, "nolist", False, 11568756628),
    (line(1, 1, "FUTURE"), 1, 1, "other", False, 11568756628),        # a type this ccp does not know: metadata
    (line(2**40, 2**33, "DRAW", "Written"), 2**40, 2**33, "draw", True, 11568756628),   # past 4 GiB
], ids=["raw-read", "superblock", "btree-write", "time-rounding", "local-heap", "global-heap-write", "default",
        "nolist", "unknown-type", "large-offsets"])
def test_one_line(tmp_path, text, offset, size, mem, write, t_us):
    log = tmp_path / "log.txt"
    log.write_bytes(HEAD + text + summary(int(not write), int(write)))
    ops = parse_log(log)
    assert len(ops) == 1
    assert (int(ops.offset[0]), int(ops.size[0]), ops.mem_type[0], bool(ops.is_write[0])) == (offset, size, mem, write)
    assert bool(ops.is_raw[0]) == (mem == "draw")
    assert int(ops.t_us[0]) == t_us


@pytest.mark.parametrize("text", [
    b"Open took: (0.000009 s)\n",
    b"Dataset creation took: (0.1 s)\n",
    b"   0-  7 (  8 bytes) (H5FD_MEM_SUPER) Read\n",                  # no timing: LOG_TIME_IO was off
    b"Total time in read operations: 0.000036 s\n",
], ids=["open", "other-timing", "no-time", "summary-time"])
def test_lines_that_are_not_operations_are_not_counted(tmp_path, text):
    log = tmp_path / "log.txt"
    log.write_bytes(HEAD + text + summary(0, 0))
    assert len(parse_log(log)) == 0


BODY = line(0, 8, "SUPER") + line(96, 512, "OHDR") + line(4016, 1600, "DRAW") + line(5616, 1600, "DRAW", "Written")
COMPLETE = HEAD + BODY + summary(3, 1)


@pytest.mark.parametrize("text, why", [
    (HEAD + BODY, "cut short"),                                            # the disk filled before the close
    (COMPLETE[:-20], "cut short"),                                         # cut inside the summary's last line
    (HEAD + BODY[:-30], "cut short"),                                      # cut inside an operation line
    (HEAD + BODY + summary(3, 1)[:60], "cut short"),                       # only part of the summary
    (HEAD + BODY.replace(line(96, 512, "OHDR"), b"") + summary(3, 1), "holds 2 reads and 1 writes but the driver counted 3 and 1"),
    (HEAD + BODY + summary(3, 2), "holds 3 reads and 1 writes but the driver counted 3 and 2"),
    (b"", "cut short"),
], ids=["no-summary", "cut-in-summary", "cut-in-line", "half-summary", "line-dropped", "write-dropped", "empty"])
def test_an_incomplete_log_fails_rather_than_counting_less(tmp_path, text, why):
    log = tmp_path / "log.txt"
    log.write_bytes(text)
    with pytest.raises(IoLogError, match=why):
        parse_log(log)


def test_a_missing_log_fails_naming_it(tmp_path):
    with pytest.raises(IoLogError, match="log.txt is missing"):
        parse_log(tmp_path / "log.txt")


def test_without_the_completeness_check_a_cut_log_gives_its_whole_lines(tmp_path):
    log = tmp_path / "log.txt"
    log.write_bytes(HEAD + BODY + line(7216, 1600, "DRAW")[:25])          # the last line torn mid-way
    ops = parse_log(log, complete=False)
    assert list(ops.offset) == [0, 96, 4016, 5616]


@pytest.mark.parametrize("block_bytes", [1, 7, 64, 99, 1 << 20])
def test_any_block_size_gives_the_same_operations(tmp_path, block_bytes):
    """parse_log reads in blocks of whole lines: a line split across two blocks is parsed once, whole."""
    log = tmp_path / "log.txt"
    body = b"".join(line(i * 100, 100, ["DRAW", "BTREE", "OHDR"][i % 3], ["Read", "Written"][i % 2], f"{i}.000001")
                    for i in range(50))
    log.write_bytes(HEAD + body + summary(25, 25))
    ref, ops = parse_log(log), parse_log(log, block_bytes=block_bytes)
    for name in ("offset", "size", "is_raw", "is_write", "mem_code", "t_us"):
        assert np.array_equal(getattr(ops, name), getattr(ref, name)), name
    assert len(ops) == 50 and set(ops.mem_type) == {"draw", "btree", "ohdr"}

