#!/usr/bin/env bash
# The house's structure and lint checks, one function and one `check` line
# each; anyone can run them, contrib/test.sh runs them first.
#
#   contrib/check-layers.sh                  # every check; non-zero if one fails
#   contrib/check-layers.sh NAME...          # only those (names in the list below)
#   contrib/check-layers.sh --format-strict  # (the default since the reformat)
#
# Every check prints what is wrong (file, line, why). A failed check is
# counted; the others still run.
#
# The tree was reformatted once, in a commit of layout alone: a clang-format
# difference fails the check. Fix one with `clang-format -i FILE` (Debian
# 12's clang-format 14).
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

format_strict=1

# ---- python-imports: no import cycle and no upward import between the
# layers of python/ (contrib/check_python_imports.py).
check_python_imports() {
  python3 "$root/contrib/check_python_imports.py" "$root/python"
}

# ---- ruff (ruff.toml) over every Python file, with the ruff of
# contrib/install-python-envs.sh.
check_ruff() {
  local ruff
  ruff=$("$root/contrib/install-python-envs.sh" --print-ruff)
  if [ ! -x "$ruff" ]; then
    echo "check-layers: $ruff is missing; run contrib/install-python-envs.sh (it makes the lint venv)" >&2
    return 1
  fi
  "$ruff" check --no-cache python tests contrib examples
}

# ---- engine-layers: no include cycle between engine/ folders, no layer
# pointing the wrong way (docs/design.md; the table is in contrib/check_layers.py).
check_engine_layers() {
  /usr/bin/python3 contrib/check_layers.py engine
}

# ---- clang-format: the C and C++ sources match .clang-format (Debian's
# clang-format 14, contrib/install-deps.sh). Fix with:
#   git ls-files -z '*.h' '*.cc' '*.c' | xargs -0 clang-format -i
check_clang_format() {
  if ! command -v clang-format >/dev/null; then
    echo "clang-format is not installed: run contrib/install-deps.sh (Debian's clang-format)"
    return 1
  fi
  if [ "$format_strict" = 1 ]; then
    git ls-files -z -- '*.h' '*.cc' '*.c' | xargs -0 clang-format --dry-run -Werror
    return
  fi
  local files
  files=$(git ls-files -z -- '*.h' '*.cc' '*.c' | xargs -0 clang-format --dry-run 2>&1 |
    sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: \(warning\|error\): code should be clang-formatted.*/\1/p' |
    sort -u)
  if [ -n "$files" ]; then
    echo "$(echo "$files" | wc -l) files differ from .clang-format (report only until the tree's"
    echo "reformat commit; --format-strict fails on them), e.g.:"
    echo "$files" | head -5 | sed 's/^/  /'
  fi
  return 0
}

# ---- test-names: C++ test files under tests/unit are named <what>_test.cc
# (helpers and programs the tests run have no TEST() and other names).
check_test_names() {
  local bad
  bad=$(find tests/unit -name '*.cc' | sort | while read -r f; do
    case "$f" in *_test.cc) continue ;; esac
    if grep -qE '^(TEST|TEST_F|TEST_P|TYPED_TEST)\(' "$f"; then echo "$f"; fi
  done)
  if [ -n "$bad" ]; then
    echo "test files not named <what>_test.cc:"
    echo "$bad"
    return 1
  fi
}

CHECKS=(
  python-imports
  ruff
  engine-layers
  clang-format
  test-names
)

selected=()
for arg in "$@"; do
  case "$arg" in
    --format-strict) format_strict=1 ;;
    *) selected+=("$arg") ;;
  esac
done
[ ${#selected[@]} -gt 0 ] || selected=("${CHECKS[@]}")
failed=()
for name in "${selected[@]}"; do
  fn="check_${name//-/_}"
  if ! declare -F "$fn" >/dev/null; then
    echo "check-layers: no check '$name'; the checks are: ${CHECKS[*]}"
    exit 2
  fi
  echo "== check $name"
  if "$fn"; then echo "== check $name: ok"; else echo "== check $name: FAILED"; failed+=("$name"); fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "check-layers: FAILED: ${failed[*]}"
  exit 1
fi
echo "check-layers: all passed (${selected[*]})"
