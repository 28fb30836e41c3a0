#!/usr/bin/env bash
# Tokenizer throughput, glass against Hugging Face tokenizers (Rust, via npm), back to back
# on the same >= 1 MB text, single thread, after checking that both give the same ids.
#
#   scripts/bench-tokenizer-vs-hf.sh [TOKENIZER_JSON] [ROUNDS]
#
# The texts: every tokenizer-cases/*.json text concatenated (newline-separated) and
# repeated to >= 1 MB ("fixtures.txt"), and the same for the Qwen prose cases alone
# (Chinese/English articles and code, "prose.txt"). Each round runs HF, then glass; the
# best of each is what counts (the machine is shared). Needs a built build/glass.
set -euo pipefail
cd "$(dirname "$0")/.."
fixtures=${GLASS_FIXTURES:-../shared/fixtures}
tokenizer=${1:-$fixtures/qwen2.5-tokenizer/tokenizer.json}
rounds=${2:-3}
peer=../shared/peers/hf_tokenizers.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$fixtures" "$work" <<'PY'
import glob, json, sys
fixtures, work = sys.argv[1], sys.argv[2]
texts = []
for f in sorted(glob.glob(fixtures + "/tokenizer-cases/*.json")):
    texts += [c["text"] for c in json.load(open(f, encoding="utf-8"))["cases"]]
prose = [c["text"] for c in json.load(open(fixtures + "/tokenizer-cases/hf_cases.json", encoding="utf-8"))["cases"][37:162]
         if len(c["text"]) < 2000]
for name, items in (("fixtures", texts), ("prose", prose)):
    one = "\n".join(items)
    reps = -(-1_000_000 // len(one.encode()))
    big = "\n".join([one] * reps)
    open(f"{work}/{name}.txt", "w", encoding="utf-8").write(big)
    json.dump({"texts": [big]}, open(f"{work}/{name}.texts.json", "w", encoding="utf-8"))
    json.dump(big, open(f"{work}/{name}.jsonl", "w", encoding="utf-8"))
    print(f"{name}.txt: {len(items)} texts x {reps} = {len(big.encode())} bytes")
PY

for name in fixtures prose; do
  "$peer" ids "$tokenizer" < "$work/$name.texts.json" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["cases"][0]["ids"], separators=(",", ":")))' > "$work/$name.hf_ids"
  (cat "$work/$name.jsonl"; echo) | build/glass tokenize --jsonl -m "$tokenizer" 2>/dev/null > "$work/$name.glass_ids"
  if cmp -s "$work/$name.hf_ids" "$work/$name.glass_ids"; then
    echo "$name.txt: same ids ($(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$work/$name.hf_ids") tokens)"
  else
    echo "$name.txt: IDS DIFFER between glass and Hugging Face" >&2
    exit 1
  fi
  for r in $(seq "$rounds"); do
    echo "round $r:"
    "$peer" speed "$tokenizer" "$work/$name.txt" | sed 's/^/  /'
    taskset -c 0 build/glass bench-tokenizer -m "$tokenizer" "$work/$name.txt" 2>/dev/null | sed 's/^/  /'
  done
done
