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
    notes: tuple[str, ...] = ()
    deflate: str = ""      # gzip encoder on the fast path: "zlib" | "libdeflate"; "hdf5" on the library path

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

    @property
    def repacked(self) -> tuple[DatasetResult, ...]:
        return tuple(d for d in self.datasets if d.changed)

    def dataset(self, path: str) -> DatasetResult:
        path = normalise_path(path)
        for d in self.datasets:
            if d.path == path:
                return d
        raise KeyError(path)

