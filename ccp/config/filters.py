"""Filter pipeline specs: ``"shuffle+gzip:6"`` <-> HDF5 dataset creation property lists.

A spec is steps joined by ``+``, each ``NAME[:ARG...]``. ``none`` is the empty pipeline.
Parsing is pure; :meth:`FilterPipeline.apply` and :func:`pipeline_from_dcpl` talk to HDF5.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ccp.errors import ConfigError, suggest

# name -> (HDF5 filter id, argument names with defaults, help)
_BLOSC_SHUFFLE = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2, "0": 0, "1": 1, "2": 2}
_BLOSC_CNAMES = ("blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd")
_BLOSC2_FILTERS = {"nofilter": 0, "shuffle": 1, "bitshuffle": 2, "0": 0, "1": 1, "2": 2}
_BLOSC2_CNAMES = ("blosclz", "lz4", "lz4hc", "zlib", "zstd")
_BSHUF_CNAMES = ("none", "lz4", "zstd")

FILTER_HELP = {
    "none": "no filter",
    "gzip": "gzip:LEVEL (0-9, default 6)",
    "szip": "szip:ec|nn:PIXELS_PER_BLOCK (default nn:8; pixels even, 2-32)",
    "shuffle": "shuffle (byte shuffle)",
    "fletcher32": "fletcher32 (checksum)",
    "scaleoffset": "scaleoffset:N (integers: min bits, 0 = automatic; floats: decimal digits kept)",
    "nbit": "nbit",
    "lzf": "lzf",
    "blosc": "blosc:CNAME:CLEVEL:SHUFFLE (default lz4:5:shuffle; shuffle noshuffle|shuffle|bitshuffle)",
    "blosc2": "blosc2:CNAME:CLEVEL:FILTER (default blosclz:5:shuffle; filter nofilter|shuffle|bitshuffle)",
    "zstd": "zstd:CLEVEL (1-22, default 3)",
    "lz4": "lz4:BLOCK_BYTES (default 0 = 1 GiB blocks)",
    "bitshuffle": "bitshuffle:CNAME:CLEVEL (cname none|lz4|zstd, default lz4; clevel for zstd)",
    "bzip2": "bzip2:BLOCKSIZE (1-9, default 9)",
}
GENERIC_HELP = "idN:CD0:CD1:... (any HDF5 filter by its registered id N, with its cd_values)"

# Filters other software writes, by registered id: (name, what provides the decoder). The ids and
# their plugins are the HDF Group's registry (RegisteredFilterPlugins.md).
_HDF5PLUGIN = "the hdf5plugin package (pip install hdf5plugin)"
KNOWN_FILTERS = {
    1: ("deflate (gzip)", "HDF5 itself"), 2: ("shuffle", "HDF5 itself"), 3: ("fletcher32", "HDF5 itself"),
    4: ("szip", "an HDF5 built with szip/libaec (h5py's wheel has it)"), 5: ("nbit", "HDF5 itself"),
    6: ("scaleoffset", "HDF5 itself"), 305: ("LZO", "PyTables' LZO filter (not in hdf5plugin)"),
    307: ("bzip2", _HDF5PLUGIN), 32000: ("LZF", "h5py (or hdf5plugin)"), 32001: ("Blosc", _HDF5PLUGIN),
    32002: ("MAFISC", "the MAFISC plugin"), 32003: ("Snappy", "the HDF Group's hdf5_plugins"),
    32004: ("LZ4", _HDF5PLUGIN), 32005: ("APAX", "the APAX plugin"), 32006: ("CBF", "the CBF plugin"),
    32007: ("JPEG-XR", "the JPEG-XR plugin"), 32008: ("Bitshuffle", _HDF5PLUGIN), 32009: ("SPDP", "the SPDP plugin"),
    32010: ("LPC-Rice", "the LPC-Rice plugin"), 32011: ("CCSDS-123", "the CCSDS-123 plugin"),
    32012: ("JPEG-LS", "the JPEG-LS plugin"), 32013: ("ZFP", _HDF5PLUGIN), 32014: ("FPZip", "the FPZip plugin"),
    32015: ("Zstandard", _HDF5PLUGIN), 32016: ("B3D", "the B3D plugin"), 32017: ("SZ", _HDF5PLUGIN),
    32018: ("FCIDECOMP", _HDF5PLUGIN), 32019: ("JPEG", "the HDF Group's hdf5_plugins"),
    32020: ("VBZ", "Oxford Nanopore's vbz plugin"), 32022: ("BitGroom", "netCDF-C's plugins (CCR)"),
    32023: ("Granular BitRound", "netCDF-C's plugins (CCR)"), 32024: ("SZ3", _HDF5PLUGIN),
    32026: ("Blosc2", _HDF5PLUGIN), 32028: ("SPERR", _HDF5PLUGIN), 32033: ("HTJ2K", _HDF5PLUGIN),
}
_GENERIC = re.compile(r"id(\d+)")


def filter_label(fid: int) -> str:
    """'Blosc (id 32001)'; 'filter id 40000' for an id nobody registered here."""
    known = KNOWN_FILTERS.get(fid)
    return f"{known[0]} (id {fid})" if known else f"filter id {fid}"


def provider(fid: int) -> str:
    known = KNOWN_FILTERS.get(fid)
    return known[1] if known else "its plugin (put it on HDF5_PLUGIN_PATH)"


def can_decode(fid: int) -> bool:
    """Whether this process's HDF5 has the filter (h5py's built-ins, hdf5plugin's, or HDF5_PLUGIN_PATH's)."""
    import h5py  # noqa: F401  (registers lzf)
    from h5py import h5z

    try:
        import hdf5plugin  # noqa: F401  (registers its filters)
    except ImportError:
        pass
    try:
        return bool(h5z.filter_avail(fid))
    except (ValueError, OverflowError):     # an id HDF5 refuses to look up (out of range)
        return False


@dataclass(frozen=True)
class FilterStep:
    name: str
    args: tuple[str, ...] = ()

    @property
    def spec(self) -> str:
        return ":".join((self.name, *self.args))


@dataclass(frozen=True)
class FilterPipeline:
    steps: tuple[FilterStep, ...] = ()

    @property
    def spec(self) -> str:
        return "+".join(s.spec for s in self.steps) if self.steps else "none"

    @property
    def is_none(self) -> bool:
        return not self.steps

    def __str__(self) -> str:
        return self.spec

    def apply(self, dcpl, dtype) -> None:
        """Add this pipeline's filters to an ``h5py.h5p.PropDCID``, in order."""
        for step in self.steps:
            _apply_step(step, dcpl, dtype)


