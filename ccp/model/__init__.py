"""Pure planning model of HDF5 raw-data I/O: chunk grid math and the chunk cache (no h5py)."""

from ccp.model.cache import (
    DEFAULT_NBYTES,
    DEFAULT_NSLOTS,
    DEFAULT_SIEVE_BUF_SIZE,
    DEFAULT_W0,
    CacheParams,
    DatasetModel,
    RequestPrediction,
    simulate,
    summarise,
)
from ccp.model.grid import ChunkGrid, contiguous_runs

__all__ = [
    "CacheParams", "ChunkGrid", "DatasetModel", "RequestPrediction", "simulate", "summarise",
    "contiguous_runs", "DEFAULT_NBYTES", "DEFAULT_NSLOTS", "DEFAULT_W0", "DEFAULT_SIEVE_BUF_SIZE",
]
