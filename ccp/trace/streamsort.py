"""Rows sorted by (pid, seq) in bounded memory, for the trace merge (:mod:`ccp.trace.store`).

A part file holds its records in the order calls ended: a nested call before the call around it, so
a chunk of rows is sorted on its own and, usually, follows the chunk before it but for a few rows at
the seam. :class:`InOrder` sorts that case in one pass, holding one chunk back to mend the seam; when
a chunk reaches further back than rows already written (a call that ran while many others ended, in
another thread), it raises :class:`OutOfOrder` and the merge sorts that part the slow way: each chunk
sorted into its own run file, then :func:`merge_runs` (a batched k-way merge) reads the runs back.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ORDER = [("pid", "ascending"), ("seq", "ascending")]
_LAST = np.iinfo(np.int64).max            # a missing pid or seq sorts last, as Arrow's sort puts nulls


class OutOfOrder(Exception):
    """A part's rows reach back before rows already written: that part needs :func:`merge_runs`."""


def sort_rows(table: pa.Table) -> pa.Table:
    return table.sort_by(ORDER)           # stable: rows with equal keys keep their order


def _keys(table: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    def col(name: str) -> np.ndarray:
        return np.asarray(table.column(name).fill_null(_LAST).to_numpy(), np.int64)

    return col("pid"), col("seq")


def _key_at(table: pa.Table, i: int) -> tuple[int, int]:
    pid, seq = table.column("pid")[i].as_py(), table.column("seq")[i].as_py()
    return (_LAST if pid is None else int(pid), _LAST if seq is None else int(seq))


def _count_upto(table: pa.Table, key: tuple[int, int], strict: bool) -> int:
    """Rows of a sorted table whose key is at most (``strict``: below) ``key``: a prefix."""
    pid, seq = _keys(table)
    below = (pid < key[0]) | ((pid == key[0]) & ((seq < key[1]) if strict else (seq <= key[1])))
    return int(below.sum())


class InOrder:
    """Sorted chunks in, the rows sorted across chunks out (``write``), holding the last chunk back."""

    def __init__(self, write: Callable[[pa.Table], None]) -> None:
        self.write = write
        self.pending: pa.Table | None = None
        self.last: tuple[int, int] | None = None      # key of the last row written

    def _emit(self, table: pa.Table) -> None:
        if table.num_rows:
            self.write(table)
            self.last = _key_at(table, table.num_rows - 1)

    def add(self, table: pa.Table) -> None:
        """One chunk of rows, already sorted."""
        if not table.num_rows:
            return
        first = _key_at(table, 0)
        if self.last is not None and first < self.last:
            raise OutOfOrder(first)
        if self.pending is None:
            self.pending = table
            return
        if first > _key_at(self.pending, self.pending.num_rows - 1):
            self._emit(self.pending)
            self.pending = table
            return
        both = sort_rows(pa.concat_tables([self.pending, table]))
        n = _count_upto(both, first, strict=True)      # rows before this chunk's first are final
        self._emit(both.slice(0, n))
        self.pending = both.slice(n)

    def close(self) -> None:
        if self.pending is not None:
            self._emit(self.pending)
            self.pending = None


def write_run(path: Path, table: pa.Table, batch_rows: int) -> None:
    """One sorted chunk as a run file, in small row groups (the merge holds one per run)."""
    pq.write_table(sort_rows(table), path, row_group_size=max(batch_rows, 1))


def merge_runs(paths: list[Path], write: Callable[[pa.Table], None], batch_rows: int) -> None:
    """Sorted run files as one sorted stream of tables, holding one batch per run: a run's rows up
    to the smallest last key of the batches held are final (every run's later rows come after)."""
    iters = [pq.ParquetFile(p).iter_batches(batch_size=max(batch_rows, 1)) for p in paths]
    held: dict[int, pa.Table] = {}
    first: dict[int, tuple[int, int]] = {}
    last: dict[int, tuple[int, int]] = {}

    def refill(i: int) -> None:
        for batch in iters[i]:
            if batch.num_rows:
                held[i] = pa.Table.from_batches([batch])
                first[i], last[i] = _key_at(held[i], 0), _key_at(held[i], batch.num_rows - 1)
                return
        held.pop(i, None)

    for i in range(len(iters)):
        refill(i)
    while held:
        bound = min(last[i] for i in held)
        out = []
        for i in [i for i in held if first[i] <= bound]:
            t = held[i]
            n = _count_upto(t, bound, strict=False)
            out.append(t.slice(0, n))
            if n == t.num_rows:
                refill(i)
            else:
                held[i] = t.slice(n)
                first[i] = _key_at(held[i], 0)
        write(sort_rows(pa.concat_tables(out)))
