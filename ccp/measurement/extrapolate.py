"""A time budget's measured prefix of a pass extrapolated to all its requests: a time or an I/O count.

Apart from ``runner`` (which measures the prefix and builds the row) so that the estimate is one idea, tested alone
(tests/measurement/test_extrapolate.py).
"""

from __future__ import annotations

import numpy as np

from ccp.measurement.passes import REQUEST_MODEL_COLUMNS, CellJob


def model_of(job: CellJob, n_full: int) -> np.ndarray | None:
    """The job's per-request model (REQUEST_MODEL_COLUMNS), or None when it has none for these requests."""
    model = job.request_model
    if model is None or len(model) != n_full:
        return None
    return np.asarray(model, dtype=np.float64)


def _class_prices(values: np.ndarray, cls: np.ndarray, ncls: int, robust: bool) -> np.ndarray:
    """Per class, the price of one of its requests among ``values``: the median when ``robust`` (a time: one
    scheduler tick in the prefix is one request's, not every unmeasured request's), else the mean (a count: exact,
    its mean keeps the total). A class with no value: 0 (the caller sees it unseen)."""
    if not robust:
        seen = np.bincount(cls, minlength=ncls)
        return np.bincount(cls, weights=values, minlength=ncls) / np.maximum(seen, 1)
    prices = np.zeros(ncls)
    order = np.argsort(cls, kind="stable")
    bounds = np.flatnonzero(np.diff(cls[order])) + 1
    for group in np.split(order, bounds):
        if len(group):
            prices[cls[group[0]]] = float(np.median(values[group]))
    return prices


def extrapolate(classes: np.ndarray, k: int, measured: np.ndarray, model: np.ndarray | None = None,
                column: str = "time_s") -> float:
    """Sum over all requests of one quantity (``column``: a time in ns or an I/O count), from the first ``k`` measured.

    The first request is its own class: it reads the chunk index and loads chunks the rest may find in the cache
    (scaling it by the requests once read 128x a 2 MiB dataset's bytes: breaker10 B14). A count the model predicts
    (``model``, REQUEST_MODEL_COLUMNS), which agrees with every measured request, is the model's for the rest: it is
    exact. Otherwise each later request costs the price of its class among measured requests 2..k (classes group
    requests the model says do the same work): for a count the class's mean; for a time its median, so one request a
    scheduler tick or a page fault stretched stays that request's (breaker11 C8: one 4.2 ms request in a 65-request
    prefix, scaled with the prefix's sum, made a 2.7 ms cell 20.5 ms). A class none of them has costs the model's
    calibrated time scaled by the measured requests' median ratio to it (time), nothing when the model says its
    requests load no chunk and make no raw I/O (counts: a cache hit reaches no file), and else the price of all
    measured requests 2..k, or the first's.
    """
    measured = np.asarray(measured, dtype=np.float64)[:k]
    n = len(classes)
    if k == 0 or n <= k:
        return float(measured.sum())
    predicted = model[:, REQUEST_MODEL_COLUMNS.index(column)] if model is not None and column in REQUEST_MODEL_COLUMNS else None
    if predicted is not None and column != "time_s" and np.array_equal(predicted[:k], measured):
        return float(measured.sum() + predicted[k:].sum())
    robust = column == "time_s"
    later, later_cls = measured[1:], np.asarray(classes[1:k], dtype=np.int64)
    ncls = int(classes.max()) + 1
    seen = np.bincount(later_cls, minlength=ncls)
    prices = _class_prices(later, later_cls, ncls, robust)
    if len(later):
        fallback = float(np.median(later)) if robust else float(later.mean())
    else:
        fallback = float(measured[0])
    rest_cls = classes[k:]
    estimate = np.where(seen[rest_cls] > 0, prices[rest_cls], fallback)
    unseen = seen[rest_cls] == 0
    if model is not None and unseen.any():
        if column == "time_s":
            pred_time = model[:, REQUEST_MODEL_COLUMNS.index("time_s")]
            basis = slice(1, k) if k > 1 else slice(0, 1)
            known, took = pred_time[basis], measured[basis]
            usable = np.isfinite(known) & (known > 0)
            if usable.any() and np.all(np.isfinite(pred_time[k:])):
                ratio = float(np.median(took[usable] / known[usable]))
                estimate = np.where(unseen, pred_time[k:] * ratio, estimate)
        else:
            io = model[k:, [REQUEST_MODEL_COLUMNS.index(c) for c in ("raw_reads", "raw_writes", "chunk_loads")]]
            estimate = np.where(unseen & (io.sum(axis=1) == 0), 0.0, estimate)
    return float(measured.sum() + estimate.sum())
