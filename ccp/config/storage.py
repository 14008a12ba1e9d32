"""The object-storage axes of a sweep: parsed, validated, and expanded into per-cell settings.

Pure settings (floor 2: the sweep parser and the matrix use them); :mod:`ccp.remote` acts on them.

Names as issue 15 gives them (a sweep and its results read the same everywhere)::

    s3: local                                   # or {endpoint: URL, bucket: NAME}; top level
    matrix:
      storage: [local, s3]
      fsspec: [{cache_type: readahead, block_size: 4MiB}]     # none | readahead | blockcache | first
      latency: [0ms, 20ms]                                     # emulated, per GET
      bandwidth: [100MB/s]                                     # emulated, per GET; 'unlimited' for none
      file_space: [default, {strategy: page, page_size: 4MiB}]
      page_buffer: [none, 16MiB]

How they combine (:func:`storage_cells`, a pure function the matrix calls once per cell of the other
axes): ``fsspec``, ``latency`` and ``bandwidth`` only mean something when the file is read over S3, so
a ``local`` cell is not multiplied by them (one local cell, those columns empty). ``page_buffer`` only
means something on a paged file: a cell whose file is not paged is not multiplied by a non-zero page
buffer (HDF5 2.0 would open it and silently run without one: measured, the file's access list then
reports a page buffer of 0). Write and copy cells write a local file: they take ``file_space`` but are
not multiplied by ``storage: s3`` or the page buffer. A matrix with none of these axes gives exactly one
default setting whose key adds nothing, so every existing sweep keeps its cell ids.
"""

from __future__ import annotations

import itertools
import math
import re
import urllib.parse
from dataclasses import dataclass

from ccp.errors import ConfigError, suggest
from ccp.units import parse_size

LOCAL_BUCKET = "ccp-local"
CACHE_TYPES = ("none", "readahead", "blockcache", "first")
DEFAULT_BLOCK_SIZE = 5 * 2**20     # s3fs's default block size


STRATEGIES = ("page", "fsm_aggr", "aggregate", "none")
MIN_PAGE_SIZE = 512          # HDF5's H5F_FILE_SPACE_PAGE_SIZE_MIN
MAX_PAGE_SIZE = 2**30        # HDF5's H5F_FILE_SPACE_PAGE_SIZE_MAX: "cannot set file space page size to more than 1GB"
# What `ccp check` accepts, `ccp run` runs (issue 21): each axis has a range a tiny cell runs in seconds at
# either end, and beyond which a value is a typo, not an experiment. Outside it: one line naming the range.
MAX_LATENCY_S = 1.0          # emulated per GET; an intercontinental round trip is ~0.3 s
MIN_BANDWIDTH = 10**5        # 100kB/s: one 5MiB fsspec block in under a minute ('1B/s' would take two months)
MAX_BANDWIDTH = 10**12       # 1TB/s; beyond it, say 'unlimited'
MAX_BUFFER = 2**40           # page buffer and fsspec block size: 1TiB (HDF5 takes a size_t; the columns an int64)
MIN_BLOCK_SIZE = 4096        # fsspec block size: below a page, every few bytes HDF5 reads would be a GET of their own
MAX_THRESHOLD = 2**63 - 1    # h5repack -T: an hsize_t, kept within int64


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
    if page > MAX_PAGE_SIZE:
        raise ConfigError(f"{where}.page_size", f"HDF5's largest page is 1GiB ({MAX_PAGE_SIZE} bytes), got {page}")
    persist = value.get("persist", True)
    if not isinstance(persist, bool):
        raise ConfigError(f"{where}.persist", f"expected true or false, got {persist!r}")
    threshold = value.get("threshold", 1)
    if isinstance(threshold, bool) or not isinstance(threshold, int) or not 0 <= threshold <= MAX_THRESHOLD:
        raise ConfigError(f"{where}.threshold", f"expected a whole number of bytes from 0 to 2**63-1, got {threshold!r}")
    return FileSpace(strategy, page, persist, threshold)


