"""How to apply a layout: the exact commands and arguments, for ccp, h5repack, h5py and C (pure)."""

from __future__ import annotations

from ccp.config.sweep import CacheSpec
from ccp.hdf5.filters import FilterPipeline
from ccp.units import shape_str

_H5REPACK = {"gzip": lambda a: f"GZIP={a[0] if a else 6}", "shuffle": lambda a: "SHUF", "fletcher32": lambda a: "FLET",
             "nbit": lambda a: "NBIT"}
_H5PY = {"gzip": lambda a: [("compression", '"gzip"'), ("compression_opts", a[0] if a else "6")],
         "lzf": lambda a: [("compression", '"lzf"')], "shuffle": lambda a: [("shuffle", "True")],
         "fletcher32": lambda a: [("fletcher32", "True")]}


def h5repack_filters(filters: FilterPipeline, dset: str) -> list[str] | None:
    """``-f`` options for Debian's h5repack, or None when a step needs a plugin h5repack does not take by name."""
    if filters.is_none:
        return [f"-f {dset}:NONE"]
    out = []
    for step in filters.steps:
        if step.name not in _H5REPACK:
            return None
        out.append(f"-f {dset}:{_H5REPACK[step.name](step.args)}")
    return out


def h5py_kwargs(chunks, filters: FilterPipeline) -> str:
    kw = [("chunks", repr(tuple(chunks)))]
    plugin = None
    for step in filters.steps:
        if step.name in _H5PY:
            kw += _H5PY[step.name](step.args)
        else:
            plugin = step.spec
    text = ", ".join(f"{k}={v}" for k, v in kw)
    return text + (f"  # + the hdf5plugin filter for {plugin!r} (pip install hdf5plugin)" if plugin else "")


def commands(dset: str, chunks, filters: FilterPipeline, cache: CacheSpec, file: str = "IN.h5") -> dict[str, str]:
    """{what: the line to run or write} for the layout and the cache."""
    c = shape_str(chunks)
    out = {"ccp": f"ccp repack -l {dset}:CHUNK={c} -f {dset}:{filters.spec} {file} OUT.h5"}
    hf = h5repack_filters(filters, dset)
    out["h5repack"] = (f"h5repack -l {dset}:CHUNK={c} {' '.join(hf)} {file} OUT.h5" if hf is not None
                       else f"(h5repack cannot write {filters.spec} by name: use the ccp line)")
    out["h5py create"] = f'f.create_dataset("{dset}", shape=..., dtype=..., {h5py_kwargs(chunks, filters)})'
    out["h5py open"] = (f'h5py.File("OUT.h5", "r", rdcc_nbytes={cache.nbytes}, rdcc_nslots={cache.nslots}, '
                        f"rdcc_w0={cache.w0:g})")
    out["C"] = f"H5Pset_chunk_cache(dapl, {cache.nslots}, {cache.nbytes}, {cache.w0:g});  /* then H5Dopen2(file, \"{dset}\", dapl) */"
    return out
