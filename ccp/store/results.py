"""The run folder: every finished cell committed atomically, so an interrupted sweep resumes.

A cell is finished when its row is in ``cells.csv``. Its per-request and I/O parts are written first
(``requests.parquet/<cell_id>.parquet``, ``io.parquet/<cell_id>.parquet``: directories that pandas
reads as one table), each by write-to-temp-then-rename, so a kill at any moment leaves either the
whole part or none; a rerun rewrites the parts of unfinished cells under the same names.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from datetime import datetime
from pathlib import Path

import pandas as pd
import yaml

from ccp.errors import CcpError
from ccp.store.row import CellRow
from ccp.store.schema import CELL_COLUMNS, FINISHED, READABLE_SCHEMA_VERSIONS, SCHEMA_VERSION, cell_columns_of

LOCK = ".ccp.lock"
_TEMP = re.compile(r"^\.[^/]+\.tmp-\d+$")     # _atomic_write's temporaries


def new_run_dir(root: Path, name: str) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    out = Path(root) / name / stamp
    n = 1
    while out.exists():
        n += 1
        out = Path(root) / name / f"{stamp}-{n}"
    return out


def _atomic_write(path: Path, write) -> None:
    """``write(tmp_path)`` then rename over ``path``; a crash leaves the old file or the new one."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        write(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise CcpError(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