def _int_arg(step_name: str, args, i: int, default: int, lo: int, hi: int, where: str) -> int:
    if len(args) <= i or args[i] == "":
        return default
    try:
        v = int(args[i])
    except ValueError:
        raise ConfigError(where, f"{step_name} argument {args[i]!r} is not an integer; {FILTER_HELP[step_name]}") from None
    if not lo <= v <= hi:
        raise ConfigError(where, f"{step_name} argument {v} is out of range {lo}-{hi}; {FILTER_HELP[step_name]}")
    return v


def _choice_arg(step_name: str, args, i: int, default: str, choices, where: str) -> str:
    if len(args) <= i or args[i] == "":
        return default
    v = args[i].lower()
    if v not in choices:
        raise ConfigError(where, f"{step_name} argument {args[i]!r} is not one of {', '.join(map(str, choices))}{suggest(v, choices)}")
    return v


_MAX_ARGS = {"none": 0, "gzip": 1, "szip": 2, "shuffle": 0, "fletcher32": 0, "scaleoffset": 1, "nbit": 0,
             "lzf": 0, "blosc": 3, "blosc2": 3, "zstd": 1, "lz4": 1, "bitshuffle": 2, "bzip2": 1}


def _normalise_step(name: str, args: tuple[str, ...], where: str) -> FilterStep:
    """Validate arguments and spell defaults out, so equal pipelines have equal specs."""
    if len(args) > _MAX_ARGS[name]:
        raise ConfigError(where, f"{name} takes at most {_MAX_ARGS[name]} argument(s), got {':'.join(args)!r}; {FILTER_HELP[name]}")
    if name == "gzip":
        return FilterStep(name, (str(_int_arg(name, args, 0, 6, 0, 9, where)),))
    if name == "szip":
        coding = _choice_arg(name, args, 0, "nn", ("ec", "nn"), where)
        ppb = _int_arg(name, args, 1, 8, 2, 32, where)
        if ppb % 2:
            raise ConfigError(where, f"szip pixels per block must be even, got {ppb}")
        return FilterStep(name, (coding, str(ppb)))
    if name == "scaleoffset":
        return FilterStep(name, (str(_int_arg(name, args, 0, 0, 0, 64, where)),))
    if name == "blosc":
        return FilterStep(name, (_choice_arg(name, args, 0, "lz4", _BLOSC_CNAMES, where),
                                 str(_int_arg(name, args, 1, 5, 0, 9, where)),
                                 _shuffle_name(_choice_arg(name, args, 2, "shuffle", _BLOSC_SHUFFLE, where), _BLOSC_SHUFFLE)))
    if name == "blosc2":
        return FilterStep(name, (_choice_arg(name, args, 0, "blosclz", _BLOSC2_CNAMES, where),
                                 str(_int_arg(name, args, 1, 5, 0, 9, where)),
                                 _shuffle_name(_choice_arg(name, args, 2, "shuffle", _BLOSC2_FILTERS, where), _BLOSC2_FILTERS)))
    if name == "zstd":
        return FilterStep(name, (str(_int_arg(name, args, 0, 3, -131072, 22, where)),))
    if name == "lz4":
        return FilterStep(name, (str(_int_arg(name, args, 0, 0, 0, 2**31 - 1, where)),))
    if name == "bitshuffle":
        cname = _choice_arg(name, args, 0, "lz4", _BSHUF_CNAMES, where)
        clevel = _int_arg(name, args, 1, 3, 1, 22, where)
        return FilterStep(name, (cname, str(clevel)) if cname == "zstd" else (cname,))
    if name == "bzip2":
        return FilterStep(name, (str(_int_arg(name, args, 0, 9, 1, 9, where)),))
    return FilterStep(name, ())


