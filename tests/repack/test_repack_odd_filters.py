"""Every registered filter x odd HDF5 datatypes (issue 21): each combination either round-trips (values
read back equal; through a lossy filter, within its rounding) or is refused before anything is written;
never a crash (each case runs in a forked child, so a SIGSEGV or SIGFPE is seen, not suffered)."""

import os
import subprocess
import sys

import h5py
import pytest
from odd_types import filter_specs, make_odd_types_file

from ccp.errors import CcpError
from ccp.repack.compare import differences
from ccp.repack.copy import repack

SPECS = filter_specs()
# what HDF5 or a plugin accepts and then crashes on, or stores wrongly: these must be refused
MUST_REFUSE = {
    ("nbit", "/vlen_str"), ("nbit", "/vlen_seq"), ("nbit", "/f16"),
    ("blosc", "/vlen_str"), ("blosc", "/vlen_seq"), ("blosc2", "/vlen_str"), ("blosc2", "/vlen_seq"),
    ("scaleoffset", "/float_nan_fill"), ("scaleoffset:2", "/float_nan_fill"), ("scaleoffset", "/enum"),
    ("scaleoffset:2", "/int_u8"), ("scaleoffset:2", "/int_be"),   # 2 bits cannot hold their range: read back
}


@pytest.fixture(scope="module")
def odd(tmp_path_factory):
    """The file of every odd type, and one small file per dataset (keeps each case cheap)."""
    folder = tmp_path_factory.mktemp("odd")
    datasets = make_odd_types_file(folder / "odd.h5")
    for dset in datasets:
        make_odd_types_file(folder / f"{dset.strip('/')}.h5", keep=dset)
    return folder / "odd.h5", datasets


def _outcome(src, dst, dset, spec) -> str:
    """Repack one dataset with one filter in a forked child; the child's verdict, or the signal it died of."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:    # pragma: no cover - the child
        os.close(r)
        try:
            res = repack(src, dst, {}, {dset: spec}, threads=1)
            diffs = differences(src, dst, layouts_may_differ=True)
            lossy = any("lossy filter" in n for n in res.notes)
            verdict = "lossy" if diffs and lossy else (f"wrong: {diffs[0]}" if diffs else "exact")
            with h5py.File(src, "r") as fi, h5py.File(dst, "r") as fo:
                if fi[dset].id.get_type().committed() and not fo[dset].id.get_type().committed():
                    verdict = "wrong: named datatype lost"
        except CcpError as exc:
            verdict = f"read-back mismatch: {exc}" if "read back differs" in str(exc) and \
                (spec, dset) not in MUST_REFUSE else "refused"
        except BaseException as exc:  # the verdict names it
            verdict = f"internal: {type(exc).__name__}: {exc}"
        os.write(w, verdict.encode()[:4000])
        os._exit(0)
    os.close(w)
    chunks = []
    while True:
        data = os.read(r, 4096)
        if not data:
            break
        chunks.append(data)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return f"crash: signal {os.WTERMSIG(status)}"
    return b"".join(chunks).decode()


# the filters HDF5 or a plugin crashed on (and gzip) in make test; every filter in make test-slow (CI)
FAST_SPECS = {"gzip", "nbit", "blosc", "blosc2", "scaleoffset", "scaleoffset:2"}


@pytest.mark.parametrize("spec", [s if s in FAST_SPECS else pytest.param(s, marks=pytest.mark.slow) for s in SPECS], ids=SPECS)
def test_every_filter_on_odd_types_round_trips_or_is_refused(odd, tmp_path, spec):
    src, datasets = odd
    bad = {}
    for dset in datasets:
        dst = tmp_path / f"out{dset.replace('/', '_')}.h5"
        verdict = _outcome(str(src.parent / f"{dset.strip('/')}.h5"), str(dst), dset, spec)
        if (spec, dset) in MUST_REFUSE and verdict != "refused":
            bad[dset] = f"must be refused, got {verdict}"
        elif verdict not in ("exact", "refused") and not (verdict == "lossy" and spec.startswith("scaleoffset")):
            bad[dset] = verdict
        if verdict == "refused":
            assert not dst.exists(), f"{dset}: refused but {dst.name} was written"
    assert not bad, bad
    assert not [p for p in os.listdir(tmp_path) if ".ccp-tmp-" in p], "a temp file was left"


@pytest.mark.parametrize(("option", "words"), [
    ("/vlen_str:NBIT", ["/vlen_str", "nbit", "string(vlen"]),
    ("/vlen_seq:blosc", ["/vlen_seq", "blosc", "vlen(<i4)"]),
    ("/float_nan_fill:SOFF=0,IN", ["/float_nan_fill", "scaleoffset", "<f8", "SOFF=0,DS"]),
    ("/float_nan_fill:SOFF=3,DS", ["/float_nan_fill", "NaN"]),
    ("/int_u8:SOFF=2,DS", ["/int_u8", "SOFF=2,IN"]),
    ("/int_u8:SOFF=2,IN", ["/int_u8", "read back", "SOFF=0,IN"]),
], ids=["nbit-vlen-str", "blosc-vlen-seq", "soff-in-on-float", "soff-nan-fill", "soff-ds-on-int", "soff-too-few-bits"])
def test_cli_refuses_in_one_line_and_writes_nothing(odd, tmp_path, option, words):
    src, _ = odd
    out = tmp_path / "out.h5"
    done = subprocess.run([sys.executable, "-m", "ccp.cli", "repack", "-q", "-f", option, str(src), str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ccp: error: "), done.stderr
    assert all(w in lines[0] for w in words), lines[0]
    assert os.listdir(tmp_path) == [], os.listdir(tmp_path)
