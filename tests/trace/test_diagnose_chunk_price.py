"""Tiny chunks and tiny calls priced honestly (issue 23, tester breaker3 F-1x1 and F-block-pred): a chunk load has a
fixed part that does not shrink with the chunk, and the slow tail of calls that loaded nothing is a cost of calls,
not of the few chunk loads."""

import h5py
import numpy as np
import pytest

from ccp.trace.chunk_price import FIXED_LOAD_S, attribute_call_tail, load_ratio, overhead_share
from ccp.trace.diagnose import diagnose
from ccp.trace.harm import HARM, price_cure
from ccp.trace.rows import table_rows
from ccp.workload.tracefile import load_trace
from tests.trace.traced_program import trace_program

TINY_READS = """
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    c, a = f["c"], f["a"]
    s = 0
    for i in range(20000):
        s += c[i % 1000]
    for i in range(6000):
        s += a[i % 200, i % 300]
print(s)
"""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tiny")
    with h5py.File(tmp / "data.h5", "w") as f:
        f.create_dataset("c", data=np.arange(1000, dtype="i8"), chunks=(100,))
        f.create_dataset("a", data=np.arange(60000, dtype="f4").reshape(200, 300), chunks=(20, 30), compression="gzip")
    return load_trace(trace_program(tmp, TINY_READS))


@pytest.mark.parametrize("old, new, filtered, least", [
    (2400, 4, True, 0.3),           # a 20x30 f4 gzip chunk to 1x1: the load's fixed part stays
    (2400, 4, False, 0.9),
    (1 << 20, 1 << 10, False, 0.05),  # big to small chunks still get cheaper loads
], ids=["gzip-1x1", "raw-1x1", "1MiB-to-1KiB"])
def test_a_chunk_load_keeps_its_fixed_part(old, new, filtered, least):
    assert least < load_ratio(old, new, filtered) < 1
    assert overhead_share(4, filtered) > 0.9 and load_ratio(old, new, filtered) * (old + 1) > FIXED_LOAD_S


def test_the_tail_of_idle_calls_is_a_cost_of_calls():
    # 1000 calls, 10 of which loaded one chunk (100 us each above an idle call); idle calls 3 us, a tenth of them 30 us
    loads = np.zeros(1000)
    loads[::100] = 1
    hdf5 = np.full(1000, 3e-6)
    hdf5[1::10] = 30e-6
    hdf5[::100] += 100e-6
    costs = attribute_call_tail({"python_per_call_s": 1e-6, "hdf5_per_call_s": 3e-6, "hdf5_per_load_s": 1.0},
                                hdf5, loads)
    assert costs["hdf5_per_load_s"] == pytest.approx(100e-6, rel=0.05)      # the median put ~2.8 ms on each load
    assert costs["hdf5_per_call_s"] * 1000 + costs["hdf5_per_load_s"] * 10 == pytest.approx(hdf5.sum())


def test_reading_the_block_once_is_predicted_far_faster(tiny):
    d = next(x for x in diagnose(tiny)["datasets"] if x["dataset"] == "/c")
    first = d["cures"][0]
    assert first["cure"].startswith("read the block once")
    # 1.3x before (10 loads carried the tail of 100,000 calls; measured 1094x); the prediction follows the traced
    # per-call times, 8-31x in runs at load 1-12
    assert first["speedup"] > 4


def test_no_one_element_chunks_for_one_element_reads(tiny):
    d = next(x for x in diagnose(tiny)["datasets"] if x["dataset"] == "/a")
    assert not [c for c in d["cures"] if c.get("repack", {}).get("chunks") == [1, 1]], d["cures"]


def test_one_element_chunks_slow_a_column_past_the_harm_line(tiny):
    d = next(x for x in diagnose(tiny)["datasets"] if x["dataset"] == "/a")
    rows = table_rows(tiny, d["file"], "/a")
    seq = rows.sequence("read")
    from ccp.chunkcache import ChunkCache

    priced = {p["pattern"]: p for p in price_cure(seq, (1, 1), d["costs"], ChunkCache(8 << 20, 8191, 0.75))}
    column = next(p for name, p in priced.items() if name.startswith("a series along axis 0"))
    assert column["slowdown"] > HARM        # 1.0x before (the 4 B loads looked free); measured 28x


def test_a_load_never_costs_less_than_the_machine_floor():
    # the idle calls' tail as slow as the loaded calls (a loaded machine): the loads would look free
    loads = np.zeros(100)
    loads[::10] = 1
    hdf5 = np.full(100, 10e-6)
    costs = attribute_call_tail({"python_per_call_s": 0.0, "hdf5_per_call_s": 10e-6, "hdf5_per_load_s": 0.0},
                                hdf5, loads, floor_s=FIXED_LOAD_S)
    assert costs["hdf5_per_load_s"] == FIXED_LOAD_S
    assert costs["hdf5_per_call_s"] * 100 + FIXED_LOAD_S * 10 == pytest.approx(hdf5.sum())
