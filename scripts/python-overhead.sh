#!/usr/bin/env bash
# The Python module's overhead on model.logits([id]) (docs/python.md): the same call
# looped in C++ inside the module (glass._logits_loop_seconds: the same process and thread
# pool) and called from Python, in alternating batches of about 0.2 s each, ROUNDS pairs;
# prints the median time per call of each and their ratio. MODEL: a folder or GGUF
# (default: the built-in demo model).
#   scripts/python-overhead.sh [MODEL] [THREADS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHONPATH=build/python exec /usr/bin/python3 - "${1:-}" "${2:-2}" "${3:-30}" <<'PY'
import statistics, sys, time
import glass

model = glass.load(sys.argv[1] or None, threads=int(sys.argv[2]))
rounds = int(sys.argv[3])
ids = [9707]
model.logits(ids)
per_call = glass._logits_loop_seconds(model, ids, 3)
calls = max(1, int(0.2 / per_call))
cpp, py = [], []
for _ in range(rounds):
    cpp.append(glass._logits_loop_seconds(model, ids, calls))
    start = time.perf_counter()
    for _ in range(calls):
        model.logits(ids)
    py.append((time.perf_counter() - start) / calls)
c, p = statistics.median(cpp), statistics.median(py)
print(f"{model.path}: {calls} calls x {rounds} rounds; C++ {c * 1e6:.1f} us, Python {p * 1e6:.1f} us per call; "
      f"Python / C++ {p / c:.3f}")
PY
