#!/usr/bin/env bash
# Peak memory and load time against llama.cpp, back to back on this machine, at a real
# shape with random weights: glass converting a bf16 safetensors folder at load
# (--weight-type), glass on a GGUF of the type, and llama.cpp's llama-bench on that GGUF.
# Prints each command's load line, pp/tg and GNU time's maximum resident set size.
#
#   scripts/memory-vs-llamacpp.sh [SHAPE] [PP] [TG] [THREADS]     defaults: 7b 128 32 2
#
# Models go to $GLASS_BENCH_MODELS (default ~/.cache/glass-bench), as in
# bench-vs-llamacpp.sh: the folder from `glass random-model --like qwen2.5-SHAPE --dtype
# bf16`, GGUFs from ../shared/peers/llamacpp.sh gguf. TYPES (default "q4_0 q8_0").
set -euo pipefail
shape=${1:-7b}
pp=${2:-128}
tg=${3:-32}
threads=${4:-2}
types=${TYPES:-q4_0 q8_0}
root=$(cd "$(dirname "$0")/.." && pwd)
glass="$root/build/glass"
peer="$root/../shared/peers/llamacpp.sh"
models=${GLASS_BENCH_MODELS:-$HOME/.cache/glass-bench}
[ -x "$glass" ] || { echo "memory-vs-llamacpp: build glass first (build/glass is missing)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "memory-vs-llamacpp: needs GNU time (apt-get install time)" >&2; exit 1; }
mkdir -p "$models"
folder="$models/qwen2.5-$shape-bf16"
[ -f "$folder/model.safetensors" ] || [ -f "$folder/model.safetensors.index.json" ] ||
  "$glass" random-model --like "qwen2.5-$shape" --dtype bf16 --out "$folder" >&2
for t in $types; do
  gguf="$models/qwen2.5-$shape-$t.gguf"
  [ -f "$gguf" ] || "$peer" gguf "$shape" "$gguf" "$t" >&2
  echo "== $t"
  /usr/bin/time -f "glass (folder, --weight-type $t): max RSS %M KB, %e s" \
    "$glass" bench -m "$folder" --weight-type "$t" -p "$pp" -n "$tg" -r 1 -t "$threads" --no-bandwidth 2>&1 |
    grep -E "^load|^pp|^tg|max RSS"
  /usr/bin/time -f "glass (GGUF): max RSS %M KB, %e s" \
    "$glass" bench -m "$gguf" -p "$pp" -n "$tg" -r 1 -t "$threads" --no-bandwidth 2>&1 | grep -E "^load|^pp|^tg|max RSS"
  /usr/bin/time -f "llama.cpp (GGUF): max RSS %M KB, %e s" "$peer" bench "$gguf" "$pp" "$tg" "$threads" 1 2>&1 | tail -2
done
