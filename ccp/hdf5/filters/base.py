"""Filter steps, pipelines and the registry: one :class:`Filter` subclass per HDF5 filter.

A spec is steps joined by ``+``, each ``NAME[:ARG...]``; ``none`` is the empty pipeline. A
:class:`FilterStep` is one step, whether parsed from a spec, from an h5repack ``-f`` option or read
back from a dataset's creation property list (then it also carries the stored ``cd_values``, which
the Python codecs of the fast repack path need). Each filter's class knows all of its forms:
spec <-> dcpl <-> stored cd_values <-> h5repack syntax <-> Python codec.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ccp.errors import ConfigError

Codec = Callable[[Any], bytes]

GENERIC_HELP = "idN:CD0:CD1:... (any HDF5 filter by its registered id N, with its cd_values)"
GENERIC = re.compile(r"id(\d+)")


def _hdf5plugin(cls: str) -> str:
    """What provides a filter hdf5plugin has, naming hdf5plugin's class (repack's CLI says it this way)."""
    return f"hdf5plugin ({cls}), pip install hdf5plugin"


# Filters other software writes, by registered id: (name, what provides the decoder). The ids and
# their plugins are the HDF Group's registry (RegisteredFilterPlugins.md).
KNOWN_FILTERS = {
    1: ("deflate (gzip)", "HDF5 itself"), 2: ("shuffle", "HDF5 itself"), 3: ("fletcher32", "HDF5 itself"),
    4: ("szip", "an HDF5 built with szip/libaec (h5py's bundled libaec)"), 5: ("nbit", "HDF5 itself"),
    6: ("scaleoffset", "HDF5 itself"), 305: ("LZO", "an HDF5 LZO plugin (PyTables writes it; hdf5plugin has none)"),
    307: ("bzip2", _hdf5plugin("BZip2")), 32000: ("LZF", "h5py (or hdf5plugin)"), 32001: ("Blosc", _hdf5plugin("Blosc")),
    32002: ("MAFISC", "the MAFISC plugin"), 32003: ("Snappy", "the HDF Group's hdf5_plugins"),
    32004: ("LZ4", _hdf5plugin("LZ4")), 32005: ("APAX", "the APAX plugin"), 32006: ("CBF", "the CBF plugin"),
    32007: ("JPEG-XR", "the JPEG-XR plugin"), 32008: ("Bitshuffle", _hdf5plugin("Bitshuffle")), 32009: ("SPDP", "the SPDP plugin"),
    32010: ("LPC-Rice", "the LPC-Rice plugin"), 32011: ("CCSDS-123", "the CCSDS-123 plugin"),
    32012: ("JPEG-LS", "the JPEG-LS plugin"), 32013: ("ZFP", _hdf5plugin("Zfp")), 32014: ("FPZip", "the FPZip plugin"),
    32015: ("Zstandard", _hdf5plugin("Zstd")), 32016: ("B3D", "the B3D plugin"), 32017: ("SZ", _hdf5plugin("SZ")),
    32018: ("FCIDECOMP", _hdf5plugin("FciDecomp")), 32019: ("JPEG", "the HDF Group's hdf5_plugins"),
    32020: ("VBZ", "Oxford Nanopore's vbz plugin"), 32022: ("BitGroom", "netCDF-C's plugins (CCR)"),
    32023: ("Granular BitRound", "netCDF-C's plugins (CCR)"), 32024: ("SZ3", _hdf5plugin("SZ3")),
    32026: ("Blosc2", _hdf5plugin("Blosc2")), 32028: ("SPERR", _hdf5plugin("Sperr")), 32033: ("HTJ2K", _hdf5plugin("HTJ2K")),
}


def filter_label(fid: int) -> str:
    """'Blosc (id 32001)'; 'filter id 40000' for an id nobody registered here."""
    known = KNOWN_FILTERS.get(fid)
    return f"{known[0]} (id {fid})" if known else f"filter id {fid}"


def provider(fid: int) -> str:
    known = KNOWN_FILTERS.get(fid)
    return known[1] if known else "its plugin (put it on HDF5_PLUGIN_PATH)"


HDF5PLUGIN_IDS = frozenset({307, 32001, 32004, 32008, 32013, 32015, 32017, 32018, 32024, 32026, 32028, 32033})
_plugins_registered = False


def _hdf5plugin_folder() -> str | None:
    import importlib.util

    spec = importlib.util.find_spec("hdf5plugin")
    if spec is None or spec.origin is None:
        return None
    return os.path.realpath(os.path.join(os.path.dirname(spec.origin), "plugins"))


def register_plugins() -> None:
    """Make every filter this process can have known to HDF5: h5py's lzf, and hdf5plugin's filters
    (registered when it is imported; without it, only what HDF5_PLUGIN_PATH provides).

    With HDF5_PLUGIN_PATH naming hdf5plugin's own plugin folder (what hdf5plugin tells non-Python tools
    to use), hdf5plugin's import asks HDF5 whether each filter is there, HDF5 loads it from that folder
    and the library's first initialisation binds it to another HDF5 than h5py's: every filter with a
    set_local callback (Blosc, Bitshuffle, ZFP) then fails to create a dataset ("error during user
    callback"). The folder is taken off HDF5's search path while hdf5plugin registers its filters, and
    put back."""
    global _plugins_registered
    import h5py  # noqa: F401  (registers lzf)
    from h5py import h5pl

    if _plugins_registered:
        return
    _plugins_registered = True
    hidden: list[int] = []
    folder = _hdf5plugin_folder() if os.environ.get("HDF5_PLUGIN_PATH") else None
    if folder is not None:
        paths = [h5pl.get(i) for i in range(h5pl.size())]
        hidden = [i for i, p in enumerate(paths) if os.path.realpath(os.fsdecode(p)) == folder]
        for i in reversed(hidden):
            h5pl.remove(i)
    try:
        import hdf5plugin  # noqa: F401  (registers its filters)
    except ImportError:
        pass
    finally:
        for i in hidden:
            assert folder is not None   # hidden only when it was found
            if i < h5pl.size():
                h5pl.insert(os.fsencode(folder), i)
            else:
                h5pl.append(os.fsencode(folder))


def register_plugins_early() -> None:
    """With HDF5_PLUGIN_PATH set, hdf5plugin's filters are registered before HDF5 can meet one of them
    in a file and load it from the path (see :func:`register_plugins`)."""
    if os.environ.get("HDF5_PLUGIN_PATH"):
        register_plugins()


def register_plugins_for(ids) -> None:
    """:func:`register_plugins` only when one of the filter ``ids`` is not in this HDF5 already (importing
    hdf5plugin loads a dozen filter libraries: a copy that only needs gzip skips that start-up)."""
    for fid in ids:
        can_decode(fid)


def can_decode(fid: int) -> bool:
    """Whether this process's HDF5 has the filter (h5py's built-ins, hdf5plugin's, or HDF5_PLUGIN_PATH's)."""
    from h5py import h5z

    try:
        if fid in HDF5PLUGIN_IDS:
            register_plugins_early()    # before HDF5 looks for it on the path (see register_plugins)
        if h5z.filter_avail(fid):   # HDF5's own and h5py's: no need to load hdf5plugin's libraries
            return True
        register_plugins()
        return bool(h5z.filter_avail(fid))
    except (ValueError, OverflowError):     # an id HDF5 refuses to look up (out of range)
        return False


@dataclass(frozen=True)
class FilterStep:
    """One step of a pipeline: its spec name and arguments (defaults spelled out).

    ``cd_values``, ``flags`` and ``stored_name`` are what HDF5 stored, for a step read back from a dataset
    (None, 0 and '' otherwise); they do not take part in equality: two steps are equal when their specs are.
    """

    name: str
    args: tuple[str, ...] = ()
    cd_values: tuple[int, ...] | None = field(default=None, compare=False, repr=False)
    flags: int = field(default=0, compare=False, repr=False)
    stored_name: str = field(default="", compare=False, repr=False)   # the name the writer stored with it

    @property
    def spec(self) -> str:
        return ":".join((self.name, *self.args))

    @property
    def filter(self) -> type[Filter]:
        return filter_class(self.name)

    @property
    def id(self) -> int:
        return self.filter.filter_id(self)

    @property
    def stored(self) -> tuple[int, ...]:
        """The stored cd_values, or () for a step that was never written (its codec takes the defaults)."""
        return self.cd_values if self.cd_values is not None else ()


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
            step.filter.apply(step, dcpl, dtype)

    def h5py_code(self) -> tuple[tuple[str, ...], tuple[FilterStep, ...]]:
        """h5py ``create_dataset`` keywords (Python source) for the pipeline, and the steps they cannot say:
        a filter h5py has no keyword for, a second compressor, or an order h5py does not write (it always
        writes scaleoffset, shuffle, the compressor, fletcher32)."""
        said, unsaid, last = [], [], -1
        for step in self.steps:
            code, order = step.filter.h5py_code(step), step.filter.h5py_order
            if code is None or order < last or (order == last == 2):
                unsaid.append(step)
                continue
            said.append(code)
            last = order
        return tuple(said), tuple(unsaid)

    def netcdf_code(self) -> tuple[tuple[str, ...], tuple[FilterStep, ...]]:
        """netCDF4 ``createVariable`` keywords (Python source) for the pipeline, and the steps they cannot say
        (no keyword, a second compressor, or shuffle with no compressor: netCDF-C shuffles only what it
        compresses). ``shuffle=False`` is spelled out: netCDF4 shuffles a compressed variable by default."""
        said, unsaid, compressor = [], [], False
        for step in self.steps:
            code = step.filter.netcdf_code(step)
            second = compressor and step.filter.h5py_order == 2
            if code is None or second:
                unsaid.append(step)
                continue
            said.append(code)
            compressor = compressor or step.filter.h5py_order == 2
        if not compressor:
            unsaid += [s for s in self.steps if s.name == "shuffle"]
            said = [c for c in said if c != "shuffle=True"]
        elif "shuffle=True" not in said:
            said.append("shuffle=False")
        return tuple(said), tuple(s for s in self.steps if s in unsaid)

    def h5repack_options(self) -> tuple[str, ...] | None:
        """h5repack's ``-f`` filter texts, in order (``("NONE",)`` for no filter), or None when a step has no
        h5repack keyword."""
        if self.is_none:
            return ("NONE",)
        texts = tuple(step.filter.h5repack_option(step) for step in self.steps)
        return None if any(t is None for t in texts) else texts  # type: ignore[return-value]


def int_arg(flt: type[Filter], args: Sequence[str], i: int, default: int, lo: int, hi: int, where: str) -> int:
    if len(args) <= i or args[i] == "":
        return default
    try:
        v = int(args[i])
    except ValueError:
        raise ConfigError(where, f"{flt.name} argument {args[i]!r} is not an integer; {flt.help}") from None
    if not lo <= v <= hi:
        raise ConfigError(where, f"{flt.name} argument {v} is out of range {lo}-{hi}; {flt.help}")
    return v


def choice_arg(flt: type[Filter], args: Sequence[str], i: int, default: str, choices, where: str) -> str:
    from ccp.errors import suggest

    if len(args) <= i or args[i] == "":
        return default
    v = args[i].lower()
    if v not in choices:
        raise ConfigError(where, f"{flt.name} argument {args[i]!r} is not one of {', '.join(map(str, choices))}{suggest(v, choices)}")
    return v


def at(values: Sequence[int], i: int, default: int) -> int:
    """Stored cd_value ``i``; writers store the same filter with different lengths (absent = default)."""
    return int(values[i]) if len(values) > i else default


def signed(v: int) -> int:
    """cd_values are unsigned 32-bit; Zstandard's negative levels are stored two's complement."""
    return v - 2**32 if v >= 2**31 else v


class Filter:
    """One HDF5 filter: how ccp spells it, sets it, reads it back, and (if it can) runs it in Python.

    Subclasses override what differs; every method takes or returns :class:`FilterStep`.
    """

    name: ClassVar[str]
    id: ClassVar[int]
    help: ClassVar[str]
    max_args: ClassVar[int] = 0
    h5repack: ClassVar[str | None] = None        # h5repack's -f keyword, where h5repack has one
    h5repack_example: ClassVar[str | None] = None  # its KEYWORD=ARG form; None: the keyword takes no parameter
    needs_hdf5plugin: ClassVar[bool] = False     # encoded by a filter that hdf5plugin registers
    generic: ClassVar[bool] = False              # the ``idN`` class: any id, its cd_values as stored
    deflate_engine: ClassVar[bool] = False       # its Python encoder runs on repack's --deflate engine
    h5py_order: ClassVar[int] = 2                # where h5py's create_dataset puts it: 0 scaleoffset, 1 shuffle,
                                                 # 2 the compressor, 3 fletcher32 (H5py's filters.fill_dcpl)

    # ---------------------------------------------------------------- spec
    @classmethod
    def parse(cls, args: tuple[str, ...], where: str) -> FilterStep:
        """Validate a spec's arguments and spell defaults out, so equal pipelines have equal specs."""
        if len(args) > cls.max_args:
            raise ConfigError(where, f"{cls.name} takes at most {cls.max_args} argument(s), got {':'.join(args)!r}; {cls.help}")
        return cls.normalise(args, where)

    @classmethod
    def normalise(cls, args: tuple[str, ...], where: str) -> FilterStep:
        return FilterStep(cls.name, ())

    @classmethod
    def filter_id(cls, step: FilterStep) -> int:
        return cls.id

    # ---------------------------------------------------------------- dcpl
    @classmethod
    def cd_values(cls, step: FilterStep) -> tuple[int, ...]:
        """The cd_values a new dataset is created with (the filter's set_local may fill more)."""
        return ()

    @classmethod
    def apply(cls, step: FilterStep, dcpl, dtype) -> None:
        """Append this filter to a dataset creation property list."""
        from h5py import h5z

        # optional, as h5py and hdf5plugin add them: a chunk the codec cannot shrink is stored as is
        # instead of failing the write
        dcpl.set_filter(cls.filter_id(step), h5z.FLAG_OPTIONAL, cls.cd_values(step))

    @classmethod
    def refuses(cls, dtype, numeric: bool) -> str:
        """Why HDF5 refuses this filter for a datatype (its can_apply callback), or ''. ``numeric`` is
        False for data read as raw records of its file type (compound, string, vlen, ...)."""
        return ""

    @classmethod
    def refuses_type(cls, step: FilterStep, tid) -> str:
        """Why this filter must not be given an HDF5 datatype (``h5py.h5t.TypeID``), or ''. For what HDF5
        itself would accept but then crash on, or store wrongly: it is refused before anything is written."""
        return ""

    @classmethod
    def from_stored(cls, values: tuple[int, ...]) -> FilterStep | None:
        """The step for cd_values as stored (after set_local); None when no spec of ours says them."""
        return FilterStep(cls.name, ())

    # ---------------------------------------------------------------- h5repack -f
    @classmethod
    def from_h5repack(cls, arg: str, where: str) -> FilterStep:
        """h5repack's ``KEYWORD=arg`` (only called with an argument when ``h5repack_example`` is set)."""
        return FilterStep(cls.name, ())

    @classmethod
    def h5repack_option(cls, step: FilterStep) -> str | None:
        """The step as h5repack's ``-f`` text (``GZIP=6``, read back by :meth:`from_h5repack`); None when
        h5repack has no keyword that says it."""
        return None

    # ---------------------------------------------------------------- other libraries' spelling (advise, tune)
    @classmethod
    def h5py_code(cls, step: FilterStep) -> str | None:
        """h5py ``create_dataset`` keywords, as Python source, that write this step; None when h5py has none."""
        return None

    @classmethod
    def netcdf_code(cls, step: FilterStep) -> str | None:
        """netCDF4 ``createVariable`` keywords, as Python source, that write this step; None when it has none."""
        return None

    # ---------------------------------------------------------------- Python codec (fast repack path)
    @classmethod
    def codec_missing(cls, step: FilterStep) -> str:
        """'' when this process has an exact Python encoder and decoder for the filter, else why not."""
        return f"{step.name} has no Python encoder"

    @classmethod
    def encoder(cls, cd: tuple[int, ...], itemsize: int, engine: str) -> Codec | None:
        return None

    @classmethod
    def decoder(cls, cd: tuple[int, ...], itemsize: int, size: int | None) -> Codec | None:
        return None

    @classmethod
    def size_after(cls, size: int | None) -> int | None:
        """The size of a chunk after this filter encoded one of ``size`` bytes, when known in advance."""
        return None


