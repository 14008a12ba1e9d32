"""A time budget's prefix extrapolated to the whole pass: the first request is its own class, and the unmeasured
requests make the I/O the model predicts for them (breaker10 B14: the first request, which loaded the chunk the other
255 found in the cache, scaled by 256 read 128x a 2 MiB dataset's bytes)."""

import numpy as np
import pytest

from ccp.measurement.extrapolate import extrapolate
from ccp.measurement.passes import REQUEST_MODEL_COLUMNS

N = 256
MIB = 1 << 20


def _model(time_s=None) -> np.ndarray:
    """256 requests over two 1 MiB chunks: requests 0 and 128 load one (one raw read each), the rest hit."""
    cols = {name: np.zeros(N) for name in REQUEST_MODEL_COLUMNS}
    for first in (0, 128):
        cols["raw_reads"][first] = cols["chunk_loads"][first] = 1
        cols["raw_read_bytes"][first] = MIB
    cols["time_s"] = np.full(N, np.nan) if time_s is None else time_s
    return np.stack([cols[name] for name in REQUEST_MODEL_COLUMNS], axis=1)


CLASSES = np.where(_model()[:, 0] > 0, 1, 0)       # the model's classes: a load, or a hit


@pytest.mark.parametrize("column, first, total", [
    ("raw_reads", 1, 2),
    ("raw_read_bytes", MIB, 2 * MIB),
], ids=["reads", "bytes"])
def test_unmeasured_requests_make_the_io_the_model_predicts(column, first, total):
    assert extrapolate(CLASSES, 1, np.array([first]), _model(), column) == total


def test_a_count_the_model_gets_wrong_on_the_prefix_is_not_the_models():
    """The model said one raw read, the log counted two: the rest are not the model's; a request the model says hits
    the cache reaches no file, one that loads a chunk costs what the measured one did."""
    assert extrapolate(CLASSES, 1, np.array([2.0]), _model(), "raw_reads") == 4


def test_meta_counts_of_cache_hits_are_none():
    """Meta reads are not modelled: the first request read the chunk index; the hits read nothing."""
    assert extrapolate(CLASSES, 1, np.array([1.0]), _model(), "meta_reads") == 2


def test_time_of_an_unseen_class_is_the_calibrated_models_scaled_by_the_prefix():
    predicted = np.where(CLASSES == 1, 4e-3, 1e-5)
    total = extrapolate(CLASSES, 1, np.array([8e-3]), _model(predicted), "time_s")
    # measured 2x the model's first request: every unmeasured one at 2x its prediction
    assert total == pytest.approx(8e-3 + 2 * (4e-3 + 254 * 1e-5))


@pytest.mark.parametrize("model", [None, _model()], ids=["no-model", "uncalibrated-model"])
def test_time_without_a_calibration_comes_from_the_requests_after_the_first(model):
    """No model: one class, the mean of requests 2..3. A model without a calibration: the load at 128 is a class
    requests 2..3 lack, costed at their mean too. Never the first request's time x 256."""
    measured = np.array([5e-3, 1e-5, 1e-5])          # the first loads a chunk, the next two hit it
    classes = CLASSES if model is not None else np.zeros(N, np.int64)
    assert extrapolate(classes, 3, measured, model, "time_s") == pytest.approx(5e-3 + 255 * 1e-5)


def test_a_whole_pass_is_its_sum():
    measured = np.arange(N, dtype=float)
    assert extrapolate(CLASSES, N, measured, _model(), "time_s") == measured.sum()


def _prefix_with_one_spike(k: int, first: float, each: float, spike: float) -> np.ndarray:
    """A measured prefix: the first request, then ``each`` per request but one a scheduler tick stretched."""
    measured = np.full(k, each)
    measured[0], measured[k // 2] = first, spike
    return measured


@pytest.mark.parametrize("model", [None, _model()], ids=["no-model", "uncalibrated-model"])
def test_one_slow_request_in_the_prefix_is_that_requests_alone(model):
    """breaker11 C8: 65 of 256 requests timed, one of them 4.2 ms under load; the rest are priced at the median of
    requests 2..65 (10 us), not their mean, which the one tick made 75 us (a 2.7 ms cell read 20.5 ms)."""
    k = 65
    measured = _prefix_with_one_spike(k, first=50e-6, each=10e-6, spike=4.2e-3)
    classes = CLASSES if model is not None else np.zeros(N, np.int64)
    assert extrapolate(classes, k, measured, model, "time_s") == pytest.approx(measured.sum() + (N - k) * 10e-6)


def test_an_unseen_class_is_scaled_by_the_prefixs_median_ratio_to_the_model():
    """The load at request 128 (a class the prefix lacks) costs the calibrated model's 4 ms times the measured requests'
    median ratio to it (2x: 20 us against 10 us), not the ratio of their sums, which the one 4.2 ms tick would raise."""
    k = 65
    predicted = np.where(CLASSES == 1, 4e-3, 1e-5)
    measured = _prefix_with_one_spike(k, first=8e-3, each=2e-5, spike=4.2e-3)
    total = extrapolate(CLASSES, k, measured, _model(predicted), "time_s")
    assert total == pytest.approx(measured.sum() + (N - k - 1) * 2e-5 + 2 * 4e-3)


def test_counts_keep_their_mean():
    """A count is exact, not noisy: a class's unmeasured requests make its measured ones' mean (the total kept)."""
    measured = np.array([3.0, 1.0, 0.0, 2.0])
    assert extrapolate(np.zeros(8, np.int64), 4, measured, None, "meta_reads") == pytest.approx(6.0 + 4 * 1.0)
