"""One "why is this slow": inspect, plan, run's traps column, advise and the report render ccp.predict.explain."""

import pytest

from ccp.hdf5.filters import parse_filters
from ccp.predict import explain


def test_every_command_renders_the_one_explain():
    import ccp.advise
    import ccp.inspect
    import ccp.report.html
    import ccp.run.plan
    import ccp.run.sweep

    assert ccp.inspect.traps is explain.chunk_traps
    assert ccp.advise.chunk_traps is explain.chunk_traps
    assert ccp.run.plan.traps is explain.traps and ccp.run.sweep.traps is explain.traps
    assert ccp.report.html.explain_cause is explain.cause
    assert not hasattr(ccp.report.html, "_cause")


MIB = 1024 * 1024


@pytest.mark.parametrize("chunk_bytes, spec, cache, expect", [
    (4 * MIB, "gzip:1", 1 * MIB, "cannot keep it between requests: every request decompresses its chunk again"),
    (4 * MIB, "none", 1 * MIB, "so HDF5 cannot keep it between requests"),
    (16 * MIB, "gzip:1", None, "larger than HDF5's default chunk cache in every version"),
    (4 * MIB, "gzip:1", None, "though it fits HDF5 2.0's (8 MiB)"),
    (512 * 1024, "gzip:1", None, None),
    (0, "gzip:1", 1, None),
], ids=["compressed-over-cache", "raw-over-cache", "over-every-default", "over-1x-default", "fits", "contiguous"])
def test_chunk_traps(chunk_bytes, spec, cache, expect):
    out = explain.chunk_traps(chunk_bytes, parse_filters(spec), cache)
    assert (expect in out[0]) if expect else out == []


def test_cause_prefers_the_trap_check_and_names_a_contiguous_layout():
    assert explain.cause({"traps": "hash-slot collision: x"}, float("nan")) == "ccp's trap check says: hash-slot collision: x"
    assert explain.cause({"traps": "", "chunks": "contiguous"}, float("nan")).startswith("a contiguous layout")
