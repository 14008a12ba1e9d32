"""How to apply a layout: the exact commands and arguments, for ccp, h5repack, h5py and C (pure)."""

from __future__ import annotations

from pathlib import Path

from ccp.chunkcache import ChunkCache
from ccp.hdf5.filters import FilterPipeline
from ccp.units import shape_str


def h5repack_filters(filters: FilterPipeline, dset: str) -> list[str] | None:
    """``-f`` options for Debian's h5repack, or None when a step has no h5repack keyword (a plugin filter)."""
    texts = filters.h5repack_options()
    return None if texts is None else [f"-f {dset}:{t}" for t in texts]


def h5py_kwargs(chunks, filters: FilterPipeline) -> str:
    said, unsaid = filters.h5py_code()
    text = ", ".join([f"chunks={tuple(chunks)!r}" if chunks is not None else "chunks=None", *said])
    return text + (f"  # + {'+'.join(s.spec for s in unsaid)}: no h5py keyword says it" if unsaid else "")


def netcdf_dims(file: str | None, dset: str) -> list[str] | None:
    """The netCDF dimension names of ``dset`` in a file netCDF-4 wrote (its dimension scales), or None
    when the file is not netCDF's (no ``_NCProperties``, no dimension list) or cannot be read."""
    if not file:
        return None
    try:
        from ccp.hdf5.dataset import open_readonly

        with open_readonly(Path(file), "dataset.file") as f:
            if "_NCProperties" not in f.attrs:
                return None
            d = f[dset]
            names = []
            for dim in d.dims:
                if len(dim) != 1:
                    return None
                names.append(dim[0].name.rsplit("/", 1)[-1])
            return names
    except Exception:            # only a nicety: the other lines stand without it
        return None


def maxshape_text(maxshape) -> str:
    """``, maxshape=(None, 96, 144)`` when a dimension is unlimited (else ``""``): a copy must stay appendable."""
    if not maxshape or all(m is not None for m in maxshape):
        return ""
    return f", maxshape={tuple(maxshape)!r}"


def commands(dset: str, chunks, filters: FilterPipeline, cache: ChunkCache, file: str = "IN.h5", maxshape=None,
             nc_dims: list[str] | None = None) -> dict[str, str]:
    """{what: the line to run or write} for the layout and the cache. ccp repack and h5repack keep the
    dataset's maximum shape (its unlimited dimensions); the h5py line says it; a netCDF-4 file also
    gets the ``nccopy -c`` line (nccopy keeps unlimited dimensions unless given -u)."""
    layout = f"CHUNK={shape_str(chunks)}" if chunks is not None else "CONTI"     # None: contiguous
    out = {"ccp": f"ccp repack -l {dset}:{layout} -f {dset}:{filters.spec} {file} OUT.h5"}
    hf = h5repack_filters(filters, dset)
    out["h5repack"] = (f"h5repack -l {dset}:{layout} {' '.join(hf)} {file} OUT.h5" if hf is not None
                       else f"(h5repack cannot write {filters.spec} by name: use the ccp line)")
    if nc_dims and chunks is not None and len(nc_dims) == len(chunks):
        group, _, name = dset.strip("/").rpartition("/")
        var = f"{group}/{name.removeprefix('_nc4_non_coord_')}" if group else name.removeprefix("_nc4_non_coord_")
        line = f"nccopy -k nc4 -c {var}:{','.join(map(str, chunks))} {file} OUT.nc"
        if not group:       # nccopy's dimension form names root dimensions only: a group's are not found by name
            line += f"    # or -c {','.join(f'{n}/{k}' for n, k in zip(nc_dims, chunks))} for every variable"
        out["nccopy"] = line
        out["netCDF4 open"] = (f'nc["{var}"].set_var_chunk_cache(size={cache.nbytes}, nelems={cache.nslots}, '
                               f'preemption={cache.w0:g})   # netCDF4-python, on nc = netCDF4.Dataset("OUT.nc")')
    out["h5py create"] = (f'f.create_dataset("{dset}", shape=..., dtype=...{maxshape_text(maxshape)}, '
                          f'{h5py_kwargs(chunks, filters)})')
    out["h5py open"] = (f'h5py.File("OUT.h5", "r", rdcc_nbytes={cache.nbytes}, rdcc_nslots={cache.nslots}, '
                        f"rdcc_w0={cache.w0:g})")
    out["C"] = f"H5Pset_chunk_cache(dapl, {cache.nslots}, {cache.nbytes}, {cache.w0:g});  /* then H5Dopen2(file, \"{dset}\", dapl) */"
    return out
