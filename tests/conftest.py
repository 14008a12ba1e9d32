import textwrap
from pathlib import Path

import pytest


@pytest.fixture
def write_sweep(tmp_path):
    """Write a sweep file from YAML text; returns its path."""

    def _write(text: str, name: str = "sweep.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return path

    return _write
