"""The verdict rule on runs a busy machine recorded: every ordered pair of identical runs, and named pairs (planted
regressions), judged as ``ccp compare A B --fail-above RATIO`` judges them, from what each cell's passes recorded.

    .venv/bin/python benchmarks/judge_recorded.py [FIXTURE] [--identical A,A2,...] [--pairs Ab1/Bq1,...] [--drop pace]
    .venv/bin/python benchmarks/judge_recorded.py --extract FIXTURE RUN_DIR [RUN_DIR ...]

FIXTURE (default tests/report/data/breaker12_passes.json) holds each run's cells as the rule reads them
(``ccp.report.sample.Sample.to_record``); ``--extract`` writes one from run folders (named by their folder's name).
For the identical runs it prints how many of the ordered pairs exit 0, 1 and 3 and which exit 1 (a false regression);
for each named pair its exit code and the cells that decided it. Deterministic: no measurement, the rule alone, so an
earlier ccp's figures come from the same command in its checkout. tests/report/test_verdict_recorded_runs.py keeps
the figures this commit's README states.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import math
import re
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ccp.report.compare import crowded_baseline, gate_outcome, join  # noqa: E402
from ccp.report.sample import Sample  # noqa: E402
from ccp.report.stats import judge  # noqa: E402
from ccp.report.stats import samples as load_samples  # noqa: E402

FIXTURE = ROOT / "tests" / "report" / "data" / "breaker12_passes.json"
IDENTICAL = "A,A2,F1,F2,Q1,Q2,Q3,Q4,Q5,Q6"
PLANTED = "Ab1/Bq1,Ab2/Bq2,Ab3/Bq3,Ac4/Bc4,Ac5/Bc5,Ac6/Bc6,Ac7/Bc7,Ac8/Bc8,Ac9/Bc9,R1/S1,R2/S2"


def extract(out: Path, run_dirs: list[Path]) -> None:
    runs = {}
    for run in run_dirs:
        cells, _, j = join(run, run)
        labels = dict(zip(j["cell_id_a"].astype(str), j["label"]))
        runs[run.name] = {labels[cid]: s.to_record() for cid, s in load_samples(run, cells).items() if cid in labels}
    out.write_text(json.dumps(runs, separators=(",", ":")))
    print(f"{out}: {len(runs)} runs, {sum(len(r) for r in runs.values())} cells, {out.stat().st_size:,} bytes")


def verdicts(runs: dict, a: str, b: str, fail_above: float):
    """(label, verdict, gate outcome) of every cell the two runs share, as ``ccp compare`` judges it."""
    for label in sorted(runs[a].keys() & runs[b].keys()):
        # each run's cells as that run measured them: two runs, two origins (as ccp compare reads two run folders)
        sa, sb = (replace(Sample.from_record(runs[k][label]), origin=k) for k in (a, b))
        v = judge(sa, sb, fail_above)
        v = crowded_baseline(sa, sb, v) or v
        yield label, v, gate_outcome(v, fail_above)


def gate(runs: dict, a: str, b: str, fail_above: float) -> tuple[int, list[str]]:
    """(exit code, the cells that decided it) of ``ccp compare a b --fail-above fail_above`` on recorded cells."""
    outcomes = {label: o for label, _, o in verdicts(runs, a, b, fail_above)}
    for code, word in ((1, "regression"), (3, "undecided")):
        hit = [label for label, o in outcomes.items() if o == word]
        if hit:
            return code, hit
    return 0, []


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("fixture", nargs="?", type=Path, default=FIXTURE)
    ap.add_argument("--identical", default=IDENTICAL, help="runs of identical work: every ordered pair is judged")
    ap.add_argument("--pairs", default=PLANTED, help="A/B pairs judged one by one (default: planted regressions)")
    ap.add_argument("--fail-above", type=float, default=1.5)
    ap.add_argument("--reasons", action="store_true",
                    help="also tally why the identical pairs' undecided cells are undecided (numbers blanked)")
    ap.add_argument("--drop", default="", metavar="FIELD,...",
                    help="judge the cells as a run that did not record these Sample fields (e.g. pace: before "
                         "schema 8)")
    ap.add_argument("--extract", nargs="+", type=Path, metavar=("FIXTURE", "RUN_DIR"),
                    help="write FIXTURE from run folders instead")
    args = ap.parse_args(argv)
    if args.extract:
        if len(args.extract) < 2:
            ap.error("--extract needs FIXTURE and at least one RUN_DIR")
        missing = [str(d) for d in args.extract[1:] if not d.is_dir()]
        if missing:
            ap.error(f"--extract: not a run folder: {', '.join(missing)}")
        extract(args.extract[0], args.extract[1:])
        return 0
    if not (math.isfinite(args.fail_above) and args.fail_above > 1):
        ap.error(f"--fail-above: {args.fail_above:g} is not a ratio above 1 (as ccp compare refuses it)")
    try:
        runs = json.loads(args.fixture.read_text())
    except (OSError, ValueError) as exc:
        ap.error(f"{args.fixture}: not a fixture of recorded runs ({exc})")
    dropped = [f for f in args.drop.split(",") if f]
    # what every Sample needs (time_s, passes) cannot be left out
    optional = [f for f in Sample.RECORD_FIELDS if f not in ("time_s", "passes")]
    unknown = sorted(set(dropped) - set(optional))
    if unknown:
        ap.error(f"--drop: not a field a run may leave out: {', '.join(unknown)} (one of {', '.join(optional)})")
    for cells in runs.values():
        for record in cells.values():
            for f in dropped:
                record.pop(f, None)
    names = [n for n in args.identical.split(",") if n]
    pairs = [p.split("/") for p in args.pairs.split(",") if p]
    if any(len(p) != 2 for p in pairs):
        ap.error(f"--pairs: {args.pairs!r}: each pair is A/B, pairs apart by commas")
    unknown = sorted({n for n in names + [x for p in pairs for x in p] if n not in runs})
    if unknown:
        ap.error(f"not a run of {args.fixture}: {', '.join(unknown)} (it has {', '.join(runs)})")
    codes = {(a, b): gate(runs, a, b, args.fail_above) for a, b in itertools.permutations(names, 2)}
    tally = collections.Counter(code for code, _ in codes.values())
    print(f"identical runs {','.join(names)}: {len(codes)} ordered pairs at --fail-above {args.fail_above:g}: "
          f"exit 0 in {tally[0]}, exit 3 in {tally[3]}, exit 1 in {tally[1]}")
    for (a, b), (code, cells) in codes.items():
        if code == 1:
            print(f"  false regression: {a} -> {b}: {'; '.join(cells)}")
    if args.reasons:
        why = collections.Counter(re.sub(r"\d[\d.,]*", "N", v.why)[:120] for a, b in codes for _, v, _ in
                                  verdicts(runs, a, b, args.fail_above) if v.word == "undecided")
        print(f"undecided cells of those pairs: {sum(why.values())}")
        for text, n in why.most_common():
            print(f"  {n:4d}  {text}")
    for a, b in pairs:
        code, cells = gate(runs, a, b, args.fail_above)
        print(f"{a} -> {b}: exit {code}" + (f" ({'; '.join(cells)})" if cells else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
