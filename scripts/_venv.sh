# Sourced by the scripts here: make .venv and install the project (with an extra, if given).
# Usage: . scripts/_venv.sh [EXTRA]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".${1:+[$1]}"
