"""The sweep file: YAML -> frozen, validated dataclasses.

Every ``parse_*`` function takes raw YAML values and a ``where`` (the key path, for error messages)
and returns a frozen value or raises :class:`ConfigError`. Unknown keys are errors, with a suggestion.
Nothing here touches HDF5 except :func:`check_source`, which opens the user's file read-only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

from ccp.chunkcache import ChunkCache
from ccp.config import axes as matrix_axes
from ccp.config.axes import ParseContext
from ccp.config.axes.access import MAX_RANDOM, OPS, AccessSpec, parse_access  # noqa: F401 -- the sweep's names
from ccp.config.axes.base import as_list as _as_list  # noqa: F401
from ccp.config.axes.base import check_keys as _check_keys
from ccp.config.axes.cache import (  # noqa: F401 -- the sweep's names
    DEFAULT_CACHE_NBYTES,
    DEFAULT_CACHE_NSLOTS,
    DEFAULT_CACHE_W0,
    MAX_CACHE_NBYTES,
    MAX_CACHE_NSLOTS,
    parse_cache,
)
from ccp.config.axes.client import CLIENTS, DEFAULT_CLIENT, parse_client  # noqa: F401 -- the sweep's names
from ccp.config.shapes import MAX_DIM, SOURCE, Chunks, FromSource, parse_chunks, parse_int, parse_shape
from ccp.config.storage import StorageConfig
from ccp.config.tables import TableSpec, parse_tables
from ccp.errors import ConfigError, suggest
from ccp.hdf5.filters import FilterPipeline, parse_filters
from ccp.units import parse_duration, shape_str

DEFAULT_DATASET_PATH = "/data"
DEFAULT_REPEATS = 3
DATA_KINDS = ("normal", "uniform", "randint", "smooth", "constant")
MAX_REPEATS = 10**4


@dataclass(frozen=True)
class GenerateSpec:
    shape: tuple[int, ...]
    dtype: np.dtype
    data: str = "normal"          # canonical: normal | uniform | randint:LOW:HIGH | smooth | constant:V
    seed: int = 0
    maxshape: tuple[int | None, ...] | None = None
    fillvalue: float | int | None = None
    written_by: tuple[int, ...] | None = None   # block the work file is written with (sets chunk allocation order)
    chunks: tuple[int, ...] | None = None       # the layout the data is "stored" with: what `source` means
    filters: FilterPipeline = FilterPipeline()   # frozen, so one shared default is safe


@dataclass(frozen=True)
class DatasetSpec:
    path: str
    generate: GenerateSpec | None = None
    file: Path | None = None


@dataclass(frozen=True)
class Sweep:
    name: str
    dataset: DatasetSpec
    chunks: tuple[Chunks, ...]
    filters: tuple[FilterPipeline | FromSource, ...]
    cache: tuple[ChunkCache, ...]
    access: tuple[AccessSpec, ...]
    exclude: tuple[dict, ...] = ()
    repeats: int = DEFAULT_REPEATS
    cold: bool = True
    time_budget: float | None = None
    tables: tuple[TableSpec, ...] = ()
    client: tuple[str, ...] = (DEFAULT_CLIENT,)
    storage: StorageConfig = StorageConfig()      # frozen: the storage axes and `s3:` (ccp.config.storage)
    more: tuple[tuple[str, object], ...] = ()     # (name, setting) of each axis registered beyond the built-in ones
    raw: dict = field(default_factory=dict, compare=False, hash=False, repr=False)
    base_dir: Path = Path(".")

    def setting(self, name: str):
        """An axis's setting as parsed (a tuple of values; the storage axes' StorageConfig)."""
        return getattr(self, name) if name in matrix_axes.BUILT_IN else dict(self.more)[name]


# ---------------------------------------------------------------- helpers

def _text(value, where: str, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(where, f"expected {what}, got {value!r}")
    if "\0" in value or any(not ch.isprintable() for ch in value):
        raise ConfigError(where, f"{what} must be printable text without NUL or control characters, got {value!r}")
    return value


def parse_dtype(value, where: str) -> np.dtype:
    if not isinstance(value, str) or not value.strip():      # np.dtype(None) is float64: never silently
        raise ConfigError(where, f"expected a dtype name like '<f4', '>f4', 'i4' or 'u2', got {value!r}")
    try:
        dtype = np.dtype(value)
    except (TypeError, ValueError, SyntaxError):
        raise ConfigError(where, f"not a numpy dtype: {value!r} (examples: '<f4', '>f4', 'i4', 'u2')") from None
    if dtype.kind not in "iuf":
        raise ConfigError(where, f"only integer and float dtypes can be generated, got {value!r}")
    return dtype


def _fits(value, dtype: np.dtype) -> bool:
    """``value`` is representable in ``dtype`` (integers exactly and in range; floats within range or inf/nan)."""
    if dtype.kind in "iu":
        if isinstance(value, float) and not value.is_integer():
            return False
        try:
            whole = int(value)
        except (OverflowError, ValueError):
            return False
        info = np.iinfo(dtype)
        return info.min <= whole <= info.max
    v = float(value)
    return math.isnan(v) or math.isinf(v) or abs(v) <= float(np.finfo(dtype).max)


def _check_data_fits(data: str, dtype: np.dtype, where: str) -> None:
    kind, _, rest = data.partition(":")
    if kind == "randint":
        lo, hi = (int(p) for p in rest.split(":"))
        if dtype.kind in "iu" and not (_fits(lo, dtype) and _fits(hi - 1, dtype)):
            raise ConfigError(where, f"{data!r} does not fit dtype {dtype.str} ({np.iinfo(dtype).min} to {np.iinfo(dtype).max})")
        if not (_fits(lo, np.dtype("i8")) and _fits(hi - 1, np.dtype("i8"))):
            raise ConfigError(where, f"{data!r}: randint bounds must fit a 64-bit integer")
    if kind == "constant" and not _fits(float(rest), dtype):
        raise ConfigError(where, f"{data!r} does not fit dtype {dtype.str}")


def parse_data(value, where: str) -> str:
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        raise ConfigError(where, f"expected a data kind (normal, uniform, randint:LOW:HIGH, smooth, constant:V), got {value!r}")
    text = str(value).strip().lower()
    kind, _, rest = text.partition(":")
    if kind not in DATA_KINDS:
        raise ConfigError(where, f"unknown data kind {value!r}{suggest(kind, DATA_KINDS)}; one of normal, uniform, randint:LOW:HIGH, smooth, constant:V")
    if kind == "randint":
        parts = rest.split(":")
        try:
            lo, hi = (int(p) for p in parts)
        except ValueError:
            raise ConfigError(where, f"randint needs integer bounds, like randint:0:100, got {value!r}") from None
        if hi <= lo:
            raise ConfigError(where, f"randint:LOW:HIGH needs LOW < HIGH, got {value!r}")
        return f"randint:{lo}:{hi}"
    if kind == "constant":
        try:
            v = float(rest)
        except ValueError:
            raise ConfigError(where, f"constant needs a value, like constant:0, got {value!r}") from None
        return f"constant:{v:g}"
    if rest:
        raise ConfigError(where, f"{kind} takes no argument, got {value!r}")
    return kind


def parse_generate(raw, where: str) -> GenerateSpec:
    _check_keys(raw, ("shape", "dtype", "data", "seed", "maxshape", "fillvalue", "written_by", "chunks", "filters"), where)
    if "shape" not in raw:
        raise ConfigError(f"{where}.shape", "missing: the dataset's dimensions, like [60, 30, 9, 717]")
    shape = parse_shape(raw["shape"], f"{where}.shape")
    dtype = parse_dtype(raw.get("dtype", "<f4"), f"{where}.dtype")
    maxshape = None
    if raw.get("maxshape") is not None:
        maxshape = parse_shape(raw["maxshape"], f"{where}.maxshape", allow_none=True)
        if len(maxshape) != len(shape):
            raise ConfigError(f"{where}.maxshape", f"has rank {len(maxshape)} but shape {list(shape)} has rank {len(shape)}")
        for i, (m, s) in enumerate(zip(maxshape, shape)):
            if m is not None and m < s:
                raise ConfigError(f"{where}.maxshape[{i}]", f"{m} is smaller than shape[{i}] = {s}")
    fill = raw.get("fillvalue")
    if fill is not None and (isinstance(fill, bool) or not isinstance(fill, (int, float))):
        raise ConfigError(f"{where}.fillvalue", f"expected a number, got {fill!r}")
    if fill is not None and not _fits(fill, dtype):
        raise ConfigError(f"{where}.fillvalue", f"{fill!r} cannot be stored in dtype {dtype.str}")
    nbytes = float(np.prod([float(d) for d in shape])) * dtype.itemsize
    if nbytes > MAX_DIM:
        raise ConfigError(f"{where}.shape", f"{list(shape)} of {dtype.str} is {nbytes:.3g} bytes: more than a file can hold")
    written_by = None
    if raw.get("written_by") is not None:
        written_by = parse_shape(raw["written_by"], f"{where}.written_by")
        if len(written_by) != len(shape):
            raise ConfigError(f"{where}.written_by", f"has rank {len(written_by)} but shape {list(shape)} has rank {len(shape)}")
    chunks = parse_chunks(raw.get("chunks"), f"{where}.chunks")
    if chunks is SOURCE:
        raise ConfigError(f"{where}.chunks", "is the stored layout itself; give a chunk shape or contiguous")
    filters = parse_filters(raw.get("filters"), f"{where}.filters")
    if chunks is None and not filters.is_none:
        raise ConfigError(f"{where}.filters", "filters need chunks: give dataset.generate.chunks too")
    data = parse_data(raw.get("data", "normal"), f"{where}.data")
    _check_data_fits(data, dtype, f"{where}.data")
    return GenerateSpec(shape=shape, dtype=dtype, data=data,
                        seed=parse_int(raw.get("seed", 0), f"{where}.seed", lo=0, hi=2**63 - 1), maxshape=maxshape, fillvalue=fill,
                        written_by=written_by, chunks=chunks, filters=filters)


def parse_dataset(raw, where: str, base_dir: Path) -> DatasetSpec:
    _check_keys(raw, ("path", "generate", "file"), where)
    path = raw.get("path", DEFAULT_DATASET_PATH)
    if not isinstance(path, str) or not path:
        raise ConfigError(f"{where}.path", f"expected a dataset path like /data, got {path!r}")
    _text(path, f"{where}.path", "a dataset path like /data")
    if not path.startswith("/"):
        path = "/" + path
    has_gen, has_file = raw.get("generate") is not None, raw.get("file") is not None
    if has_gen == has_file:
        raise ConfigError(where, "give exactly one of `generate:` (synthetic data) or `file:` (your HDF5 file)")
    if has_gen:
        return DatasetSpec(path=path, generate=parse_generate(raw["generate"], f"{where}.generate"))
    file = Path(_text(raw["file"], f"{where}.file", "a file name")).expanduser()
    if not file.is_absolute():
        file = (base_dir / file).resolve()
    return DatasetSpec(path=path, file=file)


SWEEP_KEYS = ("name", "dataset", "matrix", "exclude", "repeats", "cold", "time_budget", "tables", "s3")


def parse_sweep(raw, base_dir: Path = Path(".")) -> Sweep:
    """Validate a whole sweep mapping (the YAML document)."""
    if raw is None:
        raise ConfigError("", "the sweep file is empty")
    if not isinstance(raw, dict):
        raise ConfigError("", f"the sweep file must be a mapping of keys (name, dataset, matrix, ...), got {type(raw).__name__}")
    _check_keys(raw, SWEEP_KEYS, "")
    name = raw.get("name")
    if (not isinstance(name, str) or not name.strip() or "/" in name or "\\" in name or name.strip() in (".", "..")
            or "\0" in name or any(not ch.isprintable() for ch in name) or len(name.encode()) > 200):
        raise ConfigError("name", f"expected a short name (used as the results folder: no '/', not '.' or '..', "
                                  f"printable), got {name!r}")
    if "dataset" not in raw:
        raise ConfigError("dataset", "missing: give `dataset: {generate: ...}` or `dataset: {file: ...}`")
    dataset = parse_dataset(raw["dataset"], "dataset", base_dir)
    matrix = raw.get("matrix")
    matrix = {} if matrix is None else matrix
    _check_keys(matrix, matrix_axes.matrix_keys(), "matrix")
    g = dataset.generate
    ctx = ParseContext(raw, from_file=dataset.file is not None, stored_layout=g is None or g.chunks is not None)
    settings = {a.name: a.parse(matrix, ctx) for a in matrix_axes.axes()}

    exclude_raw = raw.get("exclude")
    if exclude_raw is not None and not isinstance(exclude_raw, list):
        raise ConfigError("exclude", f"expected a list of rules like [{{chunks: contiguous, filters: gzip:4}}], got {exclude_raw!r}")
    exclude = tuple(_parse_exclude(v, f"exclude[{i}]") for i, v in enumerate(exclude_raw or []))
    repeats = parse_int(raw.get("repeats", DEFAULT_REPEATS), "repeats", lo=1, hi=MAX_REPEATS)
    cold = raw.get("cold", True)
    if not isinstance(cold, bool):
        raise ConfigError("cold", f"expected true or false, got {cold!r}")
    time_budget = parse_duration(raw["time_budget"], "time_budget") if raw.get("time_budget") is not None else None
    tables: tuple[TableSpec, ...] = ()
    if raw.get("tables") is not None:
        tables = parse_tables(raw["tables"])
    built_in = {k: v for k, v in settings.items() if k in matrix_axes.BUILT_IN}
    more = tuple((k, v) for k, v in settings.items() if k not in matrix_axes.BUILT_IN)
    return Sweep(name=name.strip(), dataset=dataset, **built_in, exclude=exclude, repeats=repeats, cold=cold,
                 time_budget=time_budget, tables=tables, more=more, raw=raw, base_dir=base_dir)


def _parse_exclude(raw, where: str) -> dict:
    """An exclude entry: the given axes must all match for a cell to be dropped."""
    _check_keys(raw, matrix_axes.matrix_keys(), where)
    out: dict[str, object] = {}
    for a in matrix_axes.axes():
        out.update(a.parse_rule(raw, where))
    return out


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects a key given twice in one mapping (PyYAML keeps the last one silently)."""


