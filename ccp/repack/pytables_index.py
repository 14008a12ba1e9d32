"""PyTables' column indexes, whose arrays are laid out for the indexed table's chunks.

A PyTables Table ``/g/t`` with indexed columns keeps its indexes in the group ``/g/_i_t`` (CLASS
``TINDEX``), one group per column (CLASS ``INDEX``) holding the index arrays. The index counts rows in
the table's chunks (``tables/index.py``: ``nrowsinchunk = table.chunkshape[0]``) and checks its own
arrays' chunks on opening (``chunksize == indices._v_chunkshape[1]``). A copy that changes either
chunk shape keeps an index that answers ``read_where`` (and pandas' ``where=``) with wrong rows
(measured: 1 row of 14 after ``-l /table/table:CHUNK=7``), while a copy that keeps the chunks and
changes only the filters answers as the input does.
"""

from __future__ import annotations

import h5py

_CURE = "ptrepack --chunkshape=N --propindexes rebuilds it, or drop the index first"


def _class_of(obj) -> bytes:
    try:
        value = obj.attrs.get("CLASS")
    except Exception:  # an attribute h5py cannot read is no PyTables class
        return b""
    return bytes(value) if isinstance(value, bytes | bytearray) else (value.encode() if isinstance(value, str) else b"")


def _indexed_columns(index_group: h5py.Group) -> list[str]:
    """The column paths (nested columns as a/b) indexed under a TINDEX group."""
    found: list[str] = []

    def visit(name, obj):
        if isinstance(obj, h5py.Group) and _class_of(obj) == b"INDEX":
            found.append(name)

    index_group.visititems(visit)
    return sorted(found)


def _group(f: h5py.File, path: str):
    try:
        obj = f.get(path)
    except Exception:  # a broken link is no index
        return None
    return obj if isinstance(obj, h5py.Group) else None


def chunks_bound_index(ds: h5py.Dataset, path: str) -> str:
    """Why ``ds`` (reached at ``path``) must keep its chunk shape for a PyTables index; '' when it need not."""
    parent, _, name = path.rpartition("/")
    kind = _class_of(ds)
    if kind == b"TABLE":
        group = _group(ds.file, f"{parent}/_i_{name}")
        if group is None or _class_of(group) != b"TINDEX":
            return ""
        columns = _indexed_columns(group)
        if not columns:
            return ""
        return (f"{path} is indexed by PyTables (column{'s' if len(columns) > 1 else ''} {', '.join(columns)}): "
                f"its index is built for its chunks; {_CURE}")
    index = _group(ds.file, parent or "/")
    if index is None or _class_of(index) != b"INDEX":
        return ""
    # /g/_i_t/<column path>/<array>: the table is /g/t
    parts = path.split("/")
    for i in range(len(parts) - 2, 0, -1):
        if parts[i].startswith("_i_"):
            table = "/".join([*parts[:i], parts[i][3:]])
            column = "/".join(parts[i + 1:-1])
            return (f"{path} is part of PyTables' index of column {column} of {table}: the index reads its arrays "
                    f"in their own chunks; {_CURE}")
    return ""
