"""Files read through fsspec file objects: recorded as what they are, their GETs counted per call, fsspec cures."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("fsspec")

ROOT = Path(__file__).resolve().parents[2]

# A filesystem whose files are fsspec AbstractBufferedFiles over a local file: every byte range fsspec's cache
# fetches is one _fetch_range (one GET for s3fs or http), with an emulated 5 ms per request.
PROGRAM = '''
import os, sys, time
import fsspec, h5py, numpy as np
from fsspec.spec import AbstractBufferedFile, AbstractFileSystem

FETCHES = []


class RangeFile(AbstractBufferedFile):
    def _fetch_range(self, start, end):
        FETCHES.append((start, end))
        time.sleep(0.005)
        with open(self.path, "rb") as f:
            f.seek(start)
            return f.read(end - start)


class RangeFS(AbstractFileSystem):
    protocol = "ranged"

    def _open(self, path, mode="rb", block_size=None, autocommit=True, cache_options=None, **kwargs):
        return RangeFile(self, path, mode, block_size, cache_options=cache_options, size=os.path.getsize(path), **kwargs)


path, cache_type, block = sys.argv[1], sys.argv[2], int(sys.argv[3])
fs = RangeFS()
with fs.open(path, "rb", cache_type=cache_type, block_size=block) as fobj, h5py.File(fobj, "r") as f:
    d = f["x"]
    for i in range(0, 200, 10):
        d[i, :]
print("fetches:", len(FETCHES))
print("dataset calls: 20")
'''


def ccp(*args):
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("CCP_TRACE")}
    return subprocess.run([sys.executable, "-m", "ccp.cli", *map(str, args)], check=False, capture_output=True,
                          text=True, env={**env, "PYTHONPATH": str(ROOT)}, timeout=600)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    import h5py
    import numpy as np

    path = tmp_path_factory.mktemp("remote") / "data.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(200 * 300, dtype="f4").reshape(200, 300), chunks=(20, 30))
    return path


@pytest.mark.parametrize("cache_type,block", [("none", 4096), pytest.param("readahead", 65536, marks=pytest.mark.slow),
                                               pytest.param("blockcache", 16384, marks=pytest.mark.slow)],
                         ids=["none", "readahead", "blockcache"])
def test_an_fsspec_file_is_recorded_with_its_gets_counted(tmp_path, data, cache_type, block):
    prog = tmp_path / "remote_reader.py"
    prog.write_text(PROGRAM)
    out = tmp_path / "t"
    r = ccp("trace", "-o", out, "--", sys.executable, prog, data, cache_type, block)
    assert r.returncode == 0, r.stderr
    fetches = int(r.stdout.split("fetches: ")[1].split()[0])
    plain = subprocess.run([sys.executable, prog, data, cache_type, str(block)], capture_output=True, text=True,
                           check=True, timeout=600)
    assert int(plain.stdout.split("fetches: ")[1].split()[0]) == fetches     # recording changed no GET
    url = f"ranged://{data}"
    t = pd.read_parquet(out / "calls.parquet")
    gets = t[(t["op"] == "get").fillna(False)]
    assert len(gets) == fetches > 0 and set(gets["file"]) == {url}
    calls = t[((t["kind"] == "call") & (t["depth"] == 0)).fillna(False)]
    assert len(calls) == 20 and set(calls["file"]) == {url}          # the URL, never the object's repr
    (lay,) = json.loads((out / "trace.json").read_text())["datasets"]
    assert lay["remote"]["url"] == url and lay["remote"]["cache_type"] == cache_type
    assert lay["remote"]["block_size"] == block and lay["remote"]["filesystem"] == "RangeFS"
    d = ccp("diagnose", "--json", out)
    assert d.returncode == 0, d.stderr
    rem = json.loads(d.stdout)["datasets"][0]["remote"]
    assert rem["gets"] == fetches and rem["gets_in_calls"] + rem["gets_outside_calls"] == fetches
    text = ccp("diagnose", out).stdout
    assert f"fsspec's {cache_type} cache replayed over the" in text and f"GET(s) (counted: {fetches})" in text
    model = int(text.split(f"fsspec's {cache_type} cache replayed over the ")[1].split("gives ")[1].split()[0])
    assert model == fetches                       # fsspec's cache rules, replayed, agree with the GETs counted
    assert "<File-like object" not in text


def test_many_small_gets_get_an_fsspec_cure(tmp_path, data):
    prog = tmp_path / "remote_reader.py"
    prog.write_text(PROGRAM)
    out = tmp_path / "t"
    r = ccp("trace", "-o", out, "--", sys.executable, prog, data, "none", 4096)
    assert r.returncode == 0, r.stderr
    d = ccp("diagnose", out)
    assert d.returncode == 0, d.stderr
    assert "cache_type='none', block_size=4 KiB" in d.stdout
    assert f'f = fs.open("ranged://{data}", "rb", cache_type=' in d.stdout
    assert "ccp s3 cloud-copy" in d.stdout and "ccp repack" not in d.stdout


S3_PROGRAM = '''
import sys
import h5py, s3fs
from ccp.remote.network import instrument

endpoint, key, secret, region, obj = sys.argv[1:6]
fs = s3fs.S3FileSystem(key=key, secret=secret, client_kwargs={"endpoint_url": endpoint, "region_name": region},
                       skip_instance_cache=True, use_listings_cache=False)
with fs.open(obj, "rb", cache_type="readahead", block_size=65536) as raw:
    log = instrument(raw)                 # ccp's own GET counter, independent of the recorder
    with h5py.File(raw, "r") as f:
        d = f["x"]
        for i in range(0, 200, 20):
            d[i, :]
print("gets:", log.http_gets)
'''


@pytest.mark.skipif(any(__import__("importlib").util.find_spec(m) is None for m in ("moto", "s3fs", "flask")),
                    reason="needs the s3 extra (moto[server], s3fs)")
@pytest.mark.slow
def test_an_s3fs_file_on_a_loopback_s3_server_is_recorded_as_its_url(tmp_path, data):
    from ccp.remote.s3 import Credentials, S3Settings, S3Store
    from ccp.remote.server import S3Server

    prog = tmp_path / "s3_reader.py"
    prog.write_text(S3_PROGRAM)
    with S3Server() as ep:
        store = S3Store(S3Settings(ep.url, "ccp-trace"), Credentials(ep.access_key, ep.secret_key, ep.region))
        store.create_bucket()
        up = store.upload(data)
        store.close()
        out = tmp_path / "t"
        r = ccp("trace", "-o", out, "--", sys.executable, prog, ep.url, ep.access_key, ep.secret_key, ep.region,
                f"ccp-trace/{up.key}")
    assert r.returncode == 0, r.stderr
    counted = int(r.stdout.split("gets: ")[1].split()[0])
    (lay,) = json.loads((out / "trace.json").read_text())["datasets"]
    assert lay["remote"]["url"] == f"s3://ccp-trace/{up.key}" and lay["remote"]["filesystem"] == "S3FileSystem"
    t = pd.read_parquet(out / "calls.parquet")
    assert int((t["op"] == "get").fillna(False).sum()) == counted > 0
    d = ccp("diagnose", out)
    assert d.returncode == 0, d.stderr
    assert f"GET(s) (counted: {counted})" in d.stdout and "s3://ccp-trace/" in d.stdout


@pytest.fixture(scope="module")
def none_trace(tmp_path_factory, data):
    tmp = tmp_path_factory.mktemp("remote-trace")
    prog = tmp / "remote_reader.py"
    prog.write_text(PROGRAM)
    out = tmp / "t"
    r = ccp("trace", "-o", out, "--", sys.executable, prog, data, "none", 4096)
    assert r.returncode == 0, r.stderr
    return out


@pytest.mark.parametrize("batch_rows", [pytest.param(3, marks=pytest.mark.slow), 17, 200_000],   # 17 rows: two batches
                         ids=["3-rows", "17-rows", "one-batch"])      # of the 20-call trace in make test
def test_an_fsspec_trace_streams_to_the_whole_table_diagnosis(none_trace, batch_rows, monkeypatch):
    """The GETs and reads of a file read through fsspec are kept while the batches go by (not the whole table):
    the same diagnosis, GET counts and fsspec cures as the table loaded whole."""
    from ccp.trace import stream
    from ccp.trace.check import load_checked
    from ccp.trace.diagnose import diagnose, format_diagnosis

    whole = diagnose(load_checked(none_trace), tune_dir=None)
    monkeypatch.setattr("ccp.trace.check.load_trace", lambda *a, **k: pytest.fail("the trace was loaded whole"))
    streamed = stream.diagnose_folder(none_trace, batch_rows=batch_rows)
    assert json.dumps(streamed, sort_keys=True, default=str) == json.dumps(whole, sort_keys=True, default=str)
    assert format_diagnosis(streamed) == format_diagnosis(whole)
    assert streamed["datasets"][0]["remote"]["gets"] > 0 and "fsspec cache_type=" in format_diagnosis(streamed)


# One URL opened three times with other fsspec settings: each open has its own cache (breaker5 F10).
THREE_OPENS = PROGRAM.rsplit("path, cache_type", 1)[0] + '''
path = sys.argv[1]
fs = RangeFS()
for cache_type, block in (("none", 4096), ("readahead", 65536), ("blockcache", 16384)):
    with fs.open(path, "rb", cache_type=cache_type, block_size=block) as fobj, h5py.File(fobj, "r") as f:
        d = f["x"]
        for i in range(0, 200, 20):
            d[i, :]
print("fetches:", len(FETCHES))
'''


def test_each_open_of_one_url_is_replayed_with_its_own_cache_type(tmp_path, data):
    prog = tmp_path / "three_opens.py"
    prog.write_text(THREE_OPENS)
    out = tmp_path / "t"
    r = ccp("trace", "-o", out, "--", sys.executable, prog, data)
    assert r.returncode == 0, r.stderr
    fetches = int(r.stdout.split("fetches: ")[1].split()[0])
    d = ccp("diagnose", out)
    assert d.returncode == 0, d.stderr
    text = d.stdout
    assert "3 settings, one per open" in text
    assert f"the program opened ranged://{data} 3 times with 3 fsspec settings: none 4 KiB" in text
    assert "readahead 64 KiB" in text and "blockcache 16 KiB" in text
    model = int(text.split("each open's own fsspec cache replayed over the ")[1].split("gives ")[1].split()[0])
    assert model == fetches                       # each open replayed with its own setting agrees with the count
    assert f"GET(s) (counted: {fetches})" in text


CACHED = '''
import sys
import fsspec, h5py
path, storage, how = sys.argv[1:4]
if how == "open":
    with fsspec.open(f"simplecache::file://{path}", "rb", simplecache={"cache_storage": storage}) as fo:
        with h5py.File(fo, "r") as f:
            for i in range(0, 200, 10):
                f["x"][i, :]
else:                       # the caching filesystem itself, no OpenFile
    fs = fsspec.filesystem("simplecache", target_protocol="file", cache_storage=storage)
    with fs.open(path, "rb") as fo, h5py.File(fo, "r") as f:
        for i in range(0, 200, 10):
            f["x"][i, :]
'''


@pytest.mark.parametrize("how", ["open", pytest.param("filesystem", marks=pytest.mark.slow)])
def test_a_simplecache_copy_is_named_by_its_url_never_the_cache_file(tmp_path, data, how):
    prog = tmp_path / "cached.py"
    prog.write_text(CACHED)
    out, storage = tmp_path / "t", tmp_path / "sc"
    r = ccp("trace", "-o", out, "--", sys.executable, prog, data, storage, how)
    assert r.returncode == 0, r.stderr
    t = pd.read_parquet(out / "calls.parquet")
    files = set(t.loc[((t["kind"] == "call") & (t["depth"] == 0)).fillna(False), "file"])
    want = f"simplecache::file://{data}" if how == "open" else "<simplecache copy of a file:// object>"
    assert files == {want}
    d = ccp("diagnose", out)
    assert d.returncode == 0, d.stderr
    assert str(storage) not in d.stdout and "ccp repack" not in d.stdout
    assert "no repack cure" in d.stdout
    if how == "open":
        assert f'fsspec.open("simplecache::file://{data}", "rb").open()' in d.stdout


@pytest.mark.parametrize("per_get, per_byte", [(0.004, 2e-9), (2e-6, 4.4e-7)], ids=["round-trips", "all-on-bytes"])
def test_a_get_cost_fit_keeps_a_round_trip(per_get, per_byte):
    import numpy as np

    from ccp.trace.remote import fit_get_cost

    nbytes = np.array([4096, 8192, 16384, 32768, 65536] * 4)
    wall = per_get + per_byte * nbytes
    a, b = fit_get_cost(nbytes, wall)
    if per_get > 0.1 * float(np.median(wall)):
        assert a == pytest.approx(per_get) and b == pytest.approx(per_byte)
    else:                       # the fit put the time on bytes: the per-GET median, never ~0 per GET
        assert a == pytest.approx(float(np.median(wall))) and b == 0.0


def test_no_get_timed_prices_none(tmp_path, data):
    prog = tmp_path / "remote_reader.py"
    prog.write_text(PROGRAM)
    out = tmp_path / "t"
    r = ccp("trace", "-o", out, "--", sys.executable, prog, data, "all", 4096)    # 'all' fetches at fs.open
    assert r.returncode == 0, r.stderr
    d = ccp("diagnose", out)
    assert d.returncode == 0, d.stderr
    assert "no GET timed, so none priced" in d.stdout and "per GET here" not in d.stdout
    assert "counted from h5py's open of the file object" in d.stdout
