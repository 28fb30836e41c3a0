"""Checks a `glass trace --dump` folder with numpy against the `--format json` output.

Usage: check_dump.py DUMP_DIR TRACE_JSON
Every tensor in index.json must load with numpy.load as float32 in C order with the
shape and axes the index and the JSON give, and its per-position rms (over the values
that are not "keys" padding) and first values must equal the JSON's. Prints "ok N".
"""
import json
import math
import os
import sys

import numpy as np


def main():
    dump, trace_path = sys.argv[1], sys.argv[2]
    with open(os.path.join(dump, "index.json")) as f:
        index = json.load(f)
    with open(trace_path) as f:
        trace = json.load(f)
    by_name = {s["name"]: s for s in trace["stages"]}
    assert index["format"] == "glass-trace-dump", index["format"]
    assert index["prompt"]["ids"] == trace["prompt"]["ids"]
    checked = 0
    for entry in index["tensors"]:
        a = np.load(os.path.join(dump, entry["file"]), allow_pickle=False)
        s = by_name[entry["name"]]
        assert a.dtype == np.float32, (entry["file"], a.dtype)
        assert a.flags["C_CONTIGUOUS"], entry["file"]
        assert list(a.shape) == entry["shape"] == [s["shape"][n] for n in s["axes"]], (entry["file"], a.shape)
        assert entry["axes"] == s["axes"] and entry["stage"] == s["stage"] and entry["layer"] == s["layer"]
        assert entry["positions"] == s["positions"]
        rows = a.reshape(a.shape[0], -1)
        for r, position in enumerate(entry["positions"]):
            row = rows[r].astype(np.float64)
            if "keys" in entry["axes"]:
                k = entry["axes"].index("keys")
                keys = np.arange(a.shape[k]).reshape([-1 if i == k else 1 for i in range(1, a.ndim)])
                valid = np.broadcast_to(keys <= position, a.shape[1:]).reshape(-1)
                row_valid = row[valid]
            else:
                valid = np.ones(row.shape, dtype=bool)
                row_valid = row
            finite = row_valid[np.isfinite(row_valid)]
            rms = math.sqrt(float(np.mean(finite * finite))) if finite.size else 0.0
            want = s["per_position"]["rms"][r]
            assert abs(rms - want) <= 1e-5 * max(1.0, abs(want)), (entry["name"], r, rms, want)
            first = s["first"][r]
            for i, v in enumerate(first):
                if v is None:  # padding or non-finite
                    assert (not valid[i]) or not math.isfinite(row[i]), (entry["name"], r, i, row[i])
                else:
                    assert float(rows[r][i]) == v, (entry["name"], r, i, float(rows[r][i]), v)
        checked += 1
    assert checked == len(trace["stages"]), (checked, len(trace["stages"]))
    print("ok", checked)


if __name__ == "__main__":
    main()
