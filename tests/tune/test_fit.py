"""Prices fitted to the first measured round: the fit recovers known factors, resists too few
cells, and keeps the search's bound a bound (the fitted prices are the probes' scaled)."""

import math

import numpy as np
import pytest

from ccp.chunkcache import ChunkCache
from ccp.config.sweep import AccessSpec, DatasetSpec, GenerateSpec
from ccp.hdf5.dataset import describe_source
from ccp.tune.fit import Observation, fit_prices, nnls, observe
from ccp.tune.prove import Contender
from ccp.tune.search import PRICE_GROUPS, evaluate, read_bound
from ccp.tune.workload import WorkItem


def source_of(shape):
    return describe_source(DatasetSpec("/data", generate=GenerateSpec(tuple(shape), np.dtype("<f4"))))


@pytest.mark.parametrize("a, b", [
    ([[1.0, 0.0], [0.0, 1.0]], [2.0, -1.0]),
    ([[1.0, 1.0], [1.0, 2.0], [1.0, 3.0]], [1.0, 2.0, 3.0]),
    ([[2.0, 1.0, 0.5], [1.0, 0.0, 1.0], [0.0, 1.0, 3.0], [1.0, 1.0, 1.0]], [1.0, -2.0, 0.5, 0.3]),
], ids=["one-negative", "exact", "mixed"])
def test_nnls_matches_a_brute_grid(a, b):
    a, b = np.array(a), np.array(b)
    x = nnls(a, b)
    assert np.all(x >= 0)
    grid = np.linspace(0, 3, 61)
    best = min(float(np.sum((a @ np.array(p) - b) ** 2)) for p in np.array(np.meshgrid(*[grid] * a.shape[1])).reshape(a.shape[1], -1).T)
    assert float(np.sum((a @ x - b) ** 2)) <= best + 1e-9


def layouts(costs, nofilter, gzip):
    src = source_of((64, 32, 32))
    items = (WorkItem(AccessSpec("read", (64, 1, 1)), 1.0), WorkItem(AccessSpec("read", (1, 32, 32)), 1.0))
    cs = [Contender(str(ch), ch, f, ChunkCache(1 << 16, 521, 0.75), 0.0, "candidate")
          for ch in [(64, 4, 4), (1, 32, 32), (8, 8, 8), (16, 2, 32)] for f in (nofilter, gzip)]
    return src, items, cs


def test_fit_recovers_known_factors(costs, nofilter, gzip):
    """Cells 'measured' as the model with requests 3x dearer, chunks 0.5x, bytes 2x, the device 4x, 1 ms of open:
    the fit finds those factors and predicts every cell within 2%."""
    src, items, cs = layouts(costs, nofilter, gzip)
    truth = costs.scaled({"request": 3.0, "chunk": 0.5, "byte": 2.0, "cold": 4.0, "write": 1.0}, 1e-3, "truth")
    obs = []
    for c in cs:
        for it in items:
            t = evaluate(c.chunks, c.filters, c.cache, src, (WorkItem(it.access, 1.0),), truth).workload_s
            obs.append(observe(c, it, src, costs, t))
    fit = fit_prices(costs, obs)
    assert fit is not None and fit.cells == len(obs)
    assert math.exp(fit.error_after) < 1.02 < math.exp(fit.error_before)
    for c in cs:
        want = evaluate(c.chunks, c.filters, c.cache, src, items, truth).workload_s
        got = evaluate(c.chunks, c.filters, c.cache, src, items, fit.costs).workload_s
        assert got == pytest.approx(want, rel=0.02)


def parts_of(**seconds) -> tuple[float, ...]:
    """An equation's parts: the model's seconds under the named groups' prices, 0 under the others."""
    return tuple(float(seconds.get(g, 0.0)) for g in PRICE_GROUPS)


def test_too_few_cells_keep_the_probe_prices(costs):
    every = parts_of(**{g: 1.0 for g in PRICE_GROUPS if g != "open"})
    assert fit_prices(costs, [Observation(every, 2.0)] * 2) is None
    assert fit_prices(costs, [Observation(every, math.nan)] * 5) is None


