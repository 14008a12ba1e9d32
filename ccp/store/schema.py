"""Column names of the results files. Bump SCHEMA_VERSION when a column changes meaning.

Run folder (``results/<name>/<run-id>/``):
- ``sweep.yaml``      the sweep as run (normalised, every default spelled out)
- ``env.json``        machine, versions, git commit, time
- ``cells.csv`` / ``cells.parquet``   one row per cell (CELL_COLUMNS)
- ``requests.parquet``  one row per request per pass, timed and counted (REQUEST_COLUMNS)
- ``io.parquet``      every file-level operation of each cell's counted pass (IO_COLUMNS)
- ``report.html`` + ``*.png``
"""

#: The results schema's one history: what each version changed (bump SCHEMA_VERSION and add a line when a column
#: is added, removed or renamed, or changes meaning or unit; CONTRIBUTING.md says when). ADDED_IN lists the
#: cells.csv columns each added and READ_BACK what they read as in an older run; the committed run folders under
#: tests/store/fixtures (one per readable version) are read back by tests/store/test_reader.py.
SCHEMA_HISTORY = {
    1: "the first",
    2: "adds client (how requests reach HDF5: native | h5py-lowlevel | h5py), after random",
    3: "adds the storage axes (storage, fsspec, latency, bandwidth, file_space, page_buffer) after client, and the HTTP "
       "counts of cells read over S3 (http_*, predicted_http_*, network, page_buffer_effective) to cells, http_* to "
       "requests; older runs read as local/default/none with the S3 columns empty",
    4: "adds the machine's state while each pass ran: cpus, load_max, cpu_ratio to cells (after elapsed_s), pass_wall_s, "
       "pass_cpu_s, pass_load to requests (on each timed pass's open row; empty in older runs: never flagged contended); "
       "an S3 cell's time_s and open_s include the file open (fsspec, superblock), close_s the file's close; adds "
       "file_open_s and requests_s (S3 cells) at the end",
    5: "adds timed_cpu_s to requests (each timed pass's open row): the process CPU seconds of the pass's timed part "
       "alone, from just before its open to just after its close (pass_cpu_s also holds the loop's setup: breaker9 "
       "G8); absent in older runs, whose verdicts fall back to pass_cpu_s; cells.csv unchanged",
    6: "a warm local cell of a full run makes one warm-up pass before its timed passes (breaker10 B11: the first warm "
       "pass was the slowest in 34 of 48 cells): its rows in requests (pass -2, its machine state on its open row) and "
       "warmup_s in cells (its time as time_s is a timed pass's; empty for cold, S3 and --quick cells and in older "
       "runs); time_s and its spread never include it",
    7: "adds timed_run_delay_s and timed_wall_s to requests (each timed pass's open row): how long the timed part's "
       "thread was runnable but not running (waiting for a CPU: /proc/thread-self/schedstat), and its wall time, over "
       "timed_cpu_s's span; wall less CPU less the delay is what a pass waited for besides a CPU (breaker13 E1: a sleep and competitors cut the share of a CPU "
       "alike); empty in older runs and where the kernel does not say; cells.csv unchanged",
    8: "adds pass_pace_s to requests (each timed pass's open row): the machine's pace for memory-bound work just after "
       "the pass, the thread CPU seconds of one 4 MiB copy, recorded for study (the verdict rule does not read it: "
       "breaker14 E4); empty in older runs; cells.csv unchanged",
}
SCHEMA_VERSION = 8
READABLE_SCHEMA_VERSIONS = (1, 2, 3, 4, 5, 6, 7, 8)   # what the report and `ccp compare` read (older columns filled with defaults)
FINISHED = ("ok", "extrapolated")   # statuses of a cell a rerun does not measure again
FAILED_PREFIX = "failed: "          # the status of a cell that was not measured: "failed: REASON"

# Stability thresholds: the one place they are defined. The runner flags a cell with them when it measures it
# (``flags``); the report reads the flags and names the thresholds, it does not apply them again.
UNSTABLE_SPREAD = 1.5     # slowest pass / fastest pass above this: "unstable"
SHORT_REQUEST_S = 2e-6    # median request below 2 us: "short". A perf_counter_ns read costs ~50 ns, and one
#                           request below 2 us is also where page faults and the CPU's clock changes (a few us)
#                           swamp it: pass totals stay exact, single request times do not.


# Contention: a pass ran on a busy machine when the 1-minute load average exceeded the CPUs ccp may use, or (a
# warm local pass, which has nothing to wait for but the CPU) when the process got under half the wall time on a CPU.
CONTENDED_LOAD = 1.0      # load / cpus above this
CONTENDED_CPU_RATIO = 0.5


