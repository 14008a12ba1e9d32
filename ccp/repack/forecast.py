"""``ccp repack --plan``: what a repack will cost (time, peak memory, bytes read and written, the read
order and cache) before it runs, from the plan the copy itself uses (:mod:`ccp.repack.rechunk`).

The time model: each dataset's copy is its main thread's per-chunk work plus the codec work (decode
every source chunk read, encode every target chunk) shared by the encoder threads, then the read-back
(:mod:`ccp.repack.readback`: every output chunk decoded again in the threads, a few target chunks read
through HDF5 from both files). The stages are timed here, in CPU time, on a few of the dataset's own
target chunks run as the copy runs them (source chunks read and decoded, placed, encoded with the
target's filters, decoded again by the check), several at once in the copy's threads, so the data's
compressibility is in them; the CPU those threads got over the sample's wall time is the cores the copy's
threads will get, so its GIL and a busy machine's load are in the forecast as they stand when the plan is
made. A dataset with no such sample (library path, same-grid recoding) has its codecs timed alone and the
cores measured by :func:`measured_cores` (a fifth of a second of codec work in as many threads as the copy
uses). Nothing is written.
"""

from __future__ import annotations

import itertools
import math
import os
import statistics
import time
from dataclasses import asdict, dataclass

import h5py
import numpy as np

from ccp.errors import CcpError
from ccp.hdf5.filters import codecs, pipeline_from_dcpl
from ccp.repack.band import GroupCodec, timed_band
from ccp.repack.chunks import _SourceReader
from ccp.repack.decide import _h5_message, _Planner
from ccp.repack.library import planned as library_planned
from ccp.repack.pipeline import timed_target
from ccp.repack.plan import DEFAULT_BUFFER_BYTES, Slab, plan_slabs
from ccp.repack.readback import SAMPLED_CHUNKS, WrittenChunks
from ccp.repack.rechunk import (
    RAW_SECONDS_PER_BYTE,
    SECONDS_PER_BAND_TARGET,
    SECONDS_PER_PIPELINE_TARGET,
    SECONDS_PER_RECHUNK,
    SECONDS_PER_SOURCE_READ,
    MemoryBudget,
    index_bytes,
    io_ops,
    pass_room,
    pass_seconds,
    plan_pass,
    process_rss,
    readback_bytes,
)
from ccp.repack.stages import STAGE_SECONDS_PER_BYTE, plan_copy, reread_note
from ccp.repack.tree import _Repacker

# main-thread seconds per target chunk written by the one-thread path (slicing, the write call), measured on the 6458
# benchmark with cProfile; per source chunk read, per pipeline and band target chunk: rechunk.py's, the same
# measurements the plan's choice uses
SECONDS_PER_TARGET_CHUNK = 300e-6
# the read-back's serial seconds per target chunk after the copy: its entry in the reopened file's chunk index
# and the CRC of its stored bytes, read in runs (ccp.repack.readback; 14 us per chunk under cProfile at load 12
# on the daily-map transpose's 13,824 chunks, about a third of that without the profiler)
SECONDS_PER_READBACK_CHUNK = 5e-6
# ... and per stored byte of the output: read back with pread and its CRC-32 computed (ISA-L's): 0.36-0.57 ns a
# byte over the 6458 job's 43.6 MB output in 100 chunks (ccp.repack.readback._stored_crcs timed alone, three
# runs, load 7.5; the daily-map transpose's 13,824 chunks of 770 bytes: 1.1-1.6 us a chunk, the per-chunk cost)
SECONDS_PER_READBACK_BYTE = 0.5e-9
# H5Ocopy of a dataset that does not change, bytes per second (raw chunks copied by the library)
COPY_BYTES_PER_SECOND = 400e6
_SAMPLE_CHUNKS = 64
_SAMPLE_BYTES = 4 * 1024 * 1024
# the stages' sample runs in the copy's threads for at least this long (the CPU they get over that time is
# the share the copy's threads will get), in rounds of one task per thread per sample chunk, at most this many
_SAMPLE_SECONDS = 0.1
_SAMPLE_ROUNDS = 4
# the band path's sample region: its target chunks cut and encoded once per thread per round (4 MiB of the
# daily-map transpose's 1.4 KiB chunks took 0.09 s a round)
_BAND_SAMPLE_BYTES = 1 << 20


