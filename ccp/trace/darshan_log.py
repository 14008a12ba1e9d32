"""Reading a Darshan log's H5D records safely: in a child process, checked before and after.

libdarshan-util, which pydarshan wraps, trusts the log: a truncated or damaged one can make it
abort (SIGABRT in an assert), segfault, or stop early and return fewer records than the log holds,
which pydarshan cannot tell from the end of the records. So:

* before parsing, the log's header is read here (its region map, Darshan 3.x layout): a log whose
  regions run past the end of the file is truncated, whatever the library would make of it;
* the parse runs in a child process (``python -m ccp.trace.darshan_log LOG``) that calls the library
  record by record and tells a read error (``darshan_log_get_record`` < 0) from the end; the child's
  death by a signal, a timeout or an error becomes one line, and the parent never loads the library;
* record ids travel as JSON integers: Darshan's ids are unsigned 64-bit hashes, and half of them do
  not fit an int64 (pandas frames turn such a column into float64, and names into numbers).
"""

from __future__ import annotations

import bz2
import json
import os
import signal
import struct
import subprocess
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

from ccp.errors import CcpError

DARSHAN_MAGIC = 6567223          # DARSHAN_MAGIC_NR in darshan-log-format.h
MAX_MODS = 16                    # DARSHAN_MAX_MODS of log format 3.x: the header's region map has 16 slots
HEADER = struct.Struct("8sqB3xI")   # version string, magic, compression type, partial flag
CHECKED_REGION_BYTES = 256 * 2**20   # regions up to this size are read whole and checksummed here
ZLIB, BZIP2 = 0, 1                # enum darshan_comp_type: zlib, bzip2, none
PARSE_TIMEOUT_S = 120.0          # a log of a big job parses in seconds; CCP_DARSHAN_TIMEOUT overrides (tests)


@dataclass(frozen=True)
class H5DRecord:
    """One H5D record: a dataset as one rank (or all ranks, rank -1) saw it."""

    rec_id: int                  # Darshan's 64-bit hash of the name, exact
    rank: int
    counters: dict[str, int]


@dataclass(frozen=True)
class DarshanLog:
    """What ccp needs from a log: H5D records (None: no H5D module), names, the partial flags."""

    h5d: tuple[H5DRecord, ...] | None
    names: dict[int, str]
    partial: bool                # Darshan ran out of room for records: some were not kept
    damaged: tuple[str, ...] = ()   # modules ccp does not read whose regions fail their checksum


def _regions(log: Path, data: bytes, size: int) -> tuple[int, list[tuple[str | int, int, int]]]:
    """(compression type, [(region, offset, length)]) from a 3.x header; region "job", "names" or a module slot."""
    if size < HEADER.size:
        raise CcpError(f"{log}: not a Darshan log ({size} bytes, shorter than a Darshan header)")
    for order in "<>":                    # Darshan writes in the machine's byte order and swaps when reading
        version, magic, comp, _ = struct.unpack_from(order + HEADER.format, data)
        if magic == DARSHAN_MAGIC:
            break
    else:
        raise CcpError(f"{log}: not a Darshan log (no Darshan magic number in its header)")
    if not version.rstrip(b"\0").decode("ascii", "replace").startswith("3."):
        return comp, []                   # format 2 and older have another header; the library judges them
    maps_at = HEADER.size                 # name map, then one (offset, length) per module, then the versions
    header_end = maps_at + 16 * (MAX_MODS + 1) + 4 * MAX_MODS
    if size < header_end:
        raise CcpError(f"{log}: truncated Darshan log ({size} bytes, its header alone is {header_end})")
    regions: list[tuple[str | int, int, int]] = []
    for slot in range(MAX_MODS + 1):
        off, length = struct.unpack_from(order + "QQ", data, maps_at + 16 * slot)
        if length:
            regions.append(("names" if slot == 0 else slot - 1, off, length))
    if regions and max(o + n for _, o, n in regions) > size:
        raise CcpError(f"{log}: truncated Darshan log: its header places data up to byte "
                       f"{max(o + n for _, o, n in regions)}, the file has {size} bytes")
    names_at = next((o for r, o, _ in regions if r == "names"), None)
    if names_at is not None and names_at > header_end:
        regions.insert(0, ("job", header_end, names_at - header_end))
    return comp, regions


def _intact(blob: bytes, comp: int) -> bool:
    """Whether a region decompresses whole: zlib's and bzip2's checksums catch flipped bytes.

    Decompressed in 1 MiB pieces that are thrown away, so a crafted region cannot fill memory;
    a region may hold several streams back to back.
    """
    try:
        while blob:
            d = zlib.decompressobj() if comp == ZLIB else bz2.BZ2Decompressor()
            data = blob
            while not d.eof:
                out = d.decompress(data, 1 << 20)
                if isinstance(d, bz2.BZ2Decompressor):     # bzip2 keeps what it has not consumed itself
                    data = b""
                    starved = not out and d.needs_input
                else:
                    data = d.unconsumed_tail
                    starved = not data and not out
                if starved:
                    break
            if not d.eof:
                return False
            blob = d.unused_data
        return True
    except (zlib.error, OSError, EOFError, ValueError):
        return False


def damaged_regions(log: Path, fh, size: int) -> tuple[int, list[str | int]]:
    """(the log's compression type, the regions of a 3.x log that are cut short or fail their checksum: empty if
    all are intact)."""
    head = fh.read(HEADER.size + 20 * MAX_MODS + 16)
    comp, regions = _regions(log, head, size)
    if comp not in (ZLIB, BZIP2):
        return comp, []                   # uncompressed logs carry no checksum
    bad: list[str | int] = []
    for region, off, length in regions:
        if length > CHECKED_REGION_BYTES:
            continue                      # a big DXT trace region: the library's own checks must do
        fh.seek(off)
        if not _intact(fh.read(length), comp):
            bad.append(region)
    return comp, bad


