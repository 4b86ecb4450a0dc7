#!/usr/bin/env bash
# Sums up a `cargo test` log, and the pytest run in it: one line of passed,
# failed and skipped tests, after the names of those that failed or were skipped.
#   scripts/test-summary.sh LOG SKIP_LOG CARGO_STATUS
# A test that skipped (no FUSE, not root, a slow test without
# PTEFS_SLOW_TESTS=1) passed as far as cargo knows: it is listed in SKIP_LOG
# and counted as skipped, not passed. Exits non-zero when
# anything failed or cargo itself failed.
set -euo pipefail
log=$1 skips=$2 status=$3
read -r passed failed ignored < <(awk '
  /^test result:/ {
    for (i = 1; i <= NF; i++) {
      if ($(i+1) ~ /^passed;?$/) p += $i
      if ($(i+1) ~ /^failed;?$/) f += $i
      if ($(i+1) ~ /^ignored;?$/) g += $i
    }
  }
  # pytest (-q): "2 failed, 50 passed, 1 skipped in 9.81s"
  / in [0-9.]+s( \([0-9:]+\))?$/ && /(passed|failed)/ {
    for (i = 1; i <= NF; i++) {
      if ($(i+1) ~ /^passed,?$/) p += $i
      if ($(i+1) ~ /^failed,?$/) f += $i
      if ($(i+1) ~ /^skipped,?$/) g += $i
    }
  }
  END { print p + 0, f + 0, g + 0 }' "$log")
failed_names=$( (sed -n 's/^test \(.*\) \.\.\. FAILED$/\1/p' "$log"; sed -n 's/^FAILED \([^ ]*\).*$/\1/p' "$log") | sort -u)
ignored_names=$( (sed -n 's/^test \(.*\) \.\.\. ignored.*$/\1/p' "$log"; sed -n 's/^SKIPPED \[[0-9]*\] \(.*\)$/\1/p' "$log") | sort -u)
skipped_names=$(sort -u "$skips")
nskipped=$(( $(grep -c . <<<"$skipped_names" || true) + ignored ))
passed=$(( passed - $(grep -c . <<<"$skipped_names" || true) ))
if [[ $status != 0 && $failed == 0 ]]; then
  # A test binary that did not build or crashed reports no result line.
  failed=1
  failed_names="cargo test exited with status $status before reporting a failure (see above)"
fi
echo
list() { [[ -z $2 ]] || { echo "$1:"; sed 's/^/  /' <<<"$2"; }; }
list failed "$failed_names"
list skipped "$skipped_names"
list ignored "$ignored_names"
slow=$(grep -c "PTEFS_SLOW_TESTS" <<<"$skipped_names" || true)
((slow == 0)) || echo "$slow slow test(s) not run: PTEFS_SLOW_TESTS=1 runs them, as .ci/run does"
echo "tests: $passed passed, $failed failed, $nskipped skipped"
[[ $failed == 0 ]]
