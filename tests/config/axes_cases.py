"""Sweeps whose cells' ids, labels, columns and YAML form were recorded by the code before the axes became
objects (``fixtures/axes_golden.json``, written by ``python tests/config/axes_cases.py``): the repo's generated
configs and sweeps that set every axis, excludes and defaults included."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
GOLDEN = HERE / "fixtures" / "axes_golden.json"

_DATA = {"path": "/data", "generate": {"shape": [8, 12, 20], "dtype": "<f4", "data": "normal", "seed": 1}}
EXTRA = {
    "every-axis": {
        "name": "every-axis", "dataset": _DATA,
        "matrix": {"chunks": [[4, 12, 20], "2x6x10", "contiguous"], "filters": ["none", "gzip:4"],
                   "cache": ["64KiB", {"nbytes": "1MiB", "nslots": 1009, "w0": 1.0}],
                   "access": [{"op": "read", "block": [1, 12, 20]}, {"op": "read", "block": [8, 1, 20], "order": [1, 0, 2]},
                              {"op": "read", "block": [1, 1, 20], "random": 50, "seed": 3},
                              {"op": "write", "block": [4, 12, 20]}, {"op": "copy", "block": [8, 12, 20]}],
                   "client": ["native", "h5py-lowlevel", "h5py"]},
        "exclude": [{"chunks": "contiguous", "filters": "gzip:4"},
                    {"cache": "64KiB", "client": "h5py"}, {"access": {"op": "copy"}, "filters": "gzip:4"},
                    {"access": {"block": [8, 1, 20], "order": [1, 0, 2]}, "client": "h5py-lowlevel"}],
    },
    "storage-axes": {
        "name": "storage-axes", "dataset": _DATA,
        "matrix": {"chunks": [[4, 12, 20]], "cache": ["1MiB"],
                   "access": [{"op": "read", "block": [1, 12, 20]}, {"op": "write", "block": [4, 12, 20]}],
                   "storage": ["local", "s3"], "fsspec": [{"cache_type": "readahead", "block_size": "64KiB"},
                                                          {"cache_type": "blockcache"}],
                   "latency": ["0ms", "20ms"], "bandwidth": ["unlimited", "100MB/s"],
                   "file_space": ["default", {"strategy": "page", "page_size": "64KiB"}, {"strategy": "fsm_aggr"}],
                   "page_buffer": ["none", "1MiB"]},
        "exclude": [{"storage": "s3", "latency": "20ms", "bandwidth": "100MB/s"},
                    {"file_space": {"strategy": "fsm_aggr"}, "access": {"op": "write"}},
                    {"page_buffer": "1MiB", "fsspec": {"cache_type": "blockcache"}}],
        "s3": "local",
    },
    "defaults": {"name": "defaults", "dataset": _DATA},
}


def sweeps() -> dict[str, dict]:
    """name -> raw sweep mapping: the repo's configs that generate their data, then EXTRA."""
    out = {}
    for path in sorted((ROOT / "configs").glob("*.yaml")):
        raw = yaml.safe_load(path.read_text())
        if "generate" in (raw.get("dataset") or {}) and "workload" not in raw:   # tune-*.yaml are workloads
            out[f"configs/{path.name}"] = raw
    out.update(EXTRA)
    return out


def record(raw: dict) -> dict:
    """What the golden file holds for one sweep: its as-run YAML form and, per cell, key, id, label and columns."""
    from ccp.config.sweep import parse_sweep, sweep_as_dict
    from ccp.hdf5.dataset import describe_source
    from ccp.matrix.cells import expand
    from ccp.store.row import cell_columns

    sweep = parse_sweep(raw, base_dir=ROOT / "configs")
    cells = expand(sweep, describe_source(sweep.dataset))
    as_dict = json.loads(json.dumps(sweep_as_dict(sweep), default=str))
    return {"sweep_as_dict": as_dict,
            "cells": [{"key": c.key, "cell_id": c.cell_id, "label": c.label(),
                       "columns": json.loads(json.dumps(cell_columns(c), default=str))} for c in cells]}


if __name__ == "__main__":
    # one line per cell: a diff names the cells that changed
    lines = []
    for name, raw in sweeps().items():
        rec = record(raw)
        cells = ",\n".join(json.dumps(c, sort_keys=True) for c in rec["cells"])
        lines.append(f'{json.dumps(name)}: {{"sweep_as_dict": {json.dumps(rec["sweep_as_dict"], sort_keys=True)},\n'
                     f'"cells": [\n{cells}]}}')
    GOLDEN.write_text("{\n" + ",\n".join(lines) + "\n}\n")
    print(GOLDEN, GOLDEN.stat().st_size)


REPORT_GOLDEN = HERE / "fixtures" / "axes_report_golden.json"
OLD_AXES = ("client", "storage", "fsspec", "latency", "bandwidth", "file_space", "page_buffer")


def report_record(cells: list[dict]) -> dict:
    """The report's reading of a sweep's cells (their row columns): the labels and the axes that vary."""
    import pandas as pd

    from ccp.report.data import normalise, prepare

    frame, labels = prepare(normalise(pd.DataFrame([c["columns"] for c in cells])))
    cols = ["label", "config_label", "cache_label", "access_label", "storage_label"]
    return {"axes": [list(a) for a in labels.axes], "labels": frame[cols].astype(str).values.tolist()}


def write_report_golden() -> None:
    gold = json.loads(GOLDEN.read_text())
    out = {name: report_record(rec["cells"]) for name, rec in gold.items()}
    for name in ("every-axis", "storage-axes"):      # as a run before the client and storage columns reads
        out[f"{name} (schema 1)"] = report_record([{"columns": {k: v for k, v in c["columns"].items() if k not in OLD_AXES}}
                                                   for c in gold[name]["cells"]])
    REPORT_GOLDEN.write_text(json.dumps(out, sort_keys=True) + "\n")
