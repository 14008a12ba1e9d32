"""Every case-study notebook runs top to bottom at a small scale (a broken notebook fails CI), and the\nreport of each config it runs loads in a real browser."""

from pathlib import Path

import pytest

# each notebook is 10-40 s of a quiet core: `make test` skips them, `.ci/run` runs them (`make test-slow`)
pytestmark = pytest.mark.slow

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
SCALES = {"cris_case_study.ipynb": 0.5, "seed004_netcdf.ipynb": 0.25, "s3_object_storage.ipynb": 0.25}


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_at_small_scale(path, tmp_path, browser_check):
    nb = nbformat.read(path, as_version=4)
    params = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(params) == 1, "a notebook needs exactly one cell tagged 'parameters'"
    params[0].source = f"SCALE = {SCALES.get(path.name, 0.2)}\nOUT_ROOT = {str(tmp_path)!r}"
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    # each notebook writes its config's report: it must render in a real browser
    pages = sorted(tmp_path.rglob("report.html"))
    assert pages
    for page in pages:
        assert browser_check(page) >= 3