def read_log(log: Path) -> DarshanLog:
    """The log's H5D records and names, parsed in a child process; one line for any failure."""
    import importlib.util

    if importlib.util.find_spec("darshan") is None:     # the parent never loads the library itself
        raise CcpError("from-darshan needs pydarshan: pip install darshan") from None
    if not log.is_file():
        raise CcpError(f"{log}: no such file" if not log.exists() else f"{log}: not a regular file")
    try:
        with open(log, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            comp, bad = damaged_regions(log, fh, size)
    except OSError as exc:
        raise CcpError(f"{log}: cannot read it ({exc.strerror})") from None
    for region in ("job", "names"):
        if region in bad:
            raise CcpError(f"{log}: damaged Darshan log: its {region} region fails its checksum")
    try:
        modules, raw = _parse_in_child(log, bad)
    except CcpError as exc:
        if comp == BZIP2 and not bad and "library can open" in str(exc):   # intact by its own checksums
            raise CcpError(f"{log}: a bzip2-compressed Darshan log, which the Darshan library here cannot read (built "
                           "without bzip2): convert it to zlib with darshan-convert and try again") from None
        raise
    slots = {idx: name for name, idx in modules.items()}
    damaged = tuple(slots.get(r, f"module slot {r}") for r in bad if isinstance(r, int))
    if "H5D" in damaged:
        raise CcpError(f"{log}: damaged Darshan log: its H5D region fails its checksum")
    try:
        return DarshanLog(
            h5d=None if raw["h5d"] is None else tuple(H5DRecord(int(r["id"]), int(r["rank"]),
                                                                {str(k): int(v) for k, v in r["counters"].items()})
                                                      for r in raw["h5d"]),
            names={int(k): str(v) for k, v in raw["names"]},
            partial=bool(raw["partial"]), damaged=damaged)
    except (ValueError, KeyError, TypeError, AttributeError):
        raise CcpError(f"{log}: the Darshan reader's answer was cut short or garbled") from None


def _timeout() -> float:
    try:
        value = float(os.environ.get("CCP_DARSHAN_TIMEOUT", PARSE_TIMEOUT_S))
    except ValueError:
        return PARSE_TIMEOUT_S
    return value if 0 < value < 86400 else PARSE_TIMEOUT_S


def _parse_in_child(log: Path, bad: list) -> tuple[dict[str, int], dict]:
    """Run the child parser; ({module: slot}, its JSON answer), or one line for its death."""
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    timeout = _timeout()
    try:
        child = subprocess.run([sys.executable, "-m", "ccp.trace.darshan_log", str(log)], capture_output=True,
                               env=env, timeout=timeout, stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        raise CcpError(f"{log}: the Darshan library did not finish reading it in {timeout:g} s "
                       "(a damaged log?); stopped") from None
    why = f" (checksum fails in region(s) {', '.join(map(str, bad))})" if bad else ""
    if child.returncode < 0:
        sig = -child.returncode
        name = signal.Signals(sig).name if sig in signal.valid_signals() else f"signal {sig}"
        raise CcpError(f"{log}: the Darshan library crashed reading it ({name}): a damaged or truncated log{why}")
    said = [ln.strip() for ln in child.stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    if child.returncode != 0:
        ours = [ln.removeprefix("ccp-darshan: ") for ln in said if ln.startswith("ccp-darshan: ")]
        text = ours[-1] if ours else (said[-1][:200] if said else f"exit status {child.returncode}")
        raise CcpError(f"{log}: {text}{why}")
    try:
        raw = json.loads(child.stdout)
        return {str(k): int(v) for k, v in raw["modules"].items()}, raw
    except (ValueError, KeyError, TypeError, AttributeError):
        raise CcpError(f"{log}: the Darshan reader's answer was cut short or garbled") from None


def _child(path: str) -> int:
    """Runs in the child: parse the log with libdarshan-util record by record, print JSON on stdout."""
    from darshan.backend import cffi_backend as cb

    def fail(message: str) -> int:
        print(f"ccp-darshan: {message}", file=sys.stderr)
        return 3

    handle = cb.libdutil.darshan_log_open(path.encode())
    if handle == cb.ffi.NULL:
        return fail("not a Darshan log the Darshan library can open (damaged, or from another Darshan version)")
    try:
        log = {"handle": handle, "modules": None, "name_records": None}
        modules = cb.log_get_modules(log)
        names = cb.log_get_name_records(log)
        out: dict[str, object] = {"names": [[k, v] for k, v in names.items()], "h5d": None,
               "modules": {name: m["idx"] for name, m in modules.items()},
               "partial": any(m.get("partial_flag") for m in modules.values())}
        if "H5D" in modules:
            columns = cb.counter_names("H5D")
            records: list[dict[str, object]] = []
            while True:
                buf = cb.ffi.new("void **")
                got = cb.libdutil.darshan_log_get_record(handle, modules["H5D"]["idx"], buf)
                if got < 0:
                    return fail(f"damaged Darshan log: H5D record {len(records) + 1} cannot be read")
                if got == 0:
                    break
                rec = cb._make_generic_record(cb.ffi.cast(cb._structdefs["H5D"], buf), "H5D")
                cb.libdutil.darshan_free(buf[0])
                records.append({"id": int(rec["id"]), "rank": int(rec["rank"]),
                                "counters": dict(zip(columns, (int(v) for v in rec["counters"])))})
            out["h5d"] = records
        json.dump(out, sys.stdout)
        return 0
    finally:
        cb.libdutil.darshan_log_close(handle)


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1]))
