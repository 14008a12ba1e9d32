"""h5repack's ``-l`` and ``-f`` option syntax, plus ccp filter spec strings.

Layout (``-l``)::

    [DSET[,DSET...]:]CHUNK=DIMxDIM...      chunked, e.g. /All_Data/CrIS-SDR_All/ES_ImaginaryLW:CHUNK=1x30x9x717
    [DSET[,DSET...]:]CONTI                 contiguous
    [DSET[,DSET...]:]COMPA                 compact

Filters (``-f``)::

    [DSET[,DSET...]:]FILTER
    FILTER = GZIP=1..9 | SZIP=PIXELS,NN|EC | SHUF | FLET | NBIT | SOFF=N,IN|DS | NONE
           | a ccp spec: zstd:3, shuffle+gzip:6, blosc:lz4:5:shuffle, ...

Without ``DSET:`` an option applies to every dataset. Several ``-f`` for the same target
accumulate in order (``-f SHUF -f GZIP=6`` is shuffle then gzip); ``NONE`` empties the
pipeline; a filter given again replaces its earlier setting in place. For a dataset, its
own ``-l`` / ``-f`` options replace the all-dataset ones (as h5repack does).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ccp.errors import ConfigError
from ccp.hdf5.filters import (
    FilterPipeline,
    FilterStep,
    check_available,
    looks_like_filter,
    parse_filters,
    parse_h5repack_filter,
)
from ccp.units import shape_str

ALL = None  # key for "every dataset"

LAYOUT_HELP = "expected [DSET[,DSET...]:]CHUNK=DIMxDIM..., CONTI or COMPA (e.g. /data:CHUNK=1x30x9x717)"
FILTER_SYNTAX = ("expected [DSET[,DSET...]:]FILTER with FILTER one of GZIP=1-9, SZIP=PIXELS,NN|EC, SHUF, FLET, "
                 "NBIT, SOFF=N,IN|DS, NONE, or a ccp filter spec like shuffle+gzip:6 or zstd:3")


@dataclass(frozen=True)
class Layout:
    """A destination storage layout: ``kind`` chunked / contiguous / compact."""

    kind: str  # "chunked" | "contiguous" | "compact"
    chunks: tuple[int, ...] | None = None

    def __post_init__(self):
        if self.kind not in ("chunked", "contiguous", "compact"):
            raise ValueError(f"unknown layout kind {self.kind!r}")
        if (self.kind == "chunked") != (self.chunks is not None):
            raise ValueError("chunks are given exactly for a chunked layout")

    @property
    def spec(self) -> str:
        return shape_str(self.chunks) if self.kind == "chunked" else self.kind

    @property
    def chunk_shape(self) -> tuple[int, ...]:
        """The chunks of a chunked layout (asked of another layout: a bug)."""
        assert self.chunks is not None, f"a {self.kind} layout has no chunks"
        return self.chunks

    def __str__(self) -> str:
        return self.spec


CONTIGUOUS = Layout("contiguous")
COMPACT = Layout("compact")


def as_layout(value, where: str = "layout") -> Layout:
    """A Layout from a Layout, a chunk tuple, None (contiguous) or 'CONTI'/'COMPA'/'1x30x9x717'."""
    if isinstance(value, Layout):
        return value
    if value is None:
        return CONTIGUOUS
    if isinstance(value, (tuple, list)):
        dims = tuple(value)
        if not dims or not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
            raise ConfigError(where, f"chunk dimensions must be integers, got {value!r}")
        if any(d <= 0 for d in dims):
            raise ConfigError(where, f"chunk dimensions must be > 0, got {shape_str(dims)}")
        return Layout("chunked", dims)
    text = str(value).strip()
    up = text.upper()
    if up in ("CONTI", "CONTIGUOUS"):
        return CONTIGUOUS
    if up in ("COMPA", "COMPACT"):
        return COMPACT
    if up.startswith("CHUNK="):
        text = text[6:]
    return Layout("chunked", _parse_chunk_dims(text, where))


def _parse_chunk_dims(text: str, where: str) -> tuple[int, ...]:
    parts = text.strip().lower().split("x")
    if not text.strip() or any(not p.strip().lstrip("-").isdigit() for p in parts):
        raise ConfigError(where, f"chunk dimensions {text!r} are not integers like 1x30x9x717")
    dims = tuple(int(p) for p in parts)
    if any(d <= 0 for d in dims):
        raise ConfigError(where, f"chunk dimensions must be > 0, got {text!r}")
    return dims


def _split_targets(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(","))
    return tuple(normalise_path(n) for n in names)


def normalise_path(name: str) -> str:
    name = name.strip()
    if not name:
        raise ValueError("empty dataset name")
    name = "/" + name.strip("/")
    return re.sub("/+", "/", name)


def parse_layout_option(text: str) -> tuple[tuple[str | None, ...], Layout]:
    """``'DSET:CHUNK=1x30x9x717'`` -> ((DSET,), Layout). Targets ``(None,)`` mean every dataset."""
    where = f"-l {text}"
    raw = str(text).strip()
    if not raw:
        raise ConfigError("-l", f"empty option; {LAYOUT_HELP}")
    head, sep, tail = raw.rpartition(":")
    targets: tuple[str | None, ...] = (ALL,)
    body = raw
    if sep:
        if not head.strip():
            raise ConfigError(where, f"no dataset name before ':'; {LAYOUT_HELP}")
        try:
            targets = _split_targets(head)
        except ValueError:
            raise ConfigError(where, f"empty dataset name in {head!r}; {LAYOUT_HELP}") from None
        body = tail
    up = body.strip().upper()
    if up in ("CONTI", "COMPA"):
        return targets, as_layout(up, where)
    if not (up == "CHUNK" or up.startswith("CHUNK=")):
        raise ConfigError(where, f"unknown layout {body.strip()!r}; {LAYOUT_HELP}")
    rest = body.strip()[5:]
    if not rest.startswith("=") or not rest[1:].strip():
        raise ConfigError(where, f"CHUNK needs dimensions, e.g. CHUNK=1x30x9x717; {LAYOUT_HELP}")
    dims_text = rest[1:].strip()
    if dims_text.upper() == "NONE":
        return targets, CONTIGUOUS
    return targets, Layout("chunked", _parse_chunk_dims(dims_text, where))


# ---------------------------------------------------------------- filters

def parse_filter_body(body: str, where: str) -> tuple[FilterStep, ...]:
    """One filter option's filter: h5repack syntax (``GZIP=6``) or a ccp spec (``shuffle+gzip:6``)."""
    try:
        steps = parse_h5repack_filter(body, where)
    except ConfigError:
        if "=" in body or body.strip() == body.strip().upper():
            raise
        steps = None    # lower case without '=': a ccp spec with its defaults ('gzip' is gzip:6, 'szip' szip:nn:8)
    if steps is not None:
        check_available(FilterPipeline(steps), where)
        return steps
    return parse_filters(body, where).steps


