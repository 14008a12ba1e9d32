import pytest
from repack_helpers import make_rich_file


@pytest.fixture
def rich(tmp_path):
    return make_rich_file(tmp_path / "in.h5")
