"""The HDF5 library's own defaults, per version: what a dataset gets when nobody sets anything.

The raw-data chunk cache (``H5Pset_chunk_cache`` / ``H5Pset_cache``): 1 MiB and 521 slots in every
1.x release, 8 MiB and 8191 slots from 2.0 (H5Dprivate.h, ``H5D_CHUNK_CACHE_NBYTES_DEFAULT`` /
``H5D_CHUNK_CACHE_NSLOTS_DEFAULT``); the preemption weight w0 is 0.75 in both.
"""

from __future__ import annotations

import functools

from ccp.chunkcache import HDF5_1X, HDF5_2X, ChunkCache


def hdf5_version() -> tuple[int, int, int]:
    """The version of the libhdf5 h5py is linked with (its wheel bundles one)."""
    import h5py

    major, minor, release = (int(v) for v in h5py.version.hdf5_version_tuple[:3])
    return major, minor, release


def chunk_cache_default(version: tuple[int, ...] | None = None) -> ChunkCache:
    """The chunk cache HDF5 ``version`` gives a dataset (default: the HDF5 in this process)."""
    version = hdf5_version() if version is None else tuple(version)
    return HDF5_2X if version[:1] >= (2,) else HDF5_1X


#: The preemption weight w0 HDF5 gives a cache in every version (fully read or written chunks are evicted
#: first). ccp uses it wherever it sizes a cache and has no reason to prefer another weight.
DEFAULT_W0 = HDF5_2X.w0
#: The fewest hash slots ccp gives a cache it sizes (and what a cache of one or two chunks gets): HDF5 1.x's
#: default slot count, a prime, so chunks a stride apart rarely share a slot.
MIN_NSLOTS = HDF5_1X.nslots


@functools.cache
def library_cache(level: str = "dataset") -> ChunkCache:
    """The chunk cache the HDF5 in this process gives when nobody sets one, probed once from the library
    itself (a fresh dataset access list, or at ``level="file"`` a fresh file access list's H5Pget_cache):
    what ``--cache`` defaults to and what the environment record states. Agrees with
    :func:`chunk_cache_default` for an unpatched library; the probe is what this process really does."""
    from h5py import h5p

    if level == "dataset":
        nslots, nbytes, w0 = h5p.create(h5p.DATASET_ACCESS).get_chunk_cache()
    elif level == "file":
        _mdc, nslots, nbytes, w0 = h5p.create(h5p.FILE_ACCESS).get_cache()
    else:
        raise ValueError(f"level must be 'dataset' or 'file', not {level!r}")
    return ChunkCache(int(nbytes), int(nslots), float(w0))
