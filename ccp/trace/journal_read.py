"""Reading a process's journal (:mod:`ccp.trace.journal`): the committed rows and records of its current generation,
and what of them its part file does not hold (:class:`JournalTail`). Read by ``ccp trace``, never in a traced
program."""

from __future__ import annotations

import marshal
import pickle

from ccp.trace.fastpath import FastColumns
from ccp.trace.journal import ENTRY, HEAD, HEADER, KIND_INDEX, KIND_SLICE, MAGIC_RECS, MAGIC_ROWS, ROW_SIZE


def _read_header(data: bytes, magic: bytes) -> tuple[int, int] | None:
    if len(data) < HEAD:
        return None
    got, gen, base = HEADER.unpack_from(data, 0)
    return (gen, base) if got == magic else None


def journal_rows(path: str) -> tuple[int, list[tuple], int] | None:
    """(base, committed rows as (seq, t0, t1, token, kind, key), generation) of a ``.rows`` file; None if absent
    or not a journal."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    head = _read_header(data, MAGIC_ROWS)
    if head is None:
        return None
    gen, base = head
    import numpy as np

    width = ROW_SIZE // 8
    n = (len(data) - HEAD) // ROW_SIZE
    table = np.frombuffer(data, np.int64, n * width, HEAD).reshape(n, width)
    table = table[table[:, 7] >> 8 == gen]  # every row of this generation (a slot claimed and never written, by a
    rows = []                               # call that fell back to a record, is a hole)
    for k0, k1, k2, seq, t0, t1, token, info in table.tolist():
        kind = info & 3
        if kind == KIND_INDEX:
            key = k0
        elif kind == KIND_SLICE:
            key = slice(*(None if info >> 2 + i & 1 else v for i, v in enumerate((k0, k1, k2))))
        else:
            key = (k0, k1, k2)[:info >> 5 & 3]
        rows.append((seq, t0, t1, token, kind, key))
    return base, rows, gen


def journal_records(path: str) -> tuple[int, list] | None:
    """(base, committed records) of a ``.recs`` file; None if absent or not a journal."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    head = _read_header(data, MAGIC_RECS)
    if head is None:
        return None
    gen, base = head
    if gen <= 0:            # the journal stopped (a full disk): the part file is all there is
        return None
    out, at = [], HEAD
    while at + ENTRY.size <= len(data):
        size, entry_gen = ENTRY.unpack_from(data, at)
        n = size & ~(1 << 31)
        if entry_gen != gen or not size or at + ENTRY.size + n > len(data):
            break
        raw = data[at + ENTRY.size:at + ENTRY.size + n]
        try:
            out.append(pickle.loads(raw) if size >> 31 else marshal.loads(raw))
        except Exception:  # a torn entry (the instant of death): the ones before stand
            break
        at += ENTRY.size + (n + 7) // 8 * 8
    return base, out


class JournalTail:
    """What a process's journal holds that its part file does not: fed the part file's batches past the journal's
    ``base`` (:meth:`seen`), it gives them as one more batch (:meth:`batch`), the recorder's own form."""

    def __init__(self, part: str) -> None:
        rows = journal_rows(part + ".rows")
        recs = journal_records(part + ".recs")
        self.valid = bool(rows and rows[2] > 0) and bool(recs)
        self.rows = rows[1] if rows and self.valid else []
        self.records = recs[1] if recs and self.valid else []
        bases = [j[0] for j in (rows, recs) if j is not None]
        self.base = min(bases) if self.valid and bases else None
        self.pending = {r[0] for r in self.rows} | {r["call"][0] for r in self.records if r.get("kind") == "_fast"}
        self.pending |= {r["seq"] for r in self.records if isinstance(r, dict) and "seq" in r}
        self.written: list = []     # records with no seq the part file holds past base

    def seen(self, batch: list) -> None:
        """A part-file batch written past ``base``: its calls and records are not pending."""
        for r in batch:
            if not isinstance(r, dict):
                continue
            if r.get("kind") == "fast":
                self.pending.difference_update(r["calls"][:, 0].tolist())
            elif "seq" in r:
                self.pending.discard(r["seq"])
            else:
                self.written.append(r)

    def batch(self) -> tuple[list, int]:
        """(the pending records and calls as one batch, how many calls and records it holds)."""
        records = []
        written = list(self.written)
        columns = FastColumns()
        fast = [(*r[:4], r[4], r[5]) for r in self.rows if r[0] in self.pending]
        for r in self.records:
            if not isinstance(r, dict):
                continue
            if r.get("kind") == "_fast":
                if r["call"][0] in self.pending:
                    fast.append((*r["call"][:4], r["key"], r["call"][4]))
            elif "seq" in r:
                if r["seq"] in self.pending:
                    records.append(r)
            elif r in written:          # a handle or layout record a write took
                written.remove(r)
            else:
                records.append(r)
        fast.sort(key=lambda call: call[0])     # by seq (keys of kinds apart never compared)
        lists = (columns.index, columns.slice, columns.tuple)
        for seq, t0, t1, token, kind, key in fast:
            lists[kind].extend((seq, t0, t1, token, key))
        n = len(records) + len(fast)
        return records + columns.take(), n
