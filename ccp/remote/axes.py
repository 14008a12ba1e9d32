"""The storage axes' settings live in :mod:`ccp.config.storage` (floor 2, so the sweep parser and the matrix
can use them); re-exported here for ``ccp.remote``'s own modules and older imports."""

from ccp.config.storage import *  # noqa: F403
from ccp.config.storage import __all__  # noqa: F401
