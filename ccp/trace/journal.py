"""The fast path's calls written as they are batched (stdlib at import, numpy when there is a batch: loaded into
traced programs), so a process that dies in any way (SIGKILL, a segfault, an abort in C, an ``_exit`` past the
recorder) keeps every ``d[k]`` call it made but the last batch of each kind of key.

The fast path (:mod:`ccp.trace.fastpath`) buffers each call as five values on a flat list; every ``BATCH`` calls of a
kind, or at a call that finds the last write older than ``BATCH_AGE_NS``, :meth:`Journal.put` converts the buffered
values (``np.fromiter``, what a part-file flush did) into int64 rows, writes them to the kind's rows file
(``<part>.index.rows``, ``.slice.rows``, ``.tuple.rows``) and then the count of committed rows into its header. A
written page is the kernel's: whatever becomes of the process, it reaches the file, and the reader trusts only the
committed rows. No pickle, two ``pwrite`` per batch: a pickled part-file write per 512 calls cost the ``d[i]`` loop
0.5-0.8 us a call (cold code: pickle, numpy's reduce, four syscalls), and a ``MAP_SHARED`` mapping paid a page fault
per 4 KiB written (130-150 us per 512 rows here). The journal is the only copy of the calls it takes (they never go
to the part file too), so the merge counts each call once.

An index row is five int64 (seq, t0_ns, t1_ns, handle token, key); a slice or tuple row eight: seq, t0_ns, t1_ns,
token, the key's numbers a, b, c and a code: the key's kind (1 a slice, 2 a tuple of ints), a slice's None fields
(bits 2-4: start, stop, step) or a tuple's length (bits 5-6: 1-3). A batch the rows cannot hold (a uint64 past int64,
a tuple with a slice or Ellipsis or of more than three parts) goes to the part file as before (``put`` says no). A
write that fails (a full disk) is the recorder's failure, as a part file's: recording stops and the trace says so.

Each batch opens its rows files by path and closes them when written (``O_CLOEXEC``): the journal holds no descriptor
between batches, so a program that closes every descriptor past stderr (``os.closerange(3, ...)``, as python-daemon
does) and opens its own files on the numbers never has the journal's rows written into them, nor closed under it in a
forked child (breaker6 F1, F2). An open and a close per 2,048 calls of a kind cost a few microseconds a batch.

A forked child never writes its parent's rows: the at-fork hook empties ``Journal.out`` (a C ``list.clear``) and its
own journal starts with its own part file (:meth:`Journal.switch`).
"""

from __future__ import annotations

import os
from itertools import chain
from operator import attrgetter

MAGIC = b"CCPROWS3"
HEAD = 64                   # magic, row width (int64), committed rows; the rest spare
KIND_INDEX, KIND_SLICE, KIND_TUPLE = 0, 1, 2
KINDS = ("index", "slice", "tuple")
WIDTHS = (5, 8, 8)          # an index row: seq, t0, t1, token, key; the others: seq, t0, t1, token, a, b, c, code


def lane_path(part: str, kind: str) -> str:
    return f"{part}.{kind}.rows"


