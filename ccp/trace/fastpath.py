"""The recorder's fast path for ``Dataset.__getitem__`` (stdlib at import: loaded into traced programs).

A ``d[k]`` with ``k`` an int, a numpy integer, a slice or a tuple of those and Ellipsis (the issue's loop:
``benchmarks/trace_overhead.py --inprocess``) costs the program two clock reads and five values appended to a flat
list, one list per kind of key (:class:`FastColumns`): nothing is kept per call but the values, nothing is pickled
per call. Every ``BATCH`` calls of a kind, or at a call that finds the last write older than ``BATCH_AGE_NS``, the
lists become int64 rows of the part's journal (:mod:`ccp.trace.journal`), so a process killed in any way loses at most
that batch; a key the rows cannot hold goes as columns to the part file (:func:`column_block`: a tuple per call or a
numpy scalar per call cost more to pickle than the reads they described).
The key is described when the trace is merged (:func:`ccp.trace.store._expand`). A key h5py's fast reader takes
with one list or integer array among ints and slices (``d[[i, i + 1]]``: :func:`fancy_key`) is read the same way and
kept as one tuple per call in the recorder's records, its index a copied list of ints: describing it in the program
cost four times the read (breaker6 F5).

A flush writes on the program's thread: converting the lists needs the GIL, so a writer thread would cost the
process the same CPU time, and one more thing to hand over at a fork, an ``os._exit`` or a SIGTERM.
"""

from __future__ import annotations

import time
from itertools import chain, repeat

from ccp.trace.named import like
from ccp.trace.partfile import raised_by_program
from ccp.trace.selections import MAX_LISTED

FAST_CAPACITY = 16384       # fast calls of each kind one pickled list takes at most
BATCH = 2048                # calls of a kind buffered before they are written: at most this many die with a process
BATCH_AGE_NS = 200_000_000  # a call finding the last write older than this writes the buffers, itself included
WIDTH = 5                   # values per call in a flat list: seq, t0_ns, t1_ns, handle token, key


class FastColumns:
    """The fast path's buffers: ``index`` (an int or numpy integer key), ``slice`` and ``tuple`` flat lists, never
    replaced (the fast path holds them), emptied in place by :meth:`take`; each written out at every ``batch`` calls,
    and all of them by a call that finds the last write (``due``, a perf_counter_ns) older than ``BATCH_AGE_NS``."""

    def __init__(self, capacity: int = FAST_CAPACITY) -> None:
        self.capacity = capacity
        self.batch = min(BATCH, capacity)
        self.due = time.perf_counter_ns() + BATCH_AGE_NS
        self.index: list = []
        self.slice: list = []
        self.tuple: list = []       # a tuple of ints, numpy integers, slices and Ellipsis

    def __len__(self) -> int:
        return (len(self.index) + len(self.slice) + len(self.tuple)) // WIDTH

    def take(self) -> list[dict]:
        """The buffered calls as column blocks (one per kind of key), the buffers emptied."""
        blocks, taken = self.peek()
        self.drop(taken)
        return blocks

    def peek(self, most: int | None = None) -> tuple[list[dict], tuple[int, int, int]]:
        """The buffered calls as column blocks, the buffers left as they are, and how many values of each list the
        blocks hold (for :meth:`drop` once they are written): an exception landing while they are made (a program's
        signal handler raising) leaves every call buffered. ``most``: calls of each kind at most (the oldest)."""
        blocks = []
        taken = []
        for kind, flat in (("index", self.index), ("slice", self.slice), ("tuple", self.tuple)):
            n = len(flat) // WIDTH * WIDTH      # another thread may append meanwhile: its call stays for next time
            if most is not None:
                n = min(n, most * WIDTH)
            if n:
                blocks.append(column_block(kind, flat[:n]))
            taken.append(n)
        return blocks, (taken[0], taken[1], taken[2])

    def drop(self, taken: tuple[int, int, int]) -> None:
        """Forget the first values :meth:`peek` said it took. No call in between: CPython runs a signal handler only
        at a call or a loop's jump, so the three lists are emptied together or not at all."""
        del self.index[:taken[0]], self.slice[:taken[1]], self.tuple[:taken[2]]

    def clear(self) -> None:
        del self.index[:], self.slice[:], self.tuple[:]


