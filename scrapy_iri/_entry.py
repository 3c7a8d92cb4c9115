"""The ``scrapy-iri`` command's entry point: light, so that Ctrl-C ends it cleanly from its first instant.

Importing the CLI (:mod:`scrapy_iri._cli`) loads the core; an interrupt
meanwhile, or anywhere the CLI does not catch it itself, ends the command
with one line on stderr and exit status 130, never a traceback.
"""

from __future__ import annotations

import signal
import sys


def main(argv: list[str] | None = None) -> int:
    """Run ``scrapy-iri`` (see :func:`scrapy_iri._cli.main`); 130 when interrupted."""
    try:
        from ._cli import main as run

        return run(argv)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # a second Ctrl-C ends the process quietly
        try:
            print("scrapy-iri: interrupted", file=sys.stderr)
        except (OSError, ValueError):
            pass
        return 130
    finally:
        # The command is over: a Ctrl-C while the interpreter exits ends it as a signal does, quietly.
        signal.signal(signal.SIGINT, signal.SIG_DFL)


if __name__ == "__main__":
    sys.exit(main())
