"""The ``scrapy-iri`` command line tool.

Exit codes: 0 success (``compare``: equivalent); 1 ``canon``, ``display``: some input was
not a valid IRI (reported on stderr, the other lines still printed),
``compare``: different at every rung asked; 2 usage error, the output could
not be written (full disk, closed pipe: one line on stderr) or, for
``compare``, an invalid IRI.
"""

from __future__ import annotations

import argparse
import codecs
import os
import sys
from collections.abc import Iterable, Iterator
from typing import TextIO

from .errors import IRIError
from ._display import to_display
from ._ladder import Rung, canonicalize, lowest_common_rung

RUNG_NAMES = [r.name.lower() for r in Rung]
_BOM = codecs.BOM_UTF8.decode("utf-8")


class OutputError(Exception):
    """Writing the command's output failed (full disk, closed pipe)."""


class _Output:
    """A text stream whose write errors become :class:`OutputError` (not confused with reading errors)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except (OSError, ValueError) as exc:
            raise OutputError(exc) from exc

    def flush(self) -> None:
        try:
            self._stream.flush()
        except (OSError, ValueError) as exc:
            raise OutputError(exc) from exc

    @property
    def buffer(self) -> _Output | None:
        """The stream's binary buffer, its write errors as the stream's own."""
        raw = getattr(self._stream, "buffer", None)
        return None if raw is None else _Output(raw)

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


class _Parser(argparse.ArgumentParser):
    """argparse, except that failing to write help or version text is an error, not silence."""

    def _print_message(self, message: str, file: TextIO | None = None) -> None:
        if message:
            stream = file or sys.stderr
            if stream is not None:
                stream.write(message)
                if stream is sys.stdout:
                    stream.flush()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("scrapy-iri")
    except PackageNotFoundError:
        return "unknown"


def _rung(value: str) -> Rung:
    try:
        return Rung.parse(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def whole_number(value: str) -> int:
    """An argparse type: a whole number of at least 0 (``1_000`` too)."""
    try:
        number = int(value.replace("_", ""))
    except ValueError:
        number = -1
    if number < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 0, got {value!r}")
    return number


def positive_number(value: str) -> int:
    """An argparse type: a whole number of at least 1."""
    number = whole_number(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {value!r}")
    return number


def _inputs(urls: list[str], stdin: TextIO) -> Iterator[tuple[str, str]]:
    """(where, text) pairs: arguments, or stdin lines streamed when the only argument is ``-``."""
    if urls == ["-"]:
        # Bytes in, decoded line by line: a line that is not UTF-8 keeps its
        # undecodable bytes as lone surrogates, which every rung rejects with
        # an IRIError for that line alone (the stream goes on).
        source = getattr(stdin, "buffer", None)
        lines = (raw.decode("utf-8", "surrogateescape") for raw in source) if source is not None else stdin
        for number, line in enumerate(lines, 1):
            if number == 1:
                line = line.removeprefix(_BOM)  # noqa: PLW2901 an encoding signature, not part of the URL
            yield f"line {number}", line.rstrip("\r\n")
    else:
        for number, url in enumerate(urls, 1):
            yield f"argument {number}", url


def _reason(exc: IRIError, text: str, where: str = "") -> str:
    """An error message; a byte that was not UTF-8 (kept as a lone surrogate) is named as the byte, and
    an argument that names a file says how to read the file's lines."""
    position = exc.position
    if position is not None and 0 <= position < len(text) and "\udc80" <= text[position] <= "\udcff":
        return f"{exc.component}: byte 0x{ord(text[position]) - 0xDC00:02X} at position {position} is not UTF-8"
    if where.startswith("argument") and exc.component == "scheme" and _is_file(text):
        return f"{exc} ({text!r} is a file: to read its lines, give '-' and the file on stdin: - < {text})"
    return str(exc)


def _is_file(text: str) -> bool:
    try:
        return os.path.isfile(text)
    except (OSError, ValueError):
        return False


