"""The filters HDF5 itself has (deflate, shuffle, fletcher32, szip, nbit, scaleoffset) and h5py's LZF."""

from __future__ import annotations

from ccp.errors import ConfigError
from ccp.hdf5.filters import codecs
from ccp.hdf5.filters.base import Codec, Filter, FilterStep, at, choice_arg, int_arg, register


@register
class Gzip(Filter):
    """deflate (id 1): a zlib stream at level ``cd[0]``."""

    name, id, max_args = "gzip", 1, 1
    help = "gzip:LEVEL (0-9, default 6)"
    h5repack, h5repack_example = "GZIP", "GZIP=6"
    deflate_engine = True

    @classmethod
    def h5repack_option(cls, step):
        return f"GZIP={step.args[0]}" if step.args[0] != "0" else None     # h5repack takes levels 1-9

    @classmethod
    def h5py_code(cls, step):
        return f'compression="gzip", compression_opts={step.args[0]}'

    @classmethod
    def netcdf_code(cls, step):
        return f"zlib=True, complevel={step.args[0]}" if step.args[0] != "0" else None   # level 0: netCDF-C writes no deflate

    @classmethod
    def normalise(cls, args, where):
        return FilterStep(cls.name, (str(int_arg(cls, args, 0, 6, 0, 9, where)),))

    @classmethod
    def apply(cls, step, dcpl, dtype):
        dcpl.set_deflate(int(step.args[0]))

    @classmethod
    def from_stored(cls, values):
        return FilterStep(cls.name, (str(at(values, 0, 6)),)) if at(values, 0, 6) <= 9 else None

    @classmethod
    def from_h5repack(cls, arg, where):
        # h5repack's help says 1-9, but the binary takes 0 (a deflate filter that stores): as gzip:0 does here
        if not arg.isdigit() or not 0 <= int(arg) <= 9:
            raise ConfigError(where, f"GZIP level must be an integer 0-9, got {arg!r}")
        return FilterStep(cls.name, (str(int(arg)),))

    @classmethod
    def codec_missing(cls, step):
        return ""

    @classmethod
    def encoder(cls, cd, itemsize, engine) -> Codec:
        return codecs.deflate_encoder(cd[0] if cd else 6, engine)

    @classmethod
    def decoder(cls, cd, itemsize, size) -> Codec:
        return codecs.deflate_decoder(size)


@register
class Shuffle(Filter):
    """byte shuffle (id 2): element size ``cd[0]`` (filled by set_local)."""

    name, id = "shuffle", 2
    help = "shuffle (byte shuffle)"
    h5repack = "SHUF"
    h5py_order = 1

    @classmethod
    def h5repack_option(cls, step):
        return "SHUF"

    @classmethod
    def h5py_code(cls, step):
        return "shuffle=True"

    @classmethod
    def netcdf_code(cls, step):
        return "shuffle=True"

    @classmethod
    def apply(cls, step, dcpl, dtype):
        dcpl.set_shuffle()

    @classmethod
    def codec_missing(cls, step):
        return ""

    @classmethod
    def encoder(cls, cd, itemsize, engine) -> Codec:
        size = cd[0] if cd else itemsize
        return lambda data: codecs.shuffle(data, size)

    @classmethod
    def decoder(cls, cd, itemsize, size) -> Codec:
        elsize = cd[0] if cd else itemsize
        return lambda data: codecs.unshuffle(data, elsize)

    @classmethod
    def size_after(cls, size):
        return size


@register
class Fletcher32(Filter):
    """Fletcher-32 checksum (id 3), appended to each chunk."""

    name, id = "fletcher32", 3
    help = "fletcher32 (checksum)"
    h5repack = "FLET"
    h5py_order = 3

    @classmethod
    def h5repack_option(cls, step):
        return "FLET"

    @classmethod
    def h5py_code(cls, step):
        return "fletcher32=True"

    @classmethod
    def netcdf_code(cls, step):
        return "fletcher32=True"

    @classmethod
    def apply(cls, step, dcpl, dtype):
        dcpl.set_fletcher32()

    @classmethod
    def codec_missing(cls, step):
        return ""

    @classmethod
    def encoder(cls, cd, itemsize, engine) -> Codec:
        return codecs.fletcher32_append

    @classmethod
    def decoder(cls, cd, itemsize, size) -> Codec:
        return codecs.fletcher32_strip

    @classmethod
    def size_after(cls, size):
        return None if size is None else size + 4


