"""``ccp repack``: change chunking and filters of HDF5 datasets, faster than h5repack."""

from ccp.repack.copy import DatasetResult, RepackResult, repack, repack_dataset
from ccp.repack.options import Layout, RepackOptions, parse_options
from ccp.repack.plan import DEFAULT_BUFFER_BYTES, SlabPlan, plan_slabs

__all__ = ["DEFAULT_BUFFER_BYTES", "DatasetResult", "Layout", "RepackOptions", "RepackResult", "SlabPlan",
           "parse_options", "plan_slabs", "repack", "repack_dataset"]
