"""Ctrl-C on a terminal during ``scrapy-iri graph --engine dask|spark`` on web archives.

A terminal sends SIGINT to the whole foreground process group: the
command, and the Dask workers or the Spark JVM and Python workers it
started. The user sees ``scrapy-iri: interrupted`` and exit status 130:
no traceback from any of them, no OUT (complete or not), no process left.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).parent / "scrapy-iri"


def interrupted(command: list[str], cue: str, delay: float) -> tuple[int, str]:
    """Run ``command`` in a process group of its own, send the group SIGINT ``delay`` seconds after stderr
    shows ``cue``: (exit status, stderr)."""
    # a shell starts a background job with SIGINT ignored, and the test may run as one: the command gets it
    # as a terminal's foreground job does
    process = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                               start_new_session=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert process.stderr is not None
    seen = []
    try:
        for line in process.stderr:
            seen.append(line)
            if cue in line:
                time.sleep(delay)
                os.killpg(process.pid, signal.SIGINT)
                break
        # a process left behind would hold stderr open: read the rest for a while, not until it ends
        rest = threading.Thread(target=lambda: seen.append(process.stderr.read()), daemon=True)
        rest.start()
        rest.join(120)
        code = process.wait(30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the group's processes end with the command
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        os.killpg(process.pid, signal.SIGKILL)
        pytest.fail(f"processes of the interrupted run are left: {''.join(seen)}")
    return code, "".join(seen)


@pytest.fixture(scope="module")
def many(wget_archive: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory of 40 links to wget's archive: a run that lasts."""
    directory = tmp_path_factory.mktemp("many")
    for n in range(40):
        (directory / f"docs-{n:02}.warc.gz").symlink_to(wget_archive)
    return directory


@pytest.mark.parametrize(("engine", "cue", "delay"), [
    ("dask", "reading, parsing and canonicalizing on dask", 0.5),
    ("dask", "learning the protocol rung", 0.5),
    ("spark", "starting spark", 0.3),  # while the JVM starts, before PySpark holds its process
    ("spark", "starting spark", 2.5),  # while the session starts and the first calls to the JVM are made
])
def test_ctrl_c_stops_the_engine_without_a_traceback(many, tmp_path, engine, cue, delay):
    pytest.importorskip("distributed" if engine == "dask" else "pyspark")
    out = tmp_path / "out.csv"
    code, err = interrupted(
        [str(SCRIPT), "graph", str(many), str(out), "--rung", "protocol", "--engine", engine, "--workers", "2",
         "--progress"], cue, delay)
    assert code == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.rstrip().endswith("scrapy-iri: interrupted")
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == []
