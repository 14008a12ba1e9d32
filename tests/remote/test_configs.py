"""The S3 configs parse (storage axes by ccp.remote.axes, the rest by the sweep parser) and expand as
documented in their comments; every other config gets the one default storage setting (cell ids kept)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ccp.config.sweep import parse_sweep
from ccp.remote.axes import StorageSetting, split_sweep, storage_cells

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


@pytest.mark.parametrize("name", ["s3-cris.yaml", "s3-netcdf.yaml"])
def test_s3_configs_parse_and_expand(name):
    raw = yaml.safe_load((CONFIGS / name).read_text())
    core, cfg = split_sweep(raw)
    sweep = parse_sweep(core, CONFIGS)
    assert sweep.name == name.removesuffix(".yaml")
    assert cfg.s3 is not None and cfg.s3.local
    cells = storage_cells("read", cfg.axes)
    assert len([c for c in cells if not c.remote]) == 3          # default; paged; paged + page buffer
    assert len([c for c in cells if c.remote]) == 18             # x 2 fsspec x 3 latencies
    assert {c.labels()["latency"] for c in cells if c.remote} == {"0ms", "20ms", "80ms"}
    assert cfg.as_dict()["storage"] == ["local", "s3"]


@pytest.mark.parametrize("path", sorted(p for p in CONFIGS.glob("*.yaml") if not p.name.startswith("s3-")),
                         ids=lambda p: p.stem)
def test_other_configs_keep_the_default_setting(path):
    raw = yaml.safe_load(path.read_text())
    core, cfg = split_sweep(raw)
    assert core == raw and cfg.s3 is None
    for op in ("read", "write", "copy"):
        assert storage_cells(op, cfg.axes) == [StorageSetting()]
