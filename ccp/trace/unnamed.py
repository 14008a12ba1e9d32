"""Datasets the recorder meets before any link names them (stdlib at import: loaded into traced programs).

h5py's ``g[name] = data`` creates the dataset unnamed, writes it, then links it (``h5o.link``); so does a
``create_dataset(None, ...)`` a program links later by ``g[name] = d``. The recorder named such a dataset by a number
("<anonymous 3602...>"), so its write and a later read of ``g[name]`` were two datasets and no finding said which
(breaker6 F6). The link now renames it (:func:`linked`), in the records still buffered (``g[name] = data`` holds the
write's records until the link: :meth:`ccp.trace.recorder.Recorder.add`) and in its handles' later calls; one never
linked is said in words, never by a number.
"""

from __future__ import annotations

NEVER_LINKED = "a dataset created by f[...] = ... and never linked"
UNLINKED_THEN = "a dataset created by create_dataset(None, ...), not linked when called"


def unnamed_name(rec, linking: bool) -> str:
    """The name of a dataset with no link yet: made by ``g[name] = data`` (``linking``: renamed by its link, so the
    name stays only if the link never came) or otherwise unlinked when called; numbered per process."""
    how = NEVER_LINKED if linking else UNLINKED_THEN
    return f"<{how}: #{next(rec.unnamed_count)} of process {rec.pid}>"


def linked(rec, obj) -> None:
    """After ``h5o.link(obj, ...)``: a dataset ``rec`` met before it had a name takes the link's."""
    token = rec.handle_of.get(id(obj))
    if token is None:       # not a dataset handle the recorder met (a group, a type, a dataset never called)
        return
    file, old = rec.handles[token][0][:2]
    if (file, old) not in rec.unnamed:
        return
    _h5f, h5i = rec.h5py_modules
    name = h5i.get_name(obj)
    if name:
        rename(rec, file, old, name.decode("utf-8", "replace"))


def rename(rec, file: str, old: str, new: str) -> None:
    """Dataset ``old`` of ``file`` is ``new``: in the records still buffered, and its handles get new tokens (as after
    a resize) so that their later calls are named ``new`` whatever was written before; if a write of the buffer came
    since the dataset was met, its layout and open went out under the old name: the new name gets its own."""
    for r in (*rec.buf, *rec.local.stack):
        if type(r) is dict and r.get("dataset") == old and r.get("file") == file:
            r["dataset"] = new
    key, new_key = (file, old), (file, new)
    written = rec.unnamed.pop(key, rec.written)
    live = next((d for info, ref, _ in list(rec.handles.values()) if info[:2] == key and (d := ref()) is not None),
                None)
    if key in rec.layouts:
        rec.layouts.discard(key)
        if written != rec.written and new_key not in rec.layouts and live is not None:
            rec.add_layout(live, file, new)
        rec.layouts.add(new_key)
    n = rec.open_count.pop(key, 0)
    if n:
        if written != rec.written and not rec.open_count.get(new_key) and live is not None:
            rec.add_open(live, file, new)
        rec.open_count[new_key] = rec.open_count.get(new_key, 0) + n
    for token, (info, ref, ident) in list(rec.handles.items()):
        if info[:2] != key:
            continue
        rec.retoken(token, (file, new, *info[2:]), ref, ident)
