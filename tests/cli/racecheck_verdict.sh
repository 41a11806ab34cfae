#!/usr/bin/env bash
# scripts/racecheck_verdict.sh on the racecheck report of a real H100 run (hazards inside cuDNN's
# sm90 dgrad kernel only: passes), and on that report with a hazard in one of our kernels, an
# internal sanitizer error, or a failed test added (each must fail).
set -euo pipefail
src=${1:?usage: racecheck_verdict.sh SOURCE_DIR}
verdict=$src/scripts/racecheck_verdict.sh
real=$src/tests/data/sanitizer/racecheck_h100_cudnn91900.txt
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "racecheck_verdict test: $*" >&2; exit 1; }

out=$(bash "$verdict" "$real") || fail "the H100 report (cuDNN's kernel only) was not accepted: $out"
grep -q "clean in our kernels; 2 racing access" <<<"$out" || fail "unexpected verdict: $out"

expect_failure() {  # name, extra lines appended to the real report
  cp "$real" "$tmp/$1.txt"
  printf '%s\n' "${@:2}" >> "$tmp/$1.txt"
  if out=$(bash "$verdict" "$tmp/$1.txt"); then fail "$1 was accepted: $out"; fi
  grep -q "racecheck: FAILED" <<<"$out" || fail "$1: no FAILED line: $out"
}
expect_failure ours \
  "========= Warning: Race reported between Write access at ds::model::(anonymous namespace)::narrow_weight_window_kernel<3>(long, ds::model::kernels::NarrowConv, const float *, const float *, float *)+0x1a0" \
  "=========     and Read access at ds::model::(anonymous namespace)::narrow_weight_window_kernel<3>(long, ds::model::kernels::NarrowConv, const float *, const float *, float *)+0x1c0 [4 hazards]"
expect_failure internal "========= Internal Sanitizer Error: The Sanitizer failed to handle a hardware exception."
expect_failure test "[  FAILED  ] ModelCuda.NarrowOutputConvolutionMatchesCpu (1779 ms)"

# A hazard report in a form the script does not read (the summary counts one more) and a
# truncated log (no summary) must not pass as clean.
sed 's/1 hazard displayed (1 error/2 hazards displayed (2 errors/' "$real" > "$tmp/unread.txt"
echo "=========     Potential hazard in a form the script does not parse" >> "$tmp/unread.txt"
if out=$(bash "$verdict" "$tmp/unread.txt"); then fail "a report the script cannot read was accepted: $out"; fi
grep -q "summary says 2 hazard(s) displayed, 1 race report(s) read" <<<"$out" || fail "unread: $out"
grep -v "RACECHECK SUMMARY" "$real" > "$tmp/truncated.txt"
if out=$(bash "$verdict" "$tmp/truncated.txt"); then fail "a log without its summary was accepted: $out"; fi

printf '%s\n' "========= COMPUTE-SANITIZER" "[  PASSED  ] 9 tests." "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)" > "$tmp/clean.txt"
out=$(bash "$verdict" "$tmp/clean.txt") || fail "a clean report was rejected: $out"
[[ $out == "racecheck: clean" ]] || fail "clean report: $out"
echo "racecheck_verdict: OK"