def contended(load: float, cpus: int, cpu_ratio: float, waits_for_io: bool) -> bool:
    """Whether one pass was measured under contention (see CONTENDED_LOAD, CONTENDED_CPU_RATIO)."""
    if cpus > 0 and load / cpus > CONTENDED_LOAD:
        return True
    return not waits_for_io and cpu_ratio < CONTENDED_CPU_RATIO


def stability_flags(repeats: int, spread: float, request_s_median: float) -> list[str]:
    """``unstable`` (passes spread by more than UNSTABLE_SPREAD) and ``short`` (median request under SHORT_REQUEST_S)."""
    flags = []
    if repeats > 1 and spread > UNSTABLE_SPREAD:
        flags.append("unstable")
    if request_s_median < SHORT_REQUEST_S:
        flags.append("short")
    return flags

# One row per cell. Times in seconds; counts and bytes from the counted pass.
CELL_COLUMNS = [
    "schema_version",
    "cell_id",            # stable hash of the cell's parameters: resume key
    "chunks",             # "4x30x9x717" or "contiguous"
    "filters",            # canonical filter spec, "none" when unfiltered
    "cache_nbytes", "cache_nslots", "cache_w0",   # read back from the dataset access plist
    "op",                 # read | write
    "block",              # "1x1x1x717"
    "order",              # "0x1x2x3": dims slowest first
    "random",             # 0 = tiling; N = N random block-aligned requests
    "client",             # native | h5py-lowlevel | h5py: the loop that made the requests
    # the storage axes (ccp.config.storage), named as the axes; the S3-only ones empty on local cells
    "storage",            # local | s3
    "fsspec",             # fsspec cache type/block size: "readahead/5MiB" (s3 only)
    "latency",            # emulated latency per GET: "20ms" (s3 only)
    "bandwidth",          # emulated bandwidth per GET: "100MB/s" | "unlimited" (s3 only)
    "file_space",         # the read file's file-space strategy: "default" | "page/4MiB"
    "page_buffer",        # HDF5 page buffer on read: "none" | "16MiB"
    "requests",           # H5Dread/H5Dwrite calls per pass
    "repeats",            # timed passes
    "cold",               # page cache dropped before each pass
    "time_s", "time_s_min", "time_s_max",   # median/min/max over passes, dataset open to close (S3: file open to close)
    "first_request_s",    # median over passes of the first request's time
    "request_s_median",   # median request time (all passes)
    "open_s", "close_s",  # median dataset open / close (close = flush for writes)
    "raw_reads", "raw_read_bytes", "raw_writes", "raw_write_bytes",
    "meta_reads", "meta_read_bytes", "meta_writes", "meta_write_bytes",
    "chunk_bytes",        # uncompressed bytes of one full chunk (0 for contiguous)
    "nchunks",            # chunks in the grid (0 for contiguous)
    "file_bytes",         # size of the file the timed passes wrote or read
    "storage_bytes",      # H5Dget_storage_size
    "logical_bytes",      # shape x itemsize
    "compression_ratio",  # logical / storage
    "repack_s",           # time to lay the user's file out in this cell's layout (NaN if none)
    "spread",             # time_s_max / time_s_min
    "flags",              # "unstable", "short", ... joined by ","
    "traps",              # known ways this layout, cache and pattern are slow (ccp.predict.explain.traps), joined by " | "
    "status",             # "ok", "extrapolated" (time budget: a measured prefix) or "failed: reason"
    "fraction_measured",  # requests measured / requests (1 unless extrapolated)
    "dataset_file",       # the work file measured
    "host",
    "started_at",         # ISO time the cell started
    "elapsed_s",          # wall time the whole cell took, counted pass included
    # the machine while the timed passes ran (schema 4; empty in older runs): a pass measured under contention
    # is flagged "contended" (CONTENDED_LOAD, CONTENDED_CPU_RATIO)
    "cpus",               # CPUs this process could run on (os.sched_getaffinity)
    "load_max",           # the highest 1-minute load average seen at the end of a timed pass
    "cpu_ratio",          # median over timed passes of process CPU time / wall time (1: never waited)
    # the chunk-cache model's prediction for the whole cell (ccp.predict), beside the measured values
    "predicted_requests", "predicted_raw_reads", "predicted_raw_read_bytes", "predicted_raw_writes",
    "predicted_raw_write_bytes", "predicted_chunk_loads", "predicted_chunk_hits", "predicted_evictions",
    "predicted_time_s",
    # cells read over S3 (empty on local cells): the whole pass, file open included (schema 4: so is time_s,
    # open_s and close_s, the file's open and close), the first timed pass's counts (flag http-counts-vary)
    "http_gets",          # HTTP GETs
    "http_bytes",         # bytes fetched by those GETs
    "predicted_http_gets", "predicted_http_bytes",   # ccp.remote.predict: chunk index + fsspec's cache rules
    "network",            # "none" or "emulated: 20ms per GET, unlimited": the emulated network the GETs saw
    "http_open_gets",     # GETs of the file and dataset open (chunk index loaded)
    "predicted_http_open_gets",
    "http_bytes_used",    # bytes HDF5 asked for (fetched vs needed)
    "http_wait_s",        # median over passes: seconds waiting for GETs (loopback + emulated delay)
    "page_buffer_effective",   # the page buffer HDF5 reports after the open (bytes)
    "file_open_s",        # S3 (schema 4): median seconds of the file open (fsspec open, HDF5's superblock), inside open_s
    "requests_s",         # S3 (schema 4): median over passes of the requests' summed seconds (open_s + this + close_s: a pass)
    "warmup_s",           # schema 6: the warm-up pass's time, open to close, as time_s is a timed pass's (extrapolated
    #                       alike under a time budget); not in time_s. Empty: no warm-up (cold, S3, --quick)
]

