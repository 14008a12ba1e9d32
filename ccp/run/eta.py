"""The progress line of `ccp run`: a bar and an ETA from the model's prediction of each cell.

Averaging the cells already done misleads when one cell dominates; the compiled model predicts every
cell's cost before it starts, and the ratio of measured to predicted time so far corrects it.
"""

from __future__ import annotations

import time

from ccp.units import format_seconds


def progress_bar(fraction: float, width: int = 20) -> str:
    done = max(0, min(width, int(round(fraction * width))))
    return "[" + "#" * done + "." * (width - done) + "]"


def predicted_seconds(cells, source, calibration, passes: int) -> list:
    """Each cell's predicted measuring time (all its passes), from the model without its work file; None if unknown."""
    from ccp.predict import predict_cell

    out = []
    for cell in cells:
        try:
            t = predict_cell(cell, source, calibration)["predicted_time_s"] if calibration is not None else None
        except Exception:  # noqa: BLE001 -- an estimate for the progress line only
            t = None
        out.append(t * passes if t is not None and t == t else None)
    return out


class EtaClock:
    """The progress line's ETA: the model's predicted time of each cell, corrected by measured/predicted so far.

    Averaging the cells already done misleads when one cell dominates (a 13-minute cell after ten 0.3 s
    ones showed "ETA 3.72 s"); the model knows each cell's cost before it starts.
    """

    def __init__(self, predicted: list):
        self.predicted = predicted
        self.measured_s = 0.0
        self.predicted_s = 0.0
        self.started = time.perf_counter()
        self.cell_started = self.started
        self.done: set = set()
        self.current = None

    @property
    def ratio(self) -> float:
        return min(max(self.measured_s / self.predicted_s, 0.05), 20.0) if self.predicted_s > 0 else 1.0

    def start_cell(self, predicted_time_s, passes: int) -> None:
        """The running cell's own prediction (with its work file's chunk sizes) replaces the estimate."""
        self.cell_started = time.perf_counter()
        ok = predicted_time_s is not None and predicted_time_s == predicted_time_s
        self.current = predicted_time_s * passes if ok else None

    def cell_done(self, k: int, elapsed_s) -> None:
        self.done.add(k)
        p = self.predicted[k] if k < len(self.predicted) else None
        if p and elapsed_s is not None and elapsed_s == elapsed_s:
            self.measured_s += float(elapsed_s)
            self.predicted_s += p

    def describe(self, k: int) -> str:
        in_cell = time.perf_counter() - self.cell_started
        own = self.predicted[k] if k < len(self.predicted) else None
        own = self.current if self.current is not None else own
        if own is None:
            return ""
        cell_left = max(own * self.ratio - in_cell, 0.0)
        rest = [p for j, p in enumerate(self.predicted) if j > k]
        sweep_left = cell_left + sum(p for p in rest if p) * self.ratio
        unknown = sum(p is None for p in rest)
        more = f" + {unknown} cells unpredicted" if unknown else ""
        return f" | cell {format_seconds(cell_left)} left, sweep {format_seconds(sweep_left)}{more} (model ETA)"
