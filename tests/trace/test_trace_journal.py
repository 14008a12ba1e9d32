"""The recorder's journal (ccp.trace.journal) read back (ccp.trace.journal_read): every kind of key the fast path
gives comes back as it was given, rows or records; a new generation hides what the part file holds; a journal
that stopped (a full disk) is never read. The journal kept by a killed program: tests/trace/test_trace_durable.py."""


import numpy as np
import pytest

from ccp.trace.fastpath import FastColumns, block_calls
from ccp.trace.journal import KIND_INDEX, KIND_SLICE, KIND_TUPLE, ROW_SEGMENT, ROW_SIZE, Journal
from ccp.trace.journal_read import JournalTail


def _calls(batch: list) -> list:
    return [call for r in batch if r.get("kind") == "fast" for call in block_calls(r)]


@pytest.mark.parametrize("kind,key,kept", [
    (KIND_INDEX, 5, (5,)),
    (KIND_INDEX, np.int64(-3), (-3,)),
    (KIND_SLICE, slice(1, 4), (slice(1, 4),)),
    (KIND_SLICE, slice(None, None, 2), (slice(None, None, 2),)),
    (KIND_SLICE, slice(0, None), (slice(0, None),)),
    (KIND_SLICE, slice(2**64, None), (slice(2**64, None),)),    # past int64: a record
    (KIND_TUPLE, (2, 7), (2, 7)),
    (KIND_TUPLE, (np.int32(1), 0, 3), (1, 0, 3)),
    (KIND_TUPLE, (1, 2, 3, 4), (1, 2, 3, 4)),                   # more than three parts: a record
    (KIND_TUPLE, (2, slice(1, 4)), (2, slice(1, 4))),
    (KIND_TUPLE, (Ellipsis, 3), (Ellipsis, 3)),
], ids=["int", "np.int64", "slice", "stepped", "open-stop", "slice-past-int64", "pair",
        "triple", "four-parts", "int+slice", "ellipsis"])
def test_every_key_comes_back_as_given(tmp_path, kind, key, kept):
    journal = Journal()
    journal.switch(str(tmp_path / "1-1.part"))
    journal.record({"kind": "handle", "token": 1, "file": "f.h5", "dataset": "/x", "itemsize": 8, "shape": [10]})
    journal.row(10, 100, 200, 1, kind, key)
    batch, n = JournalTail(str(tmp_path / "1-1.part")).batch()
    assert n == 2 and batch[0]["kind"] == "handle"
    (call,) = _calls(batch)
    assert call[:4] == (10, 100, 200, 1) and tuple(call[4]) == kept
    assert all(type(k) in (int, slice, type(Ellipsis)) for k in call[4])


def test_a_new_generation_hides_what_the_part_file_holds(tmp_path):
    part = str(tmp_path / "1-1.part")
    journal = Journal()
    journal.switch(part)
    journal.record({"kind": "event", "seq": 2, "op": "file_open", "value": np.float64(0.75)})     # pickled
    journal.row(4, 1, 2, 1, KIND_INDEX, 3)
    journal.new_generation(123)
    journal.row(6, 1, 2, 1, KIND_SLICE, slice(None, 5))
    tail = JournalTail(part)
    assert tail.base == 123
    batch, n = tail.batch()
    assert n == 1 and [c[0] for c in _calls(batch)] == [6]


def test_calls_the_part_file_took_after_the_journal_s_base_are_not_repeated(tmp_path):
    """Killed between a write and the journal's new generation: the part file's batches past base say which."""
    part = str(tmp_path / "1-1.part")
    journal = Journal()
    journal.switch(part)
    for seq in (2, 4, 6):
        journal.row(seq, 1, 2, 1, KIND_INDEX, seq)
    journal.record({"kind": "layout", "file": "f.h5", "dataset": "/x"})
    written = FastColumns()
    written.index.extend((2, 1, 2, 1, 2, 4, 1, 2, 1, 4))
    tail = JournalTail(part)
    tail.seen([{"kind": "layout", "file": "f.h5", "dataset": "/x"}, *written.take()])
    batch, n = tail.batch()
    assert n == 1 and [c[0] for c in _calls(batch)] == [6]


def test_rows_past_a_segment_grow_the_journal(tmp_path):
    part = str(tmp_path / "1-1.part")
    journal = Journal()
    journal.switch(part)
    many = ROW_SEGMENT // ROW_SIZE + 10
    for seq in range(many):
        journal.row(seq, 1, 2, 1, KIND_INDEX, seq)
    batch, n = JournalTail(part).batch()
    assert n == many and [c[4][0] for c in _calls(batch)] == list(range(many))


def test_a_journal_that_stopped_is_never_read(tmp_path):
    part = str(tmp_path / "1-1.part")
    journal = Journal()
    journal.switch(part)
    journal.row(2, 1, 2, 1, KIND_INDEX, 1)
    journal._fail(OSError(28, "No space left on device"))
    journal.row(4, 1, 2, 1, KIND_INDEX, 2)
    tail = JournalTail(part)
    assert not tail.valid and tail.batch()[1] == 0
    assert journal.failed.startswith("OSError")