def _generic_step(name: str, args: tuple[str, ...], where: str) -> FilterStep:
    fid = int(_GENERIC.fullmatch(name).group(1))
    if not 0 < fid < 65536:
        raise ConfigError(where, f"filter id {fid} is out of range 1-65535; {GENERIC_HELP}")
    values = []
    for a in args:
        try:
            v = int(a)
        except ValueError:
            raise ConfigError(where, f"{name} argument {a!r} is not an integer cd_value; {GENERIC_HELP}") from None
        if not 0 <= v < 2**32:
            raise ConfigError(where, f"{name} cd_value {v} is out of range 0-4294967295; {GENERIC_HELP}")
        values.append(str(v))
    return FilterStep(f"id{fid}", tuple(values))


def _shuffle_name(value: str, table: dict) -> str:
    code = table[value]
    return next(k for k, v in table.items() if v == code and not k.isdigit())


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
        if _GENERIC.fullmatch(name):
            steps.append(_generic_step(name, args, where))
            continue
        if name not in FILTER_HELP:
            raise ConfigError(where, f"unknown filter {name!r}{suggest(name, FILTER_HELP)}; known: {', '.join(FILTER_HELP)}, or {GENERIC_HELP}")
        if name == "none":
            raise ConfigError(where, f"'none' cannot be combined with other filters in {spec!r}")
        steps.append(_normalise_step(name, args, where))
    pipeline = FilterPipeline(tuple(steps))
    check_available(pipeline, where)
    return pipeline


def _plugin(step: FilterStep):
    """The hdf5plugin filter object for a plugin step (its id and cd_values)."""
    import hdf5plugin

    a = step.args
    if step.name == "blosc":
        return hdf5plugin.Blosc(cname=a[0], clevel=int(a[1]), shuffle=_BLOSC_SHUFFLE[a[2]])
    if step.name == "blosc2":
        return hdf5plugin.Blosc2(cname=a[0], clevel=int(a[1]), filters=_BLOSC2_FILTERS[a[2]])
    if step.name == "zstd":
        return hdf5plugin.Zstd(clevel=int(a[0]))
    if step.name == "lz4":
        return hdf5plugin.LZ4(nbytes=int(a[0]))
    if step.name == "bitshuffle":
        cname = None if a[0] == "none" else a[0]
        return hdf5plugin.Bitshuffle(cname=cname, clevel=int(a[1]) if len(a) > 1 else 3)
    if step.name == "bzip2":
        return hdf5plugin.BZip2(blocksize=int(a[0]))
    return None


_BUILTIN_IDS = {"gzip": 1, "shuffle": 2, "fletcher32": 3, "szip": 4, "nbit": 5, "scaleoffset": 6, "lzf": 32000}


def filter_id(step: FilterStep) -> int:
    generic = _GENERIC.fullmatch(step.name)
    if generic:
        return int(generic.group(1))
    if step.name in _BUILTIN_IDS:
        return _BUILTIN_IDS[step.name]
    return _plugin(step).filter_id


