"""``python -m ccp.repack IN OUT ...``: the repack command without the rest of the CLI."""

import sys

import click

from ccp.errors import CcpError
from ccp.repack.command import repack_command


def main():
    try:
        repack_command.main(prog_name="ccp repack", standalone_mode=False)
    except CcpError as exc:
        click.echo(f"ccp: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        sys.exit(1)


if __name__ == "__main__":
    main()