class RunStore:
    def __init__(self, run_dir: Path):
        self.dir = Path(run_dir)
        self.cells_csv = self.dir / "cells.csv"
        self.cells_parquet = self.dir / "cells.parquet"
        self.requests_dir = self.dir / "requests.parquet"
        self.io_dir = self.dir / "io.parquet"
        self._lines: dict[str, str] = {}     # cell_id -> its CSV line, in commit order
        self._status: dict[str, str] = {}
        self._lock_fd: int | None = None
        self._lock_pid: int | None = None

    # -- opening ---------------------------------------------------------
    def check(self, sweep_name: str | None, dataset_identity: str, settings: dict) -> None:
        """Refuse (one line, nothing written) a folder that is not a run of this sweep with these settings.

        A new or empty folder is fine; so is one holding a ccp run of the same sweep on the same data
        measured the same way (a resume). Anything else -- someone's cells.csv, a garbage run.json, other
        files, a run of another sweep, a --quick run under a full one -- is refused.
        """
        d = self.dir
        if d.exists() and not d.is_dir():
            raise CcpError(f"--out {d}: is a file, not a folder")
        if not d.exists() or not any(p for p in d.iterdir() if p.name != LOCK and not _TEMP.match(p.name)):
            return      # new, empty, or only what a run killed before its run.json left (lock, temp files)
        meta_path = d / "run.json"
        if not meta_path.is_file():
            raise CcpError(f"--out {d}: holds files but no ccp run (no run.json); give an empty or new folder")
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise CcpError(f"--out {d}: run.json is not a ccp run record ({type(exc).__name__}); give an empty or new folder") from None
        if not isinstance(meta, dict) or "schema_version" not in meta or "dataset_identity" not in meta:
            raise CcpError(f"--out {d}: run.json is not a ccp run record; give an empty or new folder")
        if meta.get("schema_version") != SCHEMA_VERSION:
            raise CcpError(f"--out {d}: written by results schema {meta.get('schema_version')!r}, this ccp writes {SCHEMA_VERSION}; use a new --out")
        if meta.get("sweep") not in (None, sweep_name):
            raise CcpError(f"--out {d}: holds a run of sweep {meta.get('sweep')!r}, not {sweep_name!r}; use a new --out")
        if meta.get("dataset_identity") != dataset_identity:
            raise CcpError(f"--out {d}: holds a run of a different dataset; use a new --out to keep both")
        old = meta.get("settings") or {}
        for key, value in settings.items():
            if key in old and old[key] != _jsonable(value):
                raise CcpError(f"--out {d}: its cells were measured with {key}={old[key]!r}, this run has {key}={_jsonable(value)!r}; "
                               "runs measured differently cannot mix: use a new --out")
        if self.cells_csv.exists():
            try:
                with open(self.cells_csv, newline="") as fh:
                    header = next(csv.reader(fh), [])
            except (OSError, UnicodeDecodeError, csv.Error) as exc:
                raise CcpError(f"--out {d}: cells.csv is unreadable ({type(exc).__name__}); use a new --out") from None
            if header != CELL_COLUMNS:
                raise CcpError(f"--out {d}: cells.csv is not one ccp wrote (its columns differ); use a new --out")

    def lock(self) -> None:
        """One run per folder: an flock on ``.ccp.lock`` holding our pid; the kernel drops it when we die."""
        import fcntl

        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.dir / LOCK
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
                os.close(fd)
                raise CcpError(f"--out {self.dir}: another ccp run (pid {holder}) is writing into it; wait for it or use a new --out") from None
            try:
                same = os.fstat(fd).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if same:       # not a lock file its last holder unlinked while we waited: ours
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._lock_fd = fd
        self._lock_pid = os.getpid()

    def unlock(self) -> None:
        fd = self._lock_fd
        if fd is None or self._lock_pid != os.getpid():     # a forked worker never releases its parent's lock
            return
        (self.dir / LOCK).unlink(missing_ok=True)
        os.close(fd)
        self._lock_fd = None

    def open(self, sweep_doc: dict, dataset_identity: str, settings: dict | None = None) -> None:
        """Create the folder, or resume one holding a run of the same sweep (see :meth:`check`)."""
        settings = settings or {}
        name = sweep_doc.get("name")
        self.check(name, dataset_identity, settings)
        self.dir.mkdir(parents=True, exist_ok=True)
        meta_path = self.dir / "run.json"
        meta: dict = json.loads(meta_path.read_text()) if meta_path.exists() else {
            "schema_version": SCHEMA_VERSION, "dataset_identity": dataset_identity}
        meta.setdefault("sweep", name)
        meta["settings"] = {**(meta.get("settings") or {}), **{k: _jsonable(v) for k, v in settings.items()}}
        _atomic_write(meta_path, lambda p: p.write_text(json.dumps(meta, indent=2)))
        _atomic_write(self.dir / "sweep.yaml", lambda p: p.write_text(yaml.safe_dump(sweep_doc, sort_keys=False)))
        self.requests_dir.mkdir(exist_ok=True)
        self.io_dir.mkdir(exist_ok=True)
        for stale in [*self.dir.glob(".*.tmp-*"), *self.requests_dir.glob(".*.tmp-*"), *self.io_dir.glob(".*.tmp-*")]:
            stale.unlink(missing_ok=True)      # left by a killed run; never part of a result
        if self.cells_csv.exists():
            with open(self.cells_csv, newline="") as fh:
                for rec in csv.DictReader(fh):
                    self._lines[rec["cell_id"]] = _csv_line([rec.get(c, "") for c in CELL_COLUMNS])
                    self._status[rec["cell_id"]] = rec.get("status", "")
            for cid in {p.stem for p in [*self.requests_dir.glob("*.parquet"), *self.io_dir.glob("*.parquet")]} - set(self.done_ids()):
                self.write_parts(cid, None, None)   # parts without a finished row: a killed or failed cell's
            self.finalize()   # a killed run left cells.parquet behind cells.csv

    def write_env(self, env: dict) -> None:
        _atomic_write(self.dir / "env.json", lambda p: p.write_text(json.dumps(env, indent=2, default=str)))

    # -- cells -----------------------------------------------------------
    def done_ids(self, include_failed: bool = False) -> set[str]:
        return {cid for cid, st in self._status.items() if include_failed or st in FINISHED}

    def write_parts(self, cid: str, requests: pd.DataFrame | None, io: pd.DataFrame | None) -> None:
        """A cell's per-request and I/O tables; written before its row (workers call this)."""
        for folder, df in ((self.requests_dir, requests), (self.io_dir, io)):
            part = folder / f"{cid}.parquet"
            if df is not None and len(df):
                _atomic_write(part, lambda p, df=df: df.to_parquet(p, index=False))
            else:
                part.unlink(missing_ok=True)

    def commit_row(self, row: CellRow) -> None:
        """The row is the cell's commit record: once it is in cells.csv the cell is finished.

        cells.csv is rewritten whole (temp file, fsync, rename) from lines kept in memory, so a kill
        at any moment leaves the previous complete file or the new one; it costs well under a
        millisecond per cell even for thousands of cells.
        """
        if not isinstance(row, CellRow):     # a dict would let a misspelt column through as an empty one
            raise TypeError(f"RunStore.commit_row takes a CellRow, not {type(row).__name__}")
        cid = row.cell_id
        self._lines.pop(cid, None)
        self._lines[cid] = _csv_line([_csv_value(v) for v in row.values()])
        self._status[cid] = str(row.status)
        text = _csv_line(CELL_COLUMNS) + "".join(self._lines.values())
        _atomic_write(self.cells_csv, lambda p: p.write_text(text))

    def finalize(self) -> None:
        """cells.parquet from cells.csv: written at the end of a run (and when one resumes)."""
        if self.cells_csv.exists():
            df = self.cells_frame()
            try:
                _atomic_write(self.cells_parquet, lambda p: df.to_parquet(p, index=False))
            except (OverflowError, ValueError, TypeError):
                # a row no int64 holds (an older ccp let `cache: [10**30]` through): keep such columns as
                # text rather than fail every rerun into this folder
                for col in [c for c in df.columns if pd.api.types.is_object_dtype(df[c])]:
                    df[col] = df[col].map(lambda v: v if v is None or isinstance(v, (str, float)) else str(v))
                _atomic_write(self.cells_parquet, lambda p: df.to_parquet(p, index=False))

    def cells_frame(self) -> pd.DataFrame:
        return read_cells(self.dir, csv_only=True)


