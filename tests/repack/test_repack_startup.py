"""``ccp repack`` starts numpy with one OpenBLAS thread (it does no linear algebra), unless the user set it."""

import os

import pytest

from ccp.cli import one_blas_thread


@pytest.mark.parametrize(("before", "after"), [(None, "1"), ("4", "4")], ids=["unset", "users-own"])
def test_one_blas_thread_keeps_a_users_setting(monkeypatch, before, after):
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", before or "")   # recorded: the worker's own setting comes back after
    if before is None:
        monkeypatch.delenv("OPENBLAS_NUM_THREADS")
    one_blas_thread()
    assert os.environ["OPENBLAS_NUM_THREADS"] == after
