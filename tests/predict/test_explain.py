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
    import ccp.trace.diagnose

    assert ccp.inspect.traps is explain.chunk_traps
    assert ccp.advise.chunk_traps is explain.chunk_traps
    assert ccp.run.plan.traps is explain.traps and ccp.run.sweep.traps is explain.traps
    assert ccp.report.html.explain_cause is explain.cause
    assert ccp.report.html.version_trap is explain.version_trap
    assert not hasattr(ccp.report.html, "_cause")
    assert ccp.trace.diagnose.chunk_larger_than_cache is explain.chunk_larger_than_cache


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


@pytest.mark.parametrize("sizes, expect", [
    ([512 * 1024, 4 * MIB], "larger than HDF5 1.x's default chunk cache (1 MiB) but fit HDF5 2.0's (8 MiB)"),
    ([MIB, 8 * MIB + 1, float("nan")], ""),        # at 1.x's default fits both; over 2.0's is no version trap
    ([8 * MIB], "Version trap"),
    ([], ""),
], ids=["one-in-the-trap", "none-in-the-trap", "at-2.0-default", "no-cells"])
def test_version_trap_over_a_runs_chunks(sizes, expect):
    out = explain.version_trap(sizes)
    assert (expect in out) if expect else out == ""


def test_the_version_trap_is_the_same_for_inspect_and_the_report():
    for size in (MIB, MIB + 1, 4 * MIB, 8 * MIB, 8 * MIB + 1):
        inspect_says = any("depending on the library version" in t for t in explain.chunk_traps(size, parse_filters("none")))
        assert inspect_says == bool(explain.version_trap([size])), size
