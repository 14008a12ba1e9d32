"""Every `--help` example that names a sweep file is one `ccp check` accepts without a warning (issue 22: `ccp run
--help` suggested `--scale 0.25 --quick` on CrIS, which `ccp check` warns merges 10 cells into 2). The example's
--scale is checked as given; a sweep file that is not in the repository (the user's own) is skipped."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from ccp.cli import main
from tests.test_cli_help import LEAVES, examples, resolve

ROOT = Path(__file__).resolve().parents[1]


def _sweep_examples() -> list[tuple[str, list[str]]]:
    """(the example line, the `ccp check` arguments for it) for every example of a command taking a SWEEP."""
    out = []
    for path in LEAVES:
        cmd = resolve(path)
        names = [p.name for p in cmd.params if not p.name.startswith("_")]
        if "sweep" not in names:
            continue
        help_text = CliRunner().invoke(main, [*path, "--help"]).output
        for args in examples(help_text, path):
            ctx = cmd.make_context(" ".join(("ccp", *path)), list(args), resilient_parsing=True)
            sweep, scale = ctx.params.get("sweep"), ctx.params.get("scale")
            if sweep is None:
                continue
            check = [str(sweep)] + (["--scale", str(scale)] if scale is not None else [])
            out.append((f"ccp {' '.join(path)} {shlex.join(args)}", check))
    return out


EXAMPLES = _sweep_examples()


def test_the_run_and_check_examples_are_found():
    lines = [line for line, _ in EXAMPLES]
    assert any(line.startswith("ccp run ") and "--scale" in line for line in lines), lines
    assert any(line.startswith("ccp check ") for line in lines) and any(line.startswith("ccp plan ") for line in lines)


@pytest.mark.parametrize(("line", "check"), EXAMPLES, ids=[line for line, _ in EXAMPLES])
def test_every_help_example_passes_ccp_check_without_a_warning(line, check, monkeypatch, cli):
    monkeypatch.chdir(ROOT)              # the examples name the repository's configs/ relative to its root
    if not Path(check[0]).exists():
        pytest.skip(f"{check[0]}: the user's own sweep file")
    result = cli("check", *check)
    assert result.exit_code == 0, f"{line}: {result.output}"
    assert "warning" not in result.output, f"`{line}` (a --help example): ccp check {shlex.join(check)} says\n{result.output}"
