"""A wrapper that passes for what it wraps: the program's help(), pydoc and autodoc see the library's own name,
qualified name, module and docstring."""

from __future__ import annotations

import functools


def like(orig, wrapper):
    """``wrapper`` named and documented as ``orig``, its ``__module__`` too: None where a compiled method (h5py's and
    netCDF4's Cython slots) has none."""
    out = functools.wraps(orig)(wrapper)
    if not hasattr(orig, "__module__"):
        out.__module__ = None  # type: ignore[assignment]
    return out
