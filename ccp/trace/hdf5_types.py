"""Which HDF5 types the chunk-cache model cannot size (stdlib at import: loaded into traced programs).

A variable-length type (a vlen string, a ragged array) stores a reference per element in its chunks
and the elements themselves in the file's global heap: a chunk's bytes say nothing about what a read
costs, so such datasets are recorded with the HDF5 type's size (8 for a ``char*``, 16 for an ``hvl_t``)
and ``vlen`` set, and ``ccp diagnose`` leaves them out of its model with a line saying so.
"""

from __future__ import annotations

VLEN_STRING_SIZE = 8     # HDF5's in-memory vlen string: a char*
VLEN_SEQUENCE_SIZE = 16  # HDF5's in-memory vlen sequence: an hvl_t (length, pointer)


def vlen_info(tid) -> tuple[bool, int]:
    """(whether an h5py type id is variable-length, its HDF5 size in bytes)."""
    from h5py import h5t

    size = int(tid.get_size())
    if isinstance(tid, h5t.TypeVlenID):
        return True, size
    if isinstance(tid, h5t.TypeStringID) and tid.is_variable_str():
        return True, size
    return False, size