# h5repack -S names -> ours
REPACK_STRATEGIES = {"PAGE": "page", "FSM_AGGR": "fsm_aggr", "AGGR": "aggregate", "NONE": "none"}


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
    """``16MiB`` -> bytes (at most 1TiB); 0, None or 'none': no page buffer."""
    if isinstance(value, bool):
        raise ConfigError(where, f"expected a size like 16MiB or none, got {value!r}")
    if value is None or value == 0 or str(value).strip().lower() == "none":
        return 0
    n = parse_size(value, where)
    if n > MAX_BUFFER:
        raise ConfigError(where, f"expected none or a size up to 1TiB, got {value!r}")
    return n


_NUM_UNIT = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z/]*)\s*$")
_LATENCY_UNITS = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6}


def parse_latency(value, where: str = "latency") -> float:
    """'20ms' -> 0.02; 0 -> 0.0 (no emulated delay). Seconds when no unit; 0 to 1s."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        m = _NUM_UNIT.match(str(value))
        if not m or m.group(2).lower() not in _LATENCY_UNITS:
            raise ConfigError(where, f"expected a latency like 0ms, 20ms or 0.05s, got {value!r}")
        seconds = float(m.group(1)) * _LATENCY_UNITS[m.group(2).lower()]
    if not 0 <= seconds <= MAX_LATENCY_S:          # NaN and inf fail here too
        raise ConfigError(where, f"expected an emulated latency per GET from 0ms to 1s, got {value!r}")
    return seconds


def parse_bandwidth(value, where: str = "bandwidth") -> float | None:
    """'100MB/s' -> 1e8 bytes/s (100kB/s to 1TB/s); None, 0, 'none', 'unlimited' or inf -> None (no emulated
    transfer time)."""
    if isinstance(value, bool):
        raise ConfigError(where, f"expected a bandwidth like 100MB/s or unlimited, got {value!r}")
    if value is None or value == 0 or str(value).strip().lower() in ("none", "unlimited", "inf", ".inf"):
        return None
    if isinstance(value, (int, float)):
        if value == math.inf:
            return None
        n = float(value)
    else:
        text = str(value).strip()
        if not text.lower().endswith("/s"):
            raise ConfigError(where, f"expected a bandwidth like 100MB/s or 1GiB/s, got {value!r}")
        n = float(parse_size(text[:-2], where))
    if not MIN_BANDWIDTH <= n <= MAX_BANDWIDTH:        # NaN fails here too
        raise ConfigError(where, f"expected an emulated bandwidth from 100kB/s to 1TB/s (or unlimited), got {value!r}")
    return n


@dataclass(frozen=True)
class EmulatedNetwork:
    """Per-GET delay added on the client: ``latency_s + bytes / bandwidth_bps`` (emulated)."""

    latency_s: float = 0.0
    bandwidth_bps: float | None = None

    def delay(self, nbytes: int) -> float:
        extra = nbytes / self.bandwidth_bps if self.bandwidth_bps else 0.0
        return self.latency_s + extra

    @property
    def label(self) -> str:
        if not self.latency_s and not self.bandwidth_bps:
            return "none"
        bw = f"{self.bandwidth_bps / 1e6:g}MB/s" if self.bandwidth_bps else "unlimited"
        return f"emulated: {self.latency_s * 1e3:g}ms per GET, {bw}"


NO_NETWORK = EmulatedNetwork()


@dataclass(frozen=True)
class S3Settings:
    """``local`` (endpoint None: ccp starts the loopback server) or an endpoint URL and bucket."""

    endpoint: str | None = None
    bucket: str = LOCAL_BUCKET
    prefix: str = "ccp"

    @property
    def local(self) -> bool:
        return self.endpoint is None


def parse_s3(value, where: str = "s3") -> S3Settings:
    """``"local"`` or ``{endpoint: URL, bucket: NAME[, prefix: P]}``."""
    if value is None or value == "local":
        return S3Settings()
    if not isinstance(value, dict):
        raise ConfigError(where, f"expected 'local' or {{endpoint: URL, bucket: NAME}}, got {value!r}")
    unknown = set(value) - {"endpoint", "bucket", "prefix"}
    if unknown:
        key = sorted(unknown)[0]
        raise ConfigError(f"{where}.{key}", "unknown key" + suggest(key, ("endpoint", "bucket", "prefix")))
    endpoint, bucket = value.get("endpoint"), value.get("bucket")
    if not endpoint or not isinstance(endpoint, str):
        raise ConfigError(f"{where}.endpoint", f"expected a URL like https://s3.us-west-2.amazonaws.com, got {endpoint!r}")
    url = urllib.parse.urlparse(endpoint)
    try:
        url.port                                  # noqa: B018 -- raises on a port out of 0-65535
    except ValueError:
        raise ConfigError(f"{where}.endpoint", f"expected an http(s) URL with a port from 1 to 65535, got {endpoint!r}") from None
    if url.scheme not in ("http", "https") or not url.hostname or not endpoint.isprintable():
        raise ConfigError(f"{where}.endpoint", f"expected an http(s) URL, got {endpoint!r}")
    if not bucket or not isinstance(bucket, str) or not bucket.isprintable() or "/" in bucket or len(bucket) > 255:
        raise ConfigError(f"{where}.bucket", f"expected a bucket name, got {bucket!r}")     # the preflight asks the server
    prefix = value.get("prefix", "ccp")
    if not isinstance(prefix, str) or not prefix.isprintable() or len(prefix.encode()) > 512:
        raise ConfigError(f"{where}.prefix", f"expected a printable key prefix like ccp/runs, got {prefix!r}")
    prefix = prefix.strip("/")
    return S3Settings(endpoint.rstrip("/"), bucket, prefix)


@dataclass(frozen=True)
class FsspecOptions:
    """How s3fs reads: fsspec's ``cache_type`` and ``block_size`` (the bytes a miss asks for)."""

    cache_type: str = "readahead"
    block_size: int = DEFAULT_BLOCK_SIZE

    @property
    def label(self) -> str:
        from ccp.units import format_bytes

        return f"{self.cache_type}/{format_bytes(self.block_size).replace(' ', '')}"


