"""Two runs side by side: the cells they share, with ratios B / A and a noise-aware verdict per cell.

Cells are matched by ``cell_id``, the hash of the parameters the sweep configured (chunks, filters, cache, access):
not by the cache read back from HDF5, which for a contiguous dataset is the library's default whatever the sweep
set, so matching on it paired every contiguous cell of A with every contiguous cell of B. "Faster" and "slower"
need the difference to be significant and beyond a threshold (stats.judge); ``fail_above`` makes the result a CI
gate: the cells slower in B by more than that ratio, by the rule (stats.RULE: counts first, then passes and CPU
time), are its ``regressions``; a time difference that is the machine's (noise) never is. A cell slower by more
than that ratio that the rule cannot clear (too few passes, wall time apart alone, an extrapolated cell, no usable
time) is ``undecided``: never passed silently (the CLI exits 3 when there is no regression but an undecided cell).
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from ccp.config import axes as matrix_axes
from ccp.errors import CcpError
from ccp.outfile import head_holds, output_target
from ccp.report import plots
from ccp.report.data import Labels, finite, is_ok, load_cells, load_env
from ccp.report.html import CSS, esc, img, note, table_html
from ccp.report.run_differences import differences, nothing_in_common
from ccp.report.stats import (
    CONTENTION_SLOWDOWN,
    PASSES,
    RULE,
    THRESHOLD,
    WAIT_COLUMNS,
    WORK,
    Sample,
    Verdict,
    cpu_bar,
    cpu_share_cut,
    from_cell,
    judge,
    passes_needed,
    work_change,
)
from ccp.report.stats import ENDPOINT as ENDPOINT_BASIS
from ccp.report.stats import LOAD as LOAD_BASIS
from ccp.report.stats import NOTHING as NOTHING_BASIS
from ccp.report.stats import samples as load_samples
from ccp.units import format_count, format_ratio, format_seconds


class Comparison(str):
    """The terminal text, with the verdicts behind it."""

    regressions: list[str]
    undecided: list[str]
    absent: list[str]          # cells that finished in A and have none in B (under a gate)
    joined: pd.DataFrame
    warnings: list[str]


def _env_line(run: Path) -> str:
    e = load_env(run)
    if not e:
        return str(run)
    return f"{run} ({e.get('host', '?')}, HDF5 {e.get('hdf5', '?')}, h5py {e.get('h5py', '?')}, {e.get('time', '?')})"


def _keyed(cells: pd.DataFrame) -> pd.DataFrame:
    """Match keys made comparable across runs: text as text, numbers rounded (a float read back may differ in the last bit)."""
    k = cells.copy()
    text = set(matrix_axes.text_columns())
    for col in matrix_axes.cell_columns():
        values = k[col] if col in k else pd.Series(np.nan, index=k.index)
        k[f"_k_{col}"] = values.astype(str) if col in text else values.fillna(-1).astype(float).round(6)
    return k


def _ratio(b, a) -> float:
    # a time of 0 or below is no time: no ratio (never "-80.5x": breaker9 G19)
    return float(b) / float(a) if finite(a) and finite(b) and float(a) > 0 and float(b) > 0 else float("nan")


def _fmt_ratio(r) -> str:
    """B / A: 2.81x, 0.643x, 1,006x (never "1e+03x": audit22 F9)."""
    return format_ratio(r)


def _cpu_text(seconds: float) -> str:
    """A CPU time per pass, or "n/a" where the run did not record one (a run before schema 4, an extrapolated cell)."""
    return format_seconds(seconds) if finite(seconds) else "n/a"


def _match_keys(a: pd.DataFrame, b: pd.DataFrame) -> list[str]:
    """How two runs' cells are matched: by cell id when both runs have them, else by the configured parameters."""
    by_id = (a["cell_id"] != "").all() and (b["cell_id"] != "").all()
    return ["cell_id"] if by_id else [f"_k_{c}" for c in matrix_axes.cell_columns()]


