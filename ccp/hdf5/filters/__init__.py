"""HDF5 filter pipelines: specs like ``"shuffle+gzip:6"`` <-> dataset creation property lists <->
stored cd_values <-> h5repack's ``-f`` syntax <-> Python codecs.

One class per filter (:mod:`.builtin`, :mod:`.plugins`), registered by spec name and HDF5 id in
:mod:`.base`. Parsing is pure; :meth:`FilterPipeline.apply` and :func:`pipeline_from_dcpl` talk to HDF5.

Adding a filter is one ``@register`` class in :mod:`.builtin` (HDF5's own) or :mod:`.plugins`: ``name``,
``id``, ``help`` and ``max_args``; ``normalise`` (spec arguments, defaults spelled out), ``apply`` or
``cd_values`` (the dcpl), ``from_stored`` (cd_values as other writers store them -> a step, or None for
the generic ``idN`` step); optionally ``h5repack``/``from_h5repack`` (its ``-f`` keyword), ``refuses``
(types HDF5 would refuse) and ``encoder``/``decoder``/``codec_missing`` (a byte-exact Python codec for
repack's raw-chunk path); and how other tools spell it: ``h5repack_option`` (its ``-f`` text),
``h5py_code`` (create_dataset keywords; ``h5py_order`` where h5py puts it), ``netcdf_code`` (createVariable
keywords), and for an hdf5plugin filter ``plugin_class``/``plugin_kwargs``. Sweeps, inspect, repack, advise,
tune and trace then know it; nothing outside this package names a filter. Add its rows to
tests/hdf5/test_filters.py's ROUND_TRIPS and tests/hdf5/test_filter_spellings.py's SPECS.
"""

from __future__ import annotations

import re

from ccp.errors import ConfigError, suggest
from ccp.hdf5.filters import builtin, plugins  # noqa: F401  (register the filter classes)
from ccp.hdf5.filters.base import (
    GENERIC,
    GENERIC_HELP,
    KNOWN_FILTERS,
    Filter,
    FilterPipeline,
    FilterStep,
    can_decode,
    class_for_id,
    filter_class,
    filter_label,
    provider,
    register_plugins,
    register_plugins_early,
    register_plugins_for,
    registered,
)
from ccp.hdf5.filters.plugins import Generic

__all__ = ["FILTER_HELP", "GENERIC_HELP", "H5REPACK_FILTERS", "KNOWN_FILTERS", "Filter", "FilterPipeline",
           "FilterStep", "can_decode", "check_available", "check_decodable", "check_for_type", "class_for_id",
           "describe_filters", "filter_class", "filter_id", "filter_label", "looks_like_filter", "missing_decoder", "parse_filters",
           "parse_h5repack_filter", "pipeline_from_dcpl", "provider", "register_plugins", "register_plugins_early", "register_plugins_for", "registered", "stored_step", "trace_filters",
           "type_refusal"]

FILTER_HELP = {"none": "no filter", **{name: cls.help for name, cls in registered().items()}}
H5REPACK_FILTERS = (*(cls.h5repack for cls in registered().values() if cls.h5repack), "NONE", "UD")


def filter_id(step: FilterStep) -> int:
    return step.id


def parse_filters(spec, where: str = "filters") -> FilterPipeline:
    """Parse a spec string; raise :class:`ConfigError` naming the bad step."""
    if spec is None:
        return FilterPipeline()
    if not isinstance(spec, str):
        raise ConfigError(where, f"expected a filter spec string like 'shuffle+gzip:6', got {spec!r}")
    text = spec.strip().lower()
    if text in ("", "none"):
        return FilterPipeline()
    steps = []
    for raw in text.split("+"):
        parts = raw.strip().split(":")
        name, args = parts[0].strip(), tuple(a.strip() for a in parts[1:])
        if GENERIC.fullmatch(name):
            steps.append(Generic.parse_generic(name, args, where))
            continue
        if name not in FILTER_HELP:
            raise ConfigError(where, f"unknown filter {name!r}{suggest(name, FILTER_HELP)}; known: {', '.join(FILTER_HELP)}, or {GENERIC_HELP}")
        if name == "none":
            raise ConfigError(where, f"'none' cannot be combined with other filters in {spec!r}")
        steps.append(filter_class(name).parse(args, where))
    pipeline = FilterPipeline(tuple(steps))
    check_available(pipeline, where)
    return pipeline