def parse_fsspec(value, where: str = "fsspec") -> FsspecOptions:
    """``{cache_type: readahead, block_size: 4MiB}``; either key may be left out."""
    if value is None:
        return FsspecOptions()
    if not isinstance(value, dict):
        raise ConfigError(where, f"expected {{cache_type: NAME, block_size: SIZE}}, got {value!r}")
    unknown = set(value) - {"cache_type", "block_size"}
    if unknown:
        key = sorted(unknown)[0]
        raise ConfigError(f"{where}.{key}", "unknown key" + suggest(key, ("cache_type", "block_size")))
    ct = value.get("cache_type", "readahead")
    if ct not in CACHE_TYPES:
        raise ConfigError(f"{where}.cache_type", f"expected one of {', '.join(CACHE_TYPES)}, got {ct!r}"
                          + suggest(ct, CACHE_TYPES))
    bs = parse_size(value.get("block_size", DEFAULT_BLOCK_SIZE), f"{where}.block_size")
    if not MIN_BLOCK_SIZE <= bs <= MAX_BUFFER:
        raise ConfigError(f"{where}.block_size", f"expected a size from 4KiB to 1TiB, got {value.get('block_size')!r}")
    return FsspecOptions(ct, bs)


AXES = ("storage", "fsspec", "latency", "bandwidth", "file_space", "page_buffer")
STORAGES = ("local", "s3")
S3_ONLY = ("fsspec", "latency", "bandwidth")
# The cells.csv columns of these axes, then the S3 result columns (None on local cells).
LABEL_COLUMNS = AXES
RESULT_COLUMNS = ("http_gets", "http_bytes", "predicted_http_gets", "predicted_http_bytes", "network",
                  "http_open_gets", "predicted_http_open_gets", "http_bytes_used", "http_wait_s", "page_buffer_effective")


def size_label(n: int) -> str:
    """Exact and short: 4194304 -> '4MiB', 1536 -> '1536B', 100000000 -> '100MB'."""
    for unit, k in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n and n % k == 0:
            return f"{n // k}{unit}"
    return f"{n}B"


def latency_label(seconds: float) -> str:
    return f"{seconds * 1e3:g}ms"


def bandwidth_label(bps: float | None) -> str:
    if bps is None:
        return "unlimited"
    return f"{size_label(int(bps))}/s" if float(bps).is_integer() else f"{bps:g}B/s"


def file_space_label(fs: FileSpace | None) -> str:
    if fs is None:
        return "default"
    return f"page/{size_label(fs.page_size)}" if fs.strategy == "page" else fs.strategy


def page_buffer_label(n: int) -> str:
    return size_label(n) if n else "none"


