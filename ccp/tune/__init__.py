"""`ccp tune`: the chunk shape, filter and chunk cache for a workload.

Pipeline, pure planning apart from execution (as rechunker keeps it):

- :mod:`ccp.tune.workload`   the workload file -> frozen, validated dataclasses
- :mod:`ccp.tune.lattice`    candidate chunk shapes and caches (pure math)
- :mod:`ccp.tune.heuristics` the rules of thumb the tuner is compared with (pure math)
- :mod:`ccp.tune.search`     cost of each candidate from the model and a calibration; Pareto front (no I/O)
- :mod:`ccp.tune.prove`      measures the pick, the current layout and the heuristics with the sweep engine
- :mod:`ccp.tune.command`    the click command
"""