class Journal:
    """One process's rows files, one per kind of key. ``out``: ``[made]`` (which kinds' files this process has made)
    once this process has written one, else empty (none yet, or the parent's after a fork)."""

    def __init__(self) -> None:
        self.out: list = []
        self.part = ""          # the part file the journal goes with ("": none)
        self.paths: tuple[str, ...] = ("", "", "")
        self.pid = 0
        self.rows = [0, 0, 0]   # rows committed, per kind

    def switch(self, part: str) -> None:
        """The journal of this process's part file ``part`` (its files made at their first batch). Nothing to close:
        no descriptor outlives a batch."""
        del self.out[:]
        self.paths = tuple(lane_path(part, kind) for kind in KINDS)
        self.part, self.pid, self.rows = part, os.getpid(), [0, 0, 0]

    def _fd(self, lane: int):
        """A descriptor of kind ``lane``'s rows file for one batch (the file made first, its header written), None
        when this process may not write (another process's journal); an OSError (a full disk, the trace's folder
        removed) is the recorder's to handle, as a part file's."""
        pid = self.pid
        if not self.part or os.getpid() != pid:
            return None
        # the paths read where they are used: a fork at any call here (the program's handler) goes on in the child with
        # its own part's (the at-fork reset ran), so a child makes only its own files (put drops the batch after)
        if self.out and self.out[0][lane]:
            return os.open(self.paths[lane], os.O_WRONLY | os.O_CLOEXEC)
        if not os.path.exists(self.part):       # the part file names the process for the merge
            os.makedirs(os.path.dirname(self.part), exist_ok=True)
            os.close(os.open(self.part, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))
        fd = os.open(self.paths[lane], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            os.pwrite(fd, MAGIC + WIDTHS[lane].to_bytes(8, "little") + bytes(HEAD - 16), 0)
        except BaseException:
            os.close(fd)
            raise
        if self.pid == pid:     # no call from here on: a fork above (the file maybe the parent's) marks nothing made
            if not self.out:
                self.out[:] = [[False, False, False]]
            self.out[0][lane] = True
        return fd

    def put(self, lane: int, flat: list, n: int) -> bool:
        """The first ``n`` values of ``flat`` (``n // 5`` calls of kind ``lane``) written as rows and committed, and
        dropped from ``flat``; False: not taken (another process's journal, a key the rows cannot hold), ``flat`` as
        it was.

        CPython runs a signal handler only at a call or a loop's jump: an exception of the program's landing at the
        rows' write leaves them uncommitted (written again in the same place next time) and the calls buffered; the
        calls are dropped and counted with no call in between, and the commit comes last (a process dying just
        before it loses this batch, which the bound allows; a handler raising after it finds all done)."""
        pid = self.pid          # first: a fork from here on (the program's handler) is told by the pid changing
        rows = _rows(lane, flat, n)
        if rows is None:
            return False
        fd = self._fd(lane)
        if fd is None:
            return False
        try:
            # a fork in _fd (the program's handler) left the child a descriptor of a file of either: the batch is the
            # parent's, never written by the child. From here the child writes the parent's rows where the parent does
            if self.pid != pid:
                return False
            out, done = self.out, self.rows
            count = done[lane] + len(rows)
            head = count.to_bytes(8, "little")
            os.pwrite(fd, rows.data, HEAD + done[lane] * WIDTHS[lane] * 8)
            # no call from here to the commit. A fork by the program's signal handler in the calls above left the
            # child with its parent's calls in ``rows``: never its own. Its at-fork hook emptied ``out`` and its own
            # journal (switch) has its pid; a reset the program cut short left it no file (``_fd``)
            if not out or self.pid != pid:
                return False
            del flat[:n]
            done[lane] = count
            os.pwrite(fd, head, 16)
            return True
        finally:
            os.close(fd)


def _rows(lane: int, flat: list, n: int):
    """``n`` flat values as an int64 array of rows (:data:`WIDTHS`), or None when a key does not fit one. Each
    column in one numpy pass (the call's four numbers at once; a slice field all None or all int without an object
    array): this runs on values the program's reads have pushed out of the CPU's caches."""
    import numpy as np

    calls = n // 5
    try:
        if lane == KIND_INDEX:
            return np.fromiter(flat, np.int64, n)
        rows = np.zeros((calls, 8), np.int64)
        numbers = flat[:n]
        keys = numbers[4::5]
        del numbers[4::5]
        rows[:, :4] = np.fromiter(numbers, np.int64, 4 * calls).reshape(calls, 4)
        if lane == KIND_SLICE:
            code = rows[:, 7]
            code[:] = KIND_SLICE
            for i, field in enumerate(("start", "stop", "step")):
                values = list(map(attrgetter(field), keys))
                nones = values.count(None)
                if nones == calls:
                    code |= 1 << (2 + i)
                elif not nones:
                    rows[:, 4 + i] = np.fromiter(values, np.int64, calls)
                else:
                    column = np.array(values, object)
                    none = np.equal(column, np.array(None, object))
                    column[none] = 0
                    code |= none.astype(np.int64) << (2 + i)
                    rows[:, 4 + i] = column.astype(np.int64)
            return rows
        rank = set(map(len, keys))
        if len(rank) != 1 or not 1 <= min(rank) <= 3:
            return None
        r = min(rank)
        rows[:, 4:4 + r] = np.fromiter(chain.from_iterable(keys), np.int64, calls * r).reshape(calls, r)
        rows[:, 7] = KIND_TUPLE | r << 5
        return rows
    except (TypeError, OverflowError, ValueError):     # a slice or Ellipsis in a tuple, past int64, a step object
        return None
