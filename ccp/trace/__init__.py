"""Record a real program's h5py accesses (``ccp trace``), diagnose them (``ccp diagnose``), replay them.

Modules, one idea each: ``recorder`` (runs inside the traced program), ``run`` (starts the program
with the recorder on), ``store`` (the trace folder), ``replay`` (a dataset's selection sequence as
request plans), ``diagnose`` (model over the real sequence, findings and cures), ``darshan``
(Darshan logs to sweeps), ``command`` (the CLI). Nothing here imports engine, cli or report.
"""
