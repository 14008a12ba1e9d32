"""The cell trap check (explain.traps), computed once per layout and pattern, against the request-by-request
check it replaced (every request's chunks hashed, per cell)."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from ccp.predict import explain
from ccp.run.checks import prepare
from ccp.units import format_bytes, shape_str
from ccp.workload.requests import plan_for


def reference_traps(cell, source, max_requests: int = 256) -> list[str]:
    from ccp.model import ChunkGrid

    out: list[str] = []
    if cell.chunks is None:
        return out
    chunk_bytes = int(np.prod(cell.chunks)) * np.dtype(source.dtype).itemsize
    nbytes = cell.cache.nbytes
    grid = ChunkGrid(tuple(source.shape), tuple(cell.chunks))
    plan = plan_for(cell.access, source.shape)
    partial = any(any(c % k for c, k in zip(cnt, cell.chunks)) or any(s % k for s, k in zip(st, cell.chunks))
                  for st, cnt in zip(plan.starts[:max_requests], plan.counts[:max_requests]))
    if chunk_bytes > nbytes and partial and not cell.filters.is_none:
        out.append(f"chunk larger than the cache: a {shape_str(cell.chunks)} chunk is {format_bytes(chunk_bytes)}, the cache "
                   f"{format_bytes(nbytes)}; every request that covers part of a chunk decompresses the whole chunk again")
    fits = max(1, nbytes // max(chunk_bytes, 1))
    for st, cnt in zip(plan.starts[:max_requests], plan.counts[:max_requests]):
        touched = grid.chunks_touched(tuple(map(int, st)), tuple(map(int, cnt)))
        if 1 < len(touched) <= fits:
            slots = [grid.slot(c, cell.cache.nslots) for c in touched]
            if len(set(slots)) < len(slots):
                out.append(f"hash-slot collision: one request needs {len(touched)} chunks that fit the cache together, but some "
                           f"share a slot of the {cell.cache.nslots}-slot hash table, so they evict each other "
                           f"(use a prime nslots, 10-100x the chunks that fit)")
                break
    return out


@pytest.mark.parametrize("shape", [[32, 32], [12, 20, 9]], ids=["2d", "3d"])
def test_traps_equal_the_request_by_request_check(tmp_path, shape):
    rank = len(shape)
    sweep = {
        "name": "traps",
        "dataset": {"generate": {"shape": shape, "dtype": "<f4"}},
        "matrix": {"chunks": [[6] * rank, [8, 2] + [3] * (rank - 2), [1] * rank],
                   "filters": ["none", "gzip:1"],
                   "cache": [{"nbytes": n, "nslots": s} for n in (64, 4096, 1 << 20) for s in (1, 2, 3, 8, 521)],
                   "access": [{"op": "read", "block": b} for b in ([8] * rank, [3] + [5] * (rank - 1), [1] * rank)]
                   + [{"op": "read", "block": [4] * rank, "random": 20, "seed": 3}]},
        "repeats": 1, "cold": False,
    }
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(sweep))
    _, source, cells = prepare(path)
    seen = set()
    for cell in cells:
        got = explain.traps(cell, source)
        assert got == reference_traps(cell, source), cell
        seen.update(t.split(":")[0] for t in got)
    assert seen == {"hash-slot collision", "chunk larger than the cache"}   # both traps are exercised