def parse_storage(value, where: str = "storage") -> str:
    if not isinstance(value, str) or value.strip().lower() not in STORAGES:
        raise ConfigError(where, f"expected one of {', '.join(STORAGES)}, got {value!r}" + suggest(value, STORAGES))
    return value.strip().lower()


def parse_matrix_file_space(value, where: str = "file_space") -> FileSpace | None:
    """``default`` (None: HDF5's default strategy, or the user's file as stored), ``page`` or a mapping; and
    the label a run folder's sweep.yaml holds (:func:`file_space_label`: ``page/4KiB``, ``fsm_aggr``), so the
    sweep as run reads back as the same setting."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("default", "source"):
            return None
        strategy, _, page = value.strip().partition("/")
        if strategy.lower() in STRATEGIES and (page or strategy.lower() != "page"):
            raw = {"strategy": strategy.lower(), **({"page_size": page} if page else {})}
            return parse_file_space(raw, where)
    return parse_file_space(value, where)


@dataclass(frozen=True)
class StorageSetting:
    """One cell's storage: where its file is read from, through what, and the file's own layout."""

    storage: str = "local"
    fsspec: FsspecOptions | None = None         # s3 only
    latency_s: float | None = None              # s3 only (emulated)
    bandwidth_bps: float | None = None          # s3 only (emulated; None: unlimited)
    file_space: FileSpace | None = None         # None: the file's strategy as written by default / as stored
    page_buffer: int = 0                        # bytes; 0: none

    @property
    def remote(self) -> bool:
        return self.storage == "s3"

    @property
    def network(self) -> EmulatedNetwork | None:
        return EmulatedNetwork(self.latency_s or 0.0, self.bandwidth_bps) if self.remote else None

    @property
    def is_default(self) -> bool:
        return self == StorageSetting()

    def labels(self) -> dict:
        """The cells.csv columns of the axes, named as the axes; '' where an axis does not apply."""
        return {"storage": self.storage,
                "fsspec": (self.fsspec or FsspecOptions()).label if self.remote else "",
                "latency": latency_label(self.latency_s or 0.0) if self.remote else "",
                "bandwidth": bandwidth_label(self.bandwidth_bps) if self.remote else "",
                "file_space": file_space_label(self.file_space),
                "page_buffer": page_buffer_label(self.page_buffer)}

    @property
    def key_parts(self) -> list[str]:
        """What the cell key appends: nothing for the default (old cell ids stay), else every label."""
        if self.is_default:
            return []
        return [f"{k}={v}" for k, v in self.labels().items()]

    def label(self) -> str:
        """For the run's progress line: only what differs from a plain local cell."""
        if self.is_default:
            return ""
        lab = self.labels()
        parts = []
        if self.remote:
            parts.append(f"s3 {lab['fsspec']} {lab['latency']}" + ("" if self.bandwidth_bps is None else f" {lab['bandwidth']}")
                         + (" (emulated)" if self.latency_s or self.bandwidth_bps else ""))
        if self.file_space is not None:
            parts.append(lab["file_space"])
        if self.page_buffer:
            parts.append(f"page buffer {lab['page_buffer']}")
        return " ".join(parts)


@dataclass(frozen=True)
class StorageAxes:
    """The matrix's storage axes as parsed (each a tuple of values, in the order given)."""

    storage: tuple = ("local",)
    fsspec: tuple = (FsspecOptions(),)
    latency: tuple = (0.0,)
    bandwidth: tuple = (None,)
    file_space: tuple = (None,)
    page_buffer: tuple = (0,)

    @property
    def has_s3(self) -> bool:
        return "s3" in self.storage


def _values(matrix: dict, key: str, default, where: str) -> list:
    value = matrix.get(key, default)
    if isinstance(value, list):
        if not value:
            raise ConfigError(f"{where}.{key}", "is an empty list; omit the key to use the default")
        return value
    return [value]


def _unique(values: list) -> tuple:
    return tuple(dict.fromkeys(values))