def _no_duplicates(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)


def parse_sweep_file(path, scale: float | None = None) -> Sweep:
    """Read and validate a sweep file (scaled down by ``scale`` if given). YAML syntax errors name the line."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(str(path), "sweep file not found")
    try:
        raw = yaml.load(path.read_text(), Loader=_StrictLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(where, f"YAML syntax error: {problem}") from None
    except UnicodeDecodeError:
        raise ConfigError(str(path), "not a text file") from None
    if scale is not None and scale != 1:
        from ccp.config.scale import scale_sweep
        raw = scale_sweep(raw, scale)
    return parse_sweep(raw, base_dir=path.resolve().parent)


def sweep_as_dict(sweep: Sweep) -> dict:
    """The sweep as run: every default spelled out, for ``sweep.yaml`` in the run folder."""
    ds: dict[str, object] = {"path": sweep.dataset.path}
    if sweep.dataset.generate:
        g = sweep.dataset.generate
        ds["generate"] = {"shape": list(g.shape), "dtype": g.dtype.str, "data": g.data, "seed": g.seed,
                          "maxshape": list(g.maxshape) if g.maxshape else None, "fillvalue": g.fillvalue,
                          "written_by": list(g.written_by) if g.written_by else None,
                          "chunks": shape_str(g.chunks) if g.chunks else None, "filters": g.filters.spec}
    else:
        ds["file"] = str(sweep.dataset.file)
    out = {
        "name": sweep.name,
        "dataset": ds,
        "matrix": {k: v for a in matrix_axes.axes() for k, v in a.as_yaml(sweep.setting(a.name)).items()},
        "exclude": sweep.raw.get("exclude") or [],
        "repeats": sweep.repeats,
        "cold": sweep.cold,
        "time_budget": sweep.time_budget,
    }
    if sweep.storage.s3 is not None:
        out["s3"] = sweep.storage.s3_as_dict()
    if sweep.raw.get("tables") is not None:
        out["tables"] = sweep.raw["tables"]
    return out


def same_layouts(sweep: Sweep, source) -> str | None:
    """When ``source`` in the matrix names a layout the matrix also lists (``chunks: [source, 8x64x64]`` of a file
    stored as 8x64x64): how many chunks x filters pairs are the same layout, in words, since the matrix measures
    each layout once; None when every pair is its own layout."""
    def shown(c) -> str:
        return "contiguous" if c is None else "x".join(str(n) for n in c)

    pairs = [(source.chunks if c is SOURCE else c, (source.filters if f is SOURCE else f).spec)
             for c in sweep.chunks for f in sweep.filters]
    distinct = len(set((tuple(c) if c is not None else None, f) for c, f in pairs))
    if distinct == len(pairs):
        return None
    return (f"{len(pairs) - distinct} of the {len(pairs)} chunks x filters pairs are the same layout as another "
            f"(source is {shown(source.chunks)} {source.filters.spec}): each layout's cells are listed and measured once")
