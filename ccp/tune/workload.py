"""The workload file of ``ccp tune``: YAML -> frozen, validated dataclasses.

It shares the sweep file's ``name`` and ``dataset`` (parsed by :mod:`ccp.config.sweep`) and its
rules: unknown keys are errors naming the key path, one line, exit 2.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ccp.chunkcache import ChunkCache
from ccp.config.shapes import FromSource
from ccp.config.sweep import (
    MAX_CACHE_NBYTES,
    SOURCE,
    AccessSpec,
    DatasetSpec,
    _check_keys,
    _StrictLoader,
    parse_access,
    parse_cache,
    parse_dataset,
)
from ccp.errors import ConfigError
from ccp.hdf5.filters import FilterPipeline, parse_filters
from ccp.predict.cells import check_grid
from ccp.units import format_bytes, parse_size
from ccp.workload.sweep import resolve_replay

WORKLOAD_KEYS = ("name", "dataset", "workload", "constraints")
ITEM_KEYS = ("access", "weight")
CONSTRAINT_KEYS = ("filters", "max_chunk_bytes", "cache_nbytes", "max_cache_bytes", "max_storage_overhead", "current_cache")
DEFAULT_MAX_CHUNK_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_CACHE_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_STORAGE_OVERHEAD = 0.25
MAX_CHUNK_BYTES = 2**32 - 1           # HDF5's limit on one chunk
MAX_TILES_PER_DIM = 1 << 26            # the search's per-dimension tables (8 bytes a tile): 512 MiB at most
MAX_WEIGHT = 1e12                     # weights are relative: beyond this a sum of seconds loses the small ones
MAX_STORAGE_OVERHEAD = 100.0          # 100 = stored 101x the data: beyond it the constraint is a typo


@dataclass(frozen=True)
class WorkItem:
    access: AccessSpec
    weight: float


@dataclass(frozen=True)
class Constraints:
    filters: tuple[FilterPipeline | FromSource, ...] = (SOURCE,)   # SOURCE: the dataset's own pipeline
    max_chunk_bytes: int = DEFAULT_MAX_CHUNK_BYTES
    cache_nbytes: int | None = None                           # fixed cache budget; None: searched
    max_cache_bytes: int = DEFAULT_MAX_CACHE_BYTES
    max_storage_overhead: float = DEFAULT_MAX_STORAGE_OVERHEAD   # padding of edge chunks + chunk index
    current_cache: ChunkCache | None = None   # the cache readers use today (current layout, heuristics); None: HDF5's default


@dataclass(frozen=True)
class Workload:
    name: str
    dataset: DatasetSpec
    items: tuple[WorkItem, ...]
    constraints: Constraints
    base_dir: Path = Path(".")
    raw_dataset: dict = field(default_factory=dict, compare=False, hash=False, repr=False)


def parse_weight(value, where: str) -> float:
    if isinstance(value, str):          # YAML 1.1 reads 1e3 (no dot) as text: a number written so is still one
        try:
            value = float(value)         # nan and inf are refused below, as the number they are
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_WEIGHT:
        raise ConfigError(where, f"expected a positive number up to {MAX_WEIGHT:g} (how often this access happens, "
                                 f"relative to the others), got {value!r}")
    return float(value)


def machine_memory() -> int:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return MAX_CACHE_NBYTES


def parse_bytes(value, where: str, hi: int, why: str) -> int:
    """A size constraint: finite, a whole number of bytes, at most ``hi`` (``why`` says whose limit)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(where, f"expected a size like 1MiB, got {value!r}")
    n = parse_size(value, where)
    if n > hi:
        raise ConfigError(where, f"{value!r} is more than {why} ({format_bytes(hi)})")
    return n


def parse_name(name) -> str:
    """The workload's name, used as a folder under results/: one path component, printable."""
    if (not isinstance(name, str) or not name.strip() or any(ch in name for ch in "/\\\0") or name.strip() in (".", "..")
            or any(not ch.isprintable() for ch in name) or len(name.encode()) > 200):
        raise ConfigError("name", f"expected a short name (used as the results folder: no '/' or '\\', not '.' or '..', "
                                  f"printable), got {name!r}")
    return name.strip()


def parse_item(raw, where: str) -> WorkItem:
    _check_keys(raw, ITEM_KEYS, where)
    if "access" not in raw:
        raise ConfigError(f"{where}.access", "missing: an access entry as in a sweep's matrix.access, like {op: read, block: [1, 100, 100]}")
    access = resolve_replay(parse_access(raw["access"], f"{where}.access"), f"{where}.access")
    return WorkItem(access, parse_weight(raw.get("weight", 1), f"{where}.weight"))


