"""`--scale` says, before running, when it changes what the sweep measures (issue 16's cris case)."""

from pathlib import Path

import pytest

from ccp.workload.scale import scale_effects

CRIS = Path(__file__).resolve().parents[2] / "configs" / "cris.yaml"


def test_scale_that_merges_chunks_warns_and_names_a_scale_that_does_not():
    warnings = scale_effects(CRIS, 0.25)
    assert any("merges cells: 10 become 2" in w and "4x30x9x717 and 1x30x9x717" in w for w in warnings), warnings
    assert any("fits cache 1 MiB" in w and "does not fit the scaled cache" in w for w in warnings), warnings
    keeps = float(warnings[-1].split()[1])
    assert 0.25 < keeps < 1
    assert scale_effects(CRIS, keeps) == []


def test_scale_that_pushes_a_fitting_chunk_out_of_its_cache_warns():
    warnings = scale_effects(CRIS, 0.5)
    assert not any("merges" in w for w in warnings)
    assert any("chunk 1x30x9x717" in w and "does not fit" in w for w in warnings), warnings


def test_check_prints_the_warnings_run_prints(tmp_path, cli):
    r = cli("check", str(CRIS), "--scale", "0.25")
    assert r.exit_code == 0
    assert "ccp: warning: --scale 0.25 merges cells" in r.output


@pytest.mark.parametrize("shape", ["[8.5, 6]", "'8.5x6'", "[true, 6]"], ids=["float", "float-string", "bool"])
def test_scale_does_not_turn_a_bad_shape_into_a_good_one(tmp_path, shape, cli):
    sweep = tmp_path / "s.yaml"
    sweep.write_text(f"name: t\ndataset:\n  generate: {{shape: {shape}, dtype: '<f4'}}\n")
    r = cli("check", str(sweep), "--scale", "0.5")
    assert r.exit_code == 2 and "dataset.generate.shape" in r.output, r.output
