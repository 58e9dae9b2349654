#!/usr/bin/env bash
# Installs what pganon needs on this kind of machine (Debian 12, Python 3.11), idempotently:
# PostgreSQL 15 with PL/Python and numpy for the server's Python, and the project venv.
# Fast (well under a second) when everything is already present.
set -euo pipefail
cd "$(dirname "$0")/.."

# --test adds what only the tests need: Chromium, which renders the HTML reports in a browser test.
pkgs=(postgresql-15 postgresql-plpython3-15 python3-numpy)
[ "${1:-}" = "--test" ] && pkgs+=(chromium)
need_apt=()
for pkg in "${pkgs[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]} (apt)" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

PY=${PGANON_PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv" >&2
  "$PY" -m venv .venv
fi
# Reinstall only when the dependency list changed (stamp = hash of pyproject.toml).
stamp=.venv/.pganon-stamp
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing the pganon package and its test/bench/parquet extras into .venv" >&2
  .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test,bench,parquet]'
  # pyCANON, the reference the privacy-model tests compare with, pins exact versions of a dozen
  # packages (numpy, scipy, reportlab ...); its anonymity module needs only numpy and pandas.
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps 'pycanon==1.3.6'
  echo "$want" > "$stamp"
fi