def failed_in_b(a: pd.DataFrame, b: pd.DataFrame) -> list[tuple[str, str]]:
    """(label, B's status) of every cell that finished in A and not in B (matched as :func:`join` matches): a cell
    that no longer finishes (a timeout, a crash) is the largest regression there is, never a cell left out."""
    fa, fb = a[is_ok(a)], b[~is_ok(b)]
    if not len(fa) or not len(fb):
        return []
    keys = _match_keys(fa, fb)
    m = fa[list(dict.fromkeys(keys + ["label"]))].merge(fb[list(dict.fromkeys(keys + ["status"]))], on=keys)
    return [(str(lab), str(status)) for lab, status in zip(m["label"], m["status"])]


def missing_in_b(a: pd.DataFrame, b: pd.DataFrame) -> list[str]:
    """Labels of the cells that finished in A and have no cell at all in B (B's sweep lost them, B was interrupted
    before them, or B's file was rechunked so a ``chunks: source`` cell is another cell): a gate did not judge them."""
    fa = a[is_ok(a)]
    if not len(fa):
        return []
    if not len(b):
        return [str(x) for x in fa["label"]]
    keys = _match_keys(fa, b)
    m = fa[list(dict.fromkeys(keys + ["label"]))].merge(b[keys].drop_duplicates(), on=keys, how="left", indicator=True)
    return [str(x) for x in m.loc[m["_merge"] == "left_only", "label"]]


def join(run_a: Path, run_b: Path):
    a, b = load_cells(Path(run_a)), load_cells(Path(run_b))
    labels = Labels.of(a, b)
    a, b = labels.add(_keyed(a)), labels.add(_keyed(b))
    fa, fb = a[is_ok(a)], b[is_ok(b)]
    keys = _match_keys(fa, fb)
    by_id = keys == ["cell_id"]
    cols = list(dict.fromkeys(keys + ["cell_id", "label", "time_s", "time_s_min", "time_s_max", "repeats", "requests",
                                      "raw_reads", "raw_writes", "first_request_s", "status", "fraction_measured",
                                      "raw_read_bytes", "raw_write_bytes", "http_gets", "http_bytes", "flags",
                                      "load_max", "cpus", "cpu_ratio", "http_wait_s", *WAIT_COLUMNS]))
    cols = [c for c in cols if c in fa and c in fb]
    fa = fa[cols].drop_duplicates(keys)
    fb = fb[cols].drop_duplicates(keys)
    j = fa.merge(fb.drop(columns=["label"]), on=keys, suffixes=("_a", "_b"))
    if by_id:
        j["cell_id_a"] = j["cell_id_b"] = j["cell_id"]
    dup = j["label"].duplicated(keep=False)
    j.loc[dup, "label"] = j.loc[dup, "label"] + " (cell " + j.loc[dup, "cell_id_a"].astype(str) + ")"
    j["ratio"] = [_ratio(tb, ta) for ta, tb in zip(j["time_s_a"], j["time_s_b"])]
    j = j.sort_values("ratio", na_position="last").reset_index(drop=True)
    return a, b, j


def recorded_cpu_up(a: Sample, b: Sample, threshold: float) -> tuple[str, float]:
    """What the two runs recorded of B's CPU time per pass beyond A's, in words, and B's median over A's; ("", NaN)
    when it is not beyond the bar: both sides' CPU time recorded for every pass, B's median beyond
    :func:`ccp.report.stats.cpu_bar` (the bar rule (3) uses). A remeasure cannot clear it: it runs this ccp, not
    what measured B."""
    if not (len(a.cpu) == len(a.passes) and len(b.cpu) == len(b.passes) and len(a.cpu) and len(b.cpu)):
        return "", float("nan")
    ca, cb = float(np.median(a.cpu)), float(np.median(b.cpu))
    if ca <= 0 or not (np.isfinite(ca) and np.isfinite(cb)):
        return "", float("nan")
    bar = cpu_bar(a, b, threshold)
    if cb / ca < bar:
        return "", float("nan")
    n = f"{len(b.cpu)} pass" + ("es" if len(b.cpu) > 1 else "")
    return (f"{format_ratio(cb / ca)} A's CPU time per pass (its {n} against A's {len(a.cpu)}, beyond "
            f"{format_ratio(bar)})"), cb / ca


