"""ccp.units.format_seconds: the unit is chosen after rounding to what is printed (breaker8 F12: "1e+03 ms" on the
status line for a second, "60.0 min" for an hour)."""

from __future__ import annotations

import pytest

from ccp.units import format_seconds


@pytest.mark.parametrize("seconds, text", [
    (float("nan"), "-"), (0.0, "0 ns"), (2.5e-7, "250 ns"), (9.9996e-7, "1 us"), (0.00099949, "999 us"),
    (0.5, "500 ms"), (0.99951, "1 s"), (0.9994, "999 ms"), (123.456, "123 s"), (599.7, "10.0 min"),
    (3599.99, "1 h 0 min"), (4000.0, "1 h 7 min"),
], ids=["nan", "zero", "ns", "us-rounds-up", "us", "ms", "ms-rounds-up", "ms-below", "s", "min", "h-rounds-up", "h"])
def test_format_seconds_never_prints_a_thousand_of_a_unit(seconds, text):
    assert format_seconds(seconds) == text


@pytest.mark.parametrize("x, text", [(1 / 256, "0.391%"), (0.25, "25%"), (0.125, "12.5%"), (1.0, "100%")],
                         ids=["one-of-256", "quarter", "eighth", "all"])
def test_a_share_is_never_rounded_to_nothing(x, text):
    """breaker10: a budget that measured 1 request of 256 was 'extrapolated from 0% of the requests'."""
    from ccp.units import format_share

    assert format_share(x) == text
