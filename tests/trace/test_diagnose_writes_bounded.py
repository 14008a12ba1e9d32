"""``ccp diagnose`` of writes too large to list (issue 23, as breaker6 F4 for reads): a write of 140,001 scattered
points (over the recorder's 131,072 values) is kept as its bounding box, which spans every chunk; diagnose says so
before its counts, prints them as "at most", fits no cost and sizes no cache on them and gives no speed-up."""

from __future__ import annotations

import textwrap

from traced_program import trace_program

from ccp.trace.diagnose import diagnose, format_diagnosis
from ccp.workload.tracefile import load_trace

PROGRAM = textwrap.dedent("""
    import sys, h5py, numpy as np
    from h5py import h5s
    with h5py.File(sys.argv[1], "w", rdcc_nbytes=1024) as f:
        w = f.create_dataset("w", shape=(400000,), dtype="<f8", chunks=(40000,), compression="gzip")
        for i in range(3):
            rng = np.random.default_rng(i)
            pts = np.sort(rng.choice(280000, 140000, replace=False)).tolist() + [399999]
            space = w.id.get_space()
            space.select_elements(np.asarray(pts, "u8").reshape(-1, 1))
            w.id.write(h5s.create_simple((len(pts),)), space, np.ones(len(pts)))
    print("ok")
""")


def test_a_write_too_large_to_list_is_said_an_upper_bound(tmp_path):
    diag = diagnose(load_trace(trace_program(tmp_path, PROGRAM)))
    d = next(x for x in diag["datasets"] if x["dataset"] == "/w")
    assert d["write_approximate_calls"] == 3
    facts = d["write_findings"]
    assert "known only by their bounding box" in facts[1]         # before any count it bounds
    assert any("at most" in f and "chunk write(s)" in f for f in facts[2:])
    assert all(c["speedup"] is None and c["bounded"] for c in d["write_cures"])
    assert not any("chunk cache" in c["cure"] for c in d["write_cures"])
    text = format_diagnosis(diag)
    line = next(x for x in text.splitlines() if x.startswith("  writes: 3 call(s)"))
    assert "model: at most" in line and "predicted at most" in line


def test_writes_the_trace_lists_say_no_bound(tmp_path):
    small = PROGRAM.replace("140000", "1000")
    diag = diagnose(load_trace(trace_program(tmp_path, small)))
    d = next(x for x in diag["datasets"] if x["dataset"] == "/w")
    assert d["write_approximate_calls"] == 0
    assert "at most" not in format_diagnosis(diag) and not any(c["bounded"] for c in d["write_cures"])
