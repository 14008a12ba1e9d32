"""The sweep the matrix expands: config's parse, then each trace replay's trace loaded.

Config parses a ``{trace: FOLDER, dataset: /path, pid: N}`` access into a spec without reading the
trace (config sits below the workload room). Its block, the largest request the program made, is part
of the cell's id, label and checks, so it is set here, before :func:`ccp.matrix.cells.expand`:
``expand(load_sweep_with_replays(path), describe_source(...))``. A trace that does not hold the dataset, the
process or any request of the op is one line naming ``matrix.access[i].trace``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ccp.config import sweep as config_sweep
from ccp.config.sweep import AccessSpec, Sweep
from ccp.errors import CcpError, ConfigError


def resolve_replay(access: AccessSpec, where: str) -> AccessSpec:
    """``access`` with its block set when it replays a trace (the largest request); any other access as is."""
    if access.trace is None or access.block:
        return access
    from ccp.workload.replay_batches import traced_plan

    try:
        plan, _, _ = traced_plan(access.trace, str(access.trace_dataset), None, access.pid, access.op)
    except CcpError as exc:
        raise ConfigError(f"{where}.trace", str(exc)) from None
    return replace(access, block=tuple(int(c) for c in np.asarray(plan.counts).max(axis=0)))


def resolve_replays(sweep: Sweep) -> Sweep:
    """The sweep with every replay access's trace loaded (see :func:`resolve_replay`)."""
    if not any(a.trace is not None for a in sweep.access):
        return sweep
    return replace(sweep, access=tuple(resolve_replay(a, f"matrix.access[{i}]") for i, a in enumerate(sweep.access)))


def load_sweep_with_replays(path, scale: float | None = None) -> Sweep:
    """Read and validate a sweep file (:func:`ccp.config.sweep.parse_sweep_file`) and load its replays' traces."""
    return resolve_replays(config_sweep.parse_sweep_file(path, scale))
