"""What a rendered table is: its cells (text, small lines under it, a CSS class) and the table around them.

Apart from ``tables.py`` (which builds them from a run's rows) so that every module that builds a table
(``tables``, ``s3``) imports these two types from below instead of from each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Cell:
    """One table cell: its text, optional small lines under it, and a CSS class (best, changed, missing)."""

    text: str
    sub: tuple[str, ...] = ()
    cls: str = ""

    def __str__(self) -> str:
        return self.text + "".join(f" ({s})" for s in self.sub)


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list]              # str or Cell; the first column labels the row
    note: str = ""                # one sentence: what to look at
    warnings: list[str] = field(default_factory=list)
    footnote: str = ""            # the sweep's own note
    label_columns: int = 1        # leading columns that label the row (left-aligned)
