"""Diagnoses of traced programs that write: counts, the append pattern, read-modify-write, flushes, cures."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from traced_program import trace_program

from ccp.trace.diagnose import diagnose, format_diagnosis
from ccp.workload.tracefile import load_trace

ROOT = Path(__file__).resolve().parents[2]

WRITER = textwrap.dedent("""
    import sys, h5py, numpy as np
    path = sys.argv[1]
    with h5py.File(path, "w") as f:
        d = f.create_dataset("series", shape=(0, 64), maxshape=(None, 64), chunks=(16, 64), dtype="f4",
                             compression="gzip")
        for i in range(100):                     # one row per call: 7 chunks, each filled by 16 calls
            d.resize((i + 1, 64))
            d[i] = np.arange(64, dtype="f4") * i
        f.create_dataset("grid", data=np.zeros((64, 64)), chunks=(32, 32), compression="gzip")
    with h5py.File(path, "r+", rdcc_nbytes=0) as f:  # no cache: each column write reads its chunks back
        e = f["grid"]
        for j in range(64):
            e[:, j] = j
        f["series"][5]                           # and one read
    print("done")
""")


@pytest.fixture(scope="module")
def writer(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("writer")
    return trace_program(tmp, WRITER)


def _by_name(diag):
    return {d["dataset"]: d for d in diag["datasets"]}


def test_writes_are_counted_and_diagnosed_without_error(writer):
    diag = diagnose(load_trace(writer))
    assert (diag["reads"], diag["writes"]) == (1, 165)
    ds = _by_name(diag)
    assert (ds["/series"]["reads"], ds["/series"]["writes"]) == (1, 100)
    assert (ds["/grid"]["reads"], ds["/grid"]["writes"]) == (0, 65)
    assert ds["/series"]["shape"] == [100, 64]          # grown by the appends, not the 0x64 it was created with
    text = format_diagnosis(diag)
    assert "writes: 100 call(s)" in text and "writes: 65 call(s)" in text


def test_json_output_counts_the_writes(writer):
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "diagnose", "--json", str(writer)],
                       capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=600)
    assert r.returncode == 0, r.stderr
    diag = json.loads(r.stdout)
    assert diag["writes"] == 165
    assert sum(d["writes"] for d in diag["datasets"]) == 165


def test_append_pattern_and_close_flushes(writer):
    s = _by_name(diagnose(load_trace(writer)))["/series"]
    facts = "\n".join(s["write_findings"])
    assert "appends along axis 0" in facts and "from 0x64 to 100x64" in facts and "~16 of them" in facts
    # 100 rows in 16-row chunks: 7 chunks, all still in the 8 MiB cache at the close, through deflate
    assert (s["write_chunk_loads"], s["write_chunk_flushes"], s["close_chunk_flushes"]) == (0, 0, 7)
    assert "filter cost: 7 chunk write(s) went through deflate" in facts
    assert "flush and close: 7 dirty chunk(s)" in facts
    names = [c["cure"] for c in s["write_cures"]]
    assert "write whole 16x64 chunks" in names


def test_partial_chunk_writes_without_a_cache_read_back_and_a_cache_cures_it(writer):
    g = _by_name(diagnose(load_trace(writer)))["/grid"]
    # no cache, filtered: each of the 64 column writes touches 2 chunks, reads both back and writes both
    assert (g["write_chunk_loads"], g["write_chunk_flushes"]) == (128, 128)
    assert "read-modify-write" in "\n".join(g["write_findings"])
    cures = {c["cure"]: c for c in g["write_cures"]}
    cache = next(c for name, c in cures.items() if name.startswith("a chunk cache of"))
    assert cache["chunk_loads"] == 4 and "rdcc_nbytes=" in cache["code"]   # each of the 4 stored chunks read once


def test_append_writer_example_is_diagnosed(tmp_path):
    out = tmp_path / "trace"
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", str(out), "--", sys.executable,
                        str(ROOT / "examples" / "append_writer.py"), "--rows", "128", "--file", str(tmp_path / "log.h5")],
                       capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=600)
    assert r.returncode == 0, r.stderr
    own = int(r.stdout.strip().splitlines()[-1].split(":")[1])
    diag = diagnose(load_trace(out))
    assert diag["writes"] == own == 128
    (d,) = diag["datasets"]
    # a 256 KiB chunk never fits the 128 KiB cache: every row but the first of each chunk reads its chunk back
    assert d["write_chunk_loads"] == 128 - 2 and d["write_chunk_flushes"] == 128
    names = [c["cure"] for c in d["write_cures"]]
    assert names[0] == "write whole 64x1024 chunks" and any(n.startswith("a chunk cache of 256 KiB") for n in names)


ODD = textwrap.dedent("""
    import sys, h5py, numpy as np
    path = sys.argv[1]
    with h5py.File(path, "w") as f:
        f.create_dataset("scalar", data=3.5)
        f.create_dataset("empty", shape=(0, 4), maxshape=(None, 4), chunks=(8, 4), dtype="i4")
        f.create_dataset("strs", data=np.array(["a", "bb", "ccc"], dtype=h5py.string_dtype()), chunks=(2,))
        f.create_dataset("comp", data=np.zeros(10, dtype=[("a", "i4"), ("b", "f8")]), chunks=(5,))
        f.create_dataset("contig", data=np.arange(100.0))
    with h5py.File(path, "r") as f:
        for _ in range(3):
            f["scalar"][()]
            f["empty"][:]
            f["strs"][1]
            f["comp"][2:7]
            f["contig"][[1, 3, 5]]
""")


def test_scalar_empty_vlen_compound_and_contiguous_datasets_are_diagnosed(tmp_path):
    prog = tmp_path / "odd.py"
    prog.write_text(ODD)
    out = tmp_path / "trace"
    r = subprocess.run([sys.executable, "-m", "ccp.cli", "trace", "-o", str(out), "--", sys.executable, str(prog),
                        str(tmp_path / "odd.h5")], capture_output=True, text=True,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=600)
    assert r.returncode == 0, r.stderr
    ds = _by_name(diagnose(load_trace(out)))
    assert {"/scalar", "/empty", "/strs", "/comp", "/contig"} <= set(ds)
    assert "scalar dataset: 3 read(s)" in ds["/scalar"]["findings"][0]
    assert "no data moved" in "\n".join(ds["/empty"]["findings"])
    assert ds["/comp"]["chunk_loads"] == 6          # 2 chunks per read, the cache lost at each reopen


ROWS = textwrap.dedent("""
    import sys, h5py, numpy as np
    with h5py.File(sys.argv[1], "w") as f:
        d = f.create_dataset("tas", shape=(0, 40, 50), maxshape=(None, 40, 50), chunks=(8, 40, 50), dtype="f4")
        for t in range(16):                      # one 1x1x50 row per call: 320 of them fill an 8x40x50 chunk
            d.resize((t + 1, 40, 50))
            for y in range(40):
                d[t, y, :] = np.full(50, t, "f4")
""")


def test_the_writes_that_fill_a_chunk_count_every_axis(tmp_path):
    s = _by_name(diagnose(load_trace(trace_program(tmp_path, ROWS))))["/tas"]
    facts = "\n".join(s["write_findings"])
    assert "640 write(s) of 1x1x50" in facts and "takes ~320 of them to fill" in facts, facts
    whole = next(c for c in s["write_cures"] if c["cure"] == "write whole 8x40x50 chunks")
    assert "the 320 writes of 1x1x50 that fill one 8x40x50 block" in whole["code"]
