"""The one place that knows HDF5: filters (spec <-> dcpl <-> stored cd_values <-> Python codec),
property-list builders, dataset descriptions, file and memory types, and the library's defaults.

Imports only :mod:`ccp.errors`, :mod:`ccp.units`, numpy, h5py and (lazily) hdf5plugin.
"""
