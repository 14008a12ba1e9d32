"""Filters registered by plugins (hdf5plugin): Blosc, Blosc2, Zstandard, LZ4, Bitshuffle, bzip2; and any
other filter by its id (``idN:cd0:cd1...``), as another writer stored it.

cd_values for a new dataset come from hdf5plugin's own filter objects (its ``filter_options``), so a
dataset ccp writes is set up exactly as ``hdf5plugin.Zstd(...)`` etc. would set it up.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

from ccp.errors import ConfigError
from ccp.hdf5.filters import codecs
from ccp.hdf5.filters.base import (
    GENERIC,
    GENERIC_HELP,
    Codec,
    Filter,
    FilterStep,
    at,
    choice_arg,
    int_arg,
    register,
    register_generic,
    signed,
    top_level_vlen,
)

_BLOSC_SHUFFLE = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2, "0": 0, "1": 1, "2": 2}
_BLOSC_CNAMES = ("blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd")
_BLOSC2_FILTERS = {"nofilter": 0, "shuffle": 1, "bitshuffle": 2, "0": 0, "1": 1, "2": 2}
_BLOSC2_CNAMES = ("blosclz", "lz4", "lz4hc", "zlib", "zstd")
_BSHUF_CNAMES = ("none", "lz4", "zstd")
# compressor codes as Blosc and Blosc2 store them in cd_values[6]
_BLOSC_CODES = {0: "blosclz", 1: "lz4", 2: "lz4hc", 3: "snappy", 4: "zlib", 5: "zstd"}
_BLOSC2_CODES = {0: "blosclz", 1: "lz4", 2: "lz4hc", 4: "zlib", 5: "zstd"}


def _shuffle_name(value: str, table: dict) -> str:
    code = table[value]
    return next(k for k, v in table.items() if v == code and not k.isdigit())


def _hdf5plugin():
    import hdf5plugin

    return hdf5plugin


def register_plugins() -> None:
    """Register hdf5plugin's filters with h5py's HDF5 (importing it does), when it is installed: a filter HDF5 would
    otherwise load from HDF5_PLUGIN_PATH may be built against another libhdf5 (netCDF4's wheel puts its own Blosc,
    built against its HDF5, on that path when it is imported), and its callbacks then fail on this library's ids
    ("can't find object for ID") the moment a Blosc dataset is written."""
    try:
        plugin = _hdf5plugin()
    except ImportError:
        return
    if os.environ.get("HDF5_PLUGIN_PATH"):
        # hdf5plugin's import registers only filters HDF5 does not find already, and finding one loads it from that
        # path: register its own over them (H5Zregister replaces a filter of the same id)
        plugin.register(force=True)


class _Plugin(Filter):
    needs_hdf5plugin = True
    plugin_class: ClassVar[str]      # hdf5plugin's class for the filter

    @classmethod
    def plugin_kwargs(cls, step: FilterStep) -> dict[str, Any]:
        """The keywords of hdf5plugin's class that make this step."""
        raise NotImplementedError

    @classmethod
    def plugin(cls, step: FilterStep):
        """hdf5plugin's filter object for this step (its ``filter_options`` are the cd_values)."""
        return getattr(_hdf5plugin(), cls.plugin_class)(**cls.plugin_kwargs(step))

    @classmethod
    def cd_values(cls, step):
        return tuple(int(v) for v in cls.plugin(step).filter_options)

    @classmethod
    def h5py_code(cls, step):
        kw = ", ".join(f"{k}={v!r}" for k, v in cls.plugin_kwargs(step).items())
        return f"**hdf5plugin.{cls.plugin_class}({kw})"


@register
class Blosc(_Plugin):
    """Blosc (id 32001): cd 0-3 filled by set_local, 4 clevel, 5 shuffle, 6 compressor."""

    name, id, max_args = "blosc", 32001, 3
    help = "blosc:CNAME:CLEVEL:SHUFFLE (default lz4:5:shuffle; shuffle noshuffle|shuffle|bitshuffle)"

    @classmethod
    def normalise(cls, args, where):
        return FilterStep(cls.name, (choice_arg(cls, args, 0, "lz4", _BLOSC_CNAMES, where),
                                     str(int_arg(cls, args, 1, 5, 0, 9, where)),
                                     _shuffle_name(choice_arg(cls, args, 2, "shuffle", _BLOSC_SHUFFLE, where), _BLOSC_SHUFFLE)))

    plugin_class = "Blosc"

    @classmethod
    def refuses_type(cls, step, tid):
        if top_level_vlen(tid):   # its set_local divides by the element size it finds there: SIGFPE
            return "cannot take variable-length data (the plugin crashes on it)"
        return ""

    @classmethod
    def plugin_kwargs(cls, step):
        a = step.args
        return {"cname": a[0], "clevel": int(a[1]), "shuffle": _BLOSC_SHUFFLE[a[2]]}

    @classmethod
    def netcdf_code(cls, step):
        a = step.args
        if a[0] == "snappy":    # netCDF-C's blosc compressors: blosc_lz, blosc_lz4, blosc_lz4hc, blosc_zlib, blosc_zstd
            return None
        name = "blosc_lz" if a[0] == "blosclz" else f"blosc_{a[0]}"
        return f'compression="{name}", complevel={a[1]}, blosc_shuffle={_BLOSC_SHUFFLE[a[2]]}'

    @classmethod
    def from_stored(cls, values):
        cname = _BLOSC_CODES.get(at(values, 6, 0))
        shuffle = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}.get(at(values, 5, 1))
        if cname is None or shuffle is None or not 0 <= at(values, 4, 5) <= 9:
            return None
        return FilterStep(cls.name, (cname, str(at(values, 4, 5)), shuffle))


