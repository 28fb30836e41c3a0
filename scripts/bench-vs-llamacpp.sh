#!/usr/bin/env bash
# glass against llama.cpp, back to back on this machine: pp (one batch of PP prompt
# tokens) and tg (TG decode steps) at bf16, q8_0 and q4_0 (or $TYPES), random weights at
# a real shape. Prints a markdown table of both engines and the ratios.
#
#   scripts/bench-vs-llamacpp.sh [SHAPE] [PP] [TG] [THREADS] [ROUNDS] [LAYERS]
#   defaults: 0.5b 512 128 2 2 (all layers)
#   SHAPE: 0.5b 1.5b 3b 7b (Qwen2.5), qwen3-0.6b, qwen3-8b, qwen3-30b-a3b (Qwen3-MoE);
#   LAYERS keeps the first N layers of the shape (both engines), e.g. 8 for qwen3-30b-a3b.
#
# Models go to $GLASS_BENCH_MODELS (default ~/.cache/glass-bench): a safetensors folder
# from `glass random-model --like SHAPE --dtype bf16` for glass (q8_0 and q4_0 are
# made from it at load with --weight-type, as the engine does), and GGUFs of the same
# shape and type from ../shared/peers/llamacpp.sh for llama.cpp. Each round runs
# llama.cpp, then glass, for one type; both report their best of 3 repetitions, and the
# table keeps each engine's best round (the machine is shared). glass uses an f16 KV cache,
# as llama.cpp does. Needs a built build/glass. The table names the machine (CPU model and
# the SIMD / AMX extensions it reports) and the kernel path glass ran for prefill and decode
# (GLASS_CPU=amx|avx512|avx2|scalar in the environment forces one).
#
# DEPTH=N: both tests run after N tokens already in the context (llama-bench's -d, glass
# bench's --depth), e.g. DEPTH=4096 with PP 4096 for a long prompt's attention cost.
#
# bf16-activations (a type of TYPES, in the default list): llama.cpp on the bf16 GGUF again,
# glass on the bf16 folder with --matmul-precision bf16, which rounds the activations of the
# bf16 matmuls to bf16 as llama.cpp does (AVX512-BF16 dot products where the CPU has them);
# the bf16 row is glass with float activations, within 1e-4 of a float64 forward.
#
# A type whose weights do not fit in this machine's available memory (MemAvailable, less 1
# GiB for the KV cache and buffers) is skipped with a row saying so: at 7B, bf16 (15 GB)
# fits in 24 GiB but not beside anything else. Each engine runs alone, so one model is in
# memory at a time.
#
# GGUF=1: both engines run the same GGUF file (TYPES may then be any llama-quantize type
# or preset, e.g. TYPES="Q4_K_M Q6_K Q8_0"), as a user who downloaded it would.
set -euo pipefail
cd "$(dirname "$0")/.."
shape=${1:-0.5b}
pp=${2:-512}
tg=${3:-128}
threads=${4:-2}
rounds=${5:-2}
layers=${6:-}
types=${TYPES:-bf16 bf16-activations q8_0 q4_0}
depth=${DEPTH:-0}
peer=../shared/peers/llamacpp.sh
models=${GLASS_BENCH_MODELS:-$HOME/.cache/glass-bench}
mkdir -p "$models"

case "$shape" in qwen3*) like=$shape ;; *) like=qwen2.5-$shape ;; esac
name=$like${layers:+-${layers}l}
layer_args=()
[ -z "$layers" ] || layer_args=(--layers "$layers")
gguf=${GGUF:-0}
st=$models/$name-bf16
[ "$gguf" = 1 ] || [ -f "$st/config.json" ] || build/glass random-model --like "$like" --dtype bf16 "${layer_args[@]}" --out "$st"
# The GGUF llama.cpp runs for a type of TYPES.
gguf_type() { [ "$1" = bf16-activations ] && echo bf16 || echo "$1"; }
for type in $types; do
  file=$models/$name-$(gguf_type "$type").gguf
  [ -f "$file" ] || "$peer" gguf "$shape" "$file" "$(gguf_type "$type")" "${layer_args[@]}" >&2
done

