"""Differential harness: hypothesis-generated HDF5 files (random types, layouts, filters, fill
settings, attributes, links, references) repacked by ccp with and without options and compared
value by value, and with h5repack's output by h5diff. The larger run is
``benchmarks/repack_differential.py --files 2000``."""

import tempfile

from h5gen import check_example, files, options
from hypothesis import HealthCheck, Phase, given, settings


# no shrinking: a failure prints the drawn file spec at once (shrinking these specs can take minutes)
@settings(max_examples=12, deadline=None, database=None, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(spec=files(), option=options())
def test_generated_files_repack_exactly(spec, option):
    with tempfile.TemporaryDirectory() as folder:
        check_example(spec, option, folder)
