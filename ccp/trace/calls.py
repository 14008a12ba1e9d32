"""How the recorder keeps a call (stdlib at import: loaded into traced programs): a user-level call is begun (on
its thread's stack of open calls, so the calls inside it add their HDF5 time and bytes to it) and ended; a low-level
call, which has no recorded call inside it, is kept in one step once it returns (:meth:`CallRecords.low_call`).
The recorder's own work inside a call's span is taken out of the time of every call enclosing it."""

from __future__ import annotations

import time
from typing import Any


class CallRecords:
    """The call-keeping half of :class:`ccp.trace.recorder.Recorder` (its ``local``, ``seq``, ``pid``, ``add`` and
    ``failed``)."""

    local: Any
    seq: Any
    pid: int
    add: Any
    failed: Any

    def begin(self, api: str, op: str) -> dict:
        try:
            st = self.local.stack
            rec = {"kind": "call", "seq": next(self.seq), "pid": self.pid, "depth": len(st),
                   "parent": st[-1]["seq"] if st else 0, "api": api, "op": op, "hdf5_ns": 0, "nlow": 0}
            st.append(rec)
        except Exception as exc:  # the program must never see the recorder fail
            self.failed(exc)
            rec = {"kind": "call"}
        return rec

    def end(self, rec: dict, t0: int, t1: int, low: bool, entry: int | None = None) -> None:
        """Record the call timed from ``t0`` to ``t1``; ``entry``, when its wrapper started. Its wrapper's work
        before ``t0`` and all that follows ``t1`` up to this method's return (describing it, keeping its record, a
        write of the buffer) is the recorder's own: taken out of the time of every call enclosing it, whose spans hold
        it, so that a call's recorded time is what the program pays untraced."""
        try:
            st = self.local.stack
            self._end(rec, t0, t1, low, st)
            if st:
                self.spent(time.perf_counter_ns() - t1 + (t0 - entry if entry is not None else 0), st)
        except Exception as exc:  # the program must never see the recorder fail
            self.failed(exc)

    def low_call(self, seq: int, api: str, op: str, t0: int, t1: int, entry: int, info: tuple, sel: dict) -> None:
        """A low-level call (``DatasetID.read``/``write``) timed from ``t0`` to ``t1`` on a handle (``info``: see
        :meth:`handle_info`), its selection ``sel``: what :meth:`begin` and :meth:`end` record of it, in one step
        (nothing recorded runs inside it, so it never stands on the stack of open calls)."""
        st = self.local.stack
        ns = t1 - t0
        nbytes = sel["nelems"] * info[2]
        rec = {"kind": "call", "seq": seq, "pid": self.pid, "depth": len(st),
               "parent": st[-1]["seq"] if st else 0, "api": api, "op": op, "hdf5_ns": ns, "nlow": 0, **sel,
               "file": info[0], "dataset": info[1], "bytes": nbytes, "t0_ns": t0, "wall_ns": ns}
        for outer in st:           # every enclosing call spent this time inside HDF5
            outer["hdf5_ns"] += ns
            outer["nlow"] += 1
            outer["bytes"] = outer.get("bytes", 0) + nbytes
        self.add(rec)
        if st:
            self.spent(time.perf_counter_ns() - t1 + t0 - entry, st)

    def spent(self, ns: int, stack: list | None = None) -> None:
        """``ns`` of the recorder's own work inside the spans of this thread's open calls: out of their times."""
        for outer in self.local.stack if stack is None else stack:
            outer["rec_ns"] = outer.get("rec_ns", 0) + ns

    def _end(self, rec: dict, t0: int, t1: int, low: bool, st: list) -> None:
        if st and st[-1] is rec:
            st.pop()
        if "seq" not in rec:           # begin() failed: nothing to record
            return
        if "drop_if_no_io" in rec:
            if not rec["nlow"]:
                return
            del rec["drop_if_no_io"]
        rec["t0_ns"] = t0
        # an enclosing call's time excludes the recorder's own work on the calls nested in it
        rec["wall_ns"] = t1 - t0 - rec.pop("rec_ns", 0)
        if low:
            rec["hdf5_ns"] = t1 - t0
            nbytes = rec.get("bytes", 0)
            for outer in st:           # every enclosing call spent this time inside HDF5
                outer["hdf5_ns"] += t1 - t0
                outer["nlow"] += 1
                outer["bytes"] = outer.get("bytes", 0) + nbytes
        self.add(rec)
