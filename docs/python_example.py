"""docs/python.md's example: load, generate, trace a prompt, plot the logit lens.

    PYTHONPATH=build/python python3 docs/python_example.py [MODEL] [OUT.png]

MODEL defaults to the built-in demo model (random weights: its lens shows the mechanics,
not meaning); OUT defaults to docs/python-lens.png."""

import sys

import matplotlib

matplotlib.use("Agg")  # no display needed
import matplotlib.pyplot as plt
import numpy as np

import glass

model = glass.load(sys.argv[1] if len(sys.argv) > 1 else None)
tok = model.tokenizer

prompt = tok.apply_chat_template([{"role": "user", "content": "The capital of France is"}])
out = model.generate(prompt, max_new_tokens=12, seed=1)
print(repr(out.text), out.finish_reason)

ids = tok.encode(prompt) + out.ids[:-1]
positions = list(range(len(ids) - 8, len(ids)))  # the last 8 positions
trace = model.trace(ids, stages=["embed", "attn_weights"], lens_positions=positions)
print({name: trace[name].shape for name in trace.keys()}, trace.axes["layer0.attn_weights"])

# The logit lens: the log-probability, at each layer, of the token the model finally predicts.
lens = trace.lens.astype(np.float64)  # [layers, positions, vocab]
log_probs = lens - lens.max(-1, keepdims=True)
log_probs -= np.log(np.exp(log_probs).sum(-1, keepdims=True))
final = lens[-1].argmax(-1)  # the prediction at the last layer, per position
grid = log_probs[:, np.arange(len(positions)), final] / np.log(10)  # [layers, positions], log10

fig, ax = plt.subplots(figsize=(8, 3.2))
image = ax.imshow(grid, aspect="auto", origin="lower", cmap="viridis")
ax.set_xticks(range(len(positions)), [repr(tok.decode([ids[p]]))[1:-1] for p in positions], rotation=30, fontsize=8)
ax.set_xlabel("input token (the lens predicts the next one)")
ax.set_ylabel("layer")
ax.set_title("logit lens: log10 probability of the final prediction, per layer")
fig.colorbar(image, ax=ax)
fig.tight_layout()
fig.savefig(sys.argv[2] if len(sys.argv) > 2 else "docs/python-lens.png", dpi=100)
