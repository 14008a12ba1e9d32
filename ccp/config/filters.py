"""Filter pipeline specs: ``"shuffle+gzip:6"`` <-> HDF5 dataset creation property lists.

A spec is steps joined by ``+``, each ``NAME[:ARG...]``. ``none`` is the empty pipeline.
Parsing is pure; :meth:`FilterPipeline.apply` and :func:`pipeline_from_dcpl` talk to HDF5.
"""

from __future__ import annotations

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
        if name not in FILTER_HELP:
            raise ConfigError(where, f"unknown filter {name!r}{suggest(name, FILTER_HELP)}; known: {', '.join(FILTER_HELP)}")
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
        if not h5z.filter_avail(fid):
            raise ConfigError(where, f"filter {step.name!r} (id {fid}) is not available in this HDF5")
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
        dcpl.set_nbit()
    elif step.name == "scaleoffset":
        if dtype.kind == "f":
            dcpl.set_scaleoffset(h5z.SO_FLOAT_DSCALE, int(a[0]))
        elif dtype.kind in "iu":
            dcpl.set_scaleoffset(h5z.SO_INT, int(a[0]))
        else:
            raise ConfigError("filters", f"scaleoffset needs an integer or float dtype, not {dtype}")
    elif step.name == "lzf":
        dcpl.set_filter(32000, h5z.FLAG_OPTIONAL, ())
    else:
        plugin = _plugin(step)
        # optional, as h5py and hdf5plugin add them: a chunk the codec cannot shrink is stored as is
        # instead of failing the write
        dcpl.set_filter(plugin.filter_id, h5z.FLAG_OPTIONAL, tuple(plugin.filter_options))


# Reading filters back: HDF5 filter id -> how to turn cd_values into a step.
def _step_from_filter(code: int, values: tuple, name: bytes) -> FilterStep:
    import hdf5plugin

    if code == 1:
        return FilterStep("gzip", (str(values[0] if values else 6),))
    if code == 2:
        return FilterStep("shuffle")
    if code == 3:
        return FilterStep("fletcher32")
    if code == 4:
        from h5py import h5z
        coding = "ec" if values and values[0] & h5z.SZIP_EC_OPTION_MASK else "nn"
        return FilterStep("szip", (coding, str(values[1] if len(values) > 1 else 8)))
    if code == 5:
        return FilterStep("nbit")
    if code == 6:
        return FilterStep("scaleoffset", (str(values[1] if len(values) > 1 else 0),))
    if code == 32000:
        return FilterStep("lzf")
    if code == hdf5plugin.ZSTD_ID:
        return FilterStep("zstd", (str(values[0] if values else 3),))
    if code == hdf5plugin.LZ4_ID:
        return FilterStep("lz4", (str(values[0] if values else 0),))
    if code == hdf5plugin.BZIP2_ID:
        return FilterStep("bzip2", (str(values[0] if values else 9),))
    if code == hdf5plugin.BLOSC_ID and len(values) >= 7:
        cname = {0: "blosclz", 1: "lz4", 2: "lz4hc", 3: "snappy", 4: "zlib", 5: "zstd"}.get(values[6], "lz4")
        shuffle = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}.get(values[5], "shuffle")
        return FilterStep("blosc", (cname, str(values[4]), shuffle))
    if code == hdf5plugin.BSHUF_ID:
        comp = values[4] if len(values) > 4 else 0
        if comp == 2:
            return FilterStep("bitshuffle", ("lz4",))
        if comp == 3:
            return FilterStep("bitshuffle", ("zstd", str(values[5] if len(values) > 5 else 3)))
        return FilterStep("bitshuffle", ("none",))
    label = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
    return FilterStep(f"id{code}", tuple(str(v) for v in values) or (label,))


def pipeline_from_dcpl(dcpl) -> FilterPipeline:
    """The pipeline stored in a dataset creation property list (``source`` filters)."""
    steps = []
    for i in range(dcpl.get_nfilters()):
        code, _flags, values, name = dcpl.get_filter(i)
        steps.append(_step_from_filter(code, tuple(values), name))
    return FilterPipeline(tuple(steps))