@register
class Blosc2(_Plugin):
    """Blosc2 (id 32026): same slots as Blosc; 5 is the filter (3 delta, 4 trunc_prec: no spec of ours)."""

    name, id, max_args = "blosc2", 32026, 3
    help = "blosc2:CNAME:CLEVEL:FILTER (default blosclz:5:shuffle; filter nofilter|shuffle|bitshuffle)"

    @classmethod
    def normalise(cls, args, where):
        return FilterStep(cls.name, (choice_arg(cls, args, 0, "blosclz", _BLOSC2_CNAMES, where),
                                     str(int_arg(cls, args, 1, 5, 0, 9, where)),
                                     _shuffle_name(choice_arg(cls, args, 2, "shuffle", _BLOSC2_FILTERS, where), _BLOSC2_FILTERS)))

    plugin_class = "Blosc2"

    @classmethod
    def refuses_type(cls, step, tid):
        if top_level_vlen(tid):   # its set_local divides by the element size it finds there: SIGFPE
            return "cannot take variable-length data (the plugin crashes on it)"
        return ""

    @classmethod
    def plugin_kwargs(cls, step):
        a = step.args
        return {"cname": a[0], "clevel": int(a[1]), "filters": _BLOSC2_FILTERS[a[2]]}

    @classmethod
    def from_stored(cls, values):
        cname = _BLOSC2_CODES.get(at(values, 6, 0))
        flt = {0: "nofilter", 1: "shuffle", 2: "bitshuffle"}.get(at(values, 5, 1))
        if cname is None or flt is None or not 0 <= at(values, 4, 5) <= 9:
            return None
        return FilterStep(cls.name, (cname, str(at(values, 4, 5)), flt))


@register
class Zstd(_Plugin):
    """Zstandard (id 32015): one zstd frame with its content size, level ``cd[0]`` (two's complement)."""

    name, id, max_args = "zstd", 32015, 1
    help = "zstd:CLEVEL (1-22, default 3)"

    @classmethod
    def normalise(cls, args, where):
        return FilterStep(cls.name, (str(int_arg(cls, args, 0, 3, -131072, 22, where)),))

    plugin_class = "Zstd"

    @classmethod
    def plugin_kwargs(cls, step):
        return {"clevel": int(step.args[0])}

    @classmethod
    def netcdf_code(cls, step):
        return f'compression="zstd", complevel={step.args[0]}'

    @classmethod
    def from_stored(cls, values):
        # negative levels are stored two's complement: the spec says the level, as a sweep file would
        level = signed(at(values, 0, 3))
        return FilterStep(cls.name, (str(level),)) if -131072 <= level <= 22 else None

    @classmethod
    def codec_missing(cls, step):
        return "" if codecs.zstd_module() is not None else "zstd needs the zstandard package for a Python encoder"

    @classmethod
    def encoder(cls, cd, itemsize, engine) -> Codec | None:
        if codecs.zstd_module() is None:
            return None
        return codecs.zstd_encoder(signed(cd[0]) if cd else 3)

    @classmethod
    def decoder(cls, cd, itemsize, size) -> Codec | None:
        return codecs.zstd_decoder() if codecs.zstd_module() is not None else None


@register
class LZ4(_Plugin):
    """LZ4 (id 32004): ``cd[0]`` block bytes (0 = 1 GiB blocks)."""

    name, id, max_args = "lz4", 32004, 1
    help = "lz4:BLOCK_BYTES (default 0 = 1 GiB blocks)"

    @classmethod
    def normalise(cls, args, where):
        return FilterStep(cls.name, (str(int_arg(cls, args, 0, 0, 0, 2**31 - 1, where)),))

    plugin_class = "LZ4"

    @classmethod
    def plugin_kwargs(cls, step):
        return {"nbytes": int(step.args[0])}

    @classmethod
    def from_stored(cls, values):
        return FilterStep(cls.name, (str(at(values, 0, 0)),)) if at(values, 0, 0) < 2**31 else None