def crowded_baseline(a: Sample, b: Sample, v: Verdict) -> Verdict | None:
    """A tie, "not apart" or a small "faster" of B over an A measured under competitors (its passes got under 0.7 of
    B's share of a CPU: the same cell, so the machine's doing, not the layout's), or None. Competitors keep A's wall
    time up and its own CPU time too (2.3x here), so B may hide a slowdown as large (breaker12 D6: a 2x CPU regression
    in B, A under 3 busy loops at 0.49 of a CPU: wall 0.87x, CPU per pass 1.06x, a 'tie' the gate passed in 4 of 6
    tries). Undecided, its gate ratio the shares' ratio: counted by a gate below it."""
    if v.word not in ("tie", "noise", "faster") or v.basis in (WORK, ENDPOINT_BASIS, NOTHING_BASIS) \
            or not cpu_share_cut(b, a):
        return None
    hidden = b.cpu_share / a.cpu_share
    if v.word == "faster" and 1 / v.ratio >= hidden * CONTENTION_SLOWDOWN:
        return None       # faster beyond what A's competitors can explain
    said = {"tie": "a tie", "noise": "passes not apart", "faster": f"{format_ratio(1 / v.ratio)} faster"}[v.word]
    return Verdict("undecided", v.ratio, v.p, f"{said} in wall time, but A was measured under competitors: its passes "
                   f"got {a.cpu_share:.2f} of a CPU, B's {b.cpu_share:.2f}; they keep A's wall and CPU time up (by "
                   f"{format_ratio(hidden)} and more), which can hide a slowdown of B's as large: the rule cannot clear it "
                   "(measure A again on a quiet machine)", basis=LOAD_BASIS, cpu_ratio=hidden)


def gate_ratio(v: Verdict) -> float:
    """How much slower B is by a verdict, as a gate measures it: its wall time's ratio, or its CPU time per pass's
    when that decided against the wall time or left the cell undecided (breaker11 C2: B's CPU time 2.5x A's under
    a wall time of 0.64x), whichever is larger."""
    return max((r for r in (v.ratio, v.cpu_ratio) if finite(r)), default=float("nan"))


def gate_outcome(v: Verdict, fail_above: float) -> str:
    """What a gate at ``fail_above`` makes of a cell's verdict: "regression" (slower by more than it, by the rule),
    "undecided" (the rule cannot clear a cell slower by more than it, or without a usable time: never a pass,
    breaker9 G17) or "pass"."""
    if v.word == "slower" and gate_ratio(v) > fail_above:
        return "regression"
    if v.word in ("undecided", "unknown") and (not finite(v.ratio) or gate_ratio(v) > fail_above):
        return "undecided"
    return "pass"


