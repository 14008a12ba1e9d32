import pytest

from ccp.hdf5.filters import parse_filters
from ccp.predict import Calibration
from ccp.tune.search import Costs


@pytest.fixture
def costs():
    """Fixed costs of this order of magnitude on the dev machine: the search tests need no calibration."""
    cal = Calibration(per_request_s=2e-5, read_s_per_byte=1e-10, decode_s_per_byte={"none": 0.0, "gzip:1": 5e-9},
                      encode_s_per_byte={"none": 0.0, "gzip:1": 5e-8})
    return Costs(cal, raw_read_s=1e-6, ratio={"none": 1.0, "gzip:1": 0.5}, load_s=2e-5, visit_s=2e-6)


@pytest.fixture
def gzip():
    return parse_filters("gzip:1")


@pytest.fixture
def nofilter():
    return parse_filters("none")
