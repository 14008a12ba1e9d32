"""HDF5 filters done in Python, byte for byte as HDF5's own filters store chunks.

Used by repack's fast path: chunks are read raw (``read_direct_chunk``), decoded here, re-encoded
here in worker threads (zlib, bz2 and zstandard release the GIL) and written raw
(``write_direct_chunk``). Which filter has a codec is each filter class's business
(:mod:`ccp.hdf5.filters.builtin`, :mod:`~ccp.hdf5.filters.plugins`); a filter with no exact Python
counterpart makes :func:`encoder` / :func:`decoder` return ``None`` and a reason; the caller then
lets the HDF5 library do that side.

Formats (HDF5 2.0 sources, H5Z*.c, and hdf5plugin's filters):

* deflate (1): a zlib stream. Engine "zlib": ``zlib.compress(data, level)``, the same bytes as
  HDF5's ``compress2(level)`` with the same zlib. Engine "libdeflate" (the ``deflate``
  package): libdeflate at the same level, about 3x faster, a valid zlib stream that every
  zlib/HDF5 reader decodes, usually a little smaller, not byte-identical. Engine "isal" (the
  ``isal`` package, Intel ISA-L): gzip level 1 only, encoded at ISA-L's level 2 (its levels are not
  zlib's: its level 1 left the 6458 benchmark's floats 15% larger than zlib's level 1, its level 2
  4% larger, in 0.65x libdeflate's CPU); other levels fall back to libdeflate (or zlib). Decoding uses
  libdeflate when it is installed (faster than ISA-L's inflate on those chunks; the output is the
  same either way).
* shuffle (2): element size ``cd[0]``; byte j of element i goes to ``j * n + i``; trailing
  bytes (``nbytes % size``) are copied as they are; nothing happens when the size is 1
  or the buffer holds at most one element.
* fletcher32 (3): HDF5's Fletcher-32 over big-endian 16-bit words, reduced every 360
  words, appended little-endian (4 bytes). Reads accept the pre-1.6.3 byte-swapped form.
* bzip2 (307, hdf5plugin): a bzip2 stream, block size ``cd[0]``.
* zstd (32015, hdf5plugin): one zstd frame with its content size, level ``cd[0]``;
  only when the ``zstandard`` package (or Python 3.14's ``compression.zstd``) is installed.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ccp.hdf5.filters.base import Codec, FilterStep, class_for_id

_M32 = 0xFFFFFFFF


# ------------------------------------------------------------------ shuffle

# up to this element size the byte planes are copied one by one (a strided numpy copy each): 3.4x faster than
# numpy's transposing copy for an 800 kB chunk of 4-byte elements unshuffled (1.0 ms against 3.5 ms), 1.5x for
# a 55 kB map; past it the planes are too many for a Python loop over them
PLANE_COPY_MAX_ELSIZE = 32


def _transpose_bytes(data, elsize: int, forward: bool) -> bytes:
    """Byte (un)shuffle: the element bytes as a (n, elsize) matrix, transposed; a ragged tail stays as is."""
    buf = np.frombuffer(data, dtype=np.uint8)
    n = buf.size
    if elsize <= 1 or n <= elsize:
        return bytes(buf)
    nel = n // elsize
    body = nel * elsize
    if elsize > PLANE_COPY_MAX_ELSIZE:
        return np.ascontiguousarray(buf[:body].reshape((nel, elsize) if forward else (elsize, nel)).T).tobytes() \
            + buf[body:].tobytes()
    out = np.empty(n, dtype=np.uint8)
    elements = out[:body].reshape(nel, elsize) if not forward else buf[:body].reshape(nel, elsize)
    planes = buf[:body].reshape(elsize, nel) if not forward else out[:body].reshape(elsize, nel)
    for k in range(elsize):      # byte k of every element <-> plane k
        if forward:
            planes[k] = elements[:, k]
        else:
            elements[:, k] = planes[k]
    out[body:] = buf[body:]
    return out.tobytes()


def shuffle(data, elsize: int) -> bytes:
    """HDF5's byte shuffle (H5Z_filter_shuffle, forward)."""
    return _transpose_bytes(data, elsize, forward=True)


def unshuffle(data, elsize: int) -> bytes:
    return _transpose_bytes(data, elsize, forward=False)


# ------------------------------------------------------------------ fletcher32