def _remeasured(run_a, run_b, j, pairs, verdicts, gate, rounds, threshold, fail_above, echo):
    """The cells that differ (or whose difference is the machine's) measured again, interleaved; judged by those.
    A cell judged by its remeasured passes gets them in ``pairs`` and its row of ``j`` their times and loads."""
    from ccp.report.remeasure import interleaved

    pick, notes = [], []
    for i, v in enumerate(verdicts):
        if v.word not in ("slower", "faster", "noise", "undecided", "unknown") or not finite(v.ratio):
            continue
        change, what = work_change(*pairs[i])
        # by the verdict, not the counts alone: +0.01% decides nothing (G22), an extrapolated count is no measure (G21)
        if v.basis == WORK:
            # rule (1): the counts decided, and passes measured here cannot undo what B's run recorded
            notes.append(f"{j.loc[i, 'label']}: the I/O differs ({what}): a real difference whatever the load; "
                         "not remeasured")
            continue
        if v.differs and v.basis == PASSES:
            # rule (3) decided on the recorded passes and their CPU time, the load-proof witness: passes measured here
            # (this ccp, this HDF5, the two runs' files) cannot undo what measured B (breaker10 B2: a CPU regression
            # in what ran B, caught at 2.36x, became a pass under --remeasure)
            notes.append(f"{j.loc[i, 'label']}: {v.word} by the passes the runs recorded ({v.why}): decided, not "
                         "remeasured (a remeasure runs this ccp and HDF5 on both runs' files, not what measured B)")
            continue
        pick.append(i)
    ids = [(str(j.loc[i, "cell_id_a"]), str(j.loc[i, "cell_id_b"])) for i in pick]
    old = {**{("a", ida): pairs[i][0] for i, (ida, _) in zip(pick, ids)},
           **{("b", idb): pairs[i][1] for i, (_, idb) in zip(pick, ids)}}
    again: dict = {}
    if ids:
        echo(f"remeasuring {len(ids)} cell(s), A and B alternating, {rounds} pass(es) each")
        again, more = interleaved(run_a, run_b, ids, rounds, old, echo=echo)
        notes += more
    verdicts, gate = list(verdicts), list(gate)
    for i, key in zip(pick, ids):
        if key in again:
            xa, xb = again[key]
            v = judge(xa, xb, threshold)
            verdicts[i] = replace(v, why=f"remeasured, {rounds} alternating passes: {v.why}")
            gate[i] = verdicts[i] if fail_above is not None else None     # judged at the one threshold
            was_a, was_b = pairs[i]
            recorded, recorded_cpu = recorded_cpu_up(was_a, was_b, threshold)
            if recorded and not v.differs:
                # the runs recorded more CPU time per pass in B (its one pass, or passes the rule could not part):
                # measured here with this ccp and HDF5 on both runs' files, the cells' settings cost the same, so the
                # difference is in what measured B, which a remeasure cannot see: never cleared by it (breaker11 C1,
                # C3: a 3.3x and a 6.5x CPU regression in the code passed the gate after --remeasure)
                why = (f"B's run recorded {recorded}; remeasured here ({rounds} alternating passes, this ccp and HDF5 "
                       f"on both runs' files): {v.why}: the difference is in what measured B, not in the cells' "
                       "settings (compare the two runs' environments)")
                # the table keeps the recorded times: the verdict their ratio, and the gate counts the cell by the
                # recorded CPU time too (its wall time may hide it, breaker11 C2)
                recorded_ratio = _ratio(was_b.time_s, was_a.time_s)
                verdicts[i] = replace(v, word="undecided", why=why, basis=LOAD_BASIS, ratio=recorded_ratio,
                                      cpu_ratio=recorded_cpu)
                if gate[i] is not None:
                    gate[i] = verdicts[i]
                continue
            j.loc[i, "time_s_a"], j.loc[i, "time_s_b"] = xa.time_s, xb.time_s
            j.loc[i, "ratio"] = _ratio(xb.time_s, xa.time_s)
            # the row is what was measured here now: its work as counted, its contention and load the remeasure's,
            # not the recorded runs' estimates and machine (breaker11 C9)
            pairs[i] = (xa, xb)
            j.loc[i, "remeasured"] = True
            for sfx, x in (("a", xa), ("b", xb)):
                for col, value in (("load_max", x.load), ("cpus", x.cpus)):
                    if f"{col}_{sfx}" in j:
                        j.loc[i, f"{col}_{sfx}"] = value
            for sfx, x in (("a", xa), ("b", xb)):
                if j.loc[i, f"status_{sfx}"] == "extrapolated":    # measured whole here, its counts with it
                    j.loc[i, f"status_{sfx}"] = "ok"
                    j.loc[i, f"raw_reads_{sfx}"] = dict(x.work).get("raw_reads", j.loc[i, f"raw_reads_{sfx}"])
    return verdicts, gate, notes


def remeasured_rows(j: pd.DataFrame) -> pd.Series:
    """Which joined rows hold the times, loads and contention compare --remeasure measured here (the rest: the runs')."""
    return j["remeasured"].astype(bool) if "remeasured" in j else pd.Series(False, index=j.index)


