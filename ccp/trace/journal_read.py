"""Reading a part's journal (:mod:`ccp.trace.journal`) for ``ccp trace``'s merge: the committed rows of each kind's
file, merged in seq order, as the fast path's per-call tuples, handed out between the part file's batches."""

from __future__ import annotations

import os

from ccp.trace.journal import HEAD, KIND_INDEX, KIND_SLICE, KIND_TUPLE, KINDS, MAGIC, WIDTHS, lane_path


def _lane(part: str, kind: str):
    """(width, committed rows) of one rows file, or None."""
    try:
        with open(lane_path(part, kind), "rb") as f:
            head = f.read(24)
        size = os.path.getsize(lane_path(part, kind))
    except OSError:
        return None
    if len(head) < 24 or head[:8] != MAGIC:
        return None
    width, count = int.from_bytes(head[8:16], "little"), int.from_bytes(head[16:24], "little")
    if width not in WIDTHS:
        return None
    return width, min(count, max(0, size - HEAD) // (width * 8))     # never past the file (a header that lies)


def committed_rows(part: str) -> int:
    """How many calls the journal of ``part`` commits, all kinds."""
    return sum(lane[1] for lane in map(lambda k: _lane(part, k), KINDS) if lane is not None)


def _blocks(part: str, kind: str, block: int):
    """One rows file's committed rows as arrays of (n, 8) int64 rows (index rows widened: code 0), in order."""
    import numpy as np

    lane = _lane(part, kind)
    if lane is None:
        return
    width, count = lane
    with open(lane_path(part, kind), "rb") as f:
        f.seek(HEAD)
        done = 0
        while done < count:
            k = min(block, count - done)
            raw = np.fromfile(f, np.int64, k * width).reshape(-1, width)
            done += k
            if width == 8:
                yield raw
            else:
                rows = np.zeros((len(raw), 8), np.int64)
                rows[:, :5] = raw
                yield rows


def read_rows(part: str, block: int = 65536):
    """The committed rows of ``part``'s journal as the fast path's per-call tuples (seq, t0, t1, token, key tuple),
    in lists of about ``block`` calls, the kinds merged in seq order (each kind's file is in the order its calls were
    buffered)."""
    import numpy as np

    lanes = [_blocks(part, kind, block) for kind in KINDS]
    held: list = [next(lane, None) for lane in lanes]
    while True:
        live = [i for i, rows in enumerate(held) if rows is not None]
        if not live:
            return
        # rows up to the smallest last seq of the blocks held are final: no later block of any kind has one below
        # (a kind's rows are in seq order but where threads interleave: then the order is near, each row taken once)
        bound = min(int(held[i][-1, 0]) for i in live)
        take = []
        for i in live:
            rows = held[i]
            k = max(1, int(np.searchsorted(rows[:, 0], bound, side="right")))
            take.append(rows[:k])
            held[i] = rows[k:] if k < len(rows) else next(lanes[i], None)
        rows = np.concatenate(take)
        rows = rows[rows[:, 0] > 0]     # a row never written (a gap) has seq 0
        yield _calls(rows[np.argsort(rows[:, 0], kind="stable")])


def _calls(rows) -> list[tuple]:
    import numpy as np

    seq, t0, t1, token, a, b, c, code = (rows[:, i] for i in range(8))
    kind = code & 3
    keys: list = [None] * len(rows)
    index = np.flatnonzero(kind == KIND_INDEX)
    for i, k in zip(index.tolist(), a[index].tolist()):
        keys[i] = (k,)
    sl = np.flatnonzero(kind == KIND_SLICE)
    if len(sl):
        fields = []
        for j, col in enumerate((a, b, c)):
            values = col[sl].astype(object)
            values[(code[sl] >> (2 + j)) & 1 == 1] = None
            fields.append(values.tolist())
        for i, s, e, st in zip(sl.tolist(), *fields):
            keys[i] = (slice(s, e, st),)
    tup = np.flatnonzero(kind == KIND_TUPLE)
    if len(tup):
        rank = (code[tup] >> 5) & 3
        table = np.stack([a[tup], b[tup], c[tup]], axis=1).tolist()
        for i, r, parts in zip(tup.tolist(), rank.tolist(), table):
            keys[i] = tuple(parts[:r])
    return list(zip(seq.tolist(), t0.tolist(), t1.tolist(), token.tolist(), keys))


class JournalFeed:
    """A part's journal rows (seq order), handed out up to a seq."""

    def __init__(self, part: str) -> None:
        self.blocks = read_rows(part)
        self.held: list = []
        self.count = 0

    def upto(self, bound: int | None):
        """Lists of the rows with seq at most ``bound`` (None: all that are left)."""
        import bisect

        while True:
            if not self.held:
                self.held = next(self.blocks, [])
                if not self.held:
                    return
            k = len(self.held) if bound is None else bisect.bisect_right(self.held, bound, key=lambda r: r[0])
            if k:
                self.count += k
                yield self.held[:k]
            if k < len(self.held):
                self.held = self.held[k:]
                return
            self.held = []