_BY_NAME: dict[str, type[Filter]] = {}
_BY_ID: dict[int, type[Filter]] = {}
_GENERIC_CLASS: list[type[Filter]] = []


def register(cls: type[Filter]) -> type[Filter]:
    """Class decorator: make a filter known by its spec name and its HDF5 id."""
    _BY_NAME[cls.name] = cls
    _BY_ID[cls.id] = cls
    return cls


def register_generic(cls: type[Filter]) -> type[Filter]:
    _GENERIC_CLASS.append(cls)
    return cls


def registered() -> dict[str, type[Filter]]:
    """Every named filter, by spec name (the generic ``idN`` one not included)."""
    return dict(_BY_NAME)


def filter_class(name: str) -> type[Filter]:
    """The class of a spec name (``gzip``, ``id32001``); KeyError when there is none."""
    if GENERIC.fullmatch(name):
        return _GENERIC_CLASS[0]
    return _BY_NAME[name]


def class_for_id(fid: int) -> type[Filter]:
    """The class that knows filter ``fid``; the generic filter for ids without one."""
    return _BY_ID.get(fid, _GENERIC_CLASS[0])


def top_level_vlen(tid) -> bool:
    """A variable-length sequence or string as the element itself (not inside a compound): the chunks hold
    only heap ids, which some plugins' set_local callbacks divide by a type size of 0 (SIGFPE)."""
    from h5py import h5t

    cls = tid.get_class()
    return cls == h5t.VLEN or (cls == h5t.STRING and tid.is_variable_str())
