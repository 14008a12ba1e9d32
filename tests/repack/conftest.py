import pytest
from repack_helpers import make_rich_file


@pytest.fixture
def rich(tmp_path):
    return make_rich_file(tmp_path / "in.h5")


@pytest.fixture
def counted(monkeypatch):
    """Source chunk reads of every copy (one entry a pass), as the writer's reader counts them."""
    from ccp.repack import chunks as chunks_mod

    reads: list = []
    close = chunks_mod._SourceReader.close

    def counting_close(self):
        reads.append(self.chunk_reads)
        close(self)

    monkeypatch.setattr(chunks_mod._SourceReader, "close", counting_close)
    return reads
