"""Selections and layouts as the recorder writes them (stdlib at import: loaded into traced programs).

``describe_space`` reads a file dataspace HDF5 was given; ``describe_key`` a ``d[...]`` key without
HDF5 (the fast reader's ints and slices) and is also what ``ccp trace`` uses to describe the keys the
recorder kept raw; ``_layout`` a dataset's shape, chunks and filters.
"""

from __future__ import annotations

import os

MAX_LISTED = 4096           # points or hyperslab blocks listed one by one per call (plain, the common case)
MAX_LISTED_VALUES = 1 << 17  # ints of a larger call's list as runs (below); beyond, bounds only
MAX_EXAMINED = 1 << 22      # points or blocks fetched from HDF5 to look for runs; beyond, bounds only
RUNS = -1                   # first value of a list written as runs: a corner or coordinate is never negative


def _file_name(raw) -> str:
    name = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    return os.path.realpath(name) if os.path.exists(name) else name


def describe_space(fspace, shape) -> dict:
    """The file-dataspace selection in a compact, replayable form."""
    from h5py import h5s

    if fspace is None or fspace.id == h5s.ALL.id:
        n = 1
        for s in shape:
            n *= s
        return {"sel": "all", "start": [0] * len(shape), "count": list(shape), "nelems": n}
    kind = fspace.get_select_type()
    n = fspace.get_select_npoints()
    if kind == h5s.SEL_NONE or n == 0:
        return {"sel": "none", "nelems": 0}
    if kind == h5s.SEL_ALL:
        return {"sel": "all", "start": [0] * len(shape), "count": list(shape), "nelems": n}
    if kind == h5s.SEL_POINTS:
        out = {"sel": "points", "nelems": n}
        lo, hi = fspace.get_select_bounds()
        out["start"], out["count"] = list(lo), [h - lo_ + 1 for lo_, h in zip(lo, hi)]
        listed = _listed(fspace.get_select_elem_pointlist, n, len(shape))
        if listed is not None:
            out["points"] = listed
        return out
    if fspace.is_regular_hyperslab():
        start, stride, count, block = fspace.get_regular_hyperslab()
        if all(c == 1 or s == b for c, s, b in zip(count, stride, block)):
            return {"sel": "box", "start": list(start), "count": [c * b for c, b in zip(count, block)], "nelems": n}
        return {"sel": "regular", "start": list(start), "stride": list(stride), "count": list(count),
                "block": list(block), "nelems": n}
    nblocks = fspace.get_select_hyper_nblocks()
    lo, hi = fspace.get_select_bounds()
    out = {"sel": "blocks", "start": list(lo), "count": [h - lo_ + 1 for lo_, h in zip(lo, hi)], "nelems": n,
           "nblocks": nblocks}
    listed = _listed(fspace.get_select_hyper_blocklist, nblocks, 2 * len(shape))    # (start, end) corners
    if listed is not None:
        out["blocks"] = listed
    return out


def _listed(fetch, n: int, width: int) -> list | None:
    """The ``n`` points or blocks ``fetch()`` gives (an ``(n, ...)`` array of ``width`` ints each) as a flat list:
    one by one up to :data:`MAX_LISTED`; a larger call as runs when they fit in :data:`MAX_LISTED_VALUES` (or one by
    one when that is shorter and fits); else None (bounds only: ccp says its counts are upper bounds).

    Runs (``[RUNS, n1, *first1, *step1, n2, *first2, *step2, ...]``): each run is ``n`` items in arithmetic
    progression, item ``k`` being ``first + k * step`` over all ``width`` values (a list index ``d[::2]``-like, the
    rows of ``d[[0, 2, 4, ...], :, 2:8]``). Decoded by ``ccp.workload.replay.decode_runs``. Numpy's work here is
    proportional to what HDF5 already holds for the selection (its own list of points or blocks)."""
    if n <= MAX_LISTED:
        return fetch().ravel().tolist()
    if n > MAX_EXAMINED:
        return None
    import numpy as np

    items = np.asarray(fetch(), np.int64).reshape(n, width)
    step = np.diff(items, axis=0)
    # item j joins the run of item j - 1 when the step into it is the step into j - 1 (item 1 always joins item 0)
    joins = np.ones(n, bool)
    joins[0] = False
    joins[2:] = (step[1:] == step[:-1]).all(axis=1)
    first = np.flatnonzero(~joins)
    nruns = len(first)
    if nruns * (1 + 2 * width) + 1 >= n * width:       # runs no shorter than the items themselves
        return items.ravel().tolist() if n * width <= MAX_LISTED_VALUES else None
    if nruns * (1 + 2 * width) + 1 > MAX_LISTED_VALUES:
        return None
    lengths = np.diff(np.append(first, n))
    steps = np.zeros((nruns, width), np.int64)
    multi = lengths > 1
    steps[multi] = step[first[multi]]
    runs = np.concatenate([lengths[:, None], items[first], steps], axis=1)
    return [RUNS, *runs.ravel().tolist()]