def parse_storage_axes(matrix: dict | None, where: str = "matrix") -> StorageAxes:
    """The six axes from the matrix mapping (other keys are the caller's); each value or list of values checked."""
    matrix = matrix or {}
    w = f"{where}."

    def each(key, default, parse):
        return _unique([parse(v, f"{w}{key}[{i}]") for i, v in enumerate(_values(matrix, key, default, where))])

    axes = StorageAxes(
        storage=each("storage", ["local"], parse_storage),
        fsspec=each("fsspec", [None], parse_fsspec),
        latency=each("latency", [0], parse_latency),
        bandwidth=each("bandwidth", [None], parse_bandwidth),
        file_space=each("file_space", ["default"], parse_matrix_file_space),
        page_buffer=each("page_buffer", [0], parse_page_buffer),
    )
    if not axes.has_s3:
        for key in S3_ONLY:
            if key in matrix:
                raise ConfigError(f"{w}{key}", "only applies to files read over S3: add s3 to matrix.storage")
    for i, pb in enumerate(axes.page_buffer):
        if not pb:
            continue
        for j, fs in enumerate(axes.file_space):
            if fs is not None and fs.strategy == "page" and pb < fs.page_size:
                raise ConfigError(f"{w}page_buffer[{i}]", f"{page_buffer_label(pb)} is smaller than the page of "
                                  f"{w}file_space[{j}] ({size_label(fs.page_size)}); HDF5 2.0 would silently "
                                  "use one page")
    return axes


def parse_sweep_s3(raw_sweep: dict, axes: StorageAxes) -> S3Settings | None:
    """The top-level ``s3:`` setting: None when no cell reads over S3; ``local`` when S3 cells have no setting."""
    if not axes.has_s3:
        return None
    return parse_s3(raw_sweep.get("s3", "local"), "s3")


def page_size_of(fs: FileSpace | None, stored_page_size: int | None) -> int | None:
    """The page size of the file a cell reads: its file_space's, or the stored file's when default."""
    if fs is None:
        return stored_page_size
    return fs.page_size if fs.strategy == "page" else None


def storage_cells(op: str, axes: StorageAxes = StorageAxes(), stored_page_size: int | None = None,
                  where: str = "matrix") -> list[StorageSetting]:
    """Every storage setting one cell of the other axes is multiplied by, in matrix order.

    ``op``: the cell's access op; ``stored_page_size``: the page size of the file a ``default``
    file_space reads (a user's paged file read as stored), None when it is not paged. Rules in the
    module's docstring. Raises :class:`ConfigError` when the page buffer axis has no value any cell
    can use.
    """
    out: list[StorageSetting] = []
    reads = op == "read"
    for fs in axes.file_space:
        page = page_size_of(fs, stored_page_size)
        buffers = [pb for pb in axes.page_buffer if pb == 0 or (reads and page is not None)]
        for pb in buffers:
            if pb and page is not None and pb < page:
                raise ConfigError(f"{where}.page_buffer", f"{page_buffer_label(pb)} is smaller than the file's page "
                                  f"({size_label(page)}); HDF5 2.0 would silently use one page")
            for storage in axes.storage if reads else ("local",):
                if storage == "local":
                    out.append(StorageSetting("local", None, None, None, fs, pb))
                    continue
                for fo, lat, bw in itertools.product(axes.fsspec, axes.latency, axes.bandwidth):
                    out.append(StorageSetting("s3", fo, lat, bw, fs, pb))
    out = list(dict.fromkeys(out))
    if not out:
        if any(axes.page_buffer):
            raise ConfigError(f"{where}.page_buffer", "a page buffer needs a paged file: add {strategy: page} to "
                              f"{where}.file_space (HDF5 2.0 ignores a page buffer on a file that is not paged)")
        raise ConfigError(where, "no storage setting applies to this cell")      # pragma: no cover - defaults always give one
    return out


def check_effective_page_buffer(setting: StorageSetting, effective: int, file: str) -> None:
    """After the open: HDF5 2.0 opens a file that is not paged with a page buffer and drops it silently."""
    from ccp.errors import CcpError

    if setting.page_buffer and int(effective) != setting.page_buffer:
        raise CcpError(f"{file}: page_buffer {page_buffer_label(setting.page_buffer)} was not applied (HDF5 reports "
                       f"{int(effective)} bytes): the file is not paged")




_ONE = {"storage": parse_storage, "fsspec": parse_fsspec, "latency": parse_latency, "bandwidth": parse_bandwidth,
        "file_space": parse_matrix_file_space, "page_buffer": parse_page_buffer}
_FIELD = {"storage": "storage", "fsspec": "fsspec", "latency": "latency_s", "bandwidth": "bandwidth_bps",
          "file_space": "file_space", "page_buffer": "page_buffer"}


