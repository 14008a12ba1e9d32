"""ccp: chunking-and-compression performance tool for HDF5.

The pipeline reads top to bottom in the package layout:
config -> matrix -> workload -> measurement -> store -> report, with the CLI on top.
"""

__version__ = "0.1.0"
