"""The ``ccp tune`` click command: a thin layer over :func:`ccp.tune.tune.tune`."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command(name="tune")
@click.argument("workload", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON (keys recommended, candidates, front, verified).")
@click.option("--budget", default="1min", show_default=True,
              help="Time for measuring the shortlisted layouts, the current one and the heuristics (a third of it for "
                   "re-measuring the close ones in interleaved rounds); long cells are extrapolated.")
@click.option("--within", default="2min", show_default=True,
              help="The wall time to answer in: every measuring phase is planned against it (the first round's cells "
                   "capped and its last layouts left out when short of time, the refit's layouts and the cache and slot "
                   "checks run only when their estimate fits, the runoff's rounds fewer); what was cut is said. "
                   "'none': no deadline.")
@click.option("--out", type=str,
              help="Folder for tune.json, tune.html and the measured runs (default results/<name>/tune-<time>/).")
@click.option("--work", "work_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("results/work"),
              show_default=True, help="Folder for generated and repacked work files (reused).")
@click.option("--top", type=click.IntRange(min=1), default=3, show_default=True, help="Model-ranked candidates to measure.")
@click.option("--repeats", type=click.IntRange(min=1), default=3, show_default=True, help="Timed passes per measured cell.")
@click.option("--no-measure", is_flag=True, help="Search with the model only; measure nothing.")
def tune_command(workload, as_json, budget, within, out, work_dir, top, repeats, no_measure):
    """Find the chunk shape, filter and chunk cache for a workload: searched with the model, proved by measurement.

    The workload file has a sweep file's name and dataset, a `workload:` list of
    {access: ..., weight: W} and optional `constraints:` (filters, max_chunk_bytes,
    cache_nbytes or max_cache_bytes, max_storage_overhead, current_cache).

    \b
    Example:
      ccp tune configs/tune-series-maps.yaml --budget 2min
      ccp tune configs/tune-series-maps.yaml --json | jq .recommended

    \b
    A workload file:
      name: series-maps
      dataset: {generate: {shape: [256, 64, 64], dtype: "<f4"}}
      workload:
        - {access: {op: read, block: [256, 1, 1]}, weight: 1}   # time series
        - {access: {op: read, block: [1, 64, 64]}, weight: 1}   # maps
      constraints: {cache_nbytes: 64KiB, max_chunk_bytes: 64KiB}
    """
    from ccp.errors import ConfigError
    from ccp.tune.answer import console_table, summary_lines
    from ccp.tune.tune import check_out, tune
    from ccp.units import parse_duration

    out_dir = None
    if out is not None:
        if not out.strip():     # Path("") is ".": the current folder would receive tune.html
            raise ConfigError("--out", f"is empty ({out!r}): give a new folder for tune's results")
        out_dir = Path(out)
        check_out(out_dir)
    echo = (lambda *_: None) if as_json else click.echo
    try:
        deadline = None if within.strip().lower() == "none" else parse_duration(within, "--within")
        result = tune(workload, budget=parse_duration(budget, "--budget"), out=out_dir, work_dir=work_dir, top=top,
                      measure=not no_measure, repeats=repeats, echo=echo, within=deadline)
    except KeyboardInterrupt:
        # not a sweep: nothing resumes. Say what is left (the measured runs, each a ccp run folder)
        where = f" in {out_dir}" if out_dir is not None else " under results/"
        click.echo(f"\nccp: interrupted; no recommendation was made (tune.json not written); the layouts measured so far "
                   f"are run folders{where}/runs (open them with ccp report)", err=True)
        raise SystemExit(130) from None
    if as_json:
        click.echo(json.dumps(result, indent=2, default=str))
        return
    for line in console_table(result):
        click.echo(line)
    for line in summary_lines(result):
        click.echo(line)
    click.echo(f"page: {result['page']}")
