#!/usr/bin/env bash
# Fuzzing: builds the libFuzzer targets of fuzz/ (clang, ASan + UBSan) in build-fuzz and
# runs each one for SECONDS (default 60); prints per target the executions, coverage
# (libFuzzer's cov/ft at the end) and findings. Exits non-zero on any finding (a crash, a
# sanitizer report, an exception other than glass::Error, a timeout, an out-of-memory, a
# leak), leaving the input that caused it in build-fuzz/findings/<target>/.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Reproduce a finding: build-fuzz/fuzz/fuzz_<target> build-fuzz/findings/<target>/crash-...
# Seeds: fuzz/corpus/<target>/, synthetic ones and those made from the fixtures
# (GLASS_FIXTURES, default ../shared/fixtures) by fuzz/make_seeds.py. What the fuzzer
# finds new is kept in build-fuzz/fuzz-corpus/<target>/ for the next run.
# Environment: GLASS_FUZZ_JOBS targets at once (default: the CPU count, at most 2),
# GLASS_FUZZ_CXX (default clang++-14), GLASS_FUZZ_BUILD (default build-fuzz).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
shift || true
all_targets=(safetensors_header gguf model_config tokenizer_json tokenizer_encode tokenizer_decode jinja_template
             completion_request grammar_gbnf json_schema)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")

# Per target: the longest input (long enough for every real file of its kind that is
# worth mutating) and the time one input may take before it counts as a hang.
declare -A max_len=([safetensors_header]=16384 [gguf]=65536 [model_config]=4096 [tokenizer_json]=16384 [tokenizer_encode]=2048
                    [tokenizer_decode]=4096 [jinja_template]=8192 [completion_request]=4096 [grammar_gbnf]=4096
                    [json_schema]=4096)
declare -A timeout=([safetensors_header]=5 [gguf]=5 [model_config]=5 [tokenizer_json]=10 [tokenizer_encode]=5
                    [tokenizer_decode]=5 [jinja_template]=10 [completion_request]=10 [grammar_gbnf]=10 [json_schema]=10)
declare -A dict=([gguf]=gguf [model_config]=json [tokenizer_json]=json [completion_request]=json [safetensors_header]=json
                 [jinja_template]=jinja [json_schema]=json)
for t in "${targets[@]}"; do
  [ -n "${max_len[$t]:-}" ] || { echo "fuzz.sh: unknown target '$t' (targets: ${all_targets[*]})" >&2; exit 2; }
done

build=${GLASS_FUZZ_BUILD:-build-fuzz}
fixtures=${GLASS_FIXTURES:-../shared/fixtures}
cpus=$(nproc 2>/dev/null || echo 1)
jobs=${GLASS_FUZZ_JOBS:-$(( cpus < 2 ? cpus : 2 ))}

cmake -S . -B "$build" -DCMAKE_CXX_COMPILER="${GLASS_FUZZ_CXX:-clang++-14}" -DGLASS_FUZZ=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$cpus"

seeds="$build/fuzz-seeds"
rm -rf "$seeds"
seed_args=()
for t in "${targets[@]}"; do seed_args+=("$t=${max_len[$t]}"); done
python3 fuzz/make_seeds.py "$seeds" "$fixtures" "$build/fuzz-data/qwen2.5-tokenizer" "${seed_args[@]}"

logs="$build/fuzz-logs"
findings="$build/findings"
mkdir -p "$logs"

run_target() {
  local t=$1
  mkdir -p "$build/fuzz-corpus/$t" "$seeds/$t" "$findings/$t"
  local args=(-max_total_time="$seconds" -print_final_stats=1 -max_len="${max_len[$t]}" -timeout="${timeout[$t]}"
              -rss_limit_mb=2048 -malloc_limit_mb=2048 -artifact_prefix="$findings/$t/")
  [ -z "${dict[$t]:-}" ] || args+=(-dict="fuzz/dict/${dict[$t]}.dict")
  local rc=0
  # hard_rss_limit_mb: ASan checks it 10 times a second, libFuzzer its -rss_limit_mb once: a
  # runaway allocation stops before it takes the machine's memory.
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0:hard_rss_limit_mb=3072 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/fuzz/fuzz_$t" "${args[@]}" "$build/fuzz-corpus/$t" "$seeds/$t" >"$logs/$t.log" 2>&1 || rc=$?
  echo "$rc" >"$logs/$t.rc"
}

echo "fuzz.sh: ${#targets[@]} targets, ${seconds} s each, $jobs at a time; logs in $logs"
before=$(mktemp)
trap 'rm -f "$before"' EXIT
find "$findings" -type f 2>/dev/null | sort >"$before" || true
running=0
for t in "${targets[@]}"; do
  run_target "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n
    running=$((running - 1))
  fi
done
wait

failed=0
printf '%-20s %12s %8s %8s %8s %8s  %s\n' target executions cov ft corpus findings result
for t in "${targets[@]}"; do
  log="$logs/$t.log"
  rc=$(cat "$logs/$t.rc")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
  new=$(find "$findings/$t" -type f | sort | comm -13 "$before" - || true)
  count=$(grep -c . <<<"$new" || true)
  result=ok
  if [ "$rc" -ne 0 ] || [ "$count" -gt 0 ]; then
    failed=1
    result="FINDING (exit $rc): $(grep -m1 -E '==glass-fuzz==|ERROR: libFuzzer|ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer' "$log" || echo "see $log")"
  fi
  printf '%-20s %12s %8s %8s %8s %8s  %s\n' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$count" "$result"
  if [ -n "$new" ]; then
    while read -r f; do echo "    input: $f"; done <<<"$new"
  fi
done
if [ "$failed" -ne 0 ]; then
  echo "fuzz.sh: findings above; reproduce with $build/fuzz/fuzz_<target> <input>, logs in $logs" >&2
  exit 1
fi
