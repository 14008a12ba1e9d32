"""Files in object storage: a loopback S3 server, remote reads counted per HTTP request, paged files.

- :mod:`ccp.remote.axes`: re-exports the sweep's storage axes (storage, fsspec, latency, bandwidth, file_space,
  page_buffer) and the pure rule that expands a cell by them, which live in :mod:`ccp.config.storage`.
- :mod:`ccp.remote.sweep_cell`: what the runner calls for an S3 cell (session, upload once per layout, a fresh
  fsspec file per pass, marks between requests) and :func:`~ccp.remote.sweep_cell.predict_http`.
- :mod:`ccp.remote.server`: moto's S3 server as a subprocess on 127.0.0.1 (``ccp s3 serve``).
- :mod:`ccp.remote.s3`: the ``s3:`` setting, endpoint checks, uploads, remote files for h5py.
- :mod:`ccp.remote.session`: the S3 session of a sweep (loopback server for ``s3: local``, checks first).
- :mod:`ccp.remote.network`: counting and emulated latency / bandwidth around each GET.
- :mod:`ccp.remote.fsspec_model`: pure model of fsspec's caches (reads -> GETs and bytes).
- :mod:`ccp.remote.predict`: the byte ranges a read cell touches, from the file's chunk index.
- :mod:`ccp.remote.layout`: paged file-space aggregation, page buffer, cloud-optimized copies, h5repack -S/-G.
- :mod:`ccp.remote.product`: a multi-dataset netCDF-4 product written by the netCDF4 library.

Needs the ``s3`` extra (moto[server], s3fs) for everything that talks to a server; the model does not.
"""
