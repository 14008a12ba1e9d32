"""``--memory`` is the copy's peak resident memory (audit finding F6): a budget the copy cannot meet is refused
in one line naming the budget and the floor it needs (exit 2, nothing written, ``--plan`` the same), a copy
within its budget stays under it (the child's own peak, measured by the kernel), and the summary states the
buffer the copy really allocated and its peak memory, not the default buffer."""

from __future__ import annotations

import subprocess
import sys

import h5py
import numpy as np
import pytest

from ccp.repack.rechunk import SLACK_SHARE, copy_floor, index_bytes, pass_floor, readback_bytes


def _make(path, shape, chunks):
    data = np.random.default_rng(4).standard_normal(shape).astype("f4").round(2)
    with h5py.File(path, "w") as f:
        f.create_dataset("data", data=data, chunks=chunks, compression="gzip", compression_opts=1)


# a small process that starts ccp and reports its exit status and peak RSS (wait4): a child forked from
# pytest itself would count pytest's pages in its ru_maxrss (the kernel keeps the peak across exec)
_LAUNCH = """
import resource, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
out, err = p.communicate()
sys.stdout.write(out.decode())
sys.stderr.write(err.decode())
print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
"""


def _run(*args):
    """``ccp repack ARGS`` in its own process: (exit status, its stdout, its stderr, its peak RSS in bytes)."""
    r = subprocess.run([sys.executable, "-c", _LAUNCH, sys.executable, "-m", "ccp.repack", *args],
                       capture_output=True, text=True, timeout=300, check=False)
    *lines, last = r.stdout.splitlines()
    code, rss = (int(x) for x in last.split())
    return code, "\n".join(lines), r.stderr, rss


# target chunks of 16 MB: the read-back alone needs (2 threads x 2 + 4 sampled x 2) of them
BIG = ((4000, 1000), (4000, 1), "data:CHUNK=4000x1000")


@pytest.mark.parametrize("plan", [False, True], ids=["copy", "plan"])
def test_a_budget_below_the_floor_is_refused_in_one_line(tmp_path, plan):
    shape, src, layout = BIG
    _make(tmp_path / "in.h5", shape, src)
    args = ["--memory", "128MiB", "--threads", "2", "-l", layout, "-f", "data:GZIP=1"]
    args += ["--plan", str(tmp_path / "in.h5")] if plan else [str(tmp_path / "in.h5"), str(tmp_path / "out.h5")]
    code, out, err, _ = _run(*args)
    assert code == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err
    assert "--memory" in lines[0] and "128 MiB cannot hold the copy of /data" in lines[0]
    assert "the copy needs at least" in lines[0]
    need = int(lines[0].rsplit("give --memory ", 1)[1].split("MiB")[0])
    assert need * 2**20 > copy_floor(shape, src, (4000, 1000), 4, 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.h5"]


def test_the_floor_is_a_pass_its_read_back_its_chunk_indexes_and_the_allocators_slack():
    shape, src, dst = (4000, 1000), (4000, 1), (4000, 1000)
    floor = pass_floor(shape, src, dst, 4, 2) + readback_bytes(dst, 4, 2) + index_bytes(shape, src, dst)
    assert copy_floor(shape, src, dst, 4, 2) == floor + floor // (SLACK_SHARE - 1)
    assert readback_bytes(dst, 4, 2) >= 12 * 4000 * 1000 * 4


def test_a_copy_within_its_budget_stays_under_it_and_says_what_it_used(tmp_path):
    _make(tmp_path / "in.h5", (60000, 40), (2000, 1))
    code, out, err, rss = _run("--memory", "160MiB", "-l", "data:CHUNK=20000x10", "-f", "data:GZIP=1",
                               str(tmp_path / "in.h5"), str(tmp_path / "out.h5"))
    assert code == 0, err
    assert rss <= 160 * 2**20
    summary = out.strip().splitlines()[-1]
    assert "no hyperslab buffer (chunk by chunk)" in summary and "of --memory 160 MiB" in summary
    assert "32 MiB buffer" not in out + err
    with h5py.File(tmp_path / "in.h5", "r") as a, h5py.File(tmp_path / "out.h5", "r") as b:
        np.testing.assert_array_equal(a["data"][...], b["data"][...])


def test_the_library_path_says_its_buffer(tmp_path):
    with h5py.File(tmp_path / "in.h5", "w") as f:
        f.create_dataset("data", data=np.arange(100_000, dtype="f4").reshape(1000, 100))   # contiguous source
    code, out, err, _ = _run("--buffer", "1MiB", "-l", "data:CHUNK=100x100", str(tmp_path / "in.h5"),
                             str(tmp_path / "out.h5"))
    assert code == 0, err
    summary = out.strip().splitlines()[-1]
    assert "hyperslab buffer" in summary and "chunk by chunk" not in summary


def test_the_library_path_names_its_buffer_when_refused(tmp_path):
    # a 36 MB target chunk is larger than the 32 MiB buffer: HDF5 copies it (the library path), in two buffers
    with h5py.File(tmp_path / "in.h5", "w") as f:
        f.create_dataset("data", shape=(3000, 3000), dtype="f4", chunks=(300, 300), fillvalue=1.5)
    code, out, err, _ = _run("--memory", "96MiB", "-l", "data:CHUNK=3000x3000", str(tmp_path / "in.h5"),
                             str(tmp_path / "out.h5"))
    assert code == 2 and "Traceback" not in err
    assert "--memory" in err and "library path's hyperslab buffer of 32 MiB" in err and "give --memory" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.h5"]


def test_a_copy_whose_cache_fills_its_room_stays_under_the_budget(tmp_path):
    """breaker7's col2d scaled down (column chunks, shuffle+gzip:1, to 7-row chunks: every band needs a chunk of
    each column, the cache fills the room the budget leaves): the child's own peak stays under --memory (it went
    over by the allocator's holes and the plan's uncounted bytes: 171 MiB at --memory 160MiB), values equal."""
    shape, memory = (6003, 1001), "80MiB"      # the child holds 50-57 MiB before copying
    idx = np.arange(np.prod(shape), dtype=np.int64).reshape(shape)
    data = (((idx * 2654435761) % 1000003) / 997.0).astype("<f4")
    with h5py.File(tmp_path / "in.h5", "w") as f:
        f.create_dataset("d", data=data, chunks=(1500, 1), shuffle=True, compression="gzip", compression_opts=1)
    code, out, err, rss = _run("--memory", memory, "-l", "d:CHUNK=7x1001", str(tmp_path / "in.h5"),
                               str(tmp_path / "out.h5"))
    assert code == 0, err
    assert rss <= int(memory[:-3]) * 2**20, f"peak {rss / 2**20:.1f} MiB over --memory {memory}"
    with h5py.File(tmp_path / "out.h5", "r") as f:
        assert f["d"].chunks == (7, 1001)
        np.testing.assert_array_equal(f["d"][...], data)