def fletcher32(data) -> int:
    """``H5_checksum_fletcher32``: exactly the C code's 32-bit arithmetic and 360-word reductions."""
    b = np.frombuffer(data, dtype=np.uint8)
    n = b.size
    nwords = n // 2
    words = (b[0: 2 * nwords: 2].astype(np.int64) << 8) | b[1: 2 * nwords: 2].astype(np.int64)
    sum1 = sum2 = 0
    full = nwords // 360

    def blocks(w, tlen: int) -> tuple[list, list]:
        s = w.sum(axis=1)
        t = w @ np.arange(tlen, 0, -1, dtype=np.int64)
        return s.tolist(), t.tolist()

    plan: list[tuple[int, list, list]] = []
    if full:
        plan.append((360, *blocks(words[: full * 360].reshape(full, 360), 360)))
    rem = nwords - full * 360
    if rem:
        plan.append((rem, *blocks(words[full * 360:].reshape(1, rem), rem)))
    for tlen, sums, tsums in plan:
        for s, t in zip(sums, tsums):
            sum2 = (sum2 + tlen * sum1 + t) & _M32
            sum1 = (sum1 + s) & _M32
            sum1 = (sum1 & 0xFFFF) + (sum1 >> 16)
            sum2 = (sum2 & 0xFFFF) + (sum2 >> 16)
    if n % 2:
        sum1 = (sum1 + (int(b[-1]) << 8)) & _M32
        sum2 = (sum2 + sum1) & _M32
        sum1 = (sum1 & 0xFFFF) + (sum1 >> 16)
        sum2 = (sum2 & 0xFFFF) + (sum2 >> 16)
    sum1 = (sum1 & 0xFFFF) + (sum1 >> 16)
    sum2 = (sum2 & 0xFFFF) + (sum2 >> 16)
    return ((sum2 << 16) | sum1) & _M32


# fletcher32_many sums buffers up to this size together (longer ones one by one: their blocks are many, the
# per-call set-up little), in groups of up to this many 16-bit words: three int64 arrays of it are held (1.5 MiB;
# with 2**22 a task's group of ~0.5 M words held 12 MiB, and the fletcher32 transpose peaked at 86-89 MiB
# against 84 MiB now), as fast per buffer (2.1-2.3 us for 770-byte buffers against 2.8-3.3 us, one thread, load 9)
FLETCHER_MANY_MAX_BYTES = 64 * 1024
FLETCHER_GROUP_WORDS = 1 << 16


def fletcher32_many(bufs) -> list[int]:
    """:func:`fletcher32` of each buffer of ``bufs``, small ones computed together: :func:`fletcher32`'s numpy
    set-up (~15 us a call) costs more than the sum itself on a band's tiny chunks (13,824 of ~800 bytes).
    Exactly the C code's arithmetic: each 360-word block's sum ``s`` and weighted sum ``t`` (word i of a block
    of ``tlen`` counts ``tlen - i`` times) come from running sums over the joined words, then the 32-bit
    additions and reductions run block by block for all buffers at once."""
    out = [0] * len(bufs)
    group: list[int] = []
    words = 0
    for k, buf in enumerate(bufs):
        size = len(buf)
        if size > FLETCHER_MANY_MAX_BYTES:
            out[k] = fletcher32(buf)
            continue
        if words + size // 2 > FLETCHER_GROUP_WORDS:
            _fletcher32_group(bufs, group, out)
            group, words = [], 0
        group.append(k)
        words += size // 2 + 1
    if group:
        _fletcher32_group(bufs, group, out)
    return out


