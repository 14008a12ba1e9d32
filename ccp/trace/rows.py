"""One dataset's rows as ``ccp diagnose`` uses them: the program's calls, the low-level calls, the replay.

:func:`table_rows` takes them from a trace loaded whole (:func:`ccp.workload.tracefile.load_trace`);
:mod:`ccp.trace.stream` builds the same from ``calls.parquet`` read in batches, keeping only these light
columns and the replayed boxes (a trace of 10^7 calls never sits in memory as a table).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ccp.workload.replay import LOW_APIS, ReplaySequence
from ccp.workload.replay_batches import replay_sequence
from ccp.workload.tracefile import Trace

USER_COLUMNS = ["wall_s", "hdf5_s", "bytes"]      # what the diagnosis reads of the program's own calls
LOW_COLUMNS = ["pid", "seq", "sel", "hdf5_s"]     # and of the low-level calls


@dataclass
class DatasetRows:
    """``calls``: the program's own calls on the dataset; ``user_reads``/``user_writes``: those reads and writes
    (USER_COLUMNS); ``low_reads``/``low_writes``: the low-level reads and writes (LOW_COLUMNS), in file order;
    ``sequence(op)``: the replayed ``op`` requests."""

    calls: int
    user_reads: pd.DataFrame
    user_writes: pd.DataFrame
    low_reads: pd.DataFrame
    low_writes: pd.DataFrame
    sequence: Callable[[str], ReplaySequence]
    in_order: bool = False      # the low-level rows are in (pid, seq) order already (then low_reads has no pid, seq)


def table_rows(trace: Trace, file: str, dataset: str) -> DatasetRows:
    """The dataset's rows from the whole table (one scan for the dataset, then its light columns only)."""
    t = trace.table
    mask = t["file"].eq(file).fillna(False).to_numpy(bool) & t["dataset"].eq(dataset).fillna(False).to_numpy(bool)
    positions = np.flatnonzero(mask)
    light = ["kind", "pid", "seq", "depth", "api", "op", "sel", "bytes", "wall_s", "hdf5_s"]
    rows = t.iloc[positions, [t.columns.get_loc(c) for c in light]]
    call = rows["kind"].eq("call").fillna(False).to_numpy(bool)
    every = rows[call & rows["depth"].eq(0).fillna(False).to_numpy(bool)]
    lows = rows[call & rows["api"].isin(list(LOW_APIS)).fillna(False).to_numpy(bool)]

    def sequence(op: str) -> ReplaySequence:
        return replay_sequence(trace, dataset, file=file, op=op, positions=positions)

    return DatasetRows(len(every), every[every["op"].eq("read").fillna(False).to_numpy(bool)],
                       every[every["op"].eq("write").fillna(False).to_numpy(bool)],
                       lows[lows["op"].eq("read").fillna(False).to_numpy(bool)],
                       lows[lows["op"].eq("write").fillna(False).to_numpy(bool)], sequence)


@dataclass
class CallSummary:
    """The program's own calls as ``diagnose`` sums them: how many (reads, writes), the files they name, each
    (file, dataset)'s wall time (pandas' group sum, in row order), and each dataset's rows."""

    calls: int
    reads: int
    writes: int
    files: list[str]
    walls: dict[tuple[str, str], float]
    rows: Callable[[str, str], DatasetRows]


def table_summary(trace: Trace) -> CallSummary:
    t = trace.table
    user = (t["kind"].eq("call").fillna(False) & t["depth"].eq(0).fillna(False)).to_numpy(bool)
    calls = t.loc[user, ["file", "dataset", "op", "wall_s"]]       # the program's own calls, light columns only
    walls = calls.groupby(["file", "dataset"])["wall_s"].sum()
    return CallSummary(len(calls), int((calls["op"] == "read").sum()), int((calls["op"] == "write").sum()),
                       sorted(str(x) for x in calls["file"].dropna().unique()),
                       {k: float(walls[k]) for k in walls.index.tolist()},
                       lambda file, dataset: table_rows(trace, file, dataset))