def check_run_folder(run_dir: Path, name: str | None = None) -> None:
    """One line unless ``run_dir`` holds a run ccp wrote (run.json a run record, cells.csv with ccp's columns).

    For readers of a finished run (`ccp report`, `ccp compare`): someone's own cells.csv is not a run. ``name``: the
    argument that gave the folder (``RUN_B``), said in the line; a reader's words, not a resume's (`--out`, breaker10 B6).
    """
    d = Path(run_dir)
    where = f"{name} {d}" if name else str(d)
    if not (d / "cells.csv").is_file():
        raise CcpError(f"{where}: not a ccp run folder (no cells.csv)")
    try:
        meta = json.loads((d / "run.json").read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        meta = None
    if not isinstance(meta, dict) or "schema_version" not in meta or "dataset_identity" not in meta:
        raise CcpError(f"{where}: not a ccp run folder (no readable run.json beside cells.csv)")
    version = meta.get("schema_version")
    if version != SCHEMA_VERSION and version not in READABLE_SCHEMA_VERSIONS:   # older versions are read (filled)
        raise CcpError(f"{where}: written by results schema {version!r}, this ccp reads "
                       f"{', '.join(map(str, READABLE_SCHEMA_VERSIONS))}")
    try:
        with open(d / "cells.csv", newline="") as fh:
            header = next(csv.reader(fh), [])
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise CcpError(f"{where}: cells.csv is unreadable ({type(exc).__name__})") from None
    expected = CELL_COLUMNS if version == SCHEMA_VERSION else cell_columns_of(version)
    if header != expected:
        missing = [c for c in expected if c not in header]
        extra = [c for c in header if c not in expected]
        why = "; ".join(part for part in (
            f"missing column{'s' * (len(missing) > 1)} {', '.join(missing)}" if missing else "",
            f"unknown column{'s' * (len(extra) > 1)} {', '.join(map(repr, extra))}" if extra else "") if part)
        raise CcpError(f"{where}: cells.csv is not one ccp wrote ({why or 'its columns out of order'}: not results "
                       f"schema {version}'s columns)")


def _csv_records(path: Path) -> int:
    """The cells a cells.csv records (its header aside)."""
    with open(path, newline="") as fh:
        return max(sum(1 for _ in csv.reader(fh)) - 1, 0)


def error_summary(exc: BaseException) -> str:
    """An exception in one line of at most 200 characters, for a message naming what is damaged."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]


def read_cells(run_dir: Path, *, csv_only: bool = False) -> pd.DataFrame:
    """The one reader of a run folder's cells: cells.parquet (written when a run ends) or else cells.csv (the
    commit record, always current). ``csv_only``: the commit record itself (to write cells.parquet from it)."""
    d = Path(run_dir)
    if not csv_only and (d / "cells.parquet").exists():
        try:
            cells = pd.read_parquet(d / "cells.parquet")
            if not (d / "cells.csv").exists() or len(cells) == _csv_records(d / "cells.csv"):
                return cells
            # fewer or more cells than the commit record: a copy left from before, or edited; the record stands
        except (OSError, ValueError) as exc:    # pyarrow's ArrowInvalid is a ValueError: a cut or damaged file
            if not (d / "cells.csv").exists():
                raise CcpError(f"{d / 'cells.parquet'} is damaged ({error_summary(exc)}) and there is no cells.csv "
                               "to read instead") from None
            # cells.csv is the commit record the parquet copy is written from: the same cells, read from it
    if not (d / "cells.csv").exists():
        raise FileNotFoundError(f"{d}: no cells.parquet or cells.csv")
    return pd.read_csv(d / "cells.csv", keep_default_na=False, na_values=[""])


def _jsonable(v):
    """Settings as run.json stores them (tuples are lists), for comparison with a resumed run's."""
    return json.loads(json.dumps(v, default=str))


def _csv_value(v):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    return v


def _csv_line(values) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(values)
    return buf.getvalue()
