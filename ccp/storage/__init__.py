"""Files in object storage: a loopback S3 server, remote reads counted per HTTP request, paged files.

- :mod:`ccp.storage.server`: moto's S3 server as a subprocess on 127.0.0.1 (``ccp s3 serve``).
- :mod:`ccp.storage.s3`: the ``s3:`` setting, endpoint checks, uploads, remote files for h5py.
- :mod:`ccp.storage.network`: counting and emulated latency / bandwidth around each GET.
- :mod:`ccp.storage.fsspec_model`: pure model of fsspec's caches (reads -> GETs and bytes).
- :mod:`ccp.storage.predict`: the byte ranges a read cell touches, from the file's chunk index.
- :mod:`ccp.storage.layout`: paged file-space aggregation, page buffer, cloud-optimized copies.

Needs the ``s3`` extra (moto[server], s3fs) for everything that talks to a server; the model does not.
"""
