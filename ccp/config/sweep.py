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

from ccp.chunkcache import HDF5_1X, ChunkCache
from ccp.config.shapes import MAX_DIM, SOURCE, Chunks, FromSource, parse_chunks, parse_int, parse_shape
from ccp.config.storage import AXES as STORAGE_AXES
from ccp.config.storage import StorageConfig, parse_storage_config, parse_storage_exclude
from ccp.config.tables import TableSpec, parse_tables
from ccp.errors import ConfigError, suggest
from ccp.hdf5.filters import FilterPipeline, parse_filters
from ccp.units import parse_duration, parse_size, shape_str

# Stated defaults: a run never relies on the HDF5 library's own (1 MiB/521 in 1.x, 8 MiB/8191 in 2.0); a sweep
# that names no cache states HDF5 1.x's, the cache most published measurements were made with.
DEFAULT_CACHE_NBYTES = HDF5_1X.nbytes
DEFAULT_CACHE_NSLOTS = HDF5_1X.nslots
DEFAULT_CACHE_W0 = HDF5_1X.w0
DEFAULT_DATASET_PATH = "/data"
DEFAULT_REPEATS = 3
DATA_KINDS = ("normal", "uniform", "randint", "smooth", "constant")
MAX_CACHE_NBYTES = 2**63 - 1     # size_t, and an int64 column in cells.csv/parquet
MAX_CACHE_NSLOTS = 2**27         # HDF5 allocates the slot table up front: 8 bytes a slot (1 GiB here)
MAX_RANDOM = 10**8               # random requests are planned in memory: rank x 8 bytes each
MAX_REPEATS = 10**4
OPS = ("read", "write", "copy")
# How a cell's requests reach HDF5: the native loop (HDF5's own cost), today's h5py low-level loop, and
# the high-level slicing most Python users write. A cell with the old loop keeps its old id.
CLIENTS = ("native", "h5py-lowlevel", "h5py")
DEFAULT_CLIENT = "native"


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


#: A sweep's ``cache:`` value is the house's one chunk-cache type.
CacheSpec = ChunkCache


@dataclass(frozen=True)
class AccessSpec:
    op: str
    block: tuple[int, ...]                 # a replay's is () until its trace is loaded (ccp.workload.sweep)
    order: tuple[int, ...] | None = None   # dims slowest first; None = C order
    random: int = 0                        # 0 = tile the dataset; N = N random block-aligned requests
    seed: int = 0
    trace: str | None = None               # a `ccp trace` folder: replay its selections on `trace_dataset`
    trace_dataset: str | None = None
    pid: int | None = None                 # only this process's calls (None: every process, in time order)

    @property
    def order_str(self) -> str:
        if self.trace is not None:         # a replay: its identity is the trace, the dataset and the process
            return f"trace:{Path(self.trace).name}:{self.trace_dataset}" + (f":pid{self.pid}" if self.pid is not None else "")
        return "x".join(map(str, self.order or range(len(self.block))))


@dataclass(frozen=True)
class Sweep:
    name: str
    dataset: DatasetSpec
    chunks: tuple[Chunks, ...]
    filters: tuple[FilterPipeline | FromSource, ...]
    cache: tuple[CacheSpec, ...]
    access: tuple[AccessSpec, ...]
    exclude: tuple[dict, ...] = ()
    repeats: int = DEFAULT_REPEATS
    cold: bool = True
    time_budget: float | None = None
    tables: tuple[TableSpec, ...] = ()
    client: tuple[str, ...] = (DEFAULT_CLIENT,)
    storage: StorageConfig = StorageConfig()      # frozen: the storage axes and `s3:` (ccp.config.storage)
    raw: dict = field(default_factory=dict, compare=False, hash=False, repr=False)
    base_dir: Path = Path(".")


# ---------------------------------------------------------------- helpers

def _check_keys(raw: dict, allowed, where: str) -> None:
    if not isinstance(raw, dict):
        raise ConfigError(where, f"expected a mapping, got {type(raw).__name__} {raw!r}")
    for key in raw:
        if key not in allowed:
            prefix = f"{where}." if where else ""
            raise ConfigError(f"{prefix}{key}", f"unknown key{suggest(key, allowed)}; allowed: {', '.join(allowed)}")


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


def parse_cache(value, where: str) -> CacheSpec:
    if isinstance(value, dict):
        _check_keys(value, ("nbytes", "nslots", "w0"), where)
        nbytes = _cache_nbytes(value.get("nbytes", DEFAULT_CACHE_NBYTES), f"{where}.nbytes")
        nslots = parse_int(value.get("nslots", DEFAULT_CACHE_NSLOTS), f"{where}.nslots", lo=1, hi=MAX_CACHE_NSLOTS,
                      why=" (HDF5 allocates every slot up front)")
        w0 = value.get("w0", DEFAULT_CACHE_W0)
        if isinstance(w0, bool) or not isinstance(w0, (int, float)) or not 0.0 <= float(w0) <= 1.0:
            raise ConfigError(f"{where}.w0", f"must be a number from 0 to 1, got {w0!r}")
        return CacheSpec(nbytes, nslots, float(w0))
    return CacheSpec(_cache_nbytes(value, where), DEFAULT_CACHE_NSLOTS, DEFAULT_CACHE_W0)


