"""`ccp tune`: the chunk shape, filter and chunk cache for a workload.

Pipeline, pure planning apart from execution (as rechunker keeps it):

- :mod:`ccp.tune.workload`   the workload file -> frozen, validated dataclasses
- :mod:`ccp.tune.lattice`    candidate chunk shapes and caches (pure math)
- :mod:`ccp.tune.heuristics` the rules of thumb the tuner is compared with (pure math)
- :mod:`ccp.tune.search`     cost of each candidate from the model and a calibration; Pareto front (no I/O)
- :mod:`ccp.tune.costs`      the prices: probes of this machine and the dataset's own data, per run
- :mod:`ccp.tune.prove`      measures the pick, the current layout and the heuristics with the sweep engine
- :mod:`ccp.tune.tune`       the whole run; the pick is the fastest measured (after a runoff of the close ones)
- :mod:`ccp.tune.answer`     the console table and summary: each time against the pick's of the same round
- :mod:`ccp.tune.command`    the click command
"""
