"""Parse sizes and durations people write; format numbers people read."""

from __future__ import annotations

import math
import re

from ccp.errors import ConfigError

_SIZE_UNITS = {
    "": 1, "b": 1,
    "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4,
    "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4,
    "k": 1024, "m": 1024**2, "g": 1024**3,
}
_SIZE_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(value, where: str = "size") -> int:
    """'3MiB' -> 3145728; 1048576 -> 1048576. KiB/MiB/GiB are binary, KB/MB/GB decimal."""
    if isinstance(value, bool):
        raise ConfigError(where, f"expected a size like 1MiB, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ConfigError(where, f"size must be >= 0, got {value}")
        return value
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    m = _SIZE_RE.match(str(value))
    if not m or m.group(2).lower() not in _SIZE_UNITS:
        raise ConfigError(where, f"expected a size like 1MiB, 512KiB, 16MB or 1048576, got {value!r}")
    n = float(m.group(1)) * _SIZE_UNITS[m.group(2).lower()]
    if not n.is_integer():
        raise ConfigError(where, f"size {value!r} is not a whole number of bytes")
    return int(n)


_DURATION_UNITS = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "m": 60.0, "min": 60.0, "h": 3600.0}


def parse_duration(value, where: str = "duration") -> float:
    """'60s' -> 60.0, '5min' -> 300.0, 2.5 -> 2.5."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 and math.isfinite(value):
        return float(value)
    m = _SIZE_RE.match(str(value))
    if not m or m.group(2).lower() not in _DURATION_UNITS or not 0 < float(m.group(1)) < math.inf:
        raise ConfigError(where, f"expected a duration like 60s, 5min or 1h, got {value!r}")
    seconds = float(m.group(1)) * _DURATION_UNITS[m.group(2).lower()]
    if not math.isfinite(seconds):
        raise ConfigError(where, f"expected a duration like 60s, 5min or 1h, got {value!r}")
    return seconds


def format_bytes(n) -> str:
    """1536 -> '1.5 KiB'."""
    if n is None or (isinstance(n, float) and math.isnan(n)):
        return "-"
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{int(n)} B" if unit == "B" else f"{n:.3g} {unit}" if abs(n) < 100 else f"{n:.0f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover


def format_seconds(s) -> str:
    """0.000123 -> '123 us'; 345.2 -> '345 s'; 4000 -> '1 h 7 min'; 0.9996 -> '1 s'."""
    if s is None or (isinstance(s, float) and math.isnan(s)):
        return "-"
    s = float(s)
    if math.isinf(s) or s < 0:      # a damaged run's time: said as it is, never "-1e+09 ns" (breaker9 G19)
        return ("-" if s < 0 else "") + (format_seconds(-s) if s > -math.inf and s < 0 else "infinite")
    # the unit is chosen after rounding to what is printed: 0.9996 s is "1 s", never "1e+03 ms" (breaker8 F12)
    for scale, unit in ((1e9, "ns"), (1e6, "us"), (1e3, "ms")):
        if float(f"{s * scale:.3g}") < 1000:
            return f"{s * scale:.3g} {unit}"
    if float(f"{s:.3g}") < 600:
        return f"{s:.3g} s"
    if round(s / 60, 1) < 60:
        return f"{s / 60:.1f} min"
    m = int(round(s / 60))
    return f"{m // 60} h {m % 60} min"


def format_count(n) -> str:
    """16200 -> '16,200'."""
    if n is None or (isinstance(n, float) and math.isnan(n)):
        return "-"
    return f"{int(n):,}"


def shape_str(shape) -> str:
    """(4, 30, 9, 717) -> '4x30x9x717'; None -> 'contiguous'."""
    return "contiguous" if shape is None else "x".join(str(int(d)) for d in shape)


def parse_shape_str(text: str, where: str = "shape") -> tuple[int, ...]:
    """'1x30x9x717' -> (1, 30, 9, 717)."""
    try:
        dims = tuple(int(p) for p in str(text).lower().split("x"))
        if len(dims) > 32:
            raise ConfigError(where, f"has rank {len(dims)}; HDF5 datasets have at most 32 dimensions")
    except ValueError:
        raise ConfigError(where, f"expected dimensions like 1x30x9x717, got {text!r}") from None
    if not dims or any(d <= 0 for d in dims):
        raise ConfigError(where, f"dimensions must be positive, got {text!r}")
    return dims


def format_share(x: float) -> str:
    """A share as a percentage with three significant digits: 1 request of 256 is "0.391%", never "0%"."""
    return f"{100 * x:.3g}%"


def format_ratio(r, digits: int = 3, unit: str = "x") -> str:
    """A ratio people read: 2.81x, 0.643x, 539x, 1,080x; never in scientific notation ("1e+03x", "1.08e+03": audit22
    F9), and a factor that rounds to one is "1.0x", never "1x" beside "slower". ``digits`` significant digits below
    the thousands, where every digit before the point is shown; "-" for no ratio (NaN, infinite, below 0)."""
    try:
        r = float(r)
    except (TypeError, ValueError):
        return "-"
    if not math.isfinite(r) or r < 0:
        return "-"
    if r == 0:
        return "0" + unit
    text = f"{r:.{digits}g}"
    if "e" in text:
        # beyond the digits: every digit before the point (1,080), or below 1e-4 as many decimals as the digits need
        text = f"{r:,.0f}" if r >= 1 else f"{r:.{digits - 1 - math.floor(math.log10(r))}f}"
    elif float(text) >= 1000:
        text = f"{r:,.0f}"
    if text == "1" and unit:        # a factor: "1.0x" (a count per request, unit "", stays "1")
        text = "1.0"
    return text + unit