def test_a_group_no_cell_uses_keeps_its_price(costs):
    """Only request costs in the cells: the chunk and byte factors stay at 1 (the prior), not at a limit."""
    obs = [Observation(parts_of(request=t), 2 * t) for t in (0.1, 0.2, 0.4, 0.8)]
    fit = fit_prices(costs, obs)
    assert fit.scales["request"] == pytest.approx(2.0, rel=0.1)
    assert all(fit.scales[g] == pytest.approx(1.0) for g in ("chunk", "byte", "cold", "cold_byte", "write"))
    assert set(fit.scales) == set(PRICE_GROUPS)


def test_the_bound_stays_below_the_model_with_fitted_prices(costs, nofilter, gzip):
    src, items, cs = layouts(costs, nofilter, gzip)
    fitted = costs.scaled({"request": 0.2, "chunk": 7.0, "byte": 0.1, "cold": 30.0, "write": 0.5}, 5e-3, "a fit")
    for c in cs:
        assert read_bound(c.chunks, c.filters, src, items, fitted) <= \
            evaluate(c.chunks, c.filters, c.cache, src, items, fitted).read_s * (1 + 1e-9)


def test_the_groups_sum_to_the_whole(costs, gzip):
    src = source_of((64, 32, 32))
    items = (WorkItem(AccessSpec("read", (8, 8, 8), random=50), 1.0),)
    args = ((16, 4, 8), gzip, ChunkCache(4096, 521, 0.75), src, items)
    whole = evaluate(*args, costs.scaled({}, 2e-3, "x")).workload_s
    assert sum(evaluate(*args, costs.scaled({}, 2e-3, "x").group(g)).workload_s for g in PRICE_GROUPS) == \
        pytest.approx(whole, rel=1e-9)


def test_one_wild_cell_does_not_move_the_prices(costs):
    """A cell extrapolated 400x too high (a slow first request scaled to the whole pattern): the
    others still fit their factor."""
    obs = [Observation(parts_of(request=t, chunk=t / 2, byte=t / 4), 2 * (t + t / 2 + t / 4))
           for t in (0.1, 0.2, 0.4, 0.8, 0.3, 0.5)]
    obs.append(Observation(parts_of(request=0.1, chunk=0.05, byte=0.025), 400 * 0.35))
    fit = fit_prices(costs, obs)
    sc = fit.scales
    for o in obs[:-1]:
        predicted = sc["request"] * o.parts[0] + sc["chunk"] * o.parts[1] + sc["byte"] * o.parts[2] + sc["open"]
        assert predicted == pytest.approx(o.measured_s, rel=0.1), sc


def test_an_equation_of_more_passes_weighs_more(costs):
    """Cells of 7 back-to-back passes (the runoff) that disagree with cells of 3 (a first round) pull the
    prices their way: the median of more passes is the steadier measurement."""
    req = PRICE_GROUPS.index("request")
    parts = [tuple(1e-3 * (k + 1) if j == req else 0.0 for j in range(len(PRICE_GROUPS))) for k in range(4)]
    steady = [Observation(p, 2 * p[req], passes=7) for p in parts]
    rough = [Observation(p, p[req], passes=3) for p in parts]
    weighted = fit_prices(costs, steady + rough).scales["request"]
    equal = fit_prices(costs, [Observation(o.parts, o.measured_s) for o in steady + rough]).scales["request"]
    assert abs(weighted - 2.0) < abs(equal - 2.0)
    assert 1.0 <= equal <= 2.0 and weighted <= 2.0


def test_an_update_keeps_the_prior_where_its_cells_are_silent(costs):
    """The runoff's few cells update the first round's fit: the factor they exercise moves to them, the
    others stay at the prior's (not at 1, the probes' prices)."""
    prior = {g: 1.0 for g in PRICE_GROUPS} | {"request": 3.0, "cold": 0.5, "open": 2e-3}
    obs = [Observation(parts_of(byte=t), 2 * t + 2e-3) for t in (0.1, 0.2, 0.4)]
    fit = fit_prices(costs, obs, prior=prior)
    assert fit.scales["byte"] == pytest.approx(2.0, rel=0.05)
    assert fit.scales["request"] == pytest.approx(3.0, rel=0.01) and fit.scales["cold"] == pytest.approx(0.5, rel=0.01)
    assert fit.scales["open"] == pytest.approx(2e-3, rel=0.1)
    assert fit_prices(costs, obs[:2], prior=prior) is not None      # two cells update a prior; alone, three fit
    assert fit_prices(costs, obs[:2]) is None and fit_prices(costs, obs[:1], prior=prior) is None
