"""The recorder's journal: every call and record also written, as it is made, into file-backed memory (stdlib at
import: loaded into traced programs), so a process that dies in any way (SIGKILL, a segfault, an abort in C,
``os._exit`` past the recorder) keeps every call it made up to the instant it died.

The recorder's buffers (:mod:`ccp.trace.fastpath`, ``Recorder.buf``) are written to the part file as pickled batches
every 16,384 calls; what a killed process had buffered was lost. Now each buffered call is also a row of a
``MAP_SHARED`` mapping of ``<part>.rows`` (the fast path's calls: a 64-byte slot of int64s written by one
``pack_into``: the key's numbers, seq, t0, t1, handle token, and last the journal's generation with the key's kind:
``pack_into`` writes field by field, so a key it cannot pack leaves no row) and each record a
marshalled (else pickled) entry of ``<part>.recs``. The kernel owns the pages: they reach the file whatever becomes
of the process. Space is reserved with ``posix_fallocate`` before it is mapped, so a full disk is met as an
``OSError`` at a segment's start (the journal then stops, the buffers go on as before), never as a SIGBUS in the
program's read.

After a flush that emptied the buffers, the journal starts a new generation (the header's ``gen``, the part file's
committed length ``base``): the rows before are in the part file. Whatever is in the journal's current generation
and not in the part file's batches past ``base`` is what the process had buffered when it died
(:func:`read_journal`, a batch like the recorder's own, which ``ccp trace`` adds to the part file's).

A forked child inherits the parent's mappings: the at-fork hook empties the holder the fast path writes through
(``Journal.w``, a C ``list.clear``), so the child never writes into its parent's journal; its own starts with its
part file (:meth:`Journal.switch`)."""

from __future__ import annotations

import marshal
import mmap
import os
import pickle
import struct
import threading

MAGIC_ROWS = b"CCPROWS1"
MAGIC_RECS = b"CCPRECS1"
HEAD = 64                   # magic, gen, base; the rest spare
ROW_SIZE = 64               # a slot: up to 3 key numbers, seq, t0, t1, token, mark (gen << 8 | info)
# a row with n key numbers (the others zero)
ROWS = tuple(struct.Struct(f"<{n}q{8 * (3 - n)}x5q") for n in range(4))
ROW_SEGMENT = 1 << 20       # bytes reserved at a time: 16,384 rows
RECS_SEGMENT = 1 << 18
ENTRY = struct.Struct("<II")    # a record's length and generation, written after its bytes
KIND_INDEX, KIND_SLICE, KIND_TUPLE = 0, 1, 2    # info: kind (2 bits), a slice's None fields (bits 2-4, start
NONE_VALUE = 0                                  # first: 0 in their place), a tuple's length (bits 5-6)
HEADER = struct.Struct("<8sqq")


