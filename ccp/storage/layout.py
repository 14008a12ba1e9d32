"""File-level layout for object storage: paged file-space aggregation, the page buffer, cloud-optimized copies.

``file_space: {strategy: page, page_size: 4MiB}`` is ``H5Pset_file_space_strategy(PAGE, persist,
threshold)`` with ``H5Pset_file_space_page_size``: HDF5 gathers metadata into pages of its own, so a
reader fetches the metadata of a whole file in a few page-sized reads. ``page_buffer: 16MiB`` is
``H5Pset_page_buffer_size`` on read (only a paged file can have one). h5py exposes both on
``h5py.File`` (``fs_strategy``, ``fs_page_size``, ``fs_persist``, ``fs_threshold``; ``page_buf_size``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ccp.errors import CcpError, ConfigError, suggest
from ccp.units import parse_size

STRATEGIES = ("page", "fsm_aggr", "aggregate", "none")
MIN_PAGE_SIZE = 512          # HDF5's H5F_FILE_SPACE_PAGE_SIZE_MIN


@dataclass(frozen=True)
class FileSpace:
    """How HDF5 allocates file space: ``page`` (paged aggregation) with a page size, or a classic strategy."""

    strategy: str = "page"
    page_size: int = 4 * 2**20
    persist: bool = True         # keep free-space info in the file (h5repack -P)
    threshold: int = 1           # smallest free section tracked (h5repack -T)

    @property
    def label(self) -> str:
        from ccp.units import format_bytes

        if self.strategy != "page":
            return self.strategy
        return f"page/{format_bytes(self.page_size).replace(' ', '')}"

    def h5py_kwargs(self) -> dict:
        """Keyword arguments of ``h5py.File(..., 'w')`` that create a file with this strategy."""
        kw = {"fs_strategy": self.strategy, "fs_persist": self.persist, "fs_threshold": self.threshold}
        if self.strategy == "page":
            kw["fs_page_size"] = self.page_size
        return kw


def parse_file_space(value, where: str = "file_space") -> FileSpace | None:
    """``{strategy: page, page_size: 4MiB[, persist: true, threshold: 1]}``; None or 'default': HDF5's default."""
    if value is None or value == "default":
        return None
    if value == "page":
        return FileSpace()
    if not isinstance(value, dict):
        raise ConfigError(where, f"expected {{strategy: page, page_size: 4MiB}}, got {value!r}")
    keys = ("strategy", "page_size", "persist", "threshold")
    for key in value:
        if key not in keys:
            raise ConfigError(f"{where}.{key}", "unknown key" + suggest(key, keys))
    strategy = value.get("strategy", "page")
    if strategy not in STRATEGIES:
        raise ConfigError(f"{where}.strategy", f"expected one of {', '.join(STRATEGIES)}, got {strategy!r}"
                          + suggest(strategy, STRATEGIES))
    if "page_size" in value and strategy != "page":
        raise ConfigError(f"{where}.page_size", f"only the 'page' strategy has pages (strategy is {strategy!r})")
    page = parse_size(value.get("page_size", 4 * 2**20), f"{where}.page_size")
    if page < MIN_PAGE_SIZE:
        raise ConfigError(f"{where}.page_size", f"HDF5's smallest page is {MIN_PAGE_SIZE} bytes, got {page}")
    persist = value.get("persist", True)
    if not isinstance(persist, bool):
        raise ConfigError(f"{where}.persist", f"expected true or false, got {persist!r}")
    threshold = value.get("threshold", 1)
    if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 0:
        raise ConfigError(f"{where}.threshold", f"expected a whole number of bytes >= 0, got {threshold!r}")
    return FileSpace(strategy, page, persist, threshold)


_H5F_STRATEGY = {"page": "FSPACE_STRATEGY_PAGE", "fsm_aggr": "FSPACE_STRATEGY_FSM_AGGR",
                 "aggregate": "FSPACE_STRATEGY_AGGR", "none": "FSPACE_STRATEGY_NONE"}
# h5repack -S names -> ours
REPACK_STRATEGIES = {"PAGE": "page", "FSM_AGGR": "fsm_aggr", "AGGR": "aggregate", "NONE": "none"}


def apply_file_space(fcpl, file_space: FileSpace | None):
    """Set ``file_space`` on a file-creation list (``h5f.create(..., fcpl=)``; None leaves it as it is).
    Returns the list: the write pass's and repack's one line."""
    import h5py

    if file_space is None:
        return fcpl
    if fcpl is None:
        fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
    strategy = getattr(h5py.h5f, _H5F_STRATEGY[file_space.strategy])
    fcpl.set_file_space_strategy(strategy, file_space.persist, file_space.threshold)
    if file_space.strategy == "page":
        fcpl.set_file_space_page_size(file_space.page_size)
    return fcpl


