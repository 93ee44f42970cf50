#!/usr/bin/env bash
# Runs one of Horovod's public test files (test_torch.py, test_tensorflow.py,
# test_tensorflow_process_sets.py, test_tensorflow2_keras.py, ...) against
# Tandem's `horovod` shim: each test in its own tandem-run job of N ranks
# with a deadline, then one line of counts (passed, failed, hung, skipped).
#
#   contrib/horovod-suite.sh [options] PATH/TO/test/parallel/test_FILE.py
#
#   -np N        ranks per job (default 2)
#   -b DIR       Meson build tree (default: build)
#   -p PYTHON    interpreter of the ranks (default /usr/bin/python3, torch 1.13;
#                /opt/tandem-deps/torch2/bin/python for torch 2.x,
#                /opt/tandem-deps/tf/bin/python for TensorFlow and Keras)
#   -t SECONDS   deadline per test; a job still running then is a hang and is
#                killed (default 180)
#   -k REGEX     only tests whose name matches (grep -E)
#   -o DIR       keep each test's output in DIR/<test>.log (default: a
#                temporary folder, removed unless a test did not pass)
#   -1           one job for the whole file instead (pytest on every rank runs
#                every test in one process, as Horovod's CI runs it under
#                horovodrun), each test's outcome read from pytest's -rA
#                report (contrib/horovod_suite/tally.py); the deadline is the
#                whole job's. Minutes instead of an hour for a TF file (one
#                TensorFlow import per rank, not one per test), but a test
#                that leaves state behind can affect the ones after it.
#                With -k, one job for the matching tests only, in file order.
#
# It fetches nothing: give it the test file of a horovod/horovod checkout
# (e.g. `git -C CHECKOUT archive v0.28.1 test | tar x -C /tmp/hvd`, then
# /tmp/hvd/test/parallel/test_torch.py; the PyPI sdist has no tests). The
# file is run in place, never copied into this project. Its helper module
# (test/utils/common.py) needs horovod.runner, mock and cloudpickle, which
# the shim lacks; contrib/horovod_suite/common.py provides the three helpers
# the files import, first on PYTHONPATH, and its sitecustomize.py the two
# helpers of Horovod's package the TensorFlow files import
# (horovod.runner.common.util.env, horovod.common.util). `parameterized`
# (test_tensorflow2_keras.py) comes from contrib/install-python-envs.sh's
# suite folder.
#
# A test passes when every rank reports it passed (or some passed and the
# rest skipped) and the job exits 0; it is skipped when every rank skipped;
# it hangs when the deadline passed; anything else fails. Each job is
# `pytest -q` on every rank, as Horovod's CI runs this file under horovodrun.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
np=2
build=$root/build
python=/usr/bin/python3
deadline=180
filter=
logdir=
one_job=0

usage() { sed -n '2,43p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    -np) np=$2; shift 2 ;;
    -b) build=$2; shift 2 ;;
    -p) python=$2; shift 2 ;;
    -t) deadline=$2; shift 2 ;;
    -k) filter=$2; shift 2 ;;
    -o) logdir=$2; shift 2 ;;
    -1) one_job=1; shift ;;
    -h|--help) usage ;;
    -*) echo "horovod-suite: unknown option $1" >&2; usage ;;
    *) break ;;
  esac
done
[ $# -eq 1 ] || usage
test_file=$(realpath "$1")
build=$(realpath "$build")
[ -f "$test_file" ] || { echo "horovod-suite: $1 is not a file" >&2; exit 2; }
[ -x "$build/tools/tandem-run" ] || {
  echo "horovod-suite: $build/tools/tandem-run is missing: build first (ninja -C $build)" >&2
  exit 2; }
[ -f "$build/python/horovod/torch/__init__.py" ] || {
  echo "horovod-suite: $build/python has no horovod shim: build first" >&2; exit 2; }

keep=1
if [ -z "$logdir" ]; then logdir=$(mktemp -d /tmp/horovod-suite.XXXXXX); keep=0; fi
mkdir -p "$logdir"

# Class::test ids in file order, read with ast (nothing of the file runs here).
mapfile -t ids < <("$python" - "$test_file" <<'EOF'
import ast, sys
tree = ast.parse(open(sys.argv[1]).read())
for node in tree.body:
    if isinstance(node, ast.ClassDef):
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and item.name.startswith("test"):
                print("%s::%s" % (node.name, item.name))
EOF
)
[ ${#ids[@]} -gt 0 ] || { echo "horovod-suite: no tests found in $test_file" >&2; exit 2; }

# The framework the file tests, for the summary line.
case $(basename "$test_file") in
  *torch*) framework=torch ;;
  *keras*) framework=keras ;;
  *) framework=tensorflow ;;
esac
version=$(TF_CPP_MIN_LOG_LEVEL=3 "$python" -c "import $framework; print($framework.__version__)" \
  2>/dev/null || echo '?')
