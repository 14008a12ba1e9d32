"""``ccp repack``: change chunking and filters of HDF5 datasets, faster than h5repack.

Names are imported lazily so that ``ccp --help`` (which loads :mod:`ccp.repack.command`)
does not pay for h5py.
"""

_EXPORTS = {
    "DatasetResult": "ccp.repack.copy", "RepackResult": "ccp.repack.copy", "repack": "ccp.repack.copy",
    "repack_dataset": "ccp.repack.copy",
    "Layout": "ccp.repack.options", "RepackOptions": "ccp.repack.options", "parse_options": "ccp.repack.options",
    "DEFAULT_BUFFER_BYTES": "ccp.repack.plan", "SlabPlan": "ccp.repack.plan", "plan_slabs": "ccp.repack.plan",
}

__all__ = ["DEFAULT_BUFFER_BYTES", "DatasetResult", "Layout", "RepackOptions", "RepackResult", "SlabPlan",
           "parse_options", "plan_slabs", "repack", "repack_dataset"]


def __getattr__(name):
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'ccp.repack' has no attribute {name!r}")
