"""The recorder's own folder while the program runs, outside ``-o``, and its files' way into ``-o/parts`` at the end.

A program that empties its output folder (``shutil.rmtree(out); os.makedirs(out)``, common at its start or between
phases) where the user put ``-o`` unlinked the recorder's part and rows files under it: breaker6's program made 5,000
reads, emptied the folder, made 8,000 more, and its trace held none ("the program made no h5py dataset calls").
So the traced processes write into a private folder ``ccp trace`` makes under the temporary folder (``$TMPDIR``, else
/tmp: a program's clean-up of its own output does not reach it), named to them by its absolute path only
(``CCP_TRACE_DIR``: a ``chdir`` or a child in another folder writes to the same place). When the program has ended,
the folder becomes ``-o/parts`` (a rename on one filesystem, else a copy), ``-o`` made again if the program removed
it, and the merge reads it there as before.

``-o`` holds an empty ``parts`` folder while the program runs: a second ``ccp trace -o`` of the same folder refuses
it as it did. ccp trace never removes ``-o`` and never writes over a file it did not make: a ``trace.json``,
``calls.parquet`` or a non-empty ``parts`` the program left in ``-o`` stays, the trace is not written and the message
names the folder that keeps the recorded files. A private folder removed while the program ran (by the program or
anyone) is told apart by its inode, and the trace says its calls are lost.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from pathlib import Path

from ccp.errors import CcpError
from ccp.trace.store import PARTS

TRACE_FILES = ("trace.json", "calls.parquet")


class PartsFolder:
    """The private folder of one ``ccp trace`` run, for the trace folder ``out``."""

    def __init__(self, out: Path) -> None:
        self.out = Path(os.path.abspath(out))
        try:
            self.path = Path(os.path.abspath(tempfile.mkdtemp(prefix=f"ccp-trace-{os.getpid()}-")))
        except OSError as exc:
            raise CcpError(f"{tempfile.gettempdir()}: cannot make the recorder's folder there ({exc.strerror or exc}); "
                           "set TMPDIR to a folder ccp trace may write") from None
        made = os.stat(self.path)
        self.identity = (made.st_dev, made.st_ino)

    def lost(self) -> str | None:
        """Why the recorded files may be incomplete: the folder was removed (or replaced) while the program ran."""
        try:
            now = os.stat(self.path)
        except OSError:
            now = None
        if now is not None and (now.st_dev, now.st_ino) == self.identity:
            return None
        return (f"the recorder's folder {self.path} was removed while the program ran (by the program or another "
                "process): the calls written to it before that are lost")

    def move_to_out(self) -> Path:
        """The recorded files moved to ``out/parts`` (``out`` made again if the program removed it); their folder.

        A CcpError, the files left where they are (and said where), when ``out`` is no folder any more, holds files
        of the program's under the trace's names, or cannot take them."""
        keep = f"; the recorded part files are kept in {self.path}"
        target = self.out / PARTS
        try:
            self.out.mkdir(parents=True, exist_ok=True)
            theirs = [name for name in TRACE_FILES if os.path.lexists(self.out / name)]
            placeholder = target.is_dir() and not target.is_symlink() and not any(target.iterdir())
            if os.path.lexists(target) and not placeholder:
                theirs.append(PARTS)
            if theirs:
                raise CcpError(f"{self.out}: the program left its own {', '.join(theirs)} there; the trace is not "
                               f"written over them{keep}")
            if placeholder:
                target.rmdir()          # the empty one made at the start (or the program's empty folder)
            if not os.path.isdir(self.path):    # removed while the program ran, nothing written since (lost() says so)
                target.mkdir()
                return target
            try:
                os.rename(self.path, target)
            except OSError as exc:
                if exc.errno != errno.EXDEV:
                    raise
                self._copy(target)
            os.chmod(target, 0o777 & ~_umask())     # mkdtemp made it private (0700); a trace folder is the user's
        except OSError as exc:
            raise CcpError(f"{self.out}: the trace could not be written: cannot move the recorded files to {target} "
                           f"({_why(exc)}){keep}") from None
        return target

    def _copy(self, target: Path) -> None:
        """The files copied to ``target`` on another filesystem, then removed here; a failed copy leaves none there."""
        try:
            shutil.copytree(self.path, target)
        except OSError:
            shutil.rmtree(target, ignore_errors=True)
            raise
        shutil.rmtree(self.path, ignore_errors=True)

    def discard(self) -> None:
        """Nothing was recorded (the program never started): the folder goes."""
        shutil.rmtree(self.path, ignore_errors=True)


def _why(exc: OSError) -> str:
    """An OSError in a few words; a failed copy's first failure (shutil.Error lists each file's)."""
    if isinstance(exc, shutil.Error) and exc.args and isinstance(exc.args[0], list) and exc.args[0]:
        failed = exc.args[0]
        return f"{failed[0][-1]}" + (f"; {len(failed) - 1} more file(s) not copied" if len(failed) > 1 else "")
    return exc.strerror or str(exc)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
