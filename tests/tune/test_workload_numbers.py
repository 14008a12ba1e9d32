"""A workload's weights as YAML writes them: ``1e3`` (no dot) is text to YAML 1.1, and still the number 1000."""

import pytest

from ccp.errors import ConfigError
from ccp.tune.workload import parse_weight


@pytest.mark.parametrize("value, weight", [(1, 1.0), (2.5, 2.5), ("1e3", 1000.0), (" 4 ", 4.0), ("1.5E2", 150.0)],
                         ids=["int", "float", "exponent-text", "padded-text", "upper-exponent"])
def test_a_weight_written_as_a_number_is_one(value, weight):
    assert parse_weight(value, "workload[0].weight") == weight


@pytest.mark.parametrize("value", ["often", "nan", "inf", "-1e3", "0", True, None, "1e30"],
                         ids=["word", "nan", "inf", "negative", "zero", "bool", "none", "too-big"])
def test_anything_else_is_refused_naming_the_key(value):
    with pytest.raises(ConfigError, match=r"workload\[0\]\.weight"):
        parse_weight(value, "workload[0].weight")
