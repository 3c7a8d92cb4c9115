#!/usr/bin/env bash
# Set up a virtual environment with the test dependencies and run the whole test suite.
# Usage: bash scripts/test.sh [pytest arguments]
set -euo pipefail
. "$(dirname "$0")/_venv.sh" test

# The Redis tests need a redis-server binary (they start their own on loopback).
if ! command -v redis-server >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "installing redis-server (Debian package) for the Redis tests" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null) \
      || echo "warning: could not install redis-server; the Redis tests will be skipped" >&2
  fi
fi

# The Spark tests (tests/graph) need a Java runtime for Spark's JVM.
if ! command -v java >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "installing openjdk-17-jre-headless (Debian package) for the Spark tests" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null) \
      || echo "warning: could not install a Java runtime; the Spark tests will fail" >&2
  fi
fi

# The archive tests (tests/graph) crawl Debian's Python documentation with Debian's wget, served by
# a test server and by Debian's nginx (started by the test on loopback, with a self-signed certificate);
# the real-server site test (tests/scrapy/test_realserver_site.py) serves it with Debian's nginx too.
missing=()
command -v wget >/dev/null 2>&1 || missing+=(wget)
[ -f /usr/share/doc/python3-doc/html/tutorial/index.html ] || missing+=(python3-doc)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
# tests/graph/test_graph_apache.py: Debian's Apache (its stock modules) serving Debian's git documentation
[ -x /usr/sbin/apache2 ] && [ -f /usr/lib/apache2/modules/mod_speling.so ] || missing+=(apache2)
[ -f /usr/share/doc/git-doc/index.html ] || missing+=(git-doc)
if [ ${#missing[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "installing ${missing[*]} (Debian packages) for the archive and real-server tests" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null) \
      || echo "warning: could not install ${missing[*]}; the archive and real-server tests will be skipped" >&2
  fi
fi

exec .venv/bin/python -m pytest -q "$@"