def column_block(kind: str, flat: list) -> dict:
    """A flat list of (seq, t0, t1, token, key) as a part file's ``fast`` record: ``calls``, an int64 array of
    (seq, t0, t1, token[, index]) rows; a slice key's start, stop and step as three lists (None kept); tuple keys as
    a ``table`` (all integers, one rank) or their parts coded (``lens``, ``codes``, ``ints``, slice fields).

    numpy converts the numbers (its ``fromiter`` costs half what ``array('q', ...)`` does per value); the fast path
    has imported it by the time there is anything to convert."""
    import numpy as np

    n = len(flat) // WIDTH
    if kind == "index":
        try:    # numpy integers too (by __index__)
            return {"kind": "fast", "key": kind, "calls": np.fromiter(flat, np.int64, len(flat)).reshape(n, WIDTH)}
        except OverflowError:       # a uint64 past int64 (no read that succeeded had one; kept as given all the same)
            numbers = np.array([flat[i::WIDTH] for i in range(4)], np.int64).T.reshape(n, 4)
            return {"kind": "fast", "key": kind, "calls": numbers, "index": [int(k) for k in flat[4::WIDTH]]}
    calls = np.empty((n, 4), np.int64)
    for i in range(4):
        calls[:, i] = np.fromiter(flat[i::WIDTH], np.int64, n)
    keys = flat[4::WIDTH]
    if kind == "slice":
        return {"kind": "fast", "key": kind, "calls": calls, "start": [k.start for k in keys],
                "stop": [k.stop for k in keys], "step": [k.step for k in keys]}
    rank = set(map(len, keys))
    if len(rank) == 1:      # every key the same number of parts; all integers (``d[i, j]``) make one int64 table
        try:
            table = np.fromiter(chain.from_iterable(keys), np.int64, n * min(rank)).reshape(n, min(rank))
            return {"kind": "fast", "key": kind, "calls": calls, "table": table}
        except TypeError:       # a slice or Ellipsis among them
            pass
    # else its parts in one row, each coded (int, slice, Ellipsis); ints as int64, slices as three lists
    parts = np.empty(sum(map(len, keys)), object)
    parts[:] = list(chain.from_iterable(keys))
    codes = np.fromiter(map(_CODE.get, map(type, parts), repeat(0)), np.int8, len(parts))
    slices = parts[codes == 1].tolist()
    return {"kind": "fast", "key": kind, "calls": calls, "lens": np.fromiter(map(len, keys), np.int64, n),
            "codes": codes, "ints": parts[codes == 0].astype(np.int64), "start": [k.start for k in slices],
            "stop": [k.stop for k in slices], "step": [k.step for k in slices]}


_CODE: dict = {slice: 1, type(Ellipsis): 2}     # anything else the fast path lets through is an integer: 0


def block_calls(block: dict):
    """A ``fast`` record's calls as the recorder's per-call tuples (seq, t0, t1, token, key tuple)."""
    import numpy as np

    calls = block["calls"]
    seq, t0, t1, token = (calls[:, i].tolist() for i in range(4))
    keys: list[tuple]
    if block["key"] == "index":
        keys = [(k,) for k in (block["index"] if "index" in block else calls[:, 4].tolist())]
    elif block["key"] == "slice":
        keys = [(slice(a, b, c),) for a, b, c in zip(block["start"], block["stop"], block["step"])]
    elif "table" in block:
        keys = list(map(tuple, block["table"].tolist()))
    else:
        ints, slices = iter(block["ints"].tolist()), map(slice, block["start"], block["stop"], block["step"])
        parts = [next(ints) if c == 0 else next(slices) if c == 1 else Ellipsis for c in block["codes"].tolist()]
        ends = np.cumsum(block["lens"]).tolist()
        keys = [tuple(parts[a:b]) for a, b in zip([0, *ends[:-1]], ends)]
    return zip(seq, t0, t1, token, keys)


def fancy_key(key: tuple, plain: set, integers: set, ndarray) -> tuple | None:
    """A key h5py's fast reader takes with one list or 1-D integer array (``d[[i, i + 1]]``, ``d[idx, 3]``) among
    ints and slices, as the recorder keeps it: that index a new list of ints (the program may change its own after
    the call), numpy integers made ints. None for any other key (a mask, two lists, a list of anything but integers:
    the recorder's full path, so that h5py asks the key's objects what they are once, as untraced). ``integers``:
    int and numpy's integer types."""
    if len(key) == 1:       # d[[i, j]], d[idx]: no other part to look at
        part = _index_list(key[0], integers, ndarray)
        return None if part is None else (part,)
    out = None
    for i, a in enumerate(key):
        if type(a) in plain:
            continue
        part = _index_list(a, integers, ndarray)
        if part is None or out is not None:
            return None
        out = [*key]
        out[i] = part
    if out is None:
        return None
    return tuple([int(a) if type(a) in integers else a for a in out])