def cmd_canon(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    status = 0
    for where, text in _inputs(args.urls, sys.stdin):
        try:
            form = canonicalize(text, args.rung, keep_fragment=not args.drop_fragment, lenient=args.lenient)
        except IRIError as exc:
            print(f"scrapy-iri: {where}: {_reason(exc, text, where)}", file=err)
            status = 1
            continue
        out.write(form + "\n")
    return status


def cmd_display(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    status = 0
    # UTF-8 whatever the locale: display forms hold non-ASCII characters.
    buffer = getattr(out, "buffer", None)
    write = (lambda line: buffer.write(line.encode("utf-8"))) if buffer is not None else out.write
    for where, text in _inputs(args.urls, sys.stdin):
        try:
            shown = to_display(text, lenient=args.lenient)
        except IRIError as exc:
            print(f"scrapy-iri: {where}: {_reason(exc, text, where)}", file=err)
            status = 1
            continue
        write(shown + "\n")
    return status


def cmd_compare(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        level = lowest_common_rung(args.a, args.b, args.rung, keep_fragment=not args.drop_fragment, lenient=args.lenient)
    except IRIError as exc:
        for name, text in (("A", args.a), ("B", args.b)):  # which one is not an IRI
            try:
                canonicalize(text, args.rung, keep_fragment=not args.drop_fragment, lenient=args.lenient)
            except IRIError as own:
                print(f"scrapy-iri: {name}: {_reason(own, text)}", file=err)
                return 2
        print(f"scrapy-iri: {exc}", file=err)
        return 2
    if level is None:
        print(f"different at every rung up to {args.rung.name.lower()}", file=out)
        return 1
    print(f"equivalent at {level.name.lower()}", file=out)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="scrapy-iri", description="Canonicalize and compare URLs and IRIs (draft-ietf-iri-3987bis)."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def common(p: argparse.ArgumentParser, highest: bool = False) -> None:
        p.add_argument(
            "--rung",
            type=_rung,
            default=Rung.SCHEME,
            help=f"{'highest ' if highest else ''}rung: {', '.join(RUNG_NAMES[:3])} (default: scheme)",
        )
        p.add_argument("--drop-fragment", action="store_true", help="ignore fragments, as for a network action")
        p.add_argument("--lenient", action="store_true", help="accept real-world input (3987bis sec. 7)")

    canon = sub.add_parser("canon", help="print the canonical form of each URL, one per line")
    canon.add_argument("urls", nargs="+", metavar="URL", help="URLs or IRIs; '-' streams them from stdin")
    common(canon)
    canon.set_defaults(handler=cmd_canon)

    compare = sub.add_parser("compare", help="print the lowest rung at which A and B are equivalent")
    compare.add_argument("a", metavar="A")
    compare.add_argument("b", metavar="B")
    common(compare, highest=True)
    compare.set_defaults(handler=cmd_compare)

    display = sub.add_parser(
        "display",
        help="print each URL as a person should see it (3987bis sec. 4 and 8.6)",
        description="Print each URL or IRI in display form: escapes decoded where the IRI allows,"
        " hosts as U-labels, components that break the bidi rules in URI form, and a"
        " left-to-right embedding (U+202A ... U+202C) around any IRI holding right-to-left characters.",
    )
    display.add_argument("urls", nargs="+", metavar="URL", help="URLs or IRIs; '-' streams them from stdin")
    display.add_argument("--lenient", action="store_true", help="accept real-world input (3987bis sec. 7)")
    display.set_defaults(handler=cmd_display)

    for register in _plugins():
        register(sub)
    return parser


def _plugins() -> Iterable:
    """Subcommands that live with their feature (``store``, ``graph``), when present."""
    import importlib

    for module in ("scrapy_iri.store._cli", "scrapy_iri.graph"):
        try:
            yield importlib.import_module(module).register
        except ModuleNotFoundError:
            continue


def _silence_stdout() -> None:
    """After a failed write, point stdout at /dev/null so that the exit-time flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def _say(err: TextIO | None, message: str) -> None:
    if err is not None:
        try:
            print(f"scrapy-iri: {message}", file=err)
        except (OSError, ValueError):
            pass


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    if sys.stdout is None:  # started with stdout closed (>&-)
        _say(sys.stderr, "cannot write the output: standard output is closed")
        return 2
    try:
        args = parser.parse_args(argv)
    except SystemExit:  # --help, --version, usage errors: argparse has written its text
        try:
            sys.stdout.flush()
        except (OSError, ValueError) as error:
            _say(sys.stderr, f"cannot write the output: {getattr(error, 'strerror', None) or error}")
            _silence_stdout()
            return 2
        raise
    except (OSError, ValueError) as exc:  # --help or --version into a full disk or a closed pipe
        _say(sys.stderr, f"cannot write the output: {getattr(exc, 'strerror', None) or exc}")
        _silence_stdout()
        return 2
    if getattr(args, "rung", None) is Rung.PROTOCOL and args.command in ("canon", "compare"):
        parser.error("the protocol rung needs a store: use 'scrapy-iri store explain'")
    out = _Output(sys.stdout)
    try:
        status = args.handler(args, out, sys.stderr)
        out.flush()
    except OutputError as exc:
        cause = exc.__cause__
        reason = getattr(cause, "strerror", None) or str(cause)
        _say(sys.stderr, f"cannot write the output: {reason}")
        _silence_stdout()
        return 2
    except KeyboardInterrupt:
        _say(sys.stderr, "interrupted")
        return 130
    return status


if __name__ == "__main__":
    sys.exit(main())