json_field() { python3 -c 'import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])[sys.argv[1]])' "$1"; }
# llama.cpp's llama-bench: one JSON line with pp_tok_s and tg_tok_s (the peer's `bench`,
# or llama-bench itself with -d when there is a depth).
peer_bench() {
  if [ "$depth" = 0 ]; then "$peer" bench "$@"; return; fi
  "$peer" tool llama-bench -m "$1" -p "$2" -n "$3" -t "$4" -r 3 -d "$depth" -ctk f16 -ctv f16 -o json 2>/dev/null |
    python3 -c '
import json, sys
rows = json.load(sys.stdin)
pp = [r["avg_ts"] for r in rows if r["n_prompt"] > 0 and r["n_gen"] == 0]
tg = [r["avg_ts"] for r in rows if r["n_gen"] > 0 and r["n_prompt"] == 0]
print(json.dumps({"pp_tok_s": round(pp[0], 2) if pp else None, "tg_tok_s": round(tg[0], 2) if tg else None}))'
}
best() { python3 -c 'import sys; print(max(float(v) for v in sys.argv[1:]))' "$@"; }
gib() { python3 -c "import sys; print(f'{int(sys.argv[1]) / 2**30:.1f}')" "$1"; }
mem_available() { echo $(($(awk '/^MemAvailable:/ {print $2}' /proc/meminfo) * 1024)); }
# The bytes of weights an engine holds for a type: its GGUF's size (glass converts the bf16
# folder at load into the same type, or maps the folder for bf16).
weight_bytes() { stat -c %s "$models/$name-$(gguf_type "$1").gguf"; }

cpu=$(grep -m 1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
isa=$(grep -o 'avx2\|avx512[a-z_0-9]*\|avx_vnni\|amx[a-z_0-9]*' /proc/cpuinfo | sort -u | tr '\n' ' ')
echo "machine: $cpu, $(nproc) CPUs; $isa; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| type | test | llama.cpp tok/s | glass tok/s | glass / llama.cpp | glass path |"
echo "|---|---|---|---|---|---|"
for type in $types; do
  lpp=() ltg=() gpp=() gtg=() gpath_pp="" gpath_tg=""
  file=$models/$name-$(gguf_type "$type").gguf
  model=(-m "$st") weight_arg=()
  case "$type" in
    bf16) ;;
    bf16-activations) weight_arg=(--matmul-precision bf16) ;;
    *) weight_arg=(--weight-type "$type") ;;
  esac
  [ "$gguf" = 0 ] || model=(-m "$file") weight_arg=()
  need=$(( $(weight_bytes "$type") + (1 << 30) )) available=$(mem_available)
  if [ "$need" -gt "$available" ]; then
    echo "| $type | skipped | | | | needs about $(gib "$need") GiB, $(gib "$available") GiB available |"
    continue
  fi
  for ((i = 0; i < rounds; i++)); do
    l=$(peer_bench "$file" "$pp" "$tg" "$threads")
    lpp+=("$(echo "$l" | json_field pp_tok_s)")
    ltg+=("$(echo "$l" | json_field tg_tok_s)")
    g=$(build/glass bench "${model[@]}" -p "$pp" -n "$tg" -d "$depth" -t "$threads" -r 3 --kv-type f16 --no-bandwidth --no-peak \
          "${weight_arg[@]}" --format json)
    gpp+=("$(echo "$g" | json_field pp_tok_s)")
    gtg+=("$(echo "$g" | json_field tg_tok_s)")
    gpath_pp=$(echo "$g" | json_field prefill_path)
    gpath_tg=$(echo "$g" | json_field decode_path)
  done
  for test in pp tg; do
    if [ $test = pp ]; then l=$(best "${lpp[@]}"); g=$(best "${gpp[@]}"); n=$pp; path=$gpath_pp
    else l=$(best "${ltg[@]}"); g=$(best "${gtg[@]}"); n=$tg; path=$gpath_tg; fi
    ratio=$(python3 -c "print(f'{$g / $l:.2f}')")
    at=""
    [ "$depth" = 0 ] || at=" @ d$depth"
    echo "| $type | $test$n$at | $l | $g | ${ratio}x | $path |"
  done
done
