"""How to apply a layout: the exact commands and arguments, for ccp, h5repack, h5py and C (pure)."""

from __future__ import annotations

from ccp.config.sweep import CacheSpec
from ccp.hdf5.filters import FilterPipeline
from ccp.units import shape_str


def h5repack_filters(filters: FilterPipeline, dset: str) -> list[str] | None:
    """``-f`` options for Debian's h5repack, or None when a step has no h5repack keyword (a plugin filter)."""
    texts = filters.h5repack_options()
    return None if texts is None else [f"-f {dset}:{t}" for t in texts]


def h5py_kwargs(chunks, filters: FilterPipeline) -> str:
    said, unsaid = filters.h5py_code()
    text = ", ".join([f"chunks={tuple(chunks)!r}", *said])
    return text + (f"  # + {'+'.join(s.spec for s in unsaid)}: no h5py keyword says it" if unsaid else "")


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