@register
class Szip(Filter):
    """szip (id 4): ``cd[0]`` option mask (EC or NN coding), ``cd[1]`` pixels per block."""

    name, id, max_args = "szip", 4, 2
    help = "szip:ec|nn:PIXELS_PER_BLOCK (default nn:8; pixels even, 2-32)"
    h5repack, h5repack_example = "SZIP", "SZIP=8,NN"

    @classmethod
    def h5repack_option(cls, step):
        return f"SZIP={step.args[1]},{step.args[0].upper()}"

    @classmethod
    def h5py_code(cls, step):
        return f'compression="szip", compression_opts=("{step.args[0]}", {step.args[1]})'

    @classmethod
    def netcdf_code(cls, step):
        return f'compression="szip", szip_coding="{step.args[0]}", szip_pixels_per_block={step.args[1]}'

    @classmethod
    def normalise(cls, args, where):
        coding = choice_arg(cls, args, 0, "nn", ("ec", "nn"), where)
        ppb = int_arg(cls, args, 1, 8, 2, 32, where)
        if ppb % 2:
            raise ConfigError(where, f"szip pixels per block must be even, got {ppb}")
        return FilterStep(cls.name, (coding, str(ppb)))

    @classmethod
    def apply(cls, step, dcpl, dtype):
        from h5py import h5z

        mask = h5z.SZIP_EC_OPTION_MASK if step.args[0] == "ec" else h5z.SZIP_NN_OPTION_MASK
        dcpl.set_szip(mask, int(step.args[1]))

    @classmethod
    def from_stored(cls, values):
        from h5py import h5z

        coding = "ec" if at(values, 0, 0) & h5z.SZIP_EC_OPTION_MASK else "nn"
        ppb = at(values, 1, 8)
        return FilterStep(cls.name, (coding, str(ppb))) if 2 <= ppb <= 32 and not ppb % 2 else None

    @classmethod
    def from_h5repack(cls, arg, where):
        ppb, _comma, coding = arg.partition(",")
        coding = coding.strip().upper() or "NN"
        if not ppb.strip().isdigit():
            raise ConfigError(where, f"SZIP pixels per block must be an even integer 2-32, got {ppb.strip()!r}")
        n = int(ppb)
        if n % 2 or not 2 <= n <= 32:
            raise ConfigError(where, f"SZIP pixels per block must be an even integer 2-32, got {n}")
        if coding not in ("NN", "EC"):
            raise ConfigError(where, f"SZIP coding must be NN or EC, got {coding!r}")
        return FilterStep(cls.name, (coding.lower(), str(n)))


@register
class Nbit(Filter):
    """N-bit packing (id 5); its cd_values are all filled by set_local from the dataset's type."""

    name, id = "nbit", 5
    help = "nbit"
    h5repack = "NBIT"

    @classmethod
    def h5repack_option(cls, step):
        return "NBIT"

    @classmethod
    def refuses_type(cls, step, tid):
        from h5py import h5t

        from ccp.hdf5.lowlevel import has_vlen

        if has_vlen(tid):   # HDF5 2.0's nbit set_local walks the heap ids as if they were values: SIGSEGV
            return "cannot take variable-length data (HDF5 crashes on it)"
        if tid.get_class() == h5t.FLOAT and tid.get_precision() < 8 * tid.get_size():
            return (f"keeps only the {tid.get_precision()} value bits of this {8 * tid.get_size()}-bit "
                    "float, so its padding bytes would not be copied as they are")
        return ""
    # the base apply is what H5Pset_nbit does (H5Pocpl.c): filter 5, optional, no cd_values. h5py has no set_nbit.