def parse_h5repack_filter(body: str, where: str) -> tuple[FilterStep, ...] | None:
    """h5repack's ``-f`` filter syntax -> steps (``()`` for NONE), or None if ``body`` is not h5repack syntax."""
    name, eq, arg = body.strip().partition("=")
    name = name.strip().upper()
    arg = arg.strip()
    if name not in H5REPACK_FILTERS:
        return None
    if name == "UD":
        raise ConfigError(where, "user-defined filters (UD=) are not supported; use a ccp filter spec such as "
                          "zstd:3, blosc:lz4:5:shuffle or bzip2:9")
    if name == "NONE":
        if eq:
            raise ConfigError(where, f"{name} takes no parameter, got {body.strip()!r}")
        return ()
    cls = next(c for c in registered().values() if c.h5repack == name)
    if cls.h5repack_example is None:
        if eq:
            raise ConfigError(where, f"{name} takes no parameter, got {body.strip()!r}")
        return (FilterStep(cls.name),)
    if not eq or not arg:
        raise ConfigError(where, f"{name} needs a parameter, e.g. {cls.h5repack_example}")
    return (cls.from_h5repack(arg, where),)


def looks_like_filter(body: str) -> bool:
    """Whether ``body`` starts with a filter's name (h5repack's or ours): its parse error is the one to show."""
    word = re.split(r"[=:+,]", body.strip(), maxsplit=1)[0].strip()
    return word.upper() in H5REPACK_FILTERS or word.lower() in FILTER_HELP


def check_available(pipeline: FilterPipeline, where: str = "filters") -> None:
    """Fail early when HDF5 cannot encode a filter here (no plugin, no szip encoder)."""
    import h5py  # noqa: F401  (registers lzf)
    from h5py import h5z

    for step in pipeline.steps:
        if step.filter.needs_hdf5plugin:
            try:
                import hdf5plugin  # noqa: F401
            except ImportError:
                raise ConfigError(where, f"filter {step.name!r} needs the hdf5plugin package (pip install hdf5plugin)") from None
        fid = step.id
        if not can_decode(fid):
            raise ConfigError(where, f"filter {step.name!r} ({filter_label(fid)}) is not available in this HDF5; "
                                     f"it is provided by {provider(fid)}")
        if fid < 256:
            info = h5z.get_filter_info(fid)
            if not info & h5z.FILTER_CONFIG_ENCODE_ENABLED:
                raise ConfigError(where, f"filter {step.name!r} can decode but not encode in this HDF5")


def stored_step(fid: int, values: tuple[int, ...], flags: int = 0, name: str = "") -> FilterStep:
    """The step for a filter as HDF5 stores it (after set_local), carrying its cd_values and flags.

    The cd_values are as stored: PyTables, hdf5plugin, netCDF-C and h5py store the same filter with
    different lengths (absent trailing values take the filter's defaults). A filter whose values no
    spec of ours says is kept as the generic ``idN:cd...`` step.
    """
    values = tuple(int(v) for v in values)
    cls = class_for_id(fid)
    step = cls.from_stored(values) if cls.id == fid else None
    if step is None:
        step = Generic.stored_step(fid, values)
    return FilterStep(step.name, step.args, values, int(flags), name)


def pipeline_from_dcpl(dcpl) -> FilterPipeline:
    """The pipeline stored in a dataset creation property list (``source`` filters), with cd_values,
    flags and the name each writer stored."""
    steps = []
    for i in range(dcpl.get_nfilters()):
        code, flags, values, name = dcpl.get_filter(i)
        label = name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name or "")
        steps.append(stored_step(int(code), tuple(values), int(flags), label))
    return FilterPipeline(tuple(steps))


def describe_filters(pipeline: FilterPipeline) -> list[dict]:
    """Each step of a stored pipeline (:func:`pipeline_from_dcpl`; a dcpl is read first) as a dict, for
    JSON: id, name, the ccp step, whether optional, cd_values, whether it decodes here, what provides it."""
    if not isinstance(pipeline, FilterPipeline):
        pipeline = pipeline_from_dcpl(pipeline)
    out = []
    for step in pipeline.steps:
        code, avail = step.id, can_decode(step.id)
        out.append({"id": code, "name": KNOWN_FILTERS.get(code, (step.stored_name or f"id{code}",))[0],
                    "step": step.spec, "optional": bool(step.flags & 1), "cd_values": list(step.stored),
                    "available": avail, "provider": None if avail else provider(code)})
    return out