def parse_constraints(raw, where: str = "constraints") -> Constraints:
    if raw is None:
        return Constraints()
    _check_keys(raw, CONSTRAINT_KEYS, where)
    filters: tuple[FilterPipeline | FromSource, ...] = (SOURCE,)
    if raw.get("filters") is not None:
        values = raw["filters"] if isinstance(raw["filters"], list) else [raw["filters"]]
        if not values:
            raise ConfigError(f"{where}.filters", "is an empty list; omit the key to keep the dataset's own filters")
        filters = tuple(SOURCE if isinstance(v, str) and v.strip().lower() == SOURCE else parse_filters(v, f"{where}.filters[{i}]")
                        for i, v in enumerate(values))
    max_chunk = parse_bytes(raw.get("max_chunk_bytes", DEFAULT_MAX_CHUNK_BYTES), f"{where}.max_chunk_bytes",
                            MAX_CHUNK_BYTES, "HDF5's largest chunk")
    if max_chunk < 1:
        raise ConfigError(f"{where}.max_chunk_bytes", f"must be at least 1 byte, got {raw.get('max_chunk_bytes')!r}")
    memory = min(machine_memory(), MAX_CACHE_NBYTES)
    why = "this machine's memory (the tuned cache is measured here)"
    cache = parse_bytes(raw["cache_nbytes"], f"{where}.cache_nbytes", memory, why) if raw.get("cache_nbytes") is not None else None
    max_cache = parse_bytes(raw.get("max_cache_bytes", DEFAULT_MAX_CACHE_BYTES), f"{where}.max_cache_bytes", memory, why)
    if cache is not None and "max_cache_bytes" in raw:
        raise ConfigError(f"{where}.max_cache_bytes", "the cache is fixed by cache_nbytes; give one of the two")
    over = raw.get("max_storage_overhead", DEFAULT_MAX_STORAGE_OVERHEAD)
    if isinstance(over, bool) or not isinstance(over, (int, float)) or not 0 <= over <= MAX_STORAGE_OVERHEAD:
        raise ConfigError(f"{where}.max_storage_overhead", f"expected a fraction from 0 to {MAX_STORAGE_OVERHEAD:g} "
                                                            f"(0.1 = 10% more than the data), got {over!r}")
    current = parse_cache(raw["current_cache"], f"{where}.current_cache") if raw.get("current_cache") is not None else None
    return Constraints(filters, max_chunk, cache, max_cache, float(over), current)


def parse_workload(raw, base_dir: Path = Path(".")) -> Workload:
    if raw is None:
        raise ConfigError("", "the workload file is empty")
    if not isinstance(raw, dict):
        raise ConfigError("", f"the workload file must be a mapping of keys (name, dataset, workload, constraints), "
                              f"got {type(raw).__name__}")
    _check_keys(raw, WORKLOAD_KEYS, "")
    name = parse_name(raw.get("name"))
    if "dataset" not in raw:
        raise ConfigError("dataset", "missing: give `dataset: {generate: ...}` or `dataset: {file: ...}`")
    dataset = parse_dataset(raw["dataset"], "dataset", base_dir)
    items_raw = raw.get("workload")
    if not isinstance(items_raw, list) or not items_raw:
        raise ConfigError("workload", f"expected a list of {{access: ..., weight: W}}, got {items_raw!r}")
    items = tuple(parse_item(v, f"workload[{i}]") for i, v in enumerate(items_raw))
    return Workload(name, dataset, items, parse_constraints(raw.get("constraints")), base_dir, dict(raw["dataset"]))


def load_workload(path) -> Workload:
    """Read and validate a workload file; YAML syntax errors name the line."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(str(path), "workload file not found")
    try:
        raw = yaml.load(path.read_text(), Loader=_StrictLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise ConfigError(where, f"YAML syntax error: {getattr(exc, 'problem', None) or str(exc).splitlines()[0]}") from None
    except UnicodeDecodeError:
        raise ConfigError(str(path), "not a text file") from None
    return parse_workload(raw, base_dir=path.resolve().parent)


def check_against(workload: Workload, source) -> None:
    """The access entries against the dataset (rank, block within the shape), as the sweep matrix checks them."""
    rank = len(source.shape)
    for i, item in enumerate(workload.items):
        where = f"workload[{i}].access"
        if len(item.access.block) != rank:
            raise ConfigError(f"{where}.block", f"has rank {len(item.access.block)} but the dataset {list(source.shape)} has rank {rank}")
        if getattr(source, "chunks", None):
            check_grid(source.shape, source.chunks, getattr(source, "path", None) or "")   # before any probe
        for d, (b, s) in enumerate(zip(item.access.block, source.shape)):
            if b > s:
                raise ConfigError(f"{where}.block[{d}]", f"{b} exceeds the dataset's dimension {d} ({s})")
            if -(-s // b) > MAX_TILES_PER_DIM:
                raise ConfigError(f"{where}.block[{d}]", f"{b} tiles the dataset's dimension {d} ({s}) {-(-s // b):,} times, "
                                  f"more than tune's search walks ({MAX_TILES_PER_DIM:,}: its tables hold each tile); "
                                  "tune a copy of a region of the dataset, or a larger block")


def is_workload_file(path) -> bool:
    """Whether ``path`` reads as a ``ccp tune`` workload (a ``workload`` list, no sweep ``matrix``): what
    ``ccp check`` tells apart from a sweep, so that a valid workload is not called a bad sweep."""
    try:
        raw = yaml.load(Path(path).read_text(), Loader=_StrictLoader)
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return False
    return isinstance(raw, dict) and "workload" in raw and "matrix" not in raw


def check_lines(path) -> list[str]:
    """``ccp check`` of a workload file: every check ``ccp tune`` makes before its calibration (the file, the
    dataset, each pattern against it), and what it holds; a bad file raises :class:`ConfigError` as tune would."""
    from ccp.hdf5.dataset import describe_source
    from ccp.units import shape_str

    wl = load_workload(path)
    source = describe_source(wl.dataset)
    check_against(wl, source)
    k = wl.constraints
    lines = [f"{path}: valid `ccp tune` workload (not a sweep: `ccp tune {path}` measures it); dataset "
             f"{wl.dataset.path} {source.shape} {source.dtype.str}; {len(wl.items)} pattern(s)"]
    lines += [f"  {it.access.op} {shape_str(it.access.block)}, weight {it.weight:g}" for it in wl.items]
    lines.append(f"  constraints: filters {', '.join(f.spec if isinstance(f, FilterPipeline) else 'source' for f in k.filters)}; "
                 f"chunks at most {format_bytes(k.max_chunk_bytes)}; cache at most {format_bytes(k.max_cache_bytes)}")
    return lines