@register
class ScaleOffset(Filter):
    """scale-offset (id 6): ``cd[0]`` the scale type (0 float D-scale, 2 integer), ``cd[1]`` the scale factor
    (bits for integers, decimal digits for floats). Lossy on floats; exact on integers when the factor is 0
    (automatic) or holds the data's range."""

    name, id, max_args = "scaleoffset", 6, 1
    help = "scaleoffset:N (integers: min bits, 0 = automatic; floats: decimal digits kept, lossy)"
    h5repack, h5repack_example = "SOFF", "SOFF=2,DS"
    h5py_order = 0
    # no h5repack_option: SOFF needs the scale type, which follows from the dataset's type, not the spec
    _SCALE_TYPES = {"ds": 0, "in": 2}   # H5Z_SO_FLOAT_DSCALE, H5Z_SO_INT

    @classmethod
    def h5py_code(cls, step):
        return f"scaleoffset={step.args[0]}"

    @classmethod
    def normalise(cls, args, where):
        return FilterStep(cls.name, (str(int_arg(cls, args, 0, 0, 0, 64, where)),))

    @classmethod
    def scale_type(cls, step, kind: str) -> str:
        """'in' or 'ds': the one h5repack's SOFF=N,IN|DS asked for (kept in the step's cd_values, which do
        not change its spec), else what the dataset's numpy kind takes."""
        if step.cd_values:
            return {v: k for k, v in cls._SCALE_TYPES.items()}.get(step.cd_values[0], "?")
        return "ds" if kind == "f" else "in"

    @classmethod
    def apply(cls, step, dcpl, dtype):
        from h5py import h5z

        if dtype.kind not in "iuf":
            raise ConfigError("filters", f"scaleoffset needs an integer or float dtype, not {dtype}")
        if dtype.kind == "f":
            dcpl.set_scaleoffset(h5z.SO_FLOAT_DSCALE, int(step.args[0]))
        else:
            dcpl.set_scaleoffset(h5z.SO_INT, int(step.args[0]))

    @classmethod
    def refuses(cls, dtype, numeric):
        if numeric and dtype.kind in "iuf":
            return ""
        return f"scaleoffset needs an integer or float dataset, not {dtype}{'' if numeric else ' records'}"

    @classmethod
    def refuses_type(cls, step, tid):
        from h5py import h5t

        klass, size = tid.get_class(), tid.get_size()
        if klass == h5t.INTEGER and size in (1, 2, 4, 8):
            kind = "i"
        elif klass == h5t.FLOAT and size in (4, 8) and tid.get_precision() == 8 * size:
            kind = "f"
        else:   # HDF5 has no scale-offset for these (enum, bitfield, 16- or 128-bit floats, records ...)
            return "takes only 8- to 64-bit integers and 32- or 64-bit floats"
        scale = cls.scale_type(step, kind)
        if kind == "f" and scale != "ds":
            return ("scale type IN (integer) is for integers; on floats HDF5 would round every value to an "
                    f"integer: give SOFF={step.args[0]},DS (decimal digits kept)")
        if kind == "i" and scale != "in":
            return f"scale type DS (decimal digits) is for floats; for integers give SOFF={step.args[0]},IN"
        return ""

    @classmethod
    def from_stored(cls, values):
        return FilterStep(cls.name, (str(at(values, 1, 0)),)) if 0 <= at(values, 1, 0) <= 64 else None

    @classmethod
    def from_h5repack(cls, arg, where):
        # SOFF=N,IN|DS: the scale type is kept as the step's cd_values and checked against each dataset's type
        factor, comma, kind = arg.partition(",")
        kind = kind.strip().upper()
        if not comma or kind not in ("IN", "DS"):
            raise ConfigError(where, f"SOFF needs a scale type IN (integers) or DS (floats), e.g. SOFF=2,DS; got {arg!r}")
        if not factor.strip().isdigit() or int(factor) > 64:
            raise ConfigError(where, f"SOFF scale factor must be an integer 0-64, got {factor.strip()!r}")
        return FilterStep(cls.name, (str(int(factor)),), (cls._SCALE_TYPES[kind.lower()], int(factor)))


@register
class Lzf(Filter):
    """LZF (id 32000), registered by h5py itself."""

    name, id = "lzf", 32000
    help = "lzf"

    @classmethod
    def h5py_code(cls, step):
        return 'compression="lzf"'
