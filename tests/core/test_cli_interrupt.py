"""Ctrl-C at any moment of the installed ``scrapy-iri``, as a user presses it: during the import, the argument
parsing, the run. The command ends with one line and status 130 (or with its normal result), never a traceback.

The interrupt is sent at delays spread over the command's first 0.3 s (the package and the CLI load in the
first ~0.1 s) to ``scrapy-iri canon -`` waiting for its input. Before the interpreter runs the console script
(its own start-up: ``site``, the ``.pth`` files) no package can catch an interrupt: the interpreter reports it
itself, so a traceback is accepted there only, that is when none of its frames is the package's code.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from test_canon_cli import SCRIPT

import scrapy_iri

PACKAGE = str(Path(scrapy_iri.__file__).resolve().parent) + os.sep
#: seconds after the start at which SIGINT is sent: dense over the import, then into the waiting run
DELAYS = tuple(i * 0.015 for i in range(20)) + (0.5,)


def interrupted(delay: float) -> tuple[int, str]:
    assert SCRIPT is not None
    # a shell starts a background job with SIGINT ignored, and the tests may run as one: the command gets
    # SIGINT as a terminal's foreground job does
    process = subprocess.Popen(
        [SCRIPT, "canon", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    time.sleep(delay)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    return process.returncode, err.decode(errors="replace")


def in_package(err: str) -> bool:
    """Whether a traceback in ``err`` passes through the package's own code."""
    return any(line.strip().startswith('File "') and PACKAGE in line for line in err.splitlines())


@pytest.mark.skipif(SCRIPT is None, reason="the scrapy-iri command is not installed")
def test_ctrl_c_at_any_moment_is_one_line_and_130():
    outcomes = []
    for delay in DELAYS:
        status, err = interrupted(delay)
        outcomes.append((delay, status, err))
        assert not in_package(err), (delay, status, err)
        if "Traceback" in err:  # the interpreter's own start-up, before the console script runs
            continue
        assert (status, err) in ((130, "scrapy-iri: interrupted\n"), (-signal.SIGINT, "")), (delay, status, err)
    assert outcomes[-1][1:] == (130, "scrapy-iri: interrupted\n")  # waiting for input: the CLI's answer
    answered = [delay for delay, status, _ in outcomes if status == 130]
    assert len(answered) >= len(DELAYS) // 2, outcomes  # most interrupts reach the command, not start-up
