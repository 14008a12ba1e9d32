"""File-level layout for object storage: paged file-space aggregation, the page buffer, cloud-optimized copies.

``file_space: {strategy: page, page_size: 4MiB}`` is ``H5Pset_file_space_strategy(PAGE, persist,
threshold)`` with ``H5Pset_file_space_page_size``: HDF5 gathers metadata into pages of its own, so a
reader fetches the metadata of a whole file in a few page-sized reads. ``page_buffer: 16MiB`` is
``H5Pset_page_buffer_size`` on read (only a paged file can have one). h5py exposes both on
``h5py.File`` (``fs_strategy``, ``fs_page_size``, ``fs_persist``, ``fs_threshold``; ``page_buf_size``).
"""

from __future__ import annotations

import os

from ccp.config.storage import (
    REPACK_STRATEGIES,
    STRATEGIES,
    FileSpace,
    parse_file_space,
    parse_page_buffer,
    parse_repack_file_space,
)
from ccp.errors import CcpError, ConfigError
from ccp.hdf5.plists import apply_file_space, file_page_size


def page_buffer_kwargs(page_buffer: int, file_page_size: int | None, where: str = "page_buffer") -> dict:
    """``h5py.File`` read kwargs for a page buffer; one line when the file cannot take it."""
    if not page_buffer:
        return {}
    if file_page_size is None:
        raise ConfigError(where, "a page buffer needs a paged file (file_space: {strategy: page})")
    if page_buffer < file_page_size:
        raise ConfigError(where, f"{page_buffer} bytes is smaller than the file's page ({file_page_size} bytes)")
    return {"page_buf_size": int(page_buffer)}


def create_file(path, file_space: FileSpace | None, **kwargs):
    """``h5py.File(path, 'w')`` with ``file_space`` (None: HDF5's default strategy)."""
    import h5py

    kw = dict(kwargs)
    if file_space is not None:
        kw.update(file_space.h5py_kwargs())
    return h5py.File(path, "w", **kw)


def cloud_optimized_copy(src, dst, file_space: FileSpace = FileSpace(), *, layouts=None, filters=None,  # noqa: B008
                         **repack_kw) -> str:
    """Write ``dst``: ``src`` in a file with ``file_space`` (paged aggregation by default), like
    ``h5repack -S PAGE -G SIZE``: :func:`ccp.repack.repack` with ``file_space`` (and ``layouts``/``filters``,
    its arguments, to rechunk on the way). ``src`` is only read. Returns ``dst``."""
    import h5py

    from ccp.repack import repack

    src, dst = os.fspath(src), os.fspath(dst)
    if os.path.abspath(src) == os.path.abspath(dst):
        raise CcpError(f"{dst}: the copy must not overwrite its source")
    try:
        with h5py.File(src, "r") as fin:
            userblock = fin.id.get_create_plist().get_userblock()
    except OSError as exc:
        raise CcpError(f"cannot open {src}: {exc}") from None
    if userblock:
        raise CcpError(f"{src}: has a user block; a paged copy of it is not supported")
    repack(src, dst, layouts, filters, file_space=file_space, **{"threads": 1, **repack_kw})
    return dst


__all__ = ["FileSpace", "REPACK_STRATEGIES", "STRATEGIES", "apply_file_space", "cloud_optimized_copy", "create_file",
           "file_page_size", "page_buffer_kwargs", "parse_file_space", "parse_page_buffer", "parse_repack_file_space"]