def parse_storage_exclude(rule: dict, where: str) -> dict:
    """The storage keys of one ``exclude:`` entry, parsed (``{storage: s3, latency: 80ms}``); other keys ignored."""
    return {k: _ONE[k](v, f"{where}.{k}") for k, v in rule.items() if k in _ONE}


def matches_storage(rule: dict, setting: StorageSetting) -> bool:
    """True when every storage key of a parsed exclude rule equals the setting's (no storage key: True)."""
    return all(getattr(setting, _FIELD[k]) == v for k, v in rule.items() if k in _FIELD)


def _file_space_yaml(fs: FileSpace | None):
    """A file_space as sweep.yaml holds it: its label (``page/4KiB``), or the mapping when persist or threshold
    are not the defaults the label stands for."""
    if fs is None or (fs.persist, fs.threshold) == (FileSpace.persist, FileSpace.threshold):
        return file_space_label(fs)
    out = {"strategy": fs.strategy, "persist": fs.persist, "threshold": fs.threshold}
    return {**out, "page_size": fs.page_size} if fs.strategy == "page" else out


@dataclass(frozen=True)
class StorageConfig:
    """What a sweep file says about storage: the six matrix axes and the top-level ``s3:`` (None: no S3 cell)."""

    axes: StorageAxes = StorageAxes()
    s3: S3Settings | None = None

    def as_dict(self) -> dict:
        """The settings as run, every default spelled out (for the run folder's sweep.yaml)."""
        a = self.axes
        out = {"storage": list(a.storage), "file_space": [_file_space_yaml(f) for f in a.file_space],
               "page_buffer": [page_buffer_label(p) for p in a.page_buffer]}
        if a.has_s3:
            out.update(fsspec=[{"cache_type": f.cache_type, "block_size": f.block_size} for f in a.fsspec],
                       latency=[latency_label(x) for x in a.latency], bandwidth=[bandwidth_label(b) for b in a.bandwidth])
        return out

    def s3_as_dict(self):
        if self.s3 is None:
            return None
        return "local" if self.s3.local else {"endpoint": self.s3.endpoint, "bucket": self.s3.bucket,
                                              "prefix": self.s3.prefix}


def parse_storage_config(raw_sweep: dict) -> StorageConfig:
    """The storage part of a whole sweep mapping (its ``matrix`` axes and ``s3``); the rest is the caller's."""
    matrix = raw_sweep.get("matrix") or {}
    if not isinstance(matrix, dict):
        return StorageConfig()                      # the core parser names a matrix that is not a mapping
    axes = parse_storage_axes({k: v for k, v in matrix.items() if k in AXES})
    return StorageConfig(axes, parse_sweep_s3(raw_sweep, axes))


def split_sweep(raw_sweep: dict) -> tuple[dict, StorageConfig]:
    """(the sweep mapping without the storage keys, the storage settings): what the core parser takes
    without them, and what the storage axes add. ``parse_sweep`` parses both; this stays for scripts."""
    cfg = parse_storage_config(raw_sweep)
    core = {k: v for k, v in raw_sweep.items() if k != "s3"}
    if isinstance(core.get("matrix"), dict):
        core["matrix"] = {k: v for k, v in core["matrix"].items() if k not in AXES}
    return core, cfg


__all__ = ["AXES", "CACHE_TYPES", "DEFAULT_BLOCK_SIZE", "EmulatedNetwork", "FileSpace", "FsspecOptions", "LABEL_COLUMNS", "LOCAL_BUCKET", "MIN_PAGE_SIZE", "NO_NETWORK", "REPACK_STRATEGIES", "RESULT_COLUMNS", "S3Settings", "STORAGES", "STRATEGIES", "StorageAxes", "StorageConfig", "StorageSetting", "bandwidth_label", "check_effective_page_buffer", "file_space_label", "latency_label", "matches_storage", "page_buffer_label", "page_size_of", "parse_bandwidth", "parse_file_space", "parse_fsspec", "parse_latency", "parse_matrix_file_space", "parse_page_buffer", "parse_repack_file_space", "parse_s3", "parse_storage", "parse_storage_axes", "parse_storage_config", "parse_storage_exclude", "parse_sweep_s3", "size_label", "split_sweep", "storage_cells"]
