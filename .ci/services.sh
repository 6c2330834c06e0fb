#!/usr/bin/env bash
# What the many-worker tests need on a clean machine besides the test extras (which bring the psycopg driver):
# Debian's PostgreSQL server binaries (initdb, pg_ctl, postgres; the tests start their own throwaway cluster).
# Usage: bash .ci/services.sh   (.ci/run calls it before the tests)
set -euo pipefail
if ! command -v initdb >/dev/null && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends postgresql >/dev/null
fi
# The cluster runs as the package's "postgres" account when the tests run as root.
id postgres >/dev/null
