"""What `ccp run` is doing before a cell measures: reading the sweep, calibrating the model, pricing the cells,
making a work file. Audit22 A2: on a fresh work folder `ccp run configs/cris.yaml --scale 0.8` printed nothing for
8-30 s (imports, the model's calibration, two 17-18 MB work files generated) before its first status line.

On a terminal each phase is the status line until the next line replaces it; elsewhere (a log, a pipe) each phase
after the sweep is checked is one plain line, so that a bad sweep stays one line (exit 2) with nothing before it.
This module imports nothing heavy: the CLI draws the first phase before it loads the sweep engine.
"""

from __future__ import annotations

import shutil
from typing import TextIO

PREFIX = "ccp run: "


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

    def _width(self) -> int:
        return shutil.get_terminal_size((100, 20)).columns - 1

    def say(self, text: str, plain: bool = True) -> None:
        """Show ``text`` as what is being done now; on a non-terminal only if ``plain`` (one line each)."""
        if self.quiet:
            return
        try:
            if self.tty:
                self.stream.write("\r" + (PREFIX + text)[: self._width()].ljust(self._width()))
                self.shown = True
            elif plain:
                self.stream.write(PREFIX + text + "\n")
            self.stream.flush()
        except (OSError, ValueError):      # a closed or full stream: the phase line never stops a sweep
            pass

    def clear(self) -> None:
        """Erase the terminal's phase line (before a line of other output would be appended to it)."""
        if not (self.tty and self.shown):
            return
        self.shown = False
        try:
            self.stream.write("\r" + " " * self._width() + "\r")
            self.stream.flush()
        except (OSError, ValueError):
            pass
