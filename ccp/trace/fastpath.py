"""The recorder's fast path for ``Dataset.__getitem__`` (stdlib at import: loaded into traced programs).

A call costs the program a few hundred nanoseconds on top of h5py's own: two clock reads and one tuple
appended to the recorder's buffer (``benchmarks/trace_overhead.py --inprocess``). A numpy integer in the key
is stored as an int, after the call's clock stopped: pickled as a numpy scalar it cost more than the call.
"""

from __future__ import annotations

import time


def fast_getitem(rec, slow, fast_orig):
    """``Dataset.__getitem__`` for the common case, at the least cost: a key of ints and slices read by
    h5py's fast reader (what h5py's own ``__getitem__`` does first) is timed and kept as one tuple; the
    key is immutable, so it is described later, by ``ccp trace``. Anything else takes ``slow``."""
    import numpy as np
    from h5py._objects import phil

    perf = time.perf_counter_ns
    numpy_ints = {getattr(np, n) for n in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")}
    plain = {int, slice, type(Ellipsis), *numpy_ints}

    def __getitem__(self, args, new_dtype=None):
        if new_dtype is None and rec.stopped is None:
            key = args if type(args) is tuple else (args,)
            numpy_int = False
            for a in key:
                t = type(a)
                if t not in plain:
                    break
                if t in numpy_ints:
                    numpy_int = True
            else:
                with phil:
                    if self._fast_read_ok:
                        reader = self._fast_reader
                        t0 = perf()
                        try:
                            out = fast_orig(reader, key)
                        except TypeError:       # h5py falls back to its Python path: so do we
                            pass
                        else:
                            t1 = perf()
                            try:
                                if numpy_int:   # kept as ints: a numpy scalar costs ~10x an int to pickle
                                    key = ((int(key[0]),) if len(key) == 1 else
                                           tuple([int(a) if type(a) in numpy_ints else a for a in key]))
                                rec.fast_call(self._id, t0, t1, key)     # not .id: it takes the lock again
                            except Exception as exc:  # never disturb the program
                                rec.failed(exc)
                            return out
        return slow(self, args, new_dtype) if new_dtype is not None else slow(self, args)

    __getitem__.__wrapped__ = slow  # type: ignore[attr-defined]
    return __getitem__