def _index_list(a, integers: set, ndarray) -> list | None:
    """A list of ints or numpy integers, or a 1-D integer array, as a new list of ints; else None, and for more than
    ``MAX_LISTED`` indices (kept in full, the buffered records of such calls grew with them: the full path keeps their
    bounds)."""
    t = type(a)
    if t is list:
        if len(a) > MAX_LISTED:
            return None
        kinds = set(map(type, a))
        if kinds == _INT or not a:
            return a.copy()
        return [int(x) for x in a] if kinds <= integers else None
    if t is ndarray and a.ndim == 1 and a.dtype.kind in "iu" and len(a) <= MAX_LISTED:
        return a.tolist()
    return None


_INT = {int}


def fast_getitem(rec, slow, fast_orig):
    """``Dataset.__getitem__`` for the common case, at the least cost: a key of ints and slices read by
    h5py's fast reader (what h5py's own ``__getitem__`` does first) is timed and kept raw; the key is
    immutable, so it is described later, by ``ccp trace``. Anything else takes ``slow``."""
    import numpy as np
    from h5py._objects import phil

    perf = time.perf_counter_ns
    numpy_ints = {getattr(np, n) for n in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")}
    plain = {int, slice, type(Ellipsis), *numpy_ints}
    single = {int, slice, *numpy_ints}
    integers = {int, *numpy_ints}
    handle_of = rec.handle_of
    columns = rec.columns
    index_calls, slice_calls, tuple_calls = columns.index, columns.slice, columns.tuple
    # a write at every ``batch`` calls of a kind (each call adds WIDTH values: a list's length passes every multiple)
    # or when the last write is older than BATCH_AGE_NS: the part file's pages are the kernel's as soon as written, so
    # a process killed in any way (SIGKILL, a segfault, an abort) loses the calls since then at most
    every = columns.batch * WIDTH

    def __getitem__(self, args, new_dtype=None):
        if new_dtype is None and rec.stopped is None:
            t = type(args)
            if t in single:         # one int, numpy integer or slice: five values on a flat list
                with phil:
                    if self._fast_read_ok:
                        t0 = perf()
                        try:
                            out = fast_orig(self._fast_reader, (args,))
                        except TypeError as exc:    # h5py falls back to its Python path: so do we
                            if raised_by_program(exc):  # not a key the fast reader refused: the program's own
                                raise
                        else:
                            t1 = perf()
                            try:
                                dsid = self._id             # not .id: it takes the lock again
                                token = handle_of.get(id(dsid)) or rec.token_of(dsid)
                                calls = slice_calls if t is slice else index_calls
                                calls.extend((next(rec.seq), t0, t1, token, args))
                                if not len(calls) % every or t1 > columns.due:
                                    rec.flush()
                            except Exception as exc:  # never disturb the program
                                rec.failed(exc)
                            return out
            else:
                key = args if t is tuple else (args,)
                for a in key:
                    if type(a) not in plain:
                        break
                else:
                    with phil:
                        if self._fast_read_ok:
                            t0 = perf()
                            try:
                                out = fast_orig(self._fast_reader, key)
                            except TypeError as exc:
                                if raised_by_program(exc):
                                    raise
                            else:
                                t1 = perf()
                                try:
                                    dsid = self._id
                                    token = handle_of.get(id(dsid)) or rec.token_of(dsid)
                                    tuple_calls.extend((next(rec.seq), t0, t1, token, key))
                                    if not len(tuple_calls) % every or t1 > columns.due:
                                        rec.flush()
                                except Exception as exc:  # never disturb the program
                                    rec.failed(exc)
                                return out
                    return slow(self, args)
                kept = fancy_key(key, plain, integers, np.ndarray)
                if kept is not None:
                    with phil:
                        if self._fast_read_ok:
                            t0 = perf()
                            try:
                                out = fast_orig(self._fast_reader, key)
                            except TypeError as exc:    # out of order, repeated: h5py's Python path says so
                                if raised_by_program(exc):
                                    raise
                            else:
                                t1 = perf()
                                try:
                                    dsid = self._id
                                    rec.add((next(rec.seq), t0, t1, handle_of.get(id(dsid)) or rec.token_of(dsid),
                                             kept))
                                except Exception as exc:  # never disturb the program
                                    rec.failed(exc)
                                return out
        return slow(self, args, new_dtype) if new_dtype is not None else slow(self, args)

    return like(slow, __getitem__)
