""""Read the block once": its chunk loads are the chunks the block touches, under the program's own cache (the cure
changes the reading, not the cache), however thin the block is against a chunk (finding 5: a 40x60x1 block of 1x60x80
chunks was priced at 0 chunk loads under a cache cut to the block's 9.4 KiB, which held no chunk)."""

import json

import h5py
import numpy as np
import pytest
from test_diagnose_cures import make_trace

from ccp.trace.check import load_checked
from ccp.trace.diagnose import diagnose

SHAPE, CHUNKS = (40, 60, 80), (1, 60, 80)


@pytest.mark.parametrize("filtered", [False, True], ids=["unfiltered", "deflate"])
def test_the_block_read_once_loads_every_chunk_it_touches(tmp_path, filtered):
    data = str(tmp_path / "unl.h5")
    with h5py.File(data, "w") as f:
        f.create_dataset("unl", data=np.zeros(SHAPE, "f4"), chunks=CHUNKS, compression="gzip" if filtered else None)
    reads = [("/unl", (i, 0, 5), (1, 60, 1)) for _ in range(3) for i in range(40)]     # d[i, :, 5], three passes
    folder = make_trace(tmp_path / "trace", data, {"/unl": (SHAPE, CHUNKS)}, reads)
    if not filtered:
        header = json.loads((folder / "trace.json").read_text())
        header["datasets"][0]["filters"] = []
        (folder / "trace.json").write_text(json.dumps(header))
    d = diagnose(load_checked(folder), tune_dir=None)["datasets"][0]
    once = next(c for c in d["cures"] if c["cure"].startswith("read the block once"))
    assert once["chunk_loads"] == 40, once
    assert "40x60x1 box" in once["why"] and "40 chunk loads" in once["why"]