def check_available(pipeline: FilterPipeline, where: str = "filters") -> None:
    """Fail early when HDF5 cannot encode a filter here (no plugin, no szip encoder)."""
    import h5py  # noqa: F401  (registers lzf)
    from h5py import h5z

    for step in pipeline.steps:
        if step.name in ("blosc", "blosc2", "zstd", "lz4", "bitshuffle", "bzip2"):
            try:
                import hdf5plugin  # noqa: F401
            except ImportError:
                raise ConfigError(where, f"filter {step.name!r} needs the hdf5plugin package (pip install hdf5plugin)") from None
        fid = filter_id(step)
        if not can_decode(fid):
            raise ConfigError(where, f"filter {step.name!r} ({filter_label(fid)}) is not available in this HDF5; "
                                     f"it is provided by {provider(fid)}")
        if fid < 256:
            info = h5z.get_filter_info(fid)
            if not info & h5z.FILTER_CONFIG_ENCODE_ENABLED:
                raise ConfigError(where, f"filter {step.name!r} can decode but not encode in this HDF5")


def _apply_step(step: FilterStep, dcpl, dtype) -> None:
    from h5py import h5z

    a = step.args
    if step.name == "gzip":
        dcpl.set_deflate(int(a[0]))
    elif step.name == "shuffle":
        dcpl.set_shuffle()
    elif step.name == "fletcher32":
        dcpl.set_fletcher32()
    elif step.name == "szip":
        mask = h5z.SZIP_EC_OPTION_MASK if a[0] == "ec" else h5z.SZIP_NN_OPTION_MASK
        dcpl.set_szip(mask, int(a[1]))
    elif step.name == "nbit":
        # what H5Pset_nbit does (H5Pocpl.c): append filter 5, optional, no cd_values; its set_local
        # callback fills them from the dataset's type. h5py has no set_nbit.
        dcpl.set_filter(h5z.FILTER_NBIT, h5z.FLAG_OPTIONAL, ())
    elif step.name == "scaleoffset":
        if dtype.kind == "f":
            dcpl.set_scaleoffset(h5z.SO_FLOAT_DSCALE, int(a[0]))
        elif dtype.kind in "iu":
            dcpl.set_scaleoffset(h5z.SO_INT, int(a[0]))
        else:
            raise ConfigError("filters", f"scaleoffset needs an integer or float dtype, not {dtype}")
    elif step.name == "lzf":
        dcpl.set_filter(32000, h5z.FLAG_OPTIONAL, ())
    elif _GENERIC.fullmatch(step.name):
        # another writer's filter, re-applied with its own cd_values; optional like h5py's plugin filters
        dcpl.set_filter(filter_id(step), h5z.FLAG_OPTIONAL, tuple(int(v) for v in step.args))
    else:
        plugin = _plugin(step)
        # optional, as h5py and hdf5plugin add them: a chunk the codec cannot shrink is stored as is
        # instead of failing the write
        dcpl.set_filter(plugin.filter_id, h5z.FLAG_OPTIONAL, tuple(plugin.filter_options))


# Reading filters back: HDF5 filter id -> how to turn cd_values into a step. The cd_values are as
# stored, after the filter's set_local callback filled its slots (PyTables, hdf5plugin, netCDF-C and
# h5py store the same filter with different lengths: absent trailing values take the filter's defaults).
_BLOSC_CODES = {0: "blosclz", 1: "lz4", 2: "lz4hc", 3: "snappy", 4: "zlib", 5: "zstd"}
_BLOSC2_CODES = {0: "blosclz", 1: "lz4", 2: "lz4hc", 4: "zlib", 5: "zstd"}