class Journal:
    """One process's journal. ``w`` is what the fast path writes through: ``[mm, claim, mark]`` (``claim`` gives the
    next row's offset, ``mark`` is ``gen << 8``: a row's info is or'ed in) or empty (no journal yet, or the parent's
    after a fork). A claimed slot never written (a call that fell back to :meth:`row`) is a hole: the reader takes
    every row of the current generation, wherever it is."""

    def __init__(self) -> None:
        self.w: list = []
        self.part = ""          # the part file the journal goes with ("": none)
        self.pid = 0
        self.gen = 1
        self.base = 0
        self.failed = ""        # why the journal stopped in this process ("": it runs)
        self.rows_mm: mmap.mmap | None = None
        self.recs_mm: mmap.mmap | None = None
        self.recs_at = HEAD
        self.lock = threading.Lock()

    # ------------------------------------------------------------------ files
    def switch(self, part: str) -> None:
        """The journal of this process's part file ``part`` (made at its first row): a forked child drops its
        parent's mappings (unmapped in the child only: the parent's file keeps its rows)."""
        del self.w[:]
        for mm in (self.rows_mm, self.recs_mm):
            if mm is not None:
                try:
                    mm.close()
                except Exception:  # never disturb the program: the mapping goes with the process anyway
                    pass
        self.rows_mm = self.recs_mm = None
        self.part, self.pid, self.gen, self.base, self.failed, self.recs_at = part, os.getpid(), 1, 0, "", HEAD

    def _map(self, path: str, magic: bytes, size: int, mm: mmap.mmap | None) -> mmap.mmap:
        """``path`` mapped at ``size`` bytes, reserved on disk first (a new file gets its header)."""
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            os.posix_fallocate(fd, 0, size)
            new = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(fd)
        if mm is None:
            HEADER.pack_into(new, 0, magic, self.gen, self.base)
        else:
            mm.close()
        return new

    def _ready(self) -> bool:
        """Whether this process may write its journal (made on first use); a failure stops the journal."""
        if self.failed or not self.part or os.getpid() != self.pid:
            return False
        if self.w:
            return True
        try:
            if not os.path.exists(self.part):       # the part file names the process even if it never flushes
                os.makedirs(os.path.dirname(self.part), exist_ok=True)
                os.close(os.open(self.part, os.O_WRONLY | os.O_CREAT, 0o644))
            self.rows_mm = self._map(self.part + ".rows", MAGIC_ROWS, HEAD + ROW_SEGMENT, None)
            self.recs_mm = self._map(self.part + ".recs", MAGIC_RECS, HEAD + RECS_SEGMENT, None)
        except Exception as exc:  # a full disk, no mmap: the buffers go on, as durable as before
            self._fail(exc)
            return False
        self._publish(HEAD)
        return True

    def _publish(self, first: int) -> None:
        import itertools

        self.w[:] = [self.rows_mm, itertools.count(first, ROW_SIZE).__next__, self.gen << 8]

    # ------------------------------------------------------------------ writing
    def row(self, seq: int, t0: int, t1: int, token: int, kind: int, key) -> None:
        """A fast-path call the fast path's own ``pack_into`` could not write: no journal yet, a full segment,
        a key that is not a row (a slice or Ellipsis in a tuple, more than 4 parts, past int64: a record)."""
        if not self._ready():
            return
        try:
            info, parts = _row_key(kind, key)
            ROWS[len(parts)].pack(*parts, seq, t0, t1, token, 0)
        except (TypeError, OverflowError, ValueError, AttributeError, struct.error):
            self.record({"kind": "_fast", "call": (seq, t0, t1, token, key), "key": kind})
            return
        with self.lock:
            w = self.w
            if not w:
                return
            at = w[1]()
            if at + ROW_SIZE > len(w[0]):
                try:
                    self.rows_mm = self._map(self.part + ".rows", MAGIC_ROWS,
                                             HEAD + ((at - HEAD) // ROW_SEGMENT + 1) * ROW_SEGMENT, self.rows_mm)
                except Exception as exc:  # a full disk: the journal stops (the buffers go on)
                    self._fail(exc)
                    return
                self._publish(at + ROW_SIZE)
                w = self.w
            ROWS[len(parts)].pack_into(w[0], at, *parts, seq, t0, t1, token, w[2] | info)

    def _fail(self, exc: BaseException) -> None:
        """The journal stops in this process (a full disk): its files say so (generation -1: never read), so what
        the part file holds is all the trace trusts, as before the journal."""
        self.failed = f"{type(exc).__name__}: {exc}"
        del self.w[:]
        for mm in (self.rows_mm, self.recs_mm):
            if mm is not None:
                try:
                    struct.pack_into("<q", mm, 8, -1)
                except Exception:  # never disturb the program
                    pass
        self.recs_mm = None

    def record(self, rec) -> None:
        """A record (a dict of the recorder's) as an entry of ``.recs``: its bytes, then its length and generation."""
        if not self._ready():
            return
        try:
            data, tag = marshal.dumps(rec), 0
        except ValueError:      # a type marshal does not know (a numpy value, a slice)
            try:
                data, tag = pickle.dumps(rec, protocol=pickle.HIGHEST_PROTOCOL), 1 << 31
            except Exception:  # never disturb the program: the record is still buffered
                return
        with self.lock:
            mm, at = self.recs_mm, self.recs_at
            if mm is None:
                return
            end = at + ENTRY.size + (len(data) + 7) // 8 * 8
            if end > len(mm):
                try:
                    mm = self.recs_mm = self._map(self.part + ".recs", MAGIC_RECS,
                                                  max(2 * len(mm), end + RECS_SEGMENT), mm)
                except Exception as exc:  # a full disk: the journal stops (the buffers go on)
                    self._fail(exc)
                    return
            mm[at + ENTRY.size:at + ENTRY.size + len(data)] = data
            ENTRY.pack_into(mm, at, len(data) | tag, self.gen)     # committed
            self.recs_at = end

    def new_generation(self, base: int) -> None:
        """Everything journaled so far is in the part file, ``base`` bytes long: rows from here on are a new
        generation (the old ones are never read again)."""
        with self.lock:
            if not self.w or os.getpid() != self.pid:
                return
            self.gen += 1
            self.base = base
            for mm in (self.rows_mm, self.recs_mm):
                if mm is not None:
                    struct.pack_into("<qq", mm, 8, self.gen, base)
            self.recs_at = HEAD
            self._publish(HEAD)


def _row_key(kind: int, key) -> tuple[int, tuple]:
    """(info, the key's int64 fields) of a key; a TypeError or OverflowError if it is no row."""
    if kind == KIND_INDEX:
        return KIND_INDEX, (key.__index__(),)
    if kind == KIND_SLICE:
        fields = (key.start, key.stop, key.step)
        mask = sum(1 << i for i, v in enumerate(fields) if v is None)
        return KIND_SLICE | mask << 2, tuple(NONE_VALUE if v is None else v.__index__() for v in fields)
    if len(key) > 3 or any(type(k) in (slice, type(Ellipsis)) for k in key):
        raise TypeError("not a row")
    return KIND_TUPLE | len(key) << 5, tuple(k.__index__() for k in key)