def parse_filter_option(text: str) -> tuple[tuple[str | None, ...], tuple[FilterStep, ...]]:
    """``'DSET:GZIP=6'`` -> ((DSET,), steps); ``()`` steps mean NONE. Targets ``(None,)`` = every dataset.

    The text is tried whole as a filter first (``GZIP=6``, ``zstd:3``, ``shuffle+gzip:6``),
    then split at each ':' from the left: the names before it, the filter after it.
    """
    where = f"-f {text}"
    raw = str(text).strip()
    if not raw:
        raise ConfigError("-f", f"empty option; {FILTER_SYNTAX}")
    first_error: ConfigError | None = None
    candidates = [(None, raw)] + [(raw[:i], raw[i + 1:]) for i, ch in enumerate(raw) if ch == ":"]
    for head, body in candidates:
        if head is not None and not head.strip():
            continue
        if not body.strip():
            continue
        try:
            steps = parse_filter_body(body, where)
        except ConfigError as exc:
            if first_error is None and looks_like_filter(body):
                first_error = exc
            continue
        if head is None:
            return (ALL,), steps
        try:
            return _split_targets(head), steps
        except ValueError:
            raise ConfigError(where, f"empty dataset name in {head!r}; {FILTER_SYNTAX}") from None
    if first_error is not None:
        raise first_error
    raise ConfigError(where, f"unknown filter; {FILTER_SYNTAX}")


def _accumulate(current: tuple[FilterStep, ...], new: tuple[FilterStep, ...]) -> tuple[FilterStep, ...]:
    if not new:  # NONE
        return ()
    out = list(current)
    for step in new:
        same = [i for i, s in enumerate(out) if s.name == step.name]
        if same:
            out[same[0]] = step
        else:
            out.append(step)
    return tuple(out)


@dataclass(frozen=True)
class RepackOptions:
    """Parsed ``-l`` / ``-f`` options: per-dataset and all-dataset (key ``None``) settings."""

    layouts: dict = field(default_factory=dict)   # path | None -> Layout
    filters: dict = field(default_factory=dict)   # path | None -> FilterPipeline

    @property
    def is_empty(self) -> bool:
        return not self.layouts and not self.filters


def parse_options(layout_args=(), filter_args=()) -> RepackOptions:
    """Parse repeated ``-l`` and ``-f`` values (in command-line order) into RepackOptions."""
    layouts: dict = {}
    for text in layout_args or ():
        targets, layout = parse_layout_option(text)
        for t in targets:
            layouts[t] = layout
    steps: dict = {}
    for text in filter_args or ():
        targets, new = parse_filter_option(text)
        for t in targets:
            steps[t] = _accumulate(steps.get(t, ()), new)
    filters = {t: FilterPipeline(s) for t, s in steps.items()}
    return RepackOptions(layouts, filters)
