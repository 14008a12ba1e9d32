"""Ctrl-C says what the command kept: only `ccp run` resumes; the others say what they wrote (issue 21)."""

from pathlib import Path

import pytest

from ccp.errors import Interrupted

SWEEP = """
name: t
dataset:
  generate: {shape: [8, 6], dtype: "<f4"}
matrix:
  chunks: [[4, 6]]
  cache: ["1MiB"]
  access: [{op: read, block: [1, 6]}]
repeats: 1
"""


def _interrupt(*args, **kwargs):
    raise KeyboardInterrupt


# (id, argv, the function Ctrl-C lands in, what the line says)
CASES = [
    ("run", ["run", "{sweep}", "--out", "{tmp}/out"], "ccp.run.run_sweep", "finished cells are saved: rerun with the same --out"),
    ("check", ["check", "{sweep}"], "ccp.run.prepare", "nothing was written (check only reads)"),
    ("plan", ["plan", "{sweep}", "--work", "{tmp}/w"], "ccp.run.prepare", "nothing was written but the work folder's"),
    ("from-darshan", ["from-darshan", "{tmp}/job.darshan", "-o", "{tmp}/s.yaml"], "ccp.trace.darshan.darshan_to_sweep",
     "the sweep file is written whole or not at all"),
    ("s3-cloud-copy", ["s3", "cloud-copy", "{sweep}", "{tmp}/o.h5"], "ccp.remote.layout.cloud_optimized_copy",
     "written whole or not at all"),
]


@pytest.mark.parametrize("argv,target,said", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_ctrl_c_says_what_the_command_kept(tmp_path, monkeypatch, argv, target, said, cli):
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(SWEEP)
    (tmp_path / "job.darshan").write_bytes(b"")
    module, name = target.rsplit(".", 1)
    monkeypatch.setattr(module + "." + name, _interrupt)
    result = cli(*[a.format(sweep=sweep, tmp=tmp_path) for a in argv])
    assert result.exit_code == 130, result.output
    line = result.output.strip().splitlines()[-1]
    assert line.startswith("ccp: interrupted; ") and said in line, line
    if argv[0] != "run":
        assert "rerun with the same --out" not in result.output


def test_a_command_can_say_what_it_kept_when_it_stops(tmp_path, monkeypatch, cli):
    """Interrupted("...") raised from a command's own KeyboardInterrupt handler is said as it is."""
    def stop(*args, **kwargs):
        raise Interrupted("3 of 7 trials are in results/tune/x/trials.csv")

    monkeypatch.setattr("ccp.trace.darshan.darshan_to_sweep", stop)
    result = cli("from-darshan", str(tmp_path / "j.darshan"), "-o", str(tmp_path / "s.yaml"))
    assert result.exit_code == 130
    assert result.output.strip().splitlines()[-1] == "ccp: interrupted; 3 of 7 trials are in results/tune/x/trials.csv"


def test_a_command_that_says_nothing_gets_no_sweep_message(monkeypatch, tmp_path, cli):
    """A command without its own line is not told to resume: plain 'ccp: interrupted'."""
    from ccp import cli as cli_module

    monkeypatch.delitem(cli_module.KEPT_ON_INTERRUPT, "check")
    monkeypatch.setattr("ccp.run.prepare", _interrupt)
    sweep = tmp_path / "s.yaml"
    sweep.write_text(SWEEP)
    result = cli("check", str(sweep))
    assert result.exit_code == 130
    assert result.output.strip().splitlines()[-1] == "ccp: interrupted"


def test_every_command_here_has_its_line():
    """Each command of cli.py itself says what it kept (the lazy ones say it in their own modules)."""
    from ccp import cli

    assert set(cli.main.commands) - {*cli.LAZY_COMMANDS} <= set(cli.KEPT_ON_INTERRUPT)
    assert Path(cli.__file__).read_text().count("finished cells are saved") == 1