def machine_line(j: pd.DataFrame) -> str:
    """The two runs' machine state over the joined cells: 'load A 0.4 vs B 7.9 on 2 CPUs'. After --remeasure, the
    remeasured cells' loads are the remeasure's and the others' the runs': each pair said by its source ('load A 4.3 vs
    B 5.6 as recorded, A 4.9 vs B 5.0 remeasured here'), never A's highest from one and B's from the other (audit22
    F2: 'load A 4.9 vs B 5.6' was the remeasure's A against B's run)."""
    def side(rows: pd.DataFrame, sfx: str) -> str:
        load = pd.to_numeric(rows[f"load_max_{sfx}"], errors="coerce")
        return f"{load.max():.1f}" if load.notna().any() else "not recorded"
    again = remeasured_rows(j)
    cpus = pd.to_numeric(pd.concat([j["cpus_a"], j["cpus_b"]]), errors="coerce").dropna()
    on = f" on {int(cpus.max())} CPUs" if len(cpus) else ""
    if not again.any():
        return f"load A {side(j, 'a')} vs B {side(j, 'b')}{on}"
    groups = [(j[~again], "as recorded"), (j[again], "remeasured here")]
    return "load " + ", ".join(f"A {side(rows, 'a')} vs B {side(rows, 'b')} {said}" for rows, said in groups
                               if len(rows)) + on


def _side(j: pd.DataFrame, suffix: str):
    """The joined rows' cells of one run, as cells rows (for stats.from_cell)."""
    cols = ["time_s", "time_s_min", "time_s_max", "repeats", "requests", "status", "raw_reads", "raw_read_bytes",
            "raw_writes", "raw_write_bytes", "http_gets", "http_bytes", "flags", "load_max", "cpus", "http_wait_s",
            *WAIT_COLUMNS]
    cols = [c for c in cols if f"{c}_{suffix}" in j]
    return [dict(zip(cols, vals)) for vals in zip(*(j[f"{c}_{suffix}"] for c in cols))]


PAGE_TITLE = "<title>ccp compare</title>"


def check_html_out(out_html: Path, run_a: Path, run_b: Path) -> Path:
    """The file ``--html`` may be written to (a link's target), or a one-line refusal: never a file inside either
    run folder (its run.json or report.html would be replaced and the run lost), never an existing file that is
    not an earlier comparison page, nor the plot beside a new page over a file that is not ours."""
    target, why = output_target(out_html)
    if why:
        raise CcpError(f"--html {why}")
    where = Path(target).resolve()
    for run in (run_a, run_b):
        if where.is_relative_to(Path(run).resolve()):
            raise CcpError(f"--html {out_html} is inside the run folder {run}: it would change that run; "
                           "write the comparison outside both runs")
    plot = where.with_suffix(".png")
    if where.exists():
        try:
            ours = head_holds(where, PAGE_TITLE.encode())
        except OSError as exc:
            raise CcpError(f"--html {out_html}: {exc.strerror or exc}") from None
        if not ours:
            raise CcpError(f"--html {out_html} exists and is not a page ccp compare wrote: "
                           "choose a new name (or remove it)")
    elif plot.exists():
        raise CcpError(f"--html {out_html} would replace {plot} (its plot) and that file is not ccp compare's: "
                       "choose another name")
    return where


def one_threshold(fail_above: float | None, threshold: float | None) -> float:
    """The one threshold a comparison judges every cell at, the table's and the gate's alike: --fail-above's under a
    gate, else --threshold (THRESHOLD by default). A --threshold that differs from --fail-above is refused: the table
    and the gate would give one cell two verdicts, 'beyond 1.25x' in one and 'beyond 1.5x' in the other (breaker11
    C5; above it, the gate would fail cells the table calls ties, breaker9 G16)."""
    if fail_above is None:
        return THRESHOLD if threshold is None else float(threshold)
    if threshold is not None and float(threshold) != float(fail_above):
        raise CcpError(f"--threshold {threshold:g} is {'above' if threshold > fail_above else 'below'} --fail-above "
                       f"{fail_above:g}: a comparison judges each cell at one threshold, under a gate --fail-above's "
                       "(the table and the gate would give a cell two verdicts); drop --threshold")
    return float(fail_above)


