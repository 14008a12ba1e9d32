"""What a run holds about one cell's time and the machine it was measured on (:class:`Sample`), as the verdict rule
(:mod:`ccp.report.stats`) judges it and :mod:`ccp.report.run_samples` reads it from a run folder."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

REMEASURED = "remeasure"    # the origin of passes compare --remeasure measured (both sides in one process)
WORK_COLUMNS = ("requests", "raw_reads", "raw_read_bytes", "raw_writes", "raw_write_bytes", "http_gets", "http_bytes")
MAX_REQUEST_SAMPLES = 20_000   # per cell, evenly subsampled: the U test's normal approximation needs no more


@dataclass(frozen=True)
class Sample:
    time_s: float                      # the cell's median pass (cells.parquet)
    passes: np.ndarray                 # every timed pass's total, seconds (may be empty)
    requests: np.ndarray               # every timed request, seconds, all passes (may be empty)
    n_requests: float = float("nan")   # requests per pass
    complete: bool = True              # False when extrapolated: the samples cover a prefix only
    firsts: np.ndarray = field(default_factory=lambda: np.zeros(0))   # each timed pass's first request (seed 004: the
    #                                    one that reads and decompresses a chunk the others then find in the cache)
    cpu: np.ndarray = field(default_factory=lambda: np.zeros(0))     # each timed pass's process CPU seconds (schema 4)
    work: tuple = ()                   # (column, count) of WORK_COLUMNS the cell's counted pass measured; () unknown
    contended: bool = False            # flagged "contended" when measured
    load: float = float("nan")         # highest 1-minute load average over its passes
    cpu_share: float = float("nan")    # its passes' median CPU time over wall time (cells' cpu_ratio): the share of a
    #                                    CPU it got, which competitors cut at once while the load average lags a minute
    cpus: float = float("nan")
    # where the bytes travel (storage, fsspec, emulated latency and bandwidth, page buffer): cells that differ here
    # differ in what they wait for, so waiting is their work, not the machine's
    path: tuple = ()
    wait: np.ndarray = field(default_factory=lambda: np.zeros(0))    # each timed pass's seconds waiting on GETs (S3)
    loopback: bool = False             # its S3 endpoint ran on this machine (``s3: local``, or a loopback URL)
    timed: float = float("nan")        # requests timed per pass (fewer than n_requests when extrapolated)
    pass_busy: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))   # each timed pass under load > CPUs
    summary: bool = False              # passes are the cells row's fastest / median / slowest, not every pass
    run_delay: np.ndarray = field(default_factory=lambda: np.zeros(0))   # each timed part's seconds runnable but not
    #                                    running (waiting for a CPU, schema 7): empty when not recorded
    span: np.ndarray = field(default_factory=lambda: np.zeros(0))        # each timed part's wall seconds over the
    #                                    same span (schema 7: its requests' times leave out the loop between them)
    # where its passes were measured: the run folder and the cell's host (ccp.report.run_samples.samples), REMEASURED (compare
    # --remeasure, both sides alternating in one process), "" unknown. Two different ones measured in different
    # processes and minutes (competitors.separate_runs); two cells of one run in two worker processes, seconds apart
    # (competitors.one_run)
    origin: str = ""
    pace: np.ndarray = field(default_factory=lambda: np.zeros(0))        # the machine's pace just after each timed
    #                                    pass (schema 8: a reference copy's CPU seconds): empty when not recorded

    def cpu_per_pass(self) -> float:
        """The median timed pass's process CPU seconds (``cpu``, what the rule reads), shown beside the wall time in
        the report and compare (issue 22, audit22 F5); NaN when the run did not record it for every pass (before
        schema 4, an extrapolated cell, a pass mostly ccp's own harness)."""
        cpu = np.asarray(self.cpu, float)
        return float(np.median(cpu)) if len(cpu) and bool(np.isfinite(cpu).all()) else float("nan")

    #: the fields :meth:`to_record` keeps: what the verdict rule reads of a cell (the per-request times are the
    #: confidence interval's, not the rule's)
    RECORD_FIELDS = ("time_s", "passes", "n_requests", "complete", "cpu", "work", "contended", "load", "cpu_share",
                     "cpus", "path", "wait", "loopback", "timed", "pass_busy", "summary", "run_delay", "span",
                     "pace")

    def to_record(self) -> dict:
        """The sample as plain JSON values (arrays as lists), for a fixture of recorded runs: the verdict rule judged
        again on what a busy machine measured (tests/report/data/breaker12_passes.json)."""
        out = {}
        for k in self.RECORD_FIELDS:
            v = getattr(self, k)
            out[k] = v.tolist() if isinstance(v, np.ndarray) else [list(x) for x in v] if k == "work" else \
                list(v) if isinstance(v, tuple) else v
        return out

    @classmethod
    def from_record(cls, d: dict) -> Sample:
        """The inverse of :meth:`to_record`."""
        kw: dict = {k: d[k] for k in cls.RECORD_FIELDS if k in d}
        for k, kind in (("passes", float), ("cpu", float), ("wait", float), ("pass_busy", bool), ("run_delay", float),
                        ("span", float), ("pace", float)):
            kw[k] = np.asarray(kw.get(k, ()), kind)
        kw["work"] = tuple(tuple(x) for x in kw.get("work", ()))
        kw["path"] = tuple(kw.get("path", ()))
        return cls(requests=np.zeros(0), **kw)


#: the cells columns that set what a pass waits for besides the CPU (ccp.report.data.STORAGE_COLUMNS, by name: the
#: stats stay independent of the labels)
WAIT_COLUMNS = ("storage", "fsspec", "latency", "bandwidth", "page_buffer", "file_space")
