"""The typed result row: one :class:`CellRow` per cell, the only thing :class:`ccp.store.results.RunStore` commits.

Every column of ``cells.csv`` (:data:`ccp.store.schema.CELL_COLUMNS`, in that order) is a field; a cell
that failed carries its parameters and status and leaves the measured fields None (empty in the CSV).
Building a row with a name that is not a column is an error (``TypeError``), so a typo can no longer
become an empty column; a row missing its identity (cell id, parameters, status) cannot be built.

The schema's versions and what each changed: :data:`ccp.store.schema.SCHEMA_HISTORY`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, asdict, dataclass, fields, replace
from typing import Any, Protocol

from ccp.store.schema import CELL_COLUMNS, FINISHED, SCHEMA_HISTORY, SCHEMA_VERSION  # noqa: F401 -- row.SCHEMA_HISTORY


@dataclass(frozen=True)
class CellRow:
    """One row of cells.csv. Field order is column order; None is an empty cell."""

    schema_version: int
    cell_id: str
    chunks: str
    filters: str
    cache_nbytes: int
    cache_nslots: int
    cache_w0: float
    op: str
    block: str
    order: str
    random: int
    client: str
    status: str                                 # placed last in the CSV by CELL_COLUMNS, required here
    requests: int | None = None
    repeats: int | None = None
    cold: bool | None = None
    time_s: float | None = None
    time_s_min: float | None = None
    time_s_max: float | None = None
    first_request_s: float | None = None
    request_s_median: float | None = None
    open_s: float | None = None
    close_s: float | None = None
    raw_reads: int | None = None
    raw_read_bytes: int | None = None
    raw_writes: int | None = None
    raw_write_bytes: int | None = None
    meta_reads: int | None = None
    meta_read_bytes: int | None = None
    meta_writes: int | None = None
    meta_write_bytes: int | None = None
    chunk_bytes: int | None = None
    nchunks: int | None = None
    file_bytes: int | None = None
    storage_bytes: int | None = None
    logical_bytes: int | None = None
    compression_ratio: float | None = None
    repack_s: float | None = None
    spread: float | None = None
    flags: str | None = None
    traps: str | None = None
    fraction_measured: float | None = None
    dataset_file: str | None = None
    host: str | None = None
    started_at: str | None = None
    elapsed_s: float | None = None
    cpus: int | None = None                     # the machine while the timed passes ran (schema 4)
    load_max: float | None = None
    cpu_ratio: float | None = None
    predicted_requests: int | None = None
    predicted_raw_reads: int | None = None
    predicted_raw_read_bytes: int | None = None
    predicted_raw_writes: int | None = None
    predicted_raw_write_bytes: int | None = None
    predicted_chunk_loads: int | None = None
    predicted_chunk_hits: int | None = None
    predicted_evictions: int | None = None
    predicted_time_s: float | None = None
    storage: str | None = None                  # the storage axes' labels (cell_columns fills them)
    fsspec: str | None = None
    latency: str | None = None
    bandwidth: str | None = None
    file_space: str | None = None
    page_buffer: str | None = None
    http_gets: int | None = None                # S3 cells: GETs of a pass, file open included
    http_bytes: int | None = None               # bytes those GETs fetched
    predicted_http_gets: int | None = None
    predicted_http_bytes: int | None = None
    network: str | None = None                  # the emulated network ("none" or "emulated: ...")
    http_open_gets: int | None = None
    predicted_http_open_gets: int | None = None
    http_bytes_used: int | None = None          # bytes HDF5 asked for
    http_wait_s: float | None = None            # seconds waiting for GETs (loopback + emulated), median over passes
    page_buffer_effective: int | None = None    # bytes, as HDF5 reports after the open
    file_open_s: float | None = None            # S3 cells: seconds of the file open (inside open_s), median
    requests_s: float | None = None             # S3 cells: seconds of a pass's requests, median over passes
    warmup_s: float | None = None               # the warm-up pass's seconds, as time_s is a timed pass's (schema 6)

    def __post_init__(self) -> None:
        # a measured row without its measurement would read as a finished cell with empty numbers
        if self.status in FINISHED:
            missing = [f for f in MEASURED if getattr(self, f) is None]
            if missing:
                raise TypeError(f"cells.csv row {self.cell_id}: status {self.status} without {', '.join(missing)}")

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> CellRow:
        """A row from column -> value; a name that is not a column, or a missing identity column, is an error."""
        unknown = sorted(set(values) - FIELDS)
        if unknown:
            raise TypeError(f"cells.csv row: unknown column(s) {', '.join(unknown)}")
        missing = [f for f in REQUIRED if f not in values]
        if missing:
            raise TypeError(f"cells.csv row: missing column(s) {', '.join(missing)}")
        return cls(**values)

    @classmethod
    def for_cell(cls, cell: _CellLike, status: str, **values: Any) -> CellRow:
        """A row with the cell's parameters (as the matrix set them) and ``values``; unknown names are errors."""
        return cls.from_dict({**cell_columns(cell), "status": status, **values})

    def with_columns(self, **values: Any) -> CellRow:
        """This row with some columns replaced (predictions, traps); a name that is not a column is an error."""
        unknown = sorted(set(values) - FIELDS)
        if unknown:
            raise TypeError(f"cells.csv row: unknown column(s) {', '.join(unknown)}")
        return replace(self, **values)

    def values(self) -> list[Any]:
        """The row's values in CELL_COLUMNS order (the CSV's)."""
        return [getattr(self, c) for c in CELL_COLUMNS]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __getitem__(self, name: str) -> Any:     # read access as before: row["time_s"]
        if name not in FIELDS:
            raise KeyError(name)
        return getattr(self, name)

    def get(self, name: str, default: Any = None) -> Any:
        return getattr(self, name) if name in FIELDS else default


class _CellLike(Protocol):
    """What a row needs of a matrix cell (:class:`ccp.matrix.cells.Cell`; the store does not import the matrix):
    its id and its parameters' columns, which each of the matrix's axes fills (``ccp.config.axes``)."""

    @property
    def cell_id(self) -> str: ...

    def columns(self) -> Mapping[str, Any]: ...


def cell_columns(cell: _CellLike) -> dict[str, Any]:
    """The columns that name a cell's parameters: every row has them, measured or failed or planned."""
    return {"schema_version": SCHEMA_VERSION, "cell_id": cell.cell_id, **cell.columns()}


FIELDS = frozenset(f.name for f in fields(CellRow))
# the identity of a row: the fields without a default (the schema version, the cell id, the columns of the axes every
# cell has had since schema 1 and 2, and the status); a column added later may be missing from an older row
REQUIRED = tuple(f.name for f in fields(CellRow) if f.default is MISSING)
# what every finished (ok or extrapolated) row holds, quick or not: a builder that forgets one fails here
MEASURED = ("requests", "repeats", "cold", "time_s", "time_s_min", "time_s_max", "open_s", "close_s", "spread",
            "fraction_measured", "host", "started_at")   # elapsed_s: the executor adds it after the row is built
if FIELDS != set(CELL_COLUMNS) or len(CELL_COLUMNS) != len(FIELDS):    # one list of columns, two spellings
    raise ImportError("ccp.store.row.CellRow and ccp.store.schema.CELL_COLUMNS name different columns")