@dataclass(frozen=True)
class DatasetForecast:
    path: str
    source_chunks: tuple[int, ...] | None
    target_chunks: tuple[int, ...] | None
    method: str                  # "fast" | "library" | "copy" | "create" (no chunk ever written: nothing moves)
    read_order: str
    buffer_bytes: int
    cache_bytes: int
    hyperslab: tuple[int, ...]
    source_chunk_reads: int
    source_chunks_stored: int
    bytes_read: int
    bytes_written: int
    peak_memory_bytes: int
    predicted_seconds: float
    decode_mb_per_s: float | None     # None: not measured (no Python codec for that side; HDF5 does it)
    encode_mb_per_s: float | None
    stages: tuple[tuple[int, ...], ...]   # intermediate chunk shapes a multi-stage copy would use ("" if one pass)
    note: str


@dataclass(frozen=True)
class RepackForecast:
    src: str
    threads: int
    effective_threads: float
    memory_bytes: int
    startup_seconds: float       # already spent when the plan was made (interpreter, imports, survey)
    predicted_seconds: float
    peak_memory_bytes: int
    bytes_read: int
    bytes_written: int
    datasets: tuple[DatasetForecast, ...]

    def as_dict(self) -> dict:
        return asdict(self)


def process_seconds() -> float:
    """Seconds since this process started (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):  # pragma: no cover - not Linux
        return 0.0


def measured_cores(threads: int, seconds: float = 0.2) -> tuple[float, float]:
    """(cores ``threads`` codec threads get, share of a core one thread alone gets) on this machine now.

    Measured, not derived from the load average: ``threads`` threads compress a buffer with zlib (which
    releases the GIL, like the copy's codecs) for ``seconds`` of wall time; their CPU time over that wall
    time is what the copy's threads will get if the load holds. A thread running alone (the main thread's
    serial phases) gets what the process gets, up to a core: on this shared machine a busy process got about
    the same share whatever its threads (at load 11-13: ccp 0.30-0.35 cores with two codec threads, h5repack
    0.29-0.34 with one, ``benchmarks/rechunk.py``), so not ``cores / threads``, which put the serial phases
    at half that and the plans 15-24% over the measured time there."""
    import threading
    import zlib

    data = np.random.default_rng(0).integers(0, 16, 1 << 16, dtype=np.uint8).tobytes()
    cpu = [0.0] * threads
    deadline = time.perf_counter() + seconds

    def spin(i: int) -> None:
        t0 = time.thread_time()
        while time.perf_counter() < deadline:
            zlib.compress(data, 1)
        cpu[i] = time.thread_time() - t0

    t0 = time.perf_counter()
    workers = [threading.Thread(target=spin, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    wall = max(1e-6, time.perf_counter() - t0)
    cores = max(1e-3, min(float(threads), sum(cpu) / wall))
    return cores, min(1.0, cores)


@dataclass(frozen=True)
class _Rates:
    decode: float = 0.0          # CPU seconds per raw byte to decode source chunks (ccp's codecs, one thread)
    encode: float = 0.0          # ... to encode target chunks
    decode_out: float = 0.0      # ... to decode target chunks again (the read-back)
    hdf5_region: float = 0.0     # CPU seconds HDF5 takes to read one target chunk's region of the source
    region_chunks: int = 1       # source chunks under that region


def _rates(ds, reader: _SourceReader, encode, decode_out, target_chunks) -> _Rates:
    """The codec rates of this dataset's copy (one thread, CPU time).

    Decoding is timed on a spread of stored source chunks; encoding (and decoding that again) on one real
    target chunk of the middle of the dataset, read through HDF5 (timed too: the read-back reads a few
    such regions so), since a chunk's compressibility depends on how its values are laid out."""
    offsets = list(reader.stored)
    if not offsets or reader.decode is None:
        return _Rates()
    chunk_bytes = math.prod(reader.chunks) * reader.itemsize
    count = max(1, min(_SAMPLE_CHUNKS, _SAMPLE_BYTES // max(1, chunk_bytes), len(offsets)))
    step = max(1, len(offsets) // count)
    picks = offsets[::step][:count]
    mask, raw = reader._raw(picks[0])
    reader._decode_chunk(raw, mask)  # warm-up: the codec's first call loads it
    raws = [reader._raw(off) for off in picks]
    nbytes = len(raws) * chunk_bytes
    # CPU time, median of three rounds
    decode_rate = statistics.median(_timed(lambda: [reader._decode_chunk(r, m) for m, r in raws]) for _ in range(3)) / nbytes
    if encode is None or not target_chunks:
        return _Rates(decode_rate)
    shape = ds.shape
    start = tuple((-(-d // c) // 2) * c for d, c in zip(shape, target_chunks))
    extent = [min(c, d - o) for c, d, o in zip(target_chunks, shape, start)]
    for i in range(len(extent)):   # at most _SAMPLE_BYTES: fewer rows of the chunk
        if math.prod(extent) * reader.itemsize > _SAMPLE_BYTES:
            extent[i] = max(1, _SAMPLE_BYTES // (math.prod(extent[i + 1:]) * reader.itemsize))
    slab = Slab(start, tuple(extent))
    t0 = time.thread_time()
    data = np.ascontiguousarray(reader.read_library(slab)).tobytes()
    region = time.thread_time() - t0
    under = math.prod(-(-(o + n) // c) - o // c for o, n, c in zip(start, extent, reader.chunks))
    # scaled to a whole target chunk's region
    region *= math.prod(target_chunks) * reader.itemsize / max(1, len(data))
    under = max(1, round(under * math.prod(target_chunks) * reader.itemsize / max(1, len(data))))
    encode_rate = statistics.median(_timed(lambda: encode(data)) for _ in range(3)) / max(1, len(data))
    decode_out_rate = 0.0
    if decode_out is not None:
        packed = encode(data)
        decode_out_rate = statistics.median(_timed(lambda: decode_out(packed)) for _ in range(3)) / max(1, len(data))
    return _Rates(decode_rate, encode_rate, decode_out_rate, region, under)


def _pipeline_rates(reader, encode, written, dst_chunks, tgt, pool) -> dict[str, float]:
    """CPU seconds of the pipeline's stages (:func:`ccp.repack.pipeline.timed_target`) on up to three target
    chunks of the dataset (a quarter, half and three quarters into its grid; each at most _SAMPLE_BYTES), each
    timed several times, all in ``pool``'s threads at once as the copy runs its tasks, for at least
    _SAMPLE_SECONDS of wall time: medians per source chunk read (``decode``), per target byte (``place``,
    ``encode``, ``check``), per piece listed (``list``); ``ratio`` (raw over encoded bytes) and ``cores`` (the
    CPU the threads got over the wall time: what the copy's threads will get, its GIL and the machine's load
    in it)."""
    shape = tgt.shape
    grid = [-(-d // c) for d, c in zip(shape, dst_chunks)]
    total = math.prod(grid)
    plan = plan_slabs(shape, dst_chunks, tgt.itemsize, DEFAULT_BUFFER_BYTES)
    samples = []
    for flat in sorted({total // 4, total // 2, 3 * total // 4}):
        off = tuple(int(i) * c for i, c in zip(np.unravel_index(flat, grid), dst_chunks))
        count = [min(c, d - o) for c, d, o in zip(dst_chunks, shape, off)]
        for i in range(len(count)):   # at most _SAMPLE_BYTES: fewer rows of the chunk
            if math.prod(count) * tgt.itemsize > _SAMPLE_BYTES:
                count[i] = max(1, _SAMPLE_BYTES // (math.prod(count[i + 1:]) * tgt.itemsize))
        samples.append((off, tuple(count)))
    threads = pool._max_workers
    runs: list[list[dict]] = [[] for _ in samples]
    cpu = wall = 0.0
    # one untimed round first: the first reads of the sample's source chunks, the codecs' first calls and the
    # first buffers' fresh pages are the copy's once, the sample's every time
    list(pool.map(lambda k: timed_target(reader, dst_chunks, encode, *samples[k], plan, written),
                  [k for k in range(len(samples)) for _ in range(threads)]))
    while True:      # a round: each sample chunk timed once per thread, at once
        tasks = [k for k in range(len(samples)) for _ in range(threads)]
        t0 = time.perf_counter()
        done = list(pool.map(lambda k: timed_target(reader, dst_chunks, encode, *samples[k], plan, written), tasks))
        wall += time.perf_counter() - t0
        for k, r in zip(tasks, done):
            runs[k].append(r)
            cpu += sum(r[key] for key in _STAGES)
        if wall >= _SAMPLE_SECONDS or len(runs[0]) >= _SAMPLE_ROUNDS * threads:
            break
    sums = {key: sum(statistics.median(r[key] for r in rs) for rs in runs) for key in _STAGES}
    pieces = max(1, sum(rs[0]["pieces"] for rs in runs))
    nbytes = max(1, sum(rs[0]["bytes"] for rs in runs))
    encoded = max(1, sum(rs[0]["encoded"] for rs in runs))
    return {"list": sums["list"] / pieces, "decode": sums["decode"] / pieces, "place": sums["place"] / nbytes,
            "encode": sums["encode"] / nbytes, "check": sums["check"] / nbytes, "ratio": nbytes / encoded,
            "cores": max(1e-3, min(float(threads), cpu / max(1e-6, wall)))}


_STAGES = ("list", "decode", "place", "encode", "check")


def _band_rates(reader, codec, dst_chunks, block, pool) -> dict[str, float]:
    """CPU seconds of the band path's stages (:func:`ccp.repack.band.timed_band`): per source chunk decoded
    into the band (``decode``, the sample region's chunks once: a daily-map file's 365 maps decoded three
    times made the plan slower than the copy at load 12), per target byte (``place``: cut out, ``encode``:
    with its check and CRC; medians of rounds run in ``pool``'s threads at once, as the copy's tasks run),
    ``ratio`` and ``cores`` as :func:`_pipeline_rates` gives them."""
    timed = timed_band(reader, tuple(dst_chunks), codec, tuple(block), _BAND_SAMPLE_BYTES,
                       rounds=_SAMPLE_ROUNDS * pool._max_workers, pool=pool, min_seconds=_SAMPLE_SECONDS)
    return {key: timed[key] for key in ("decode", "place", "encode", "ratio", "whole", "cores")}


def _hdf5_chunk_seconds(ds, reader: _SourceReader, picks: int = 4) -> float:
    """CPU seconds HDF5 takes to read one source chunk's region through its own filters (the read-back's
    sampled regions read the input so), timed on up to ``picks`` stored chunks spread over the dataset."""
    offsets = list(reader.stored)
    if not offsets:
        return 0.0
    chosen = offsets[:: max(1, len(offsets) // picks)][:picks]
    region = lambda off: Slab(off, tuple(min(c, d - o) for c, d, o in zip(reader.chunks, reader.shape, off)))  # noqa: E731
    spare = [off for off in offsets[-2:] if off not in chosen]
    if spare:
        # one untimed read of another chunk first: HDF5's first read of the dataset loads its chunk index and
        # sets up its filters (tas.nc: 0.47 ms for the first 55 KB chunk, 0.1-0.15 ms each after), which the
        # read-back pays once, not per chunk
        reader.read_library(region(spare[-1]))
    t0 = time.thread_time()
    for off in chosen:
        reader.read_library(region(off))
    return (time.thread_time() - t0) / len(chosen)


def _readback_cost(tgt, src_chunks, dst_chunks, target_chunks: int, rates: _Rates,
                   written: int = 0) -> tuple[float, float]:
    """(main-thread CPU seconds, codec-thread CPU seconds) of the read-back (:mod:`ccp.repack.readback`):
    every target chunk decoded again in the copy's threads, its stored bytes found through HDF5's index
    and their CRC checked after the copy; the sampled target
    chunks read through HDF5 from both files (the source chunks under them, and the output's chunks with
    zlib, which decodes about 2.5 times slower than libdeflate)."""
    chunk_raw = math.prod(dst_chunks) * tgt.itemsize
    per_source_chunk = rates.hdf5_region / max(1, rates.region_chunks)
    sampled = _sampled_source_chunks(tgt.shape, src_chunks, dst_chunks)
    serial = (target_chunks * SECONDS_PER_READBACK_CHUNK + written * SECONDS_PER_READBACK_BYTE
              + sampled * per_source_chunk + min(SAMPLED_CHUNKS, target_chunks) * chunk_raw * rates.decode_out * 2.5)
    return serial, tgt.raw_bytes * rates.decode_out


def _neighbours_share(shape, src_chunks, dst_chunks, block, threads: int) -> bool:
    """Whether target chunks that share a source chunk run at once in the pipeline: neighbours in its task order
    (C order within a band), at most ``threads`` tasks apart. Along an axis where source chunks straddle target
    chunks, the next target chunk is as many tasks on as the band holds target chunks along the later axes: the
    unaligned job's (6719x10 targets of 2000x1 sources) are 10 tasks apart, decoded long before the other task
    needs them; the transpose's (500x100 targets) are next to each other and wait on each other's decode."""
    grid = [-(-min(b, d) // t) for b, d, t in zip(block, shape, dst_chunks)]
    for k, (d, s, t) in enumerate(zip(shape, src_chunks, dst_chunks)):
        straddles = t % s != 0 or s > t
        if straddles and d > t and grid[k] > 1 and math.prod(grid[k + 1:]) <= threads:
            return True
    return False


def _sampled_source_chunks(shape, src_chunks, dst_chunks) -> int:
    """Source chunks under the target chunks the read-back compares through HDF5 (the first two and the
    last two of the target grid in C order, as :func:`ccp.repack.readback.check_written` picks them)."""
    grid = [-(-d // c) for d, c in zip(shape, dst_chunks)]
    total = math.prod(grid)
    picks = list(range(total)) if total <= SAMPLED_CHUNKS else \
        list(range(SAMPLED_CHUNKS // 2)) + list(range(total - (SAMPLED_CHUNKS - SAMPLED_CHUNKS // 2), total))
    seen: set = set()
    bound = 0
    for flat in picks:
        index = np.unravel_index(flat, grid)
        lo = [int(i) * c for i, c in zip(index, dst_chunks)]
        hi = [min(a + c, d) for a, c, d in zip(lo, dst_chunks, shape)]
        ranges = [range(a // s, -(-b // s)) for a, b, s in zip(lo, hi, src_chunks)]
        n = math.prod(len(r) for r in ranges)
        bound += n
        if bound <= 100_000:      # else the sum of the picks' counts (shared chunks counted twice)
            seen.update(itertools.product(*ranges))
    return bound if bound > 100_000 else len(seen)


def _timed(fn) -> float:
    """CPU seconds of this thread running ``fn``."""
    t0 = time.thread_time()
    fn()
    return time.thread_time() - t0


def forecast_repack(src, layouts=None, filters=None, *, memory_bytes: int, buffer_bytes: int | None = None,
                    threads: int | None = None, deflate: str = "auto", memory_strict: bool = True) -> RepackForecast:
    """The plan of ``repack(src, ..., memory_bytes=...)`` and what it will cost; writes nothing."""
    from ccp.hdf5.filters.plugins import register_plugins
    from ccp.repack.copy import _check_paths  # the same checks as the copy (its OUT is not needed here)

    register_plugins()
    src, _ = _check_paths(src, os.fspath(src) + ".plan", True)
    threads = max(1, int(threads or os.cpu_count() or 1))
    engine = codecs.resolve_deflate_engine(deflate)
    budget = MemoryBudget(int(memory_bytes), buffer_bytes, memory_strict)
    try:
        fin = h5py.File(src, "r")
    except Exception as exc:
        raise CcpError(f"cannot open {src}: {_h5_message(exc)}") from None
    planner = None
    try:
        planner = _Planner(fin, layouts, filters, buffer_bytes or 32 * 1024 * 1024, engine)
        rp = _Repacker(fin, None, planner, None, buffer_bytes, None, None)
        rp.survey()
        startup = process_seconds()  # what the copy spends too before its first chunk (the plan's sampling is not)
        base = process_rss()
        from ccp.repack.copy import _check_memory

        if memory_strict:   # a budget the user set and the copy cannot meet is refused here as the copy refuses it
            _check_memory(fin, rp.targets.values(), budget.memory_bytes, threads,
                          buffer_bytes or DEFAULT_BUFFER_BYTES, base)
        from concurrent.futures import ThreadPoolExecutor

        cores = _Cores(threads)
        out = []
        with ThreadPoolExecutor(threads) as pool:    # the copy's threads, for the stages' sample
            for tgt in sorted(rp.targets.values(), key=lambda t: t.path):
                out.append(_forecast_dataset(fin[tgt.path], tgt, planner, budget, threads, cores, base, pool))
        total = startup + sum(d.predicted_seconds for d in out)
        return RepackForecast(src, threads, round(cores.shown(), 2), budget.memory_bytes, round(startup, 3), round(total, 3),
                              max([base] + [d.peak_memory_bytes for d in out]),
                              sum(d.bytes_read for d in out), sum(d.bytes_written for d in out), tuple(out))
    finally:
        if planner is not None:
            planner.close()
        fin.close()


class _Cores:
    """The cores the copy's threads get: measured by the stages' sample of the dataset where there is one (its
    own work in its own threads), else by :func:`measured_cores` (once, when first needed)."""

    def __init__(self, threads: int):
        self.threads = threads
        self._spun: tuple[float, float] | None = None
        self.used: list[float] = []

    def spin(self) -> tuple[float, float]:
        if self._spun is None:
            self._spun = measured_cores(self.threads)
        self.used.append(self._spun[0])
        return self._spun

    def sampled(self, cores: float) -> tuple[float, float]:
        self.used.append(cores)
        return cores, min(1.0, cores)

    def shown(self) -> float:
        """What the plan says it used (the first dataset's: the spin's when no dataset needed any)."""
        return self.used[0] if self.used else self.spin()[0]


def _written_from_ratio(ds, tgt, chunks, ratio: float) -> int:
    """Bytes the copy will store: the target chunks' raw bytes over the sampled encodings' ratio, for the
    share of chunks the source has written (as :meth:`ccp.repack.decide._Planner.estimate` scales it)."""
    ngrid = math.prod(-(-d // c) for d, c in zip(tgt.dims, chunks))
    share = 1.0
    if ds.chunks is not None:
        total_src = math.prod(-(-d // c) for d, c in zip(tgt.dims, ds.chunks))
        if total_src:
            share = min(1.0, ds.id.get_num_chunks() / total_src)
    return int(math.ceil(ngrid * share) * math.prod(chunks) * tgt.itemsize / max(1e-9, ratio))


def _forecast_dataset(ds, tgt, planner, budget: MemoryBudget, threads: int, cores: _Cores, base: int,
                      pool) -> DatasetForecast:
    src_chunks = tuple(ds.chunks) if ds.chunks is not None else None
    if not tgt.changed:
        secs = tgt.stored_bytes / COPY_BYTES_PER_SECOND
        return DatasetForecast(tgt.path, src_chunks, src_chunks, "copy", "H5Ocopy (raw chunks, unchanged)", 0, 0, (),
                               0, 0, tgt.stored_bytes, tgt.stored_bytes, base, round(secs, 3), None, None, (), "")
    lay = tgt.new_layout
    dst_chunks = tuple(lay.chunks) if lay is not None and lay.kind == "chunked" else None
    if src_chunks is not None and ds.id.get_num_chunks() == 0:
        # never written (an extendible dataset of 2**40 rows may be): the copy creates it and moves nothing
        return DatasetForecast(tgt.path, src_chunks, dst_chunks, "create", "no chunk written: created with its new "
                               "layout and filters, nothing read or written", 0, 0, (), 0, 0, 0, 0, base, 0.0, None,
                               None, (), "")
    if library_planned(tgt, src_chunks, planner.buffer_bytes):
        from ccp.repack.library_run import forecast_library

        return DatasetForecast(**forecast_library(ds, tgt, planner, budget, threads, cores.spin()[1], base,
                                                  _SourceReader))
    reader = _SourceReader(ds, None, 0)
    try:
        encode = decode_out = None
        if tgt.method == "fast" and dst_chunks is not None:
            dcpl = planner.make_dcpl(ds, lay, None if tgt.keep_filters else tgt.new_pipeline)
            encode, _ = codecs.encoder(pipeline_from_dcpl(dcpl).steps, tgt.itemsize, tgt.deflate)
            decode_out, _ = codecs.decoder(pipeline_from_dcpl(dcpl).steps, tgt.itemsize,
                                           math.prod(dst_chunks) * tgt.itemsize)
        stored = len(reader.stored)
        stages_cpu = None
        early = None
        if (tgt.method == "fast" and dst_chunks is not None and src_chunks is not None and reader.python_decoded
                and len(src_chunks) == len(dst_chunks) and src_chunks != dst_chunks and reader.stored):
            early = plan_pass(tgt.shape, src_chunks, dst_chunks, tgt.itemsize,
                              pass_room(budget, dst_chunks, tgt.itemsize, threads, tgt.shape, src_chunks), threads,
                              budget.buffer_bytes,
                              bool(pipeline_from_dcpl(ds.id.get_create_plist()).steps))
            chunk_bytes = math.prod(dst_chunks) * tgt.itemsize
            if early.band:
                codec = GroupCodec(pipeline_from_dcpl(dcpl).steps, tgt.itemsize, chunk_bytes, tgt.deflate)
                stages_cpu = _band_rates(reader, codec, dst_chunks, early.block, pool)
            else:
                stages_cpu = _pipeline_rates(reader, encode, WrittenChunks(dcpl, tgt.itemsize, chunk_bytes),
                                             dst_chunks, tgt, pool)
        if stages_cpu is not None:
            # the sample's own rates (the source's decode per chunk read, the encode per byte; the output's
            # decode: the check's, or on the band path the source's per byte) and HDF5's read of a source
            # chunk for the read-back's sampled regions: no second sampling of the same codecs
            src_raw = math.prod(src_chunks or (1,)) * tgt.itemsize
            dec = stages_cpu["decode"] / max(1, src_raw)
            rates = _Rates(dec, stages_cpu["encode"], stages_cpu.get("check", dec), _hdf5_chunk_seconds(ds, reader), 1)
            if stages_cpu.get("whole", 1.0):
                written = _written_from_ratio(ds, tgt, dst_chunks, stages_cpu["ratio"])
            else:       # the band's sample repeated source chunks (over 1024 under it): its ratio is not the data's
                estimate = planner.estimate(ds, tgt)
                written = tgt.raw_bytes if estimate is None else estimate
        else:
            rates = _rates(ds, reader, encode, decode_out, dst_chunks)
            estimate = planner.estimate(ds, tgt)
            written = tgt.raw_bytes if estimate is None else estimate
        dec, enc = rates.decode, rates.encode
    finally:
        reader.close()
    eff, main_share = cores.sampled(stages_cpu["cores"]) if stages_cpu is not None else cores.spin()
    mb = lambda r: round(1e-6 / r, 1) if r else None  # noqa: E731 -- None: not measured (no Python codec)
    if tgt.method != "fast" or dst_chunks is None or src_chunks is None or len(src_chunks) != len(dst_chunks):
        # the library path: HDF5 reads and writes hyperslabs itself (one thread)
        # and its read-back decodes the input and the output again through HDF5
        secs = tgt.raw_bytes * (3 * dec + (enc or dec * 3)) / main_share
        return DatasetForecast(tgt.path, src_chunks, dst_chunks, "library", f"library: {tgt.reason or 'HDF5 reads the unchunked source in hyperslabs'}",
                               budget.buffer_bytes
                               or 32 * 1024 * 1024, 0, (), stored, stored, tgt.stored_bytes, written,
                               base + 2 * (budget.buffer_bytes or 32 * 1024 * 1024), round(secs, 3), mb(dec), mb(enc),
                               (), "the library path: a rough estimate")
    room = pass_room(budget, dst_chunks, tgt.itemsize, threads, tgt.shape, src_chunks)
    filtered = bool(pipeline_from_dcpl(ds.id.get_create_plist()).steps)
    # the pass the rates were sampled for (planning again after the sample, whose buffers raised the process's
    # memory, could pick the other path, whose rates were not sampled: breaker7 R5, KeyError 'check')
    pp = early if early is not None else plan_pass(tgt.shape, src_chunks, dst_chunks, tgt.itemsize, room, threads,
                                                   budget.buffer_bytes, filtered)
    count = pp.count
    if src_chunks == dst_chunks:   # same grid, new filters: each chunk decoded and re-encoded alone
        order = "each stored chunk in index order, re-encoded alone"
        reads, peak = stored, base + (2 * threads + 2) * 2 * math.prod(dst_chunks) * tgt.itemsize
        block: tuple[int, ...] = dst_chunks
    else:
        if pp.band:
            order = (f"bands of {'x'.join(map(str, pp.block))} elements, each decoded into one array (a source chunk "
                     f"once, kept for a later band while the cache has room), its target chunks cut out of it and "
                     f"encoded a group per task")
        else:
            order = (f"target chunks one task each, in C order within bands of {'x'.join(map(str, pp.block))} "
                     f"elements (no band held in memory); a source chunk is decoded once per band, kept for a later "
                     f"band while the cache has room, shared by the tasks that need it")
        reads = round(count.chunk_reads * stored / count.source_chunks) if count.source_chunks else 0
        block = pp.block
        peak = base + pp.memory_bytes + index_bytes(tgt.shape, src_chunks, dst_chunks)   # HDF5's growing indexes
    # the read-back runs after the copy, whose chunks are freed by then: the larger of the two, not their sum
    # (6458's job: 70 MiB planned as a sum against 59-61 MiB measured, load 7-10)
    peak = max(peak, base + readback_bytes(dst_chunks, tgt.itemsize, threads))
    src_chunk_raw = math.prod(src_chunks) * tgt.itemsize
    rb_serial, rb_parallel = _readback_cost(tgt, src_chunks, dst_chunks, count.target_chunks, rates, written)
    rb_serial += SECONDS_PER_RECHUNK
    if stages_cpu is not None and pp.band:
        # the band path (ccp.repack.band): the threads decode into the band, cut and encode its target chunks;
        # the main thread writes them
        # (each chunk's check, decoding it again, is timed within "encode": no read-back decode besides)
        worker = reads * stages_cpu["decode"] + tgt.raw_bytes * (stages_cpu["place"] + stages_cpu["encode"])
        main_cpu = count.target_chunks * SECONDS_PER_BAND_TARGET
        secs = max(main_cpu / main_share, (worker + main_cpu) / eff) + rb_serial / main_share
    elif stages_cpu is not None:
        # the pipeline (ccp.repack.pipeline): the threads run every task's stages, the main thread lists
        # pieces and writes; both share the cores the threads get
        # (each chunk's check, decoding it again in its task, is the "check" stage: no read-back decode besides)
        worker = (reads * stages_cpu["decode"]
                  + tgt.raw_bytes * (stages_cpu["place"] + stages_cpu["encode"] + stages_cpu["check"]))
        pieces = io_ops(tgt.shape, src_chunks, dst_chunks)
        main_cpu = pieces * stages_cpu["list"] + count.target_chunks * SECONDS_PER_PIPELINE_TARGET
        # a source chunk several target chunks share is decoded by the first task to reach it while the others
        # that need it wait: neighbouring tasks need the same ones (the transpose job: each source chunk in 4
        # consecutive target chunks), so about its decode is lost on each of the other threads
        shared = min(reads, max(0, pieces - reads)) if _neighbours_share(tgt.shape, src_chunks, dst_chunks, pp.block,
                                                                          threads) else 0
        waiting = shared * stages_cpu["decode"] * (threads - 1)
        tail = worker / max(1, count.target_chunks) * (threads - 1) / max(eff, 1e-3)   # the last tasks, unevenly shared
        secs = max(main_cpu / main_share, (worker + waiting + main_cpu) / eff) + tail + rb_serial / main_share
    else:
        codec = reads * src_chunk_raw * dec + tgt.raw_bytes * enc
        main = (reads * SECONDS_PER_SOURCE_READ + count.target_chunks * SECONDS_PER_TARGET_CHUNK) / main_share
        secs = main + rb_serial / main_share + (codec + rb_parallel) / eff
    avg_stored = tgt.stored_bytes / stored if stored else 0
    stages: tuple = ()
    note = ""
    if src_chunks != dst_chunks:
        copy_plan = plan_copy(tgt.shape, src_chunks, dst_chunks, tgt.itemsize, room, threads, budget.buffer_bytes,
                              filtered)
        stages = copy_plan.stages
        if stages:
            # unfiltered stages: every pass's per-chunk and per-piece work (nominal), the raw bytes moved through
            # the page cache twice per stage; the source decoded once and the target encoded once (measured rates)
            chain = copy_plan.chain
            nominal = sum(pass_seconds(p, tgt.shape, a, b, tgt.itemsize, False)
                          for p, a, b in zip(copy_plan.passes, chain, chain[1:]))
            nominal += len(stages) * tgt.raw_bytes * (STAGE_SECONDS_PER_BYTE + RAW_SECONDS_PER_BYTE)
            reads = copy_plan.source_reads * stored // max(1, copy_plan.passes[0].count.source_chunks)
            secs = rb_serial / main_share + (nominal + reads * src_chunk_raw * dec + tgt.raw_bytes * enc
                                             + rb_parallel) / eff
            peak = max(peak, base + max(p.memory_bytes for p in copy_plan.passes)
                       + index_bytes(tgt.shape, src_chunks, dst_chunks))
            order = (f"{len(stages) + 1} passes through unfiltered temporary copies chunked "
                     f"{' -> '.join('x'.join(map(str, m)) for m in stages)} (beside OUT, removed after)")
            note = (f"stages predicted faster than one pass within --memory (which reads {pp.count.chunk_reads} source "
                    f"chunks for {pp.count.source_chunks}); the temporary copies need {tgt.raw_bytes} bytes of disk "
                    f"beside OUT")
        else:
            note = reread_note(copy_plan, tgt.shape, tgt.itemsize, threads, budget.memory_bytes - room)
        if not note and pp.rereads:
            note = (f"one pass reads {pp.rereads} source chunk(s) again: the cache ({pp.cache_bytes} bytes) cannot "
                    f"hold every chunk a later hyperslab needs; more --memory avoids it")
    # the cache the data needs (source chunks kept for a later band at once), not the room the budget leaves it
    cache = min(pp.cache_bytes, count.peak_cache_bytes)
    return DatasetForecast(tgt.path, src_chunks, dst_chunks, "fast", order, pp.buffer_bytes, cache, block,
                           reads, stored, round(reads * avg_stored), written, peak, round(secs, 3), mb(dec), mb(enc),
                           stages, note)