def _step_from_filter(code: int, values: tuple, name: bytes = b"") -> FilterStep:
    generic = FilterStep(f"id{code}", tuple(str(int(v)) for v in values))

    def at(i: int, default: int) -> int:
        return int(values[i]) if len(values) > i else default

    if code == 1:
        return FilterStep("gzip", (str(at(0, 6)),)) if at(0, 6) <= 9 else generic
    if code == 2:
        return FilterStep("shuffle")
    if code == 3:
        return FilterStep("fletcher32")
    if code == 4:
        from h5py import h5z
        coding = "ec" if at(0, 0) & h5z.SZIP_EC_OPTION_MASK else "nn"
        ppb = at(1, 8)
        return FilterStep("szip", (coding, str(ppb))) if 2 <= ppb <= 32 and not ppb % 2 else generic
    if code == 5:
        return FilterStep("nbit")
    if code == 6:
        return FilterStep("scaleoffset", (str(at(1, 0)),)) if 0 <= at(1, 0) <= 64 else generic
    if code == 32000:
        return FilterStep("lzf")
    if code == 32015:       # Zstandard: cd_values[0] is the level
        return FilterStep("zstd", (str(at(0, 3)),)) if -131072 <= _signed(at(0, 3)) <= 22 else generic
    if code == 32004:       # LZ4: block bytes
        return FilterStep("lz4", (str(at(0, 0)),)) if at(0, 0) < 2**31 else generic
    if code == 307:         # bzip2: block size 1-9 (PyTables adds two more values of its own)
        return FilterStep("bzip2", (str(at(0, 9)),)) if 1 <= at(0, 9) <= 9 else generic
    if code == 32001:       # Blosc: 0-3 filled by set_local, 4 clevel, 5 shuffle, 6 compressor
        cname, shuffle = _BLOSC_CODES.get(at(6, 0)), {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}.get(at(5, 1))
        if cname is None or shuffle is None or not 0 <= at(4, 5) <= 9:
            return generic
        return FilterStep("blosc", (cname, str(at(4, 5)), shuffle))
    if code == 32026:       # Blosc2: same slots as Blosc; 5 is the filter (3 delta, 4 trunc_prec: no spec)
        cname, flt = _BLOSC2_CODES.get(at(6, 0)), {0: "nofilter", 1: "shuffle", 2: "bitshuffle"}.get(at(5, 1))
        if cname is None or flt is None or not 0 <= at(4, 5) <= 9:
            return generic
        return FilterStep("blosc2", (cname, str(at(4, 5)), flt))
    if code == 32008:       # Bitshuffle: 0-2 filled by set_local, 3 block elements, 4 compressor, 5 level
        if at(3, 0) != 0:   # a fixed block size: only the generic step keeps it
            return generic
        comp = at(4, 0)
        if comp == 2:
            return FilterStep("bitshuffle", ("lz4",))
        if comp == 3 and 1 <= at(5, 3) <= 22:
            return FilterStep("bitshuffle", ("zstd", str(at(5, 3))))
        return FilterStep("bitshuffle", ("none",)) if comp == 0 else generic
    return generic


def _signed(v: int) -> int:
    """cd_values are unsigned 32-bit; Zstandard's negative levels are stored two's complement."""
    return v - 2**32 if v >= 2**31 else v


def describe_filters(dcpl) -> list[dict]:
    """Each stored filter as a dict: id, name, the ccp step, flags, cd_values, whether it decodes here."""
    out = []
    for i in range(dcpl.get_nfilters()):
        code, flags, values, name = dcpl.get_filter(i)
        label = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
        avail = can_decode(code)
        out.append({"id": int(code), "name": KNOWN_FILTERS.get(code, (label or f"id{code}",))[0],
                    "step": _step_from_filter(code, tuple(values), name).spec, "optional": bool(flags & 1),
                    "cd_values": [int(v) for v in values], "available": avail,
                    "provider": None if avail else provider(code)})
    return out


def check_for_type(pipeline: FilterPipeline, dtype, numeric: bool, where: str = "filters") -> None:
    """Filters HDF5 refuses for a datatype (its can_apply callbacks), before anything is written.

    ``numeric`` is False for data read as raw records of its file type (compound, string, vlen, ...).
    """
    import numpy as np

    kind = np.dtype(dtype).kind
    for step in pipeline.steps:
        if step.name == "scaleoffset" and (not numeric or kind not in "iuf"):
            raise ConfigError(where, f"scaleoffset needs an integer or float dataset, not {np.dtype(dtype)}"
                                     f"{'' if numeric else ' records'}")


def check_decodable(pipeline: FilterPipeline, what: str, where: str) -> None:
    """A stored pipeline this HDF5 cannot decode: one line naming the filter and what provides it."""
    for step in pipeline.steps:
        fid = filter_id(step)
        if not can_decode(fid):
            raise ConfigError(where, f"{what} is compressed with {filter_label(fid)}, which this HDF5 cannot decode; "
                                     f"it is provided by {provider(fid)}")


def pipeline_from_dcpl(dcpl) -> FilterPipeline:
    """The pipeline stored in a dataset creation property list (``source`` filters)."""
    steps = []
    for i in range(dcpl.get_nfilters()):
        code, _flags, values, name = dcpl.get_filter(i)
        steps.append(_step_from_filter(code, tuple(values), name))
    return FilterPipeline(tuple(steps))
