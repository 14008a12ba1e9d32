"""Compile every numba kernel of ``ccp.model`` into its on-disk cache (``ccp/model/__pycache__``), once.

tests/conftest.py runs this in a process of its own when ``make test`` starts its xdist workers: on a fresh clone
each worker (and each ``ccp`` subprocess a test starts before the cache is written) compiled the same 14
signatures itself, ~30 s of one core each; now the workers wait for this one process and load what it wrote.
Each call below reaches kernels the others do not (which signatures: the ``.nbc`` files it leaves, 14 on
numba 0.68); a kernel it misses is compiled where it is first used, as before, so a gap costs time, never a result.
"""

from ccp.chunkcache import ChunkCache
from ccp.model import simulate_fast, simulate_tiling
from ccp.model.union import MultiBox


def warm() -> None:
    cache = ChunkCache(1 << 20, 521, 0.75)
    for filtered in (False, True):
        sizes = (lambda c: 400) if filtered else None
        boxes = [("read", (0, 0), (5, 10))] * 4 + [("write", (5, 0), (5, 10))]     # repeats: the periodic path
        strided = [("read", (0, 0), (9, 9), (2, 2), (1, 1))]
        calls = [MultiBox.of("read", [(0, 0), (3, 0)], [(1, 10), (1, 10)], points=False),
                 MultiBox.of("read", [(0, 0), (7, 7)], [(1, 1), (1, 1)], points=True), ("read", (0, 0), (2, 2))]
        for requests in (boxes, strided, calls):
            simulate_fast((10, 10), (5, 5), 8, filtered=filtered, cache=cache, requests=requests,
                          stored_chunk_bytes=sizes)
    simulate_fast((10, 10), None, 8, filtered=False, cache=cache, requests=[("read", (0, 0), (5, 10))])
    simulate_tiling((10, 10), (5, 5), 8, filtered=False, cache=cache, op="read", block=(1, 10))


if __name__ == "__main__":
    warm()
