#!/usr/bin/env bash
# Set up a virtual environment and run the main job: the demo crawl of the bundled
# local web, with Scrapy's defaults and with scrapy-iri, and its report.
# Usage: bash scripts/demo.sh [--rung RUNG]
set -euo pipefail
. "$(dirname "$0")/_venv.sh"
exec .venv/bin/python example_project/run_demo.py "$@"