def _cache_nbytes(value, where: str) -> int:
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(where, f"expected a size like 1MiB, got {value!r}")
    n = parse_size(value, where)
    if n > MAX_CACHE_NBYTES:
        raise ConfigError(where, f"{value!r} is larger than any chunk cache can be (at most {MAX_CACHE_NBYTES:,} bytes)")
    return n


def parse_access(raw, where: str) -> AccessSpec:
    _check_keys(raw, ("op", "block", "order", "random", "seed", "trace", "dataset", "pid"), where)
    op = raw.get("op", "read")
    if not isinstance(op, str) or op not in OPS:
        raise ConfigError(f"{where}.op", f"must be read, write or copy, got {op!r}{suggest(op, OPS)}")
    if raw.get("trace") is not None:
        return _parse_replay(raw, op, where)
    for key in ("dataset", "pid"):
        if key in raw:
            raise ConfigError(f"{where}.{key}", "belongs to a replay: give `trace: FOLDER` (from ccp trace) too")
    if "block" not in raw:
        raise ConfigError(f"{where}.block", "missing: the shape of one request, like [1, 1, 1, 717]")
    block = parse_shape(raw["block"], f"{where}.block")
    order = None
    if raw.get("order") is not None:
        order = tuple(parse_int(d, f"{where}.order", lo=0) for d in (raw["order"] if isinstance(raw["order"], list) else [raw["order"]]))
        if sorted(order) != list(range(len(block))):
            raise ConfigError(f"{where}.order", f"must list each of the {len(block)} dims once, slowest first, got {list(order)}")
    random = parse_int(raw.get("random", 0), f"{where}.random", lo=0, hi=MAX_RANDOM, why=" (requests are planned in memory)")
    if random and op != "read":
        raise ConfigError(f"{where}.random", f"random requests are for reads; a {op} cell handles every block once")
    if random and order is not None:
        raise ConfigError(f"{where}.order", "order applies to tiling; drop it or drop random")
    return AccessSpec(op=op, block=block, order=order, random=random,
                      seed=parse_int(raw.get("seed", 0), f"{where}.seed", lo=0, hi=2**63 - 1))


def _parse_replay(raw, op: str, where: str) -> AccessSpec:
    """``{trace: FOLDER, dataset: /path, pid: N}``: the selections a traced program made, in its order."""
    for key in ("block", "order", "random", "seed"):
        if key in raw:
            raise ConfigError(f"{where}.{key}", "a replay takes its requests from the trace; drop this key")
    if op == "copy":
        raise ConfigError(f"{where}.op", "a replay reads or writes as the program did; use read or write")
    trace = Path(str(raw["trace"])).expanduser()
    if not (trace / "trace.json").is_file():
        raise ConfigError(f"{where}.trace", f"{trace}: not a ccp trace folder (no trace.json; make one with `ccp trace -o {trace} -- ...`)")
    dataset = raw.get("dataset")
    if not isinstance(dataset, str) or not dataset.strip():
        raise ConfigError(f"{where}.dataset", "a replay names the traced dataset to replay, like /g/data")
    pid = parse_int(raw["pid"], f"{where}.pid", lo=0) if raw.get("pid") is not None else None
    # the block (the largest request: labels, cell ids, checks) is set when the trace is loaded (ccp.workload.sweep)
    return AccessSpec(op=op, block=(), trace=str(trace.resolve()), trace_dataset=dataset.strip(), pid=pid)


def _as_list(value, where: str) -> list:
    if isinstance(value, list):
        if not value:
            raise ConfigError(where, "is an empty list; omit the key to use the default")
        return value
    return [value]


SWEEP_KEYS = ("name", "dataset", "matrix", "exclude", "repeats", "cold", "time_budget", "tables", "s3")
MATRIX_KEYS = ("chunks", "filters", "cache", "access", "client", *STORAGE_AXES)


