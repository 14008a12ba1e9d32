"""A multiprocessing pool torn down by its own parent (``with Pool()``, ``terminate()``) leaves a complete trace;
a child killed outright still makes it incomplete (issue 23, F4)."""

import json
import textwrap

import pytest
from traced_program import trace_program

PROGRAM = textwrap.dedent("""
    import os, signal, sys, multiprocessing as mp, h5py, numpy as np
    path, method, ending = sys.argv[1], "{method}", "{ending}"

    def work(i):
        with h5py.File(path, "r") as f:
            return float(f["x"][i])

    def work_then_die():
        work(3)
        os.kill(os.getpid(), signal.SIGKILL)

    if __name__ == "__main__":
        with h5py.File(path, "w") as f:
            f.create_dataset("x", data=np.arange(100.0), chunks=(10,))
        ctx = mp.get_context(method)
        if ending == "kill9-child":          # a child that dies outright: its exit hook never runs
            c = ctx.Process(target=work_then_die)
            c.start()
            c.join()
            total = 4950.0
        elif ending == "with":               # leaving the block calls terminate()
            with ctx.Pool(2) as p:
                total = sum(p.map(work, range(40)))
        else:
            p = ctx.Pool(2)
            total = sum(p.map(work, range(40)))
            if ending == "close":
                p.close()
            else:
                p.terminate()
            p.join()
        print("sum", total)
""")


@pytest.mark.parametrize("method,ending,complete", [
    ("fork", "with", True),
    ("fork", "terminate", True),
    ("fork", "close", True),
    ("forkserver", "terminate", True),
    ("spawn", "with", True),
    ("fork", "kill9-child", False),
], ids=lambda v: str(v))
def test_a_pool_torn_down_by_its_parent_is_a_complete_trace(tmp_path, method, ending, complete):
    out = trace_program(tmp_path, PROGRAM.replace("{method}", method).replace("{ending}", ending))
    head = json.loads((out / "trace.json").read_text())
    c = head["completeness"]
    assert c["complete"] is complete, c["reasons"]
    if complete:                                 # each worker call is in the trace, whoever ended the workers
        assert head["calls"] >= 40
    else:
        assert any("without the recorder's exit hook" in x for x in c["reasons"]), c["reasons"]
