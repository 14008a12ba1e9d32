"""User-facing errors: one line, naming the key or value at fault."""

from __future__ import annotations

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
