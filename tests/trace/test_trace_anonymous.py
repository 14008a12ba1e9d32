"""A dataset written by ``f["x0"] = array`` is named by its link (breaker6 F6): h5py creates it unnamed, writes it,
then links it; the recorder named it by a number ("<anonymous 3602...>"), so its write and a later read of f["x0"]
were two datasets and no finding said which one. Issue 23."""

import textwrap

import pytest
from traced_program import trace_program

from ccp.trace.diagnose import diagnose, format_diagnosis
from ccp.workload.tracefile import load_trace

IDIOM = textwrap.dedent("""
    import sys, h5py, numpy as np
    with h5py.File(sys.argv[1], "w") as f:
        for k in range(3):
            f[f"x{k}"] = np.arange(2000.0) + k          # the idiom: created unnamed, written, linked
        f.create_dataset("y", data=np.zeros(2000))
        g = f.create_group("g")
        g["deep"] = np.ones(50)
        try:
            f["x0"] = np.ones(10)                       # the name is taken: written, never linked
        except (ValueError, RuntimeError, OSError):
            pass
        u = f.create_dataset(None, data=np.arange(7.0))  # made unnamed, read, then linked by g[name] = d
        u[2]
        f["late"] = u
        u[3]
    with h5py.File(sys.argv[1], "r") as f:
        for i in range(5):
            f["x0"][i]
    print("ok")
""")


@pytest.fixture(scope="module")
def idiom(tmp_path_factory):
    return trace_program(tmp_path_factory.mktemp("anon"), IDIOM)


def _by_name(diag):
    return {d["dataset"]: d for d in diag["datasets"]}


def test_the_write_and_a_later_read_are_one_dataset_named_by_its_link(idiom):
    ds = _by_name(diagnose(load_trace(idiom)))
    assert (ds["/x0"]["writes"], ds["/x0"]["reads"]) == (1, 5)
    assert ds["/x1"]["writes"] == ds["/x2"]["writes"] == ds["/y"]["writes"] == ds["/g/deep"]["writes"] == 1
    assert ds["/x1"]["shape"] == [2000]


def test_a_dataset_never_linked_is_said_in_words_not_by_a_number(idiom):
    diag = diagnose(load_trace(idiom))
    never = [n for n in _by_name(diag) if "never linked" in n]
    assert len(never) == 1 and never[0].startswith("<a dataset created by f[...] = ... and never linked: #")
    text = format_diagnosis(diag)
    assert "anonymous" not in text and "never linked" in text


def test_a_dataset_made_unnamed_and_linked_later_takes_the_name_from_then_on(idiom):
    ds = _by_name(diagnose(load_trace(idiom)))
    assert ds["/late"]["reads"] >= 1 and ds["/late"]["shape"] == [7]
    assert sum(d["reads"] + d["writes"] for d in ds.values()) == 3 + 1 + 1 + 1 + 1 + 2 + 5