def trace_filters(pipeline: FilterPipeline) -> list[dict]:
    """A stored pipeline as the trace folder's layout records it: [{"id", "name" (as the writer stored
    it), "values" (cd_values)}]."""
    return [{"id": step.id, "name": step.stored_name, "values": list(step.stored)} for step in pipeline.steps]


def check_for_type(pipeline: FilterPipeline, dtype, numeric: bool, where: str = "filters") -> None:
    """Filters HDF5 refuses for a datatype (its can_apply callbacks), before anything is written.

    ``numeric`` is False for data read as raw records of its file type (compound, string, vlen, ...).
    """
    import numpy as np

    for step in pipeline.steps:
        why = step.filter.refuses(np.dtype(dtype), numeric)
        if why:
            raise ConfigError(where, why)


def check_decodable(pipeline: FilterPipeline, what: str, where: str) -> None:
    """A stored pipeline this HDF5 cannot decode: one line naming the filter and what provides it."""
    for step in pipeline.steps:
        fid = step.id
        if not can_decode(fid):
            raise ConfigError(where, f"{what} is compressed with {filter_label(fid)}, which this HDF5 cannot decode; "
                                     f"it is provided by {provider(fid)}")


def missing_decoder(dcpl) -> str:
    """'' when this HDF5 can decode every filter stored in a dataset's creation list, else one sentence
    naming the first it cannot (the name the writer stored, for an id nobody registered here) and what
    provides it."""
    for i in range(dcpl.get_nfilters()):
        code, _flags, _values, name = dcpl.get_filter(i)
        code = int(code)
        if can_decode(code):
            continue
        stored = name.decode(errors="replace") if isinstance(name, bytes) else str(name or "")
        label = filter_label(code) if code in KNOWN_FILTERS or not stored else f"{stored!r} (id {code})"
        return f"its filter {label} is not available to decode it; it is provided by {provider(code)}"
    return ""


def type_refusal(pipeline: FilterPipeline, tid, dcpl=None) -> str:
    """'' when every step of ``pipeline`` can take HDF5 datatype ``tid`` (``h5py.h5t.TypeID``) and, given the
    dataset's creation list ``dcpl``, its fill value; else one sentence naming the filter and why.

    Asked before anything is written: some filters HDF5 accepts crash the process on a type (nbit on
    variable-length strings: SIGSEGV; Blosc on them: SIGFPE) or store what cannot be read back.
    """
    for step in pipeline.steps:
        cls = class_for_id(step.id)          # an ``idN`` step is judged as the filter it names
        if cls.generic:
            continue
        own = step if step.filter is cls else _named_step(cls, step)
        why = cls.refuses_type(own, tid)
        if why:
            return f"filter {step.spec}: {why}"
        if cls.name == "scaleoffset" and dcpl is not None and _nan_fill(dcpl, tid):
            return (f"filter {step.spec}: the fill value is NaN, which the scaleoffset filter cannot store "
                    "(it writes chunks that read back wrong)")
    return ""


def _named_step(cls, step: FilterStep) -> FilterStep:
    """A generic ``idN:cd...`` step as its filter's own step (its defaults when the values say nothing)."""
    try:
        values = tuple(int(a) for a in step.args) if step.cd_values is None else step.stored
        named = cls.from_stored(values)
    except (ValueError, IndexError):
        named = None
    return named if named is not None else cls.normalise((), "filters")


def _nan_fill(dcpl, tid) -> bool:
    import numpy as np
    from h5py import h5d, h5t

    from ccp.hdf5.lowlevel import fill_bytes

    if tid.get_class() != h5t.FLOAT or dcpl.fill_value_defined() != h5d.FILL_VALUE_USER_DEFINED:
        return False
    order = ">" if tid.get_order() == h5t.ORDER_BE else "<"
    size = tid.get_size()
    if size not in (4, 8):
        return False
    value = fill_bytes(dcpl, tid).view(f"{order}f{size}")
    return bool(np.isnan(value).any())