def parse_repack_file_space(strategy: str | None, page_size, persist: bool = False,
                            threshold: int = 1) -> FileSpace | None:
    """h5repack's ``-S STRATEGY`` / ``-G SIZE`` / ``-P`` / ``-T`` as a FileSpace (``ccp repack``'s options):
    ``-G`` alone means PAGE, as in h5repack; neither: None (the source's strategy is kept)."""
    if strategy is None and page_size is None:
        return None
    name = REPACK_STRATEGIES.get(str(strategy or "PAGE").upper())
    if name is None:
        raise ConfigError("-S", f"expected one of {', '.join(REPACK_STRATEGIES)}, got {strategy!r}"
                          + suggest(str(strategy).upper(), REPACK_STRATEGIES))
    if page_size is not None and name != "page":
        raise ConfigError("-G", f"a page size needs -S PAGE (got -S {strategy})")
    raw = {"strategy": name, "persist": bool(persist), "threshold": int(threshold)}
    if page_size is not None:
        raw["page_size"] = page_size
    try:
        return parse_file_space(raw, "file_space")
    except ConfigError as exc:          # name the option, not the sweep key
        option = "-G" if exc.where == "file_space.page_size" else "-S"
        raise ConfigError(option, str(exc)[len(exc.where) + 2:]) from None


def parse_page_buffer(value, where: str = "page_buffer") -> int:
    """``16MiB`` -> bytes; 0, None or 'none': no page buffer."""
    if value is None or value == 0 or str(value).strip().lower() == "none":
        return 0
    return parse_size(value, where)


def page_buffer_kwargs(page_buffer: int, file_page_size: int | None, where: str = "page_buffer") -> dict:
    """``h5py.File`` read kwargs for a page buffer; one line when the file cannot take it."""
    if not page_buffer:
        return {}
    if file_page_size is None:
        raise ConfigError(where, "a page buffer needs a paged file (file_space: {strategy: page})")
    if page_buffer < file_page_size:
        raise ConfigError(where, f"{page_buffer} bytes is smaller than the file's page ({file_page_size} bytes)")
    return {"page_buf_size": int(page_buffer)}


def file_page_size(path) -> int | None:
    """The file's page size when its file-space strategy is PAGE, else None."""
    import h5py

    with h5py.File(path, "r") as f:
        fcpl = f.id.get_create_plist()
        if fcpl.get_file_space_strategy()[0] != h5py.h5f.FSPACE_STRATEGY_PAGE:
            return None
        return int(fcpl.get_file_space_page_size())


def create_file(path, file_space: FileSpace | None, **kwargs):
    """``h5py.File(path, 'w')`` with ``file_space`` (None: HDF5's default strategy)."""
    import h5py

    kw = dict(kwargs)
    if file_space is not None:
        kw.update(file_space.h5py_kwargs())
    return h5py.File(path, "w", **kw)


def _copy_root(src, dst) -> None:
    """Every link of ``/`` and its attributes into ``dst``: H5Ocopy per object (chunks copied as stored,
    no decode), soft and external links recreated."""
    import h5py
    from h5py import h5o

    for name, value in src.attrs.items():
        dst.attrs.create(name, value, dtype=src.attrs.get_id(name).dtype)
    for name in src:
        link = src.get(name, getlink=True)
        if isinstance(link, h5py.SoftLink):
            dst[name] = h5py.SoftLink(link.path)
        elif isinstance(link, h5py.ExternalLink):
            dst[name] = h5py.ExternalLink(link.filename, link.path)
        else:
            h5o.copy(src.id, name.encode("utf-8", "surrogateescape"), dst.id, name.encode("utf-8", "surrogateescape"))


def cloud_optimized_copy(src, dst, file_space: FileSpace = FileSpace(), *, layouts=None, filters=None,
                         **repack_kw) -> str:
    """Write ``dst``: ``src``'s objects in a file with ``file_space`` (paged aggregation by default),
    like ``h5repack -S PAGE -G SIZE``; with ``layouts``/``filters`` the datasets are first rechunked by
    :func:`ccp.repack.repack` (its arguments). ``src`` is only read. Returns ``dst``."""
    import h5py

    src, dst = os.fspath(src), os.fspath(dst)
    if os.path.abspath(src) == os.path.abspath(dst):
        raise CcpError(f"{dst}: the copy must not overwrite its source")
    tmp = f"{dst}.ccp-tmp-{os.getpid()}"
    staged = None
    try:
        source = src
        if layouts or filters:
            from ccp.repack import repack

            staged = f"{dst}.ccp-stage-{os.getpid()}"
            repack(src, staged, layouts, filters, **repack_kw)
            source = staged
        try:
            fin = h5py.File(source, "r")
        except OSError as exc:
            raise CcpError(f"cannot open {src}: {exc}") from None
        with fin:
            fcpl = fin.id.get_create_plist()
            if fcpl.get_userblock():
                raise CcpError(f"{src}: has a user block; a paged copy of it is not supported")
            root = fin["/"].id.get_create_plist()
            track = bool(root.get_link_creation_order())
            with create_file(tmp, file_space, track_order=track) as fout:
                _copy_root(fin, fout)
        os.replace(tmp, dst)
        return dst
    finally:
        for p in (tmp, staged):
            if p and os.path.exists(p):
                os.unlink(p)


__all__ = ["FileSpace", "REPACK_STRATEGIES", "STRATEGIES", "apply_file_space", "cloud_optimized_copy", "create_file",
           "file_page_size", "page_buffer_kwargs", "parse_file_space", "parse_page_buffer", "parse_repack_file_space"]
