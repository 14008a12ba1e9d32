"""Pure planning model of HDF5 raw-data I/O: chunk grid math and the chunk cache (no h5py).

``simulate`` is the reference (Python, one object per cache entry); ``simulate_fast`` and
``simulate_arrays`` (``ccp.model.fast``, numba-compiled, imported on first use) give the same
predictions several hundred times faster (``benchmarks/model_speed.py``); ``ArrayModel`` is that model
fed a plan in batches, its state kept between them.
"""

from ccp.model.cache import (
    DEFAULT_NBYTES,
    DEFAULT_NSLOTS,
    DEFAULT_SIEVE_BUF_SIZE,
    DEFAULT_W0,
    DatasetModel,
    RequestPrediction,
    simulate,
    summarise,
)
from ccp.model.grid import ChunkGrid, contiguous_runs

__all__ = [
    "ArrayModel",
    "DEFAULT_NBYTES",
    "DEFAULT_NSLOTS",
    "DEFAULT_SIEVE_BUF_SIZE",
    "DEFAULT_W0",
    "ChunkGrid",
    "DatasetModel",
    "Predictions",
    "RequestPrediction",
    "chunk_size_table",
    "contiguous_runs",
    "simulate",
    "simulate_arrays",
    "simulate_fast",
    "simulate_tiling",
    "summarise",
]
_FAST = ("ArrayModel", "Predictions", "simulate_fast", "simulate_arrays", "simulate_tiling", "chunk_size_table")


def __getattr__(name: str):
    if name in _FAST:            # numba is imported only by code that uses the compiled model
        from ccp.model import fast

        return getattr(fast, name)
    raise AttributeError(f"module 'ccp.model' has no attribute {name!r}")
