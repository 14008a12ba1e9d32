"""What `ccp run` is doing before a cell measures: reading the sweep, calibrating the model, pricing the cells,
making a work file. Audit22 A2: on a fresh work folder `ccp run configs/cris.yaml --scale 0.8` printed nothing for
8-30 s (imports, the model's calibration, two 17-18 MB work files generated) before its first status line.

On a terminal each phase is the status line until the next line replaces it; elsewhere (a log, a pipe) each phase
after the sweep is checked is one plain line, so that a bad sweep stays one line (exit 2) with nothing before it.
This module imports nothing heavy: the CLI draws the first phase before it loads the sweep engine.

A phase said with ``tick=True`` is redrawn with its seconds so far every TICK_S until the next phase or ``clear``
(audit22 F4: at load 4-6 the line sat unchanged 6-12 s on "loading", 12 s on "checking the sweep" while a loopback
S3 server started, and 14-24 s on "writing the report", while issue 22 asks for an update every few seconds).
"""

from __future__ import annotations

import shutil
import threading
import time
from typing import TextIO

PREFIX = "ccp run: "
TICK_S = 2.0          # a ticking phase is redrawn this often (as the cells' status line is: ccp.run.eta.TICK_S)


class PhaseLine:
    """``say`` a phase: the status line on a terminal, a plain line elsewhere; ``clear`` before other output."""

    def __init__(self, stream: TextIO, tty: bool | None = None, quiet: bool = False):
        self.stream = stream
        # quiet: a caller of run_sweep other than `ccp run` (tune, a notebook) says its own phases, not "ccp run: ..."
        self.quiet = quiet
        try:
            self.tty = stream.isatty() if tty is None else tty
        except (AttributeError, ValueError):     # a closed or odd stream: plain lines
            self.tty = False
        self.shown = False
        self._lock = threading.Lock()
        self._ticking: threading.Event | None = None     # set to stop the running phase's ticker

    def _width(self) -> int:
        return shutil.get_terminal_size((100, 20)).columns - 1

    def say(self, text: str, plain: bool = True, tick: bool = False) -> None:
        """Show ``text`` as what is being done now; on a non-terminal only if ``plain`` (one line each). ``tick``: on
        a terminal, redraw it with its seconds so far every TICK_S until the next ``say`` or ``clear``."""
        if self.quiet:
            return
        self._stop_ticking()
        with self._lock:
            self._write(text, plain)
        if tick and self.tty:
            stop = self._ticking = threading.Event()
            threading.Thread(target=self._tick, args=(text, stop, time.monotonic()), name="ccp-phase",
                             daemon=True).start()

    def _write(self, text: str, plain: bool) -> None:
        try:
            if self.tty:
                self.stream.write("\r" + (PREFIX + text)[: self._width()].ljust(self._width()))
                self.shown = True
            elif plain:
                self.stream.write(PREFIX + text + "\n")
            self.stream.flush()
        except (OSError, ValueError):      # a closed or full stream: the phase line never stops a sweep
            pass

    def _tick(self, text: str, stop: threading.Event, started: float) -> None:
        while not stop.wait(TICK_S):
            with self._lock:
                if stop.is_set():          # stopped while waiting for the lock: the next line is someone else's
                    return
                self._write(f"{text} ({time.monotonic() - started:.0f} s)", True)

    def _stop_ticking(self) -> None:
        stop, self._ticking = self._ticking, None
        if stop is not None:
            with self._lock:
                stop.set()

    def clear(self) -> None:
        """Erase the terminal's phase line (before a line of other output would be appended to it)."""
        self._stop_ticking()
        if not (self.tty and self.shown):
            return
        self.shown = False
        with self._lock:
            try:
                self.stream.write("\r" + " " * self._width() + "\r")
                self.stream.flush()
            except (OSError, ValueError):
                pass
