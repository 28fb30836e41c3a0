#!/usr/bin/env bash
# A bounded soak test of a live `glass serve` on the demo model:
#
#   scripts/soak.sh [MINUTES]      (default 5)
#
# Starts the server (build/glass, build/demo-model; GLASS_BINARY / GLASS_MODEL override
# them), takes a reference greedy completion from `glass run`, then runs the phases of
# scripts/soak.mjs (mixed streamed and whole requests, client disconnects, invalid
# requests, slow clients, all at once). After each phase: every KV block free, VmRSS
# flat (within 10% + 24 MiB of the first phase's), the reference request returns the
# reference tokens. Prints requests served, disconnects, responses by status, peak RSS and
# KV blocks leaked; exits 1 when a check failed, the server crashed or did not stop
# cleanly on SIGTERM.
set -euo pipefail
minutes="${1:-5}"
root="$(cd "$(dirname "$0")/.." && pwd)"
glass="${GLASS_BINARY:-$root/build/glass}"
model="${GLASS_MODEL:-$root/build/demo-model}"
command -v node >/dev/null || { echo "soak: node is not installed (scripts/install-deps.sh --test installs it)" >&2; exit 1; }
[[ -x "$glass" ]] || { echo "soak: no $glass (build first)" >&2; exit 1; }

prompt="The reference prompt"
tokens=24
reference="$("$glass" run -m "$model" -p "$prompt" --greedy --ignore-eos -n "$tokens" --format json 2>/dev/null |
  node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(JSON.parse(s).ids.join(" ")))')"

log="$(mktemp -t glass-soak.XXXXXX)"
# Short deadlines so that slow clients meet them within a phase.
"$glass" serve -m "$model" --model-name soak --port 0 --parallel 8 --queue 32 --ctx-size 512 --max-body-mb 1 \
  --header-timeout 2 --request-timeout 4 --max-connections 256 2>"$log" &
pid=$!
cleanup() {
  if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
  rm -f "$log"
}
trap cleanup EXIT

port=""
for _ in $(seq 600); do
  port="$(sed -n 's#.*listening on http://127\.0\.0\.1:\([0-9]*\).*#\1#p' "$log" | head -1)"
  [[ -n "$port" ]] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
if [[ -z "$port" ]]; then
  echo "soak: glass serve did not start:" >&2
  cat "$log" >&2
  exit 1
fi

status=0
node "$root/scripts/soak.mjs" --port "$port" --pid "$pid" --minutes "$minutes" --reference-ids "$reference" \
  --reference-prompt "$prompt" --reference-tokens "$tokens" --max-body-mb 1 --header-timeout-s 2 --request-timeout-s 4 \
  --ctx-size 512 || status=1

if ! kill -0 "$pid" 2>/dev/null; then
  echo "soak: FAILED: glass serve died during the run; its log ends:" >&2
  tail -20 "$log" >&2
  exit 1
fi
kill -TERM "$pid"
server_status=0
wait "$pid" || server_status=$?
if [[ $server_status -ne 0 ]]; then
  echo "soak: FAILED: glass serve exited with status $server_status on SIGTERM; its log ends:" >&2
  tail -20 "$log" >&2
  status=1
fi
echo "soak: server log: $(wc -l <"$log") lines, $(grep -c ' 499: ' "$log" || true) non-streamed requests cancelled by their client (499), $(grep -c ' 500' "$log" || true) with status 500"
if grep -q ' 500' "$log"; then
  echo "soak: FAILED: status 500 in the server log:" >&2
  grep ' 500' "$log" | head -5 >&2
  status=1
fi
exit $status
