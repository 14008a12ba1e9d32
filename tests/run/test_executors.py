"""Which executor runs a sweep. What every executor must do with a cell is one suite: test_every_runner.py."""

from ccp.run.executors import ForkedExecutor, InlineExecutor
from ccp.run.sweep import choose_executor


def test_the_executor_is_chosen_once():
    assert isinstance(choose_executor("local"), ForkedExecutor)
    assert choose_executor("local", cell_timeout=3).cell_timeout == 3
    assert isinstance(choose_executor("local", isolate=False), InlineExecutor)
    mine = InlineExecutor()
    assert choose_executor(mine) is mine