COUNTED_PASS = -1   # the requests table's pass number of the counted pass (log driver)
WARMUP_PASS = -2    # and of the warm-up pass (schema 6): a warm cell's first pass, timed but not the cell's time

# One row per request per pass. pass >= 0: timed passes; pass == -1: the counted pass; pass == -2: the warm-up pass.
# phase: "open" (dataset open), "request", "close" (dataset close; the flush for writes).
REQUEST_COLUMNS = [
    "schema_version", "cell_id", "pass", "phase", "request", "start", "time_s",
    "raw_reads", "raw_read_bytes", "raw_writes", "raw_write_bytes",
    "meta_reads", "meta_read_bytes", "meta_writes", "meta_write_bytes",
    "http_gets", "http_bytes", "http_bytes_used", "http_wait_s",   # S3 cells' timed passes (empty otherwise)
    # schema 4, on each timed pass's "open" row only: the whole pass's wall and process CPU seconds (the loop's
    # setup and file open included) and the 1-minute load average when it ended
    "pass_wall_s", "pass_cpu_s", "pass_load",
    # schema 5, on the same row: the process CPU seconds of the timed part alone (from just before the timed open
    # to just after the timed close, the loop's work between requests included; not its setup): the verdict's
    # witness (ccp.report.run_samples)
    "timed_cpu_s",
    # schema 7, on the same row: the seconds the timed part's thread was runnable but not running (a CPU's wait), and
    # the timed part's wall seconds over the same span as timed_cpu_s (its requests' times leave out the loop between)
    "timed_run_delay_s", "timed_wall_s",
    # schema 8, on the same row: the machine's pace just after the pass (ccp.measurement.passes.pace_probe): a
    # reference copy's CPU seconds, recorded for study (no verdict reads it)
    "pass_pace_s",
]

# Every file-level operation of the counted pass, in order.
IO_COLUMNS = [
    "schema_version", "cell_id", "seq", "phase", "request", "kind", "mem_type", "offset", "size", "t_s",
]


# the cells.csv columns schema 6 added (the warm-up pass), 4 (the machine's state; S3 cells' open and requests), 3
# (the storage axes and the HTTP counts), and 2 (client)
ADDED_IN = {6: ("warmup_s",),
            4: ("cpus", "load_max", "cpu_ratio", "file_open_s", "requests_s"),
            3: ("storage", "fsspec", "latency", "bandwidth", "file_space", "page_buffer", "http_gets", "http_bytes",
                "predicted_http_gets", "predicted_http_bytes", "network", "http_open_gets", "predicted_http_open_gets",
                "http_bytes_used", "http_wait_s", "page_buffer_effective"),
            2: ("client",)}


#: What a column read back as in a run written before it existed: every cell then was measured with h5py's
#: low-level loop (schema 1) and read its file locally, as written, without a page buffer (schema < 3). A column
#: not listed reads as empty (unknown). The matrix's axes say the same of themselves (ccp.config.axes, ``before``);
#: tests/store/test_reader.py holds the two equal.
READ_BACK = {"client": "h5py-lowlevel", "storage": "local", "file_space": "default", "page_buffer": "none"}


def cell_columns_of(version: int) -> list[str]:
    """The cells.csv header an older schema version wrote (what a reader of old runs checks)."""
    gone = {c for v, cols in ADDED_IN.items() if v > version for c in cols}
    return [c for c in CELL_COLUMNS if c not in gone]
