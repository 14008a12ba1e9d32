"""Every command registered in ccp.cli, the lazily imported ones and every sub-command included, has --help with
an example, and each example line is a valid invocation of that very command (known options, the right
arguments), as sqlite-utils' CLI tests do.
"""

from __future__ import annotations

import shlex

import click
import pytest

from ccp.cli import LAZY_COMMANDS, main


def command_paths(group: click.Group = main, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    ctx = click.Context(group, info_name="ccp")
    out = []
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        assert cmd is not None, f"ccp {' '.join(prefix + (name,))} is listed but cannot be loaded"
        out.append(prefix + (name,))
        if isinstance(cmd, click.Group):
            out += command_paths(cmd, prefix + (name,))
    return out


PATHS = command_paths()


def resolve(path: tuple[str, ...]) -> click.Command:
    cmd: click.Command = main
    for name in path:
        assert isinstance(cmd, click.Group)
        found = cmd.get_command(click.Context(cmd), name)
        assert found is not None
        cmd = found
    return cmd


def examples(help_text: str, path: tuple[str, ...]) -> list[list[str]]:
    """The `ccp ...` lines of the help's Example section(s), as argument lists after the command's own name."""
    lines, inside = [], False
    for raw in help_text.splitlines():
        text = raw.strip()
        if text.startswith("Example"):
            inside = True
            continue
        if inside and text.startswith("ccp "):
            words = shlex.split(text.split(" | ")[0].split(" # ")[0])[1:]
            if tuple(words[:len(path)]) == path:
                lines.append(words[len(path):])
    return lines


def test_every_registered_command_is_listed():
    names = {p[0] for p in PATHS}
    assert set(LAZY_COMMANDS) <= names                      # lazy commands load and are listed
    assert {"run", "check", "report", "repack", "trace", "diagnose", "tune", "s3"} <= names


@pytest.mark.parametrize("path", PATHS, ids=[" ".join(p) for p in PATHS])
def test_help_shows_an_example_of_this_command(path, cli):
    result = cli(*path, "--help")
    assert result.exit_code == 0, result.output
    assert "Example" in result.output, f"`ccp {' '.join(path)} --help` shows no example"
    found = examples(result.output, path)
    assert found, f"`ccp {' '.join(path)} --help` has an Example section but no `ccp {' '.join(path)} ...` line in it"


LEAVES = [p for p in PATHS if not isinstance(resolve(p), click.Group)]   # a group's example runs one of these


@pytest.mark.parametrize("path", LEAVES, ids=[" ".join(p) for p in LEAVES])
def test_each_example_parses_as_an_invocation(path, cli):
    cmd = resolve(path)
    help_text = cli(*path, "--help").output
    for args in examples(help_text, path):
        try:
            cmd.make_context(" ".join(("ccp", *path)), list(args))
        except click.BadParameter as exc:
            if "does not exist" in exc.format_message():    # an example names the user's own file
                continue
            pytest.fail(f"`ccp {' '.join(path)} {shlex.join(args)}` (its help's example): {exc.format_message()}")
        except click.UsageError as exc:
            pytest.fail(f"`ccp {' '.join(path)} {shlex.join(args)}` (its help's example): {exc.format_message()}")
