"""``ccp s3``: a loopback S3 server, endpoint checks and cloud-optimized copies (imports lazily)."""

from __future__ import annotations

import time

import click

SERVE_EPILOG = """\b
Example:
  ccp s3 serve --port 5555
  # in another shell, with the lines it prints exported:
  ccp s3 check --endpoint http://127.0.0.1:5555 --bucket ccp-local

moto's S3 server in server mode (a real HTTP endpoint, loopback only); Ctrl-C stops it.
Needs the s3 extra: pip install 'ccp[s3]'."""

CHECK_EPILOG = """\b
Example:
  ccp s3 check --endpoint http://127.0.0.1:5555 --bucket ccp-local

Credentials come from the usual environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
AWS_PROFILE). An unreachable endpoint, a missing bucket or refused credentials: one line, exit 2."""

COPY_EPILOG = """\b
Example:
  ccp s3 cloud-copy --page-size 4MiB in.h5 out.h5

The copy has paged file-space aggregation (h5repack -S PAGE -G 4194304 equivalent): HDF5 keeps
metadata in pages of its own, so a remote reader fetches it in a few requests. Read it with a
page buffer (page_buffer: 16MiB in a sweep). Datasets are copied as stored (no decode)."""


@click.group("s3")
def s3_group():
    """Files in object storage: a loopback S3 server, endpoint checks, paged copies.

    \b
    Example:
      ccp s3 serve
    """


@s3_group.command("serve", epilog=SERVE_EPILOG)
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port on 127.0.0.1 (0: a free one).")
@click.option("--bucket", default="ccp-local", show_default=True, help="Bucket to create when the server is up.")
def serve_command(port, bucket):
    """Run moto's S3 server on 127.0.0.1 until Ctrl-C; print the endpoint and what to export."""
    import signal

    from ccp.errors import say_on_interrupt
    from ccp.remote.s3 import Credentials, S3Settings, S3Store
    from ccp.remote.server import S3Server

    say_on_interrupt("the S3 server is stopped; its buckets lived in its memory and are gone")

    def stop(signum, frame):
        raise KeyboardInterrupt

    # Ctrl-C even when started in the background of a script (which inherits SIGINT ignored); kill stops it too
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, stop)
    server = S3Server(port or None)
    ep = server.start()
    try:
        store = S3Store(S3Settings(ep.url, bucket), Credentials(ep.access_key, ep.secret_key, ep.region))
        store.create_bucket()
        store.close()
        try:        # a stop may come as soon as the endpoint line is out, before the loop
            click.echo(f"S3 endpoint {ep.url} (moto, loopback only), bucket {bucket}")
            for k, v in ep.environment().items():
                click.echo(f"export {k}={v}")
            click.echo("Ctrl-C stops it.", err=True)
            while server.running:
                time.sleep(0.2)
        except KeyboardInterrupt:
            pass
    finally:
        server.stop()
    click.echo("S3 server stopped.", err=True)


@s3_group.command("check", epilog=CHECK_EPILOG)
@click.option("--endpoint", envvar="AWS_ENDPOINT_URL", required=True, help="Endpoint URL (or AWS_ENDPOINT_URL).")
@click.option("--bucket", required=True, help="Bucket the sweep uploads to.")
def check_command(endpoint, bucket):
    """Check that an S3 endpoint answers, accepts the credentials and has the bucket."""
    from ccp.errors import say_on_interrupt
    from ccp.remote.s3 import check_endpoint, parse_s3

    say_on_interrupt("nothing was written (check only asks the endpoint)")
    settings = parse_s3({"endpoint": endpoint, "bucket": bucket})
    check_endpoint(settings)
    click.echo(f"{settings.endpoint}: bucket {settings.bucket} is readable")


@s3_group.command("cloud-copy", epilog=COPY_EPILOG)
@click.argument("infile", metavar="IN", type=click.Path(exists=True, dir_okay=False))
@click.argument("outfile", metavar="OUT", type=click.Path(dir_okay=False))
@click.option("--page-size", default="4MiB", show_default=True, metavar="SIZE", help="File-space page size.")
def cloud_copy_command(infile, outfile, page_size):
    """Copy IN to OUT with paged file-space aggregation (a cloud-optimized copy)."""
    from ccp.errors import say_on_interrupt
    from ccp.remote.layout import cloud_optimized_copy, parse_file_space
    from ccp.units import format_bytes

    say_on_interrupt(f"{outfile} is written whole or not at all (a temporary file renamed when done); {infile} is unchanged")
    from ccp.errors import ConfigError

    try:
        fs = parse_file_space({"strategy": "page", "page_size": page_size}, "file_space")
    except ConfigError as exc:          # name the option, not the sweep key
        raise ConfigError("--page-size", str(exc)[len(exc.where) + 2:]) from None
    assert fs is not None                # strategy page: always a FileSpace
    cloud_optimized_copy(infile, outfile, fs)
    import os

    click.echo(f"{outfile}: paged, {format_bytes(fs.page_size)} pages, {format_bytes(os.path.getsize(outfile))}")


s3_command = s3_group

__all__ = ["s3_command", "s3_group"]