suite_path=$("$root/contrib/install-python-envs.sh" --print-suite-path)
export PYTHONPATH="$root/contrib/horovod_suite:$build/python:$suite_path${PYTHONPATH:+:$PYTHONPATH}"
export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}
unset TANDEM_LIBRARY LD_PRELOAD

if [ $one_job -eq 1 ]; then
  targets=("$test_file")
  if [ -n "$filter" ]; then
    targets=()
    for id in "${ids[@]}"; do
      grep -qE "$filter" <<<"${id##*::}" && targets+=("$test_file::$id")
    done
    [ ${#targets[@]} -gt 0 ] || { echo "horovod-suite: no test matches $filter" >&2; exit 2; }
  fi
  log=$logdir/$(basename "$test_file" .py).log
  (cd "$(dirname "$test_file")" &&
    timeout -k 10 "$deadline" "$build/tools/tandem-run" -np "$np" --label \
      "$python" -m pytest -q -p no:cacheprovider --color=no -rA "${targets[@]}") >"$log" 2>&1
  rc=$?
  job_hung=0
  { [ $rc -eq 124 ] || [ $rc -eq 137 ]; } && job_hung=1
  mapfile -t lines < <(python3 "$root/contrib/horovod_suite/tally.py" "$log" "$test_file" \
    "$np" "$job_hung" "$filter")
  [ ${#lines[@]} -gt 0 ] || { echo "horovod-suite: no outcome read from $log" >&2; exit 1; }
  printf '%s\n' "${lines[@]:0:${#lines[@]}-1}"
  read -r passed failed hung skipped <<<"${lines[-1]}"
  echo "horovod-suite: $passed passed, $failed failed, $hung hung, $skipped skipped" \
    "(of $((passed + failed + hung + skipped))) at $np ranks in one job, $python ($framework $version)," \
    "deadline ${deadline}s; log: $log"
  [ "$failed" -eq 0 ] && [ "$hung" -eq 0 ]
  exit
fi

passed=0 failed=0 hung=0 skipped=0 total=0
declare -a not_passed=()
for id in "${ids[@]}"; do
  name=${id##*::}
  if [ -n "$filter" ] && ! grep -qE "$filter" <<<"$name"; then continue; fi
  total=$((total + 1))
  log=$logdir/$name.log
  start=$(date +%s%N)
  # The file's own folder is the working directory: its tests write nothing
  # there, and pytest finds the checkout's conftest.py as under Horovod's CI.
  (cd "$(dirname "$test_file")" &&
    timeout -k 10 "$deadline" "$build/tools/tandem-run" -np "$np" --label \
      "$python" -m pytest -q -p no:cacheprovider --color=no "$test_file::$id") >"$log" 2>&1
  rc=$?
  tenths=$((($(date +%s%N) - start) / 100000000))
  seconds=$((tenths / 10)).$((tenths % 10))
  # Per rank: pytest's summary line ("1 passed in 0.52s", "1 skipped", ...).
  # TensorFlow's TestCase runs a test as two subtests (graph and eager
  # mode): "1 passed, 2 skipped" is a test whose every subtest skipped (a
  # GPU test), "1 passed, 1 skipped, 1 subtests passed" one that ran.
  npass=0 nskip=0 nfail=0
  for ((r = 0; r < np; r++)); do
    line=$(grep -E "^\[$r\] .*[0-9]+ (passed|failed|skipped|error)" "$log" | tail -1)
    case $line in
      *failed*|*error*) nfail=$((nfail + 1)) ;;
      *"subtests passed"*) npass=$((npass + 1)) ;;
      *skipped*) nskip=$((nskip + 1)) ;;
      *passed*) npass=$((npass + 1)) ;;
    esac
  done
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    outcome=HANG; hung=$((hung + 1))
  elif [ $rc -eq 0 ] && [ $nfail -eq 0 ] && [ $npass -gt 0 ] && [ $((npass + nskip)) -eq "$np" ]; then
    outcome=PASS; passed=$((passed + 1))
  elif [ $rc -eq 0 ] && [ $nskip -eq "$np" ]; then
    outcome=SKIP; skipped=$((skipped + 1))
  else
    outcome=FAIL; failed=$((failed + 1))
  fi
  printf '%-4s %-60s %6ss\n' "$outcome" "$name" "$seconds"
  [ "$outcome" = PASS ] || [ "$outcome" = SKIP ] || not_passed+=("$name")
done

echo "horovod-suite: $passed passed, $failed failed, $hung hung, $skipped skipped" \
  "(of $total) at $np ranks, $python ($framework $version), deadline ${deadline}s"
if [ ${#not_passed[@]} -gt 0 ] || [ $keep -eq 1 ]; then
  echo "horovod-suite: logs in $logdir"
else
  rm -rf "$logdir"
fi
[ $failed -eq 0 ] && [ $hung -eq 0 ]
