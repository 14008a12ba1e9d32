"""A multiprocessing pool torn down by its own parent (``with Pool()``, ``terminate()``) leaves a complete trace,
even when it terminates a worker still starting; a child killed outright still makes it incomplete (issue 23, F4)."""

import json
import textwrap

import pytest
from traced_program import trace_program

PROGRAM = textwrap.dedent("""
    import os, signal, sys, time, multiprocessing as mp, h5py, numpy as np
    path, method, ending = sys.argv[1], "{method}", "{ending}"

    def second_starts_late(marker):
        # unpickled in each worker before multiprocessing's own start-up is done (where a forkserver's child imports
        # this program, h5py and numpy): the second worker here sleeps, the first does every task, and terminate()
        # finds the second still starting, as a loaded machine did now and then
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            time.sleep(60)
        return marker

    class StartsLate:
        def __init__(self, marker):
            self.marker = marker

        def __reduce__(self):
            return second_starts_late, (self.marker,)

    def ready(_marker):
        pass

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
        elif ending == "terminate-late-start":
            p = ctx.Pool(2, initializer=ready, initargs=(StartsLate(path + ".marker"),))
            total = sum(p.map(work, range(40)))
            p.terminate()
            p.join()
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


# make test keeps each start method and each ending once (fork-with, fork-close, forkserver-terminate,
# spawn-terminate-late-start, fork-kill9-child); the other pairings run in make test-slow (CI)
@pytest.mark.parametrize("method,ending,complete", [
    ("fork", "with", True),
    pytest.param("fork", "terminate", True, marks=pytest.mark.slow),   # forkserver-terminate in make test
    ("fork", "close", True),
    ("forkserver", "terminate", True),
    pytest.param("spawn", "with", True, marks=pytest.mark.slow),       # fork-with; spawn-terminate-late-start
    pytest.param("forkserver", "terminate-late-start", True,           # a worker terminated before it could run a
                 marks=pytest.mark.slow),                              # task lost nothing: spawn's in make test
    ("spawn", "terminate-late-start", True),
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


@pytest.mark.parametrize("module,expected", [
    ("multiprocessing.popen_fork", True),       # a fork Process or Pool worker
    ("multiprocessing.forkserver", True),       # a forkserver's child
    ("__main__", False),                        # the program's own os.fork(): its SIGTERM stays the default
    ("concurrent.futures.process", False),
], ids=lambda v: str(v))
def test_a_child_is_multiprocessing_s_when_multiprocessing_called_fork(module, expected):
    from ccp.trace.hooks import forked_by_multiprocessing

    namespace = {"__name__": module, "hook": forked_by_multiprocessing}
    exec(compile("def fork():\n    return hook()\n", f"<{module}>", "exec"), namespace)  # a caller in that module
    assert namespace["fork"]() is expected


STUCK_IN_C = textwrap.dedent("""
    import ctypes, os, sys, time, multiprocessing as mp, h5py, numpy as np
    path = sys.argv[1]

    def work_then_wait_in_c(i):
        # glibc's system() waits for its child again when a signal interrupts it, so Python never runs this worker's
        # SIGTERM handler while it waits (as in a sem_wait woken just as its parent terminates the pool); the cat
        # waits for this worker to die
        r, w = os.pipe()
        os.set_inheritable(r, True)
        with h5py.File(path, "r") as f:
            f["x"][i]
        open(f"{path}.{i}.waiting", "w").close()
        ctypes.CDLL(None).system(f"exec cat <&{r} >/dev/null".encode())

    if __name__ == "__main__":
        with h5py.File(path, "w") as f:
            f.create_dataset("x", data=np.arange(100.0), chunks=(10,))
        p = mp.get_context("{method}").Pool(2)
        p.map_async(work_then_wait_in_c, range(2), chunksize=1)
        while not all(os.path.exists(f"{path}.{i}.waiting") for i in range(2)):
            time.sleep(0.05)
        time.sleep(0.5)
        p.terminate()
        p.join()
        print("both workers ended")
""")


@pytest.mark.parametrize("method", ["fork", pytest.param("forkserver", marks=pytest.mark.slow)])   # a forkserver's child had the forkserver's wakeup fd
def test_a_pool_worker_terminated_inside_a_long_c_call_ends_and_keeps_its_calls(tmp_path, method):
    # without the recorder's backstop the program waited forever
    out = trace_program(tmp_path, STUCK_IN_C.replace("{method}", method), timeout=180)
    head = json.loads((out / "trace.json").read_text())
    assert head["completeness"]["complete"] is True, head["completeness"]["reasons"]
    assert head["calls"] >= 3               # the parent's write and each worker's read


OWN_HANDLER = textwrap.dedent("""
    import os, signal, sys, time, multiprocessing as mp, h5py, numpy as np
    path = sys.argv[1]

    def child():
        got = []
        signal.signal(signal.SIGTERM, lambda *_: got.append(1))    # the program's own: SIGTERM only asks
        open(path + ".ready", "w").close()
        while not got:
            time.sleep(0.01)
        time.sleep(3)                       # its own time to leave, longer than the recorder's backstop waits
        with h5py.File(path, "r") as f:
            f["x"][1]

    if __name__ == "__main__":
        with h5py.File(path, "w") as f:
            f.create_dataset("x", data=np.arange(100.0), chunks=(10,))
        c = mp.get_context("fork").Process(target=child)
        c.start()
        while not os.path.exists(path + ".ready"):
            time.sleep(0.05)
        c.terminate()
        c.join()
        open(path + ".exitcode", "w").write(str(c.exitcode))
""")


@pytest.mark.slow
def test_a_child_with_its_own_sigterm_handler_leaves_in_its_own_time(tmp_path):
    out = trace_program(tmp_path, OWN_HANDLER)
    assert (tmp_path / "data.h5.exitcode").read_text() == "0"
    head = json.loads((out / "trace.json").read_text())
    assert head["completeness"]["complete"] is True, head["completeness"]["reasons"]
    assert head["calls"] >= 2               # the parent's write and the child's read after its SIGTERM


@pytest.mark.parametrize("worker_lines,complete", [
    ([["11", "start", "10", "fork"], ["11", "end", "0", "0", ""]], True),
    ([["11", "end", "0", "0", ""]], True),          # its "start" was cut short by the SIGTERM it answered
    ([], False),                                    # nothing from it: it ran without the recorder as far as we know
], ids=["start-end", "end-only", "silent"])
def test_a_process_s_end_line_accounts_for_it(worker_lines, complete):
    from ccp.trace.store import completeness

    run = {"returncode": 0, "pid": 10, "top_is_python": True, "python_seen": {11: "python -c forkserver"},
           "status_lines": [["10", "start", "1", "prog.py"], ["10", "end", "5", "0", ""], *worker_lines]}
    c = completeness(run, {10}, [], [])
    assert c["complete"] is complete, c["reasons"]
