#!/usr/bin/env bash
# The structure and lint checks, one `check` line each; anyone can run it,
# contrib/test.sh runs it first. Exits non-zero when any check fails.
#
#   contrib/check-layers.sh
#
# Python: no import cycle and no upward import between the layers of
# python/ (contrib/check_python_imports.py), and ruff (ruff.toml) over every
# Python file, with the ruff of contrib/install-python-envs.sh.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

failed=0
check() {  # check NAME CMD...: one check; a failure is counted, the others still run
  local name=$1; shift
  echo "== check $name"
  if "$@"; then echo "== check $name: ok"; else echo "== check $name: FAILED"; failed=$((failed + 1)); fi
}

ruff_lint() {
  local ruff
  ruff=$("$root/contrib/install-python-envs.sh" --print-ruff)
  if [ ! -x "$ruff" ]; then
    echo "check-layers: $ruff is missing; run contrib/install-python-envs.sh (it makes the lint venv)" >&2
    return 1
  fi
  "$ruff" check --no-cache python tests contrib examples
}

check python-imports python3 "$root/contrib/check_python_imports.py" "$root/python"
check ruff ruff_lint

[ "$failed" -eq 0 ]
