"""User-facing errors: one line, naming the key or value at fault."""

from __future__ import annotations

import contextvars
import difflib


class CcpError(Exception):
    """An error the CLI prints as one line and exits with status 2."""

    exit_code = 2


class ConfigError(CcpError):
    """Bad sweep file: a key, a value or a combination that cannot run."""

    def __init__(self, where: str, message: str):
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)


def suggest(word: str, choices) -> str:
    """' (did you mean X?)' when a close match exists, else ''."""
    match = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


# ---- Ctrl-C: each command says what it kept (the CLI prints "ccp: interrupted; <kept>", exit 130) ----

_KEPT: contextvars.ContextVar[str | None] = contextvars.ContextVar("ccp_kept_on_interrupt", default=None)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C with what the command kept, known only when it stopped: ``raise Interrupted("...") from None``
    in a ``KeyboardInterrupt`` handler, after cleaning up."""

    def __init__(self, kept: str):
        self.kept = kept
        super().__init__(kept)


def say_on_interrupt(kept: str | None) -> None:
    """What Ctrl-C from now on will say this command kept (``"no sweep was written"``); None: nothing said."""
    _KEPT.set(kept)


def kept_on_interrupt(exc: BaseException | None = None) -> str | None:
    """The line the CLI adds after ``ccp: interrupted;``: the exception's own, else the last one set."""
    return exc.kept if isinstance(exc, Interrupted) else _KEPT.get()