def _simple_key(args, shape):
    """start/count of a key of ints and unit-step slices (the fast reader's usual case), else None."""
    if len(args) == 1 and args[0] is Ellipsis:
        args = ()
    if any(a is Ellipsis for a in args):
        if sum(a is Ellipsis for a in args) > 1:
            return None
        i = next(i for i, a in enumerate(args) if a is Ellipsis)
        args = args[:i] + (slice(None),) * (len(shape) - len(args) + 1) + args[i + 1:]
    if len(args) > len(shape):
        return None
    args = args + (slice(None),) * (len(shape) - len(args))
    start, count = [], []
    for a, n in zip(args, shape):
        if isinstance(a, slice):
            b, e, s = a.indices(n)
            if s != 1:
                return None
            start.append(b)
            count.append(max(e - b, 0))
        elif isinstance(a, int) or type(a).__name__.startswith("int"):
            try:
                i = int(a)
            except TypeError:
                return None
            i = i + n if i < 0 else i
            start.append(i)
            count.append(1)
        else:
            return None
    return start, count


def describe_key(args, shape) -> dict:
    simple = _simple_key(args, shape)
    if simple is not None:
        start, count = simple
        n = 1
        for c in count:
            n *= c
        if n == 0:
            return {"sel": "none", "nelems": 0}
        return {"sel": "box", "start": start, "count": count, "nelems": n}
    from h5py._hl import selections

    try:
        sel = selections.select(shape, args, None)
        return describe_space(sel.id, shape)
    except Exception:  # the call itself will raise or fall back; the selection stays unknown
        return {"sel": "unknown", "nelems": 0}


def _layout(dsid, storage_size: bool = True) -> dict:
    """``storage_size=False`` for a remote file: HDF5 walks the chunk index to sum it, reads the program
    would not have made then (through fsspec: other GETs)."""
    # here, not at the top: the recorder is loaded into a program before it imports anything itself
    from ccp.hdf5.filters import pipeline_from_dcpl, trace_filters

    dcpl = dsid.get_create_plist()
    filters = trace_filters(pipeline_from_dcpl(dcpl))
    chunks = dcpl.get_chunk() if dcpl.get_layout() == 2 else None   # H5D_CHUNKED
    try:
        import numpy as np

        fill = np.zeros((1,), dsid.dtype)
        dcpl.get_fill_value(fill)
        fill_value = fill[0].item() if fill.dtype.kind in "biuf" else None
    except Exception:  # the program must never see the recorder fail
        fill_value = None
    return {"shape": list(dsid.shape), "dtype": dsid.dtype.str, "itemsize": dsid.dtype.itemsize,
            "chunks": list(chunks) if chunks else None, "filters": filters, "fill_value": fill_value,
            "layout": {0: "compact", 1: "contiguous", 2: "chunked"}.get(dcpl.get_layout(), "other"),
            "storage_size": int(dsid.get_storage_size()) if storage_size else None}




ENCODED_MOST = 16384        # bytes of an encoded file dataspace a record keeps; a bigger one is described at once


def kept_space(fspace, shape) -> dict:
    """What :func:`describe_space` says of ``fspace``, left for later: the dataspace as HDF5 encodes it (``space``,
    one C call instead of the several a description takes, each a Python call into h5py) and its number of elements,
    which the call's bytes need now. ``ccp trace`` describes it as it merges the parts (:func:`describe_kept`). A
    selection of so many blocks or points that its encoding is over ``ENCODED_MOST`` bytes is described at once (its
    bounds only: see ``MAX_LISTED``), so that the records buffered stay small."""
    if fspace is None or fspace.id == _all_id():
        return describe_space(fspace, shape)
    raw = fspace.encode()
    if len(raw) > ENCODED_MOST:
        return describe_space(fspace, shape)
    return {"space": raw, "nelems": fspace.get_select_npoints()}


_ALL_ID: list = []


def _all_id() -> int:
    """h5py's ``h5s.ALL`` id, looked up once (an import statement per call cost a tenth of a call's recording)."""
    if not _ALL_ID:
        from h5py import h5s

        _ALL_ID.append(h5s.ALL.id)
    return _ALL_ID[0]


def describe_kept(rec: dict) -> dict:
    """``rec``, its selection described (in place) if :func:`kept_space` left it encoded."""
    if "space" not in rec:
        return rec
    from h5py import h5s

    raw = rec.pop("space")
    try:
        space = h5s.decode(raw)
    except Exception:  # not HDF5's encoding (a damaged part): what the call read stays unknown, its size known
        rec["sel"] = "unknown"
        return rec
    rec.update(describe_space(space, space.shape))
    return rec
