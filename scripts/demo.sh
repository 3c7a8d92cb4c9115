#!/usr/bin/env bash
# Set up a virtual environment and run the main job: the demo crawl of the bundled
# local web, with and without scrapy-iri, and its report.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[scrapy]'

if [ -f example_project/run_demo.py ]; then
  exec .venv/bin/python example_project/run_demo.py "$@"
fi
# Until the crawl demo lands: the canonicalization ladder on a few aliases and traps.
exec .venv/bin/python -m scrapy_iri.demo "$@"
