"""Record a real program's h5py accesses (``ccp trace``), diagnose them (``ccp diagnose``), replay them.

Modules, one idea each: ``recorder`` (runs inside the traced program), ``run`` (starts the program
with the recorder on), ``store`` (writes the trace folder), ``diagnose`` (model over the real sequence,
findings and cures), ``verify``, ``costs``, ``darshan`` (Darshan logs to sweeps), ``command`` (the CLI).
The trace folder's format and reader (``ccp.workload.tracefile``) and a dataset's selection sequence as
request plans (``ccp.workload.replay``) are in the workload room, which a sweep's replay loads from.
This app imports lower rooms only: never run, cli, report or another app.
"""
