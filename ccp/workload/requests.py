"""Request plans: the hyperslabs a cell reads or writes, in order. Pure numpy, no I/O.

:func:`plan_for` is the one entry point: a tiling, random blocks, or a trace replay (planned by
:mod:`ccp.workload.replay`, which builds the same :class:`RequestPlan`; the type lives in
:mod:`ccp.workload.requestplan` so the replay does not import this module back).
"""

from __future__ import annotations

import numpy as np

from ccp.workload.requestplan import RequestPlan

__all__ = ["RequestPlan", "block_grid", "plan_for", "random_requests", "tile_requests"]


def block_grid(shape, block) -> tuple[int, ...]:
    """Blocks per dimension, edge blocks included."""
    return tuple(-(-s // b) for s, b in zip(shape, block))


def tile_requests(shape, block, order=None) -> RequestPlan:
    """Tile the dataset with blocks; ``order`` lists dims slowest first (default C order)."""
    shape, block = np.asarray(shape, np.int64), np.asarray(block, np.int64)
    rank = len(shape)
    order = list(order) if order is not None else list(range(rank))
    grid = block_grid(shape, block)
    # Enumerate block coordinates in the requested dim order: the last listed dim varies fastest.
    idx = np.indices([grid[d] for d in order]).reshape(rank, -1).T     # (n, rank) in `order` dims
    coords = np.empty_like(idx)
    coords[:, order] = idx
    starts = coords * block
    counts = np.minimum(block, shape - starts)
    return RequestPlan(starts.astype(np.int64), counts.astype(np.int64))


def random_requests(shape, block, n: int, seed: int = 0) -> RequestPlan:
    """``n`` block-aligned requests drawn uniformly (with replacement) from the block grid."""
    shape, block = np.asarray(shape, np.int64), np.asarray(block, np.int64)
    grid = np.asarray(block_grid(shape, block), np.int64)
    rng = np.random.default_rng(seed)
    coords = np.stack([rng.integers(0, g, size=n) for g in grid], axis=1) if len(grid) else np.zeros((n, 0), np.int64)
    starts = coords * block
    counts = np.minimum(block, shape - starts)
    return RequestPlan(starts.astype(np.int64), counts.astype(np.int64))


def plan_for(access, shape, strided: bool = True) -> RequestPlan:
    """The plan of an :class:`~ccp.config.sweep.AccessSpec` over a dataset shape; ``strided``: a traced regular
    hyperslab call as one strided request, as the program made it (what the model and every runner take), else as
    boxes, a run per chunk of the traced layout (for what reads boxes only: S3 GET predictions, explain's chunk
    checks; see :func:`~ccp.workload.replay_batches.traced_plan`)."""
    if getattr(access, "trace", None) is not None:
        from ccp.workload.replay_batches import traced_plan

        plan, reopen_before, _caches = traced_plan(access.trace, access.trace_dataset, shape, access.pid, access.op,
                                                   strided)
        return RequestPlan(np.asarray(plan.starts, np.int64), np.asarray(plan.counts, np.int64),
                           np.asarray(reopen_before, np.int64), plan.strides, plan.blocks)
    if access.random:
        return random_requests(shape, access.block, access.random, access.seed)
    return tile_requests(shape, access.block, access.order)
