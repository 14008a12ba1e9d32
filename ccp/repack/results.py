"""What a repack did (or, in a dry run, would do): one result per dataset and one per file."""

from __future__ import annotations

from dataclasses import dataclass, field

from ccp.repack.options import normalise_path


@dataclass(frozen=True)
class DatasetResult:
    """What happened to one dataset (or, in a dry run, what would)."""

    path: str
    action: str            # "copied" (unchanged, H5Ocopy) | "repacked"
    method: str            # "copy" | "fast" | "library"
    reason: str            # why the library path / why not changed; "" otherwise
    shape: tuple | None
    dtype: str
    old_layout: str        # "4x30x9x717", "contiguous", "compact", "virtual"
    new_layout: str
    old_filters: str       # ccp spec, "none"
    new_filters: str
    raw_bytes: int         # elements x item size
    old_stored_bytes: int
    new_stored_bytes: int | None = None   # after the repack (None in a dry run)
    estimated_bytes: int | None = None    # dry run: sampled estimate of the new storage
    seconds: float = 0.0
    hyperslabs: int = 0
    buffer_bytes: int = 0  # the hyperslab buffer the copy allocated (0: none, chunk by chunk)
    notes: tuple[str, ...] = ()
    deflate: str = ""      # gzip encoder on the fast path: "zlib" | "libdeflate" | "isal"; "hdf5" on the library path

    @property
    def changed(self) -> bool:
        return self.action == "repacked"


@dataclass(frozen=True)
class RepackResult:
    src: str
    dst: str
    seconds: float
    dry_run: bool
    threads: int
    buffer_bytes: int
    in_bytes: int
    out_bytes: int | None
    datasets: tuple[DatasetResult, ...] = field(default_factory=tuple)
    notes: tuple[str, ...] = ()    # file-wide: references remapped ...
    peak_rss_bytes: int = 0        # the process's peak resident memory when the copy ended (0: not measured)
    memory_bytes: int | None = None   # --memory, when given

    @property
    def repacked(self) -> tuple[DatasetResult, ...]:
        return tuple(d for d in self.datasets if d.changed)

    def dataset(self, path: str) -> DatasetResult:
        path = normalise_path(path)
        for d in self.datasets:
            if d.path == path:
                return d
        raise KeyError(path)



def page_size_notes(file_space, in_bytes: int, out_bytes: int) -> tuple[str, ...]:
    """A paged copy much larger than its input because its pages are (``-G 1GiB`` on a 54 KB file: 2 GiB).
    h5repack writes the same file (HDF5 allocates file space in whole pages); ccp does too, and says so."""
    page = getattr(file_space, "page_size", None)
    if not page or getattr(file_space, "strategy", "") != "page" or out_bytes < 2 * page or out_bytes <= 4 * in_bytes:
        return ()
    from ccp.units import format_bytes

    return (f"note: -G {format_bytes(page)}: the copy is {format_bytes(out_bytes)} for an input of "
            f"{format_bytes(in_bytes)}: HDF5 gives file space in whole pages, at least one for metadata and one "
            "for raw data (h5repack writes the same; most of it is a sparse hole on disk, but copies and uploads "
            f"carry it); a page of {format_bytes(_suggested_page(in_bytes))} or no -G suits a file this small",)


def _suggested_page(in_bytes: int) -> int:
    """The largest power-of-two page (>= HDF5's 512 B) at most a quarter of the input."""
    page = 512
    while page * 2 <= in_bytes // 4:
        page *= 2
    return page