def compare(run_a: Path, run_b: Path, out_html: Path | None, fail_above: float | None = None,
            threshold: float | None = None, remeasure: int = 0, echo=print) -> Comparison:
    run_a, run_b = Path(run_a), Path(run_b)
    if out_html is not None:
        out_html = check_html_out(Path(out_html), run_a, run_b)
    threshold = one_threshold(fail_above, threshold)
    a, b, j = join(run_a, run_b)
    sa, sb = load_samples(run_a, a), load_samples(run_b, b)
    verdicts, gate = [], []
    pairs: list[tuple[Sample, Sample]] = []
    for (_, r), ca, cb in zip(j.iterrows(), _side(j, "a"), _side(j, "b")):
        xa = sa.get(str(r["cell_id_a"])) or from_cell(ca)
        xb = sb.get(str(r["cell_id_b"])) or from_cell(cb)
        pairs.append((xa, xb))
        v = judge(xa, xb, threshold)
        verdicts.append(crowded_baseline(xa, xb, v) or v)
        gate.append(verdicts[-1] if fail_above is not None else None)      # one judgement a cell (breaker11 C5)
    remeasure_notes: list[str] = []
    j["remeasured"] = False         # set on the rows whose times and machine state the remeasure replaced
    if remeasure:
        verdicts, gate, remeasure_notes = _remeasured(run_a, run_b, j, pairs, verdicts, gate, remeasure, threshold,
                                                      fail_above, echo)
    works = [work_change(xa, xb)[0] if xa.complete and xb.complete else "estimated" for xa, xb in pairs]
    # "noise" is two things: the load explains the difference (the machine's), or enough passes overlap (no
    # difference shown, whatever the loads: breaker10's audit A4 read "the machine's (load 6.2 vs 6.2)")
    j["verdict"] = [("overlap" if v.basis == PASSES else v.word) if v.word == "noise" else v.word for v in verdicts]
    j["why"] = [v.why for v in verdicts]
    j["work"] = works
    j["contended_a"] = [x.contended for x, _ in pairs]
    j["contended_b"] = [y.contended for _, y in pairs]
    outcomes = [gate_outcome(g, fail_above) if g is not None and fail_above is not None else "pass" for g in gate]
    regressions = [r["label"] for (_, r), o in zip(j.iterrows(), outcomes) if o == "regression"]
    undecided = [f"{r['label']} ({_fmt_ratio(g.ratio) + ': ' if finite(g.ratio) else ''}{g.why})"
                 for (_, r), g, o in zip(j.iterrows(), gate, outcomes) if o == "undecided" and g is not None]
    lost = failed_in_b(a, b)
    if fail_above is not None:
        regressions += [f"{label} (finished in A, {status} in B)" for label, status in lost]
    # a gate cannot pass what it did not compare (breaker8 F13): cells of A that B never ran
    absent = missing_in_b(a, b) if fail_above is not None else []

    # each pass's CPU time beside its wall time (issue 22: audit22 F5): the median timed pass's, of the passes judged
    j["cpu_pass_a"] = [x.cpu_per_pass() for x, _ in pairs]
    j["cpu_pass_b"] = [y.cpu_per_pass() for _, y in pairs]
    head = ["cell", "time A", "time B", "B / A", "CPU/pass A", "CPU/pass B", "verdict", "work", "raw reads A",
            "raw reads B", "raw writes A", "raw writes B", "why"]
    show_writes = (j[["raw_writes_a", "raw_writes_b"]].fillna(0) != 0).any().any()
    show_reads = (j[["raw_reads_a", "raw_reads_b"]].fillna(0) != 0).any().any() or not show_writes
    keep = [True] * 8 + [show_reads, show_reads, show_writes, show_writes, True]
    head = [h for h, k in zip(head, keep) if k]
    rows = []
    for r in j.itertuples():
        def tag(s, busy):
            return (" (extrapolated)" if s == "extrapolated" else "") + (" (contended)" if busy else "")
        word = {"unknown": "cannot tell", "noise": "machine", "overlap": "not apart"}.get(r.verdict, r.verdict)
        row = [r.label, format_seconds(r.time_s_a) + tag(r.status_a, r.contended_a),
               format_seconds(r.time_s_b) + tag(r.status_b, r.contended_b), _fmt_ratio(r.ratio),
               _cpu_text(r.cpu_pass_a), _cpu_text(r.cpu_pass_b), word, r.work,
               format_count(r.raw_reads_a), format_count(r.raw_reads_b), format_count(r.raw_writes_a),
               format_count(r.raw_writes_b), r.why]
        rows.append([c for c, k in zip(row, keep) if k])

    warnings = differences(run_a, run_b)
    ratios = j["ratio"][j["ratio"].map(finite) & (j["ratio"] > 0)]
    nothing = "" if len(j) else nothing_in_common(a, b)
    lines = ([nothing] if nothing else []) + [f"A: {_env_line(run_a)}", f"B: {_env_line(run_b)}"]
    lines += [f"warning: {w}" for w in warnings]
    lines += [f"remeasure: {n}" for n in remeasure_notes]
    lines.append(f"{len(j)} cells in common ({len(a)} in A, {len(b)} in B; only finished cells are compared, matched by "
                 "their configured parameters)")
    if lost:
        lines.append(f"{len(lost)} cell(s) finished in A and did not in B: "
                     + "; ".join(f"{label}: {status}" for label, status in lost))
    summary = ""
    said = len(lines)
    if len(ratios):
        gm = math.exp(float(np.log(ratios).mean()))
        n = j["verdict"].value_counts()
        summary = (f"B / A time: geometric mean {format_ratio(gm)}. B slower in {n.get('slower', 0)} cells, faster in "
                   f"{n.get('faster', 0)}, a tie in {n.get('tie', 0)}"
                   + (f"; in {n.get('overlap', 0)} the medians differ but the work is the same and the passes are "
                      "not apart: no difference shown" if n.get("overlap", 0) else "")
                   + (f"; in {n.get('noise', 0)} the time differs but the work is the same and the slower side's "
                      "wait for a CPU (recorded per pass), or its really higher load, explains it: the difference is "
                      f"the machine's ({machine_line(j)})"
                      if n.get("noise", 0) else "")
                   + (f"; undecided in {n.get('undecided', 0)}: the rule cannot clear them (too few passes, "
                      f"{passes_needed()} a side can decide, or see why)" if n.get("undecided", 0) else "")
                   + (f"; cannot tell in {n.get('unknown', 0)} (one pass each: nothing to test)" if n.get("unknown", 0) else "")
                   + f". Slower or faster means by {threshold:g}x or more, where {RULE}")
        lines.append(summary)
        busy = [side for side, col in (("A", "contended_a"), ("B", "contended_b")) if j[col].any()]
        if busy:
            again = remeasured_rows(j)

            def counted(side: str) -> str:
                col = j[f"contended_{side.lower()}"].astype(bool)
                here = int((col & again).sum())
                return (f"{side} measured {int(col.sum())} cell(s) under contention"
                        + (f" ({here} of them in the remeasure)" if again.any() else ""))
            lines.append("contention: " + " and ".join(counted(side) for side in busy)
                         + f" ({machine_line(j)}); their times say more about the machine than about the layout")
        # an extrapolated count is an estimate of the requests not measured, not I/O HDF5 did (breaker10 B14)
        measured = (j["status_a"] != "extrapolated") & (j["status_b"] != "extrapolated")
        reads_differ = (j["raw_reads_a"] != j["raw_reads_b"]) & j["raw_reads_a"].notna() & j["raw_reads_b"].notna()
        if (reads_differ & measured).any():
            lines.append(f"raw-data reads differ in {int((reads_differ & measured).sum())} cells: the two runs' HDF5 "
                         "did different I/O there")
        if (reads_differ & ~measured).any():
            lines.append(f"raw-data reads differ in {int((reads_differ & ~measured).sum())} extrapolated cells: "
                         "estimates for the requests a time budget left unmeasured, not I/O either run measured")
    if fail_above is not None:
        if regressions:
            lines.append(f"FAIL: {len(regressions)} cell(s) slower in B by more than {fail_above:g}x, by the rule: "
                         + "; ".join(regressions))
        elif undecided:
            lines.append(f"undecided: {len(undecided)} cell(s) that may be slower in B by more than {fail_above:g}x "
                         "(by their wall or CPU time, or hidden by A's competitors; or without a usable time) that the "
                         "rule cannot clear (exit 3; measure both runs with more passes, on a quiet "
                         + ("machine): " if remeasure else "machine, or --remeasure): ") + "; ".join(undecided))
        elif len(j):
            lines.append(f"pass: no cell slower in B by more than {fail_above:g}x by the rule (a time difference the "
                         "rule does not show real never fails: within the threshold, passes not apart with the work "
                         "the same, or the machine's: a wait for a CPU or a really higher load)"
                         + (" among the cells compared" if absent else ""))
        elif not absent:      # nothing compared and nothing of A left out: A finished no cell (audit22 F1)
            lines.append("not compared: no cell in common, so the gate judged nothing: exit 3, not a pass")
        if regressions and undecided:
            lines.append(f"undecided: {len(undecided)} more cell(s) that may be slower by more than {fail_above:g}x "
                         "that the rule cannot clear: " + "; ".join(undecided))
        if absent:
            shown = "; ".join(absent[:5]) + (f"; and {len(absent) - 5} more" if len(absent) > 5 else "")
            lines.append(f"not compared: {len(absent)} of the {int(is_ok(a).sum())} cell(s) that finished in A have no "
                         f"cell in B (B's sweep, its file's chunks or an interrupted B): {shown}. The gate did not "
                         "judge them: " + ("exit 1 for the regressions above" if regressions else "exit 3, not a pass"))
    # what the console says after the summary (contention, counts that differ, the gate's outcome, the cells not
    # compared) goes on the page too: a page that showed none of it read as a pass (breaker9 G23)
    verdict_lines = lines[said + (1 if summary else 0):]
    lines.append("")
    if rows:
        widths = [max(len(str(x[i])) for x in [head] + rows) for i in range(len(head))]
        def fmt_line(r):
            return "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
        lines.append(fmt_line(head))
        lines.append("  ".join("-" * w for w in widths))
        lines += [fmt_line(r) for r in rows]
    else:
        lines.append(f"no cells in common between {run_a} and {run_b}")
    text = Comparison("\n".join(lines))
    text.regressions, text.joined, text.warnings, text.undecided = regressions, j, warnings, undecided
    text.absent = absent

    if out_html is not None:
        out_html = Path(out_html)
        out_html.parent.mkdir(parents=True, exist_ok=True)
        name = plots.compare_plot(j, out_html.parent, out_html.stem + ".png") if len(j) else None
        body = [
            "<h1>ccp compare</h1>",
            f'<div class="box warn"><p>{esc(nothing)}</p></div>' if nothing else "",
            "".join(f'<div class="box warn"><p>Warning: {esc(w)}</p></div>' for w in warnings),
            "".join(f'<div class="box warn"><p>Finished in A, not in B: {esc(label)}: {esc(status)}</p></div>'
                    for label, status in lost),
            "".join(f'<div class="box warn"><p>Remeasure: {esc(n)}</p></div>' for n in remeasure_notes),
            "".join(f'<div class="box{"" if x.startswith("pass:") else " warn"}"><p>{esc(x)}</p></div>'
                    for x in verdict_lines),
            table_html(None, [["A", _env_line(run_a)], ["B", _env_line(run_b)],
                              ["cells", f"{len(j)} in common ({len(a)} in A, {len(b)} in B)"]], "meta"),
            note(esc(summary) + ("." if summary else "") + " Ratios are time B / time A: above 1x, B is slower. CPU/pass is the "
                 "median timed pass's process CPU time (n/a where a run did not record it). Cells match on "
                 "the parameters the sweep configured (chunks, filters, cache, access)."),
            img(name, "time ratios B / A"),
            table_html(head, rows) if rows else note("No cells in common."),
        ]
        page = (f"<!doctype html><html lang='en'><head><meta charset='utf-8'>{PAGE_TITLE}<style>{CSS}</style>"
                f"</head><body>{''.join(body)}</body></html>")
        partial = out_html.with_name(out_html.name + ".part")      # renamed whole: never half a page at the name
        partial.write_text(page, encoding="utf-8")
        partial.replace(out_html)
    return text
