"""The ``seamspec`` command's entry point: Ctrl-C handling first, then the kit.

Apart from ``_signals.py`` (which the commands use too), so that imports point one way.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from seamspec._signals import EXIT_INTERRUPTED, finish, install

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """The ``seamspec`` command: handlers first, then the kit."""
    install()
    try:
        from seamspec._cli import main as cli

        code = cli(argv)
    except KeyboardInterrupt:
        os.write(2, b"error: interrupted\n")
        code = EXIT_INTERRUPTED
    except SystemExit as leaving:  # SIGTERM, --help, a usage error
        if leaving.code is not None and not isinstance(leaving.code, int):
            finish(1)
            raise  # a message: Python prints it
        code = leaving.code or 0
    except BaseException:
        finish(1)
        raise
    return finish(code)