@register
class Bitshuffle(_Plugin):
    """Bitshuffle (id 32008): cd 0-2 filled by set_local, 3 block elements, 4 compressor, 5 level."""

    name, id, max_args = "bitshuffle", 32008, 2
    help = "bitshuffle:CNAME:CLEVEL (cname none|lz4|zstd, default lz4; clevel for zstd)"

    @classmethod
    def normalise(cls, args, where):
        cname = choice_arg(cls, args, 0, "lz4", _BSHUF_CNAMES, where)
        clevel = int_arg(cls, args, 1, 3, 1, 22, where)
        return FilterStep(cls.name, (cname, str(clevel)) if cname == "zstd" else (cname,))

    plugin_class = "Bitshuffle"

    @classmethod
    def plugin_kwargs(cls, step):
        a = step.args
        # "none" spelled out: hdf5plugin reads cname=None as its default, lz4
        return {"cname": a[0], "clevel": int(a[1])} if len(a) > 1 else {"cname": a[0]}

    @classmethod
    def from_stored(cls, values):
        if at(values, 3, 0) != 0:   # a fixed block size: only the generic step keeps it
            return None
        comp = at(values, 4, 0)
        if comp == 2:
            return FilterStep(cls.name, ("lz4",))
        if comp == 3 and 1 <= at(values, 5, 3) <= 22:
            return FilterStep(cls.name, ("zstd", str(at(values, 5, 3))))
        return FilterStep(cls.name, ("none",)) if comp == 0 else None


@register
class BZip2(_Plugin):
    """bzip2 (id 307): a bzip2 stream, block size ``cd[0]`` (PyTables adds two more values of its own)."""

    name, id, max_args = "bzip2", 307, 1
    help = "bzip2:BLOCKSIZE (1-9, default 9)"

    @classmethod
    def normalise(cls, args, where):
        return FilterStep(cls.name, (str(int_arg(cls, args, 0, 9, 1, 9, where)),))

    plugin_class = "BZip2"

    @classmethod
    def plugin_kwargs(cls, step):
        return {"blocksize": int(step.args[0])}

    @classmethod
    def netcdf_code(cls, step):
        return f'compression="bzip2", complevel={step.args[0]}'

    @classmethod
    def from_stored(cls, values):
        return FilterStep(cls.name, (str(at(values, 0, 9)),)) if 1 <= at(values, 0, 9) <= 9 else None

    @classmethod
    def codec_missing(cls, step):
        return ""

    @classmethod
    def encoder(cls, cd, itemsize, engine) -> Codec:
        import bz2

        level = min(9, max(1, cd[0] if cd else 9))
        return lambda data: bz2.compress(data, level)

    @classmethod
    def decoder(cls, cd, itemsize, size) -> Codec:
        import bz2

        return bz2.decompress


@register_generic
class Generic(Filter):
    """Any filter by its registered id, with its cd_values as they are (``id32002:1:2``): another
    writer's filter, re-applied as stored; optional like h5py's plugin filters."""

    name, id = "idN", 0
    help = GENERIC_HELP
    generic = True

    @classmethod
    def h5py_code(cls, step):
        fid = cls.filter_id(step)
        if fid < 10:     # h5py reads compression=0..9 as a gzip level
            return None
        cd = ", ".join(step.args) + ("," if len(step.args) == 1 else "")
        return f"compression={fid}, compression_opts=({cd})"

    @classmethod
    def parse(cls, args, where):
        raise NotImplementedError("use parse_generic")     # the name carries the id

    @classmethod
    def parse_generic(cls, name: str, args: tuple[str, ...], where: str) -> FilterStep:
        match = GENERIC.fullmatch(name)
        assert match is not None
        fid = int(match.group(1))
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

    @classmethod
    def filter_id(cls, step):
        match = GENERIC.fullmatch(step.name)
        assert match is not None
        return int(match.group(1))

    @classmethod
    def cd_values(cls, step):
        return tuple(int(v) for v in step.args)

    @classmethod
    def stored_step(cls, fid: int, values: tuple[int, ...]) -> FilterStep:
        return FilterStep(f"id{fid}", tuple(str(int(v)) for v in values))


_LOSSY_PLUGINS = {32013: "ZFP", 32017: "SZ", 32024: "SZ3", 32028: "SPERR"}   # HTJ2K encodes losslessly


def lossy_plugin(fid: int, stored: tuple[int, ...]) -> str:
    """The name and mode of a lossy plugin filter from its stored cd_values ('' for a lossless one).

    Re-encoding lossy data for a new chunk quantizes it again: the copy would not hold the input's
    values. ZFP is lossless only in its reversible mode (hdf5plugin reads the mode back)."""
    name = _LOSSY_PLUGINS.get(fid)
    if name is None:
        return ""
    if fid == 32013:
        try:
            settings = _hdf5plugin().from_filter_options(fid, tuple(stored))
        except Exception:  # hdf5plugin missing or settings it cannot read: taken as lossy
            return "ZFP"
        if settings.filter_options[:1] == (5,):     # H5Z_ZFP_MODE_REVERSIBLE
            return ""
        return f"ZFP ({settings})"
    return name