def parse_client(raw, where: str) -> str:
    if not isinstance(raw, str) or raw.strip().lower() not in CLIENTS:
        raise ConfigError(where, f"expected one of {', '.join(CLIENTS)}, got {raw!r}")
    return raw.strip().lower()


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
    _check_keys(matrix, MATRIX_KEYS, "matrix")
    storage = parse_storage_config(raw)           # one line naming matrix.<axis>[i] or s3.<key>
    if "s3" in raw and storage.s3 is None:
        raise ConfigError("s3", "only applies to files read over S3: add s3 to matrix.storage")
    from_file = dataset.file is not None
    default_layout = [SOURCE] if from_file else [None]
    default_filters = [SOURCE] if from_file else ["none"]

    chunks = tuple(parse_chunks(v, f"matrix.chunks[{i}]") for i, v in enumerate(_as_list(matrix.get("chunks", default_layout), "matrix.chunks")))
    filters: list[FilterPipeline | FromSource] = []
    for i, v in enumerate(_as_list(matrix.get("filters", default_filters), "matrix.filters")):
        if isinstance(v, str) and v.strip().lower() == SOURCE.value:
            filters.append(SOURCE)
        else:
            filters.append(parse_filters(v, f"matrix.filters[{i}]"))
    if dataset.generate is not None and dataset.generate.chunks is None:
        for i, c in enumerate(chunks):
            if c is SOURCE:
                raise ConfigError(f"matrix.chunks[{i}]", "`source` means the stored layout: give `dataset.file`, or `dataset.generate.chunks`")
        for i, f in enumerate(filters):
            if f is SOURCE:
                raise ConfigError(f"matrix.filters[{i}]", "`source` means the stored filters: give `dataset.file`, or `dataset.generate.chunks`/`filters`")
    cache = tuple(parse_cache(v, f"matrix.cache[{i}]") for i, v in enumerate(_as_list(matrix.get("cache", [DEFAULT_CACHE_NBYTES]), "matrix.cache")))
    client = tuple(dict.fromkeys(parse_client(v, f"matrix.client[{i}]")
                                 for i, v in enumerate(_as_list(matrix.get("client", [DEFAULT_CLIENT]), "matrix.client"))))
    access_raw = matrix.get("access")
    access = tuple(parse_access(v, f"matrix.access[{i}]") for i, v in enumerate(_as_list(access_raw, "matrix.access"))) if access_raw is not None else ()

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
    return Sweep(name=name.strip(), dataset=dataset, chunks=chunks, filters=tuple(filters), cache=cache, access=access,
                 exclude=exclude, repeats=repeats, cold=cold, time_budget=time_budget, tables=tables, client=client, storage=storage,
                 raw=raw, base_dir=base_dir)


def _parse_exclude(raw, where: str) -> dict:
    """An exclude entry: the given axes must all match for a cell to be dropped."""
    _check_keys(raw, MATRIX_KEYS, where)
    out: dict[str, object] = {}
    if "chunks" in raw:
        out["chunks"] = parse_chunks(raw["chunks"], f"{where}.chunks")
    if "filters" in raw:
        v = raw["filters"]
        out["filters"] = SOURCE if isinstance(v, str) and v.lower() == SOURCE.value else parse_filters(v, f"{where}.filters")
    if "cache" in raw:
        out["cache"] = parse_cache(raw["cache"], f"{where}.cache")
    if "client" in raw:
        out["client"] = parse_client(raw["client"], f"{where}.client")
    if "access" in raw:
        a = raw["access"]
        _check_keys(a, ("op", "block", "order", "random", "seed"), f"{where}.access")
        sub: dict[str, object] = {}
        if "op" in a:
            if not isinstance(a["op"], str) or a["op"] not in OPS:
                raise ConfigError(f"{where}.access.op", f"must be read, write or copy, got {a['op']!r}")
            sub["op"] = a["op"]
        if "block" in a:
            sub["block"] = parse_shape(a["block"], f"{where}.access.block")
        if "order" in a:
            if a["order"] is not None and not isinstance(a["order"], list):
                raise ConfigError(f"{where}.access.order", f"expected a list of dims like [0, 1], got {a['order']!r}")
            sub["order"] = tuple(parse_int(d, f"{where}.access.order", lo=0) for d in a["order"]) if a["order"] is not None else None
        if "random" in a:
            sub["random"] = parse_int(a["random"], f"{where}.access.random", lo=0)
        out["access"] = sub
    out.update(parse_storage_exclude(raw, where))
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


def load_sweep(path, scale: float | None = None) -> Sweep:
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


def sweep_as_dict(sweep: Sweep, dataset_shape=None) -> dict:
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
    access = [{"op": a.op, "trace": a.trace, "dataset": a.trace_dataset, "pid": a.pid} if a.trace is not None else
              {"op": a.op, "block": list(a.block), "order": list(a.order) if a.order else None,
               "random": a.random, "seed": a.seed} for a in sweep.access]
    out = {
        "name": sweep.name,
        "dataset": ds,
        "matrix": {
            "chunks": [SOURCE.value if c is SOURCE else shape_str(c) for c in sweep.chunks],
            "filters": [SOURCE.value if f is SOURCE else f.spec for f in sweep.filters],
            "cache": [{"nbytes": c.nbytes, "nslots": c.nslots, "w0": c.w0} for c in sweep.cache],
            "access": access,
            "client": list(sweep.client),
        },
        "exclude": sweep.raw.get("exclude") or [],
        "repeats": sweep.repeats,
        "cold": sweep.cold,
        "time_budget": sweep.time_budget,
    }
    matrix = out["matrix"]
    assert isinstance(matrix, dict)
    matrix.update(sweep.storage.as_dict())
    if sweep.storage.s3 is not None:
        out["s3"] = sweep.storage.s3_as_dict()
    if sweep.raw.get("tables") is not None:
        out["tables"] = sweep.raw["tables"]
    return out


def is_nan(x) -> bool:
    return isinstance(x, float) and math.isnan(x)