def _fletcher32_group(bufs, group: list[int], out: list[int]) -> None:
    parts = [bytes(bufs[k]) for k in group]
    n = len(parts)
    lens = np.fromiter(map(len, parts), dtype=np.int64, count=n)
    # each buffer from an even offset, its odd last byte (if any) the high byte of a word of its own
    w = np.frombuffer(b"".join([p + b"\0" if len(p) % 2 else p for p in parts]), dtype=">u2").astype(np.int64)
    run = np.zeros(w.size + 1, dtype=np.int64)
    np.cumsum(w, out=run[1:])
    run2 = np.zeros(w.size + 1, dtype=np.int64)
    np.cumsum(run[1:], out=run2[1:])
    nwords = lens // 2
    padded = (lens + 1) // 2
    first_word = np.cumsum(padded) - padded
    nblocks = -(-nwords // 360)
    first_block = np.cumsum(nblocks) - nblocks
    owner = np.repeat(np.arange(n), nblocks)
    k = np.arange(int(nblocks.sum())) - np.repeat(first_block, nblocks)
    start = first_word[owner] + 360 * k
    tlen = np.minimum(360, nwords[owner] - 360 * k)
    s = run[start + tlen] - run[start]
    t = run2[start + tlen] - run2[start] - tlen * run[start]
    sum1 = np.zeros(n, dtype=np.int64)
    sum2 = np.zeros(n, dtype=np.int64)
    for b in range(int(nblocks.max()) if n else 0):
        rows = np.nonzero(nblocks > b)[0]
        at = first_block[rows] + b
        s2 = (sum2[rows] + tlen[at] * sum1[rows] + t[at]) & _M32
        s1 = (sum1[rows] + s[at]) & _M32
        sum1[rows] = (s1 & 0xFFFF) + (s1 >> 16)
        sum2[rows] = (s2 & 0xFFFF) + (s2 >> 16)
    odd = np.nonzero(lens % 2)[0]
    if odd.size:
        s1 = (sum1[odd] + w[first_word[odd] + nwords[odd]]) & _M32
        s2 = (sum2[odd] + s1) & _M32
        sum1[odd] = (s1 & 0xFFFF) + (s1 >> 16)
        sum2[odd] = (s2 & 0xFFFF) + (s2 >> 16)
    sum1 = (sum1 & 0xFFFF) + (sum1 >> 16)
    sum2 = (sum2 & 0xFFFF) + (sum2 >> 16)
    for k_out, value in zip(group, (((sum2 << 16) | sum1) & _M32).tolist()):
        out[k_out] = value


def fletcher32_append(data) -> bytes:
    return bytes(data) + fletcher32(data).to_bytes(4, "little")


def fletcher32_strip(data) -> bytes:
    mv = memoryview(data)
    if len(mv) < 4:
        raise ValueError("fletcher32: chunk shorter than its checksum")
    body = mv[:-4]
    stored = int.from_bytes(mv[-4:], "little")
    value = fletcher32(body)
    c = value.to_bytes(4, "little")
    swapped = int.from_bytes(bytes((c[1], c[0], c[3], c[2])), "little")
    if stored not in (value, swapped):
        raise ValueError("fletcher32 checksum mismatch: the source chunk is corrupt")
    return bytes(body)


# ------------------------------------------------------------------ zstd

def zstd_module() -> tuple[str, Any] | None:
    try:
        from compression import zstd  # type: ignore[import-not-found]  # Python >= 3.14

        return ("stdlib", zstd)
    except ImportError:
        pass
    try:
        import zstandard

        return ("zstandard", zstandard)
    except ImportError:
        return None


def zstd_encoder(level: int) -> Codec:
    found = zstd_module()
    assert found is not None
    kind, mod = found
    if kind == "stdlib":
        return lambda data: mod.compress(bytes(data), level=level)
    return lambda data: mod.ZstdCompressor(level=level, write_content_size=True).compress(data)


def zstd_decoder() -> Codec:
    found = zstd_module()
    assert found is not None
    kind, mod = found
    if kind == "stdlib":
        return mod.decompress
    return lambda data: mod.ZstdDecompressor().decompress(data)


# ------------------------------------------------------------------ deflate engines

DEFLATE_ENGINES = ("auto", "zlib", "libdeflate", "isal")
# gzip level 1 through ISA-L is ISA-L's level 2: its level 1 cost 15% more bytes than zlib's level 1 on
# the 6458 benchmark's floats (ratio 1.65 vs 1.90, 800 kB chunks), its level 2 4% (1.84), for about the
# same CPU as its level 1 and 0.65x libdeflate's level 1 (benchmarks/deflate_engines.py)
ISAL_LEVEL_FOR_GZIP_1 = 2


def _libdeflate():
    try:
        import deflate
    except ImportError:
        return None
    return deflate


def _isal():
    try:
        from isal import isal_zlib
    except ImportError:
        return None
    return isal_zlib


def resolve_deflate_engine(name: str = "auto") -> str:
    """'auto' -> 'isal' when the ``isal`` package is installed, else 'libdeflate' when ``deflate`` is, else 'zlib'."""
    from ccp.errors import ConfigError

    name = (name or "auto").lower()
    if name not in DEFLATE_ENGINES:
        raise ConfigError("--deflate", f"unknown engine {name!r}; one of {', '.join(DEFLATE_ENGINES)}")
    if name == "auto":
        return "isal" if _isal() is not None else "libdeflate" if _libdeflate() is not None else "zlib"
    if name == "libdeflate" and _libdeflate() is None:
        raise ConfigError("--deflate", "libdeflate needs the deflate package (pip install deflate)")
    if name == "isal" and _isal() is None:
        raise ConfigError("--deflate", "isal needs the isal package (pip install isal)")
    return name


def deflate_engine_at(engine: str, level: int) -> str:
    """The encoder ``engine`` (a resolved one) really uses at gzip ``level``: ISA-L encodes level 1 only
    (its levels 0-3 do not reach zlib's 2-9 ratios), libdeflate levels 1-9, zlib the rest."""
    if engine == "isal" and (level != 1 or _isal() is None):
        engine = "libdeflate"
    if engine == "libdeflate" and (not 1 <= level <= 9 or _libdeflate() is None):
        engine = "zlib"
    return engine


def deflate_encoder(level: int, engine: str) -> Codec:
    used = deflate_engine_at(engine, level)
    if used == "isal":
        isal_zlib = _isal()
        return lambda data: isal_zlib.compress(data, ISAL_LEVEL_FOR_GZIP_1)
    if used == "libdeflate":
        lib = _libdeflate()
        # libdeflate's levels compress like zlib's (level 1 within ~1% either way on floats, integers and
        # counts; its level 2 is 2x slower for 1-3% less): the level asked for is the one used
        return lambda data: lib.zlib_compress(data, level)
    return lambda data: zlib.compress(data, level)


def deflate_decoder(size: int | None) -> Codec:
    lib = _libdeflate()
    if lib is None or not size:
        return zlib.decompress

    def decode(data):
        try:
            out = lib.zlib_decompress(data, size)
        except lib.DeflateError:  # e.g. a stream longer than expected: let zlib judge
            return zlib.decompress(data)
        return out

    return decode


# ------------------------------------------------------------------ pipelines

def _label(step: FilterStep) -> str:
    cls = class_for_id(step.id)
    return cls.name if cls.id == step.id else f"filter {step.id}"


def encoder(steps: Iterable[FilterStep], itemsize: int, deflate: str = "zlib") -> tuple[Callable | None, str]:
    """``(encode, "")`` where ``encode(bytes) -> bytes`` runs the whole pipeline, or ``(None, reason)``.

    ``steps`` are as stored (:func:`~ccp.hdf5.filters.pipeline_from_dcpl`): the codecs take the stored
    cd_values. ``deflate``: "zlib", "libdeflate" or "isal" (see :func:`resolve_deflate_engine`).
    """
    fns = []
    for step in steps:
        cls = class_for_id(step.id)
        fn = cls.encoder(step.stored, itemsize, deflate)
        if fn is None:
            why = cls.codec_missing(step) if cls.id == step.id else ""
            return None, why or f"{_label(step)} has no Python encoder"
        fns.append(fn)
    if len(fns) == 1:   # the codec itself: no call in between (it runs once per chunk, 13,824 tiny ones a job)
        return fns[0], ""

    def encode(data):
        for fn in fns:
            data = fn(data)
        return data

    return encode, ""


def decoder(steps: Iterable[FilterStep], itemsize: int, chunk_bytes: int | None = None) -> tuple[Callable | None, str]:
    """``(decode, "")`` where ``decode(bytes, filter_mask) -> bytes``, or ``(None, reason)``.

    ``chunk_bytes`` (the unfiltered chunk size) lets libdeflate inflate into a buffer of the right size.
    """
    fns = []
    size = chunk_bytes  # size of the data entering each filter on write, while it is known
    for step in steps:
        cls = class_for_id(step.id)
        fn = cls.decoder(step.stored, itemsize, size)
        if fn is None:
            return None, f"{_label(step)} has no Python decoder"
        fns.append(fn)
        size = cls.size_after(size)

    def decode(data, mask: int = 0):
        for i in range(len(fns) - 1, -1, -1):
            if not (mask >> i) & 1:
                data = fns[i](data)
        return data

    return decode, ""
