#!/usr/bin/env bash
# The elastic fault drills (docs/elastic.md), all of them, on a fresh local
# cluster: SIGKILL of a rank and of rank 0, SIGSTOP, a cut link, a node cut
# off entirely (until Slurm marks it DOWN; the drill brings it back), growing
# and shrinking, the Keras drill, Horovod's elastic examples and test mains.
# CI runs all of them but the node cut off (tests/e2e/test_elastic*.py).
# Prints each drill's "fault -> first step at the new size" time, with the
# load beside it, REPEAT times (default 3).
#
#   contrib/elastic-drills.sh [BUILD]       # as root, after a build
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-$root/build}")
repeat=${REPEAT:-3}
# shellcheck disable=SC2207
pythons=($("$root/contrib/install-python-envs.sh" --print-pythons))
failed=0
for i in $(seq "$repeat"); do
  echo "== run $i of $repeat ($(uptime | sed 's/.*load/load/'))"
  log=$(mktemp /tmp/elastic-drills.XXXXXX)
  TANDEM_ELASTIC_LONG_DRILLS=1 /usr/bin/python3 -m pytest -q -s -p no:cacheprovider \
    --build-dir="$build" "${pythons[@]}" "$root/tests/e2e/test_elastic.py" \
    "$root/tests/e2e/test_elastic_examples.py" > "$log" 2>&1
  rc=$?
  grep -E "fault -> |grow at|passed|failed|skipped|Error" "$log"
  if [ "$rc" -ne 0 ]; then failed=$((failed + 1)); echo "== run $i failed: log kept in $log"
  else rm -f "$log"; fi
done
echo "== $((repeat - failed)) of $repeat runs passed"
[ "$failed" -eq 0 ]
