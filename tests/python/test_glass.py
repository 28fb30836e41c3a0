"""`import glass` against the fixtures: logits within 1e-4 of the float64 goldens, greedy
generation, streaming against whole generation, padded batches, the tokenizer against
Hugging Face's ids, errors as Python exceptions, and the GIL released while the model
runs. GLASS_FIXTURES names the fixture root (else GLASS_DEFAULT_FIXTURES, which CTest sets
with PYTHONPATH)."""

import json
import os
import pathlib
import subprocess
import threading
import time

import numpy as np
import pytest

import glass

FIXTURES = pathlib.Path(os.environ.get("GLASS_FIXTURES") or os.environ.get("GLASS_DEFAULT_FIXTURES", "../shared/fixtures"))
TOL = 1e-4


def model_folders():
    """Every fixture folder with a golden.json and a model the engine runs."""
    folders = sorted(p.parent for p in FIXTURES.glob("*/golden.json"))
    assert folders, f"no model fixtures under {FIXTURES}"
    return folders


@pytest.fixture(scope="module", params=model_folders(), ids=lambda p: p.name)
def golden_model(request):
    return glass.load(str(request.param), threads=2), json.loads((request.param / "golden.json").read_text())


def test_logits_match_the_goldens(golden_model):
    model, golden = golden_model
    probe = golden["probe_ids"]
    for case in golden["cases"]:
        logits = model.logits(case["ids"])
        assert logits.dtype == np.float32
        assert logits.shape == (len(case["ids"]), model.config["vocab_size"])
        for p in range(len(case["ids"])):
            row = logits[p].astype(np.float64)
            top = np.array(case["top10_ids"][p])
            assert int(np.argmax(row)) == top[0], (case["name"], p)
            np.testing.assert_allclose(row[top], case["top10_logits"][p], atol=TOL, rtol=0)
            np.testing.assert_allclose(row[probe], case["probe_logits"][p], atol=TOL, rtol=0)
            lse = row.max() + np.log(np.exp(row - row.max()).sum())
            assert abs(lse - case["logsumexp"][p]) <= TOL, (case["name"], p)


def test_bf16_activations_move_the_logits_by_the_rounding_only():
    ids = [9707, 11, 1879]
    exact = glass.load(None, threads=1).logits(ids).astype(np.float64)
    rounded = glass.load(None, threads=1, matmul_precision="bf16").logits(ids).astype(np.float64)
    assert 1e-4 < np.abs(exact - rounded).max() < 0.5
    assert (exact.argmax(axis=1) == rounded.argmax(axis=1)).all()


def test_greedy_generation_gives_the_golden_ids(golden_model):
    model, golden = golden_model
    for case in golden["cases"]:
        expected, margins = case["greedy_new_ids"], case["greedy_margins"]
        out = model.generate(case["ids"], do_sample=False, repetition_penalty=1.0, max_new_tokens=len(expected))
        for step, (got, want) in enumerate(zip(out.ids, expected)):
            if margins[step] > 1e-3:
                assert got == want, (case["name"], step)
            elif got != want:
                break  # a near-tie decided the other way: later steps are not comparable
        assert out.prompt_ids == case["ids"]


def test_streaming_gives_what_whole_generation_gives(golden_model):
    model, golden = golden_model
    ids = golden["cases"][0]["ids"]
    whole = model.generate(ids, do_sample=True, seed=11, max_new_tokens=12)
    steps = list(model.generate(ids, do_sample=True, seed=11, max_new_tokens=12, stream=True, top=4))
    assert [s.token for s in steps] == whole.ids
    assert "".join(s.text for s in steps) == whole.text
    assert steps[-1].finish_reason == whole.finish_reason
    assert all(s.finish_reason is None for s in steps[:-1])
    for s in steps:
        assert len(s.candidates_before) == 4
        before = [p for _, _, p in s.candidates_before]
        assert before == sorted(before, reverse=True)
        assert s.stages, "the processors of the chain are named"
        # The token drawn is one the processors left.
        assert s.token in [c[0] for c in s.candidates_after] or len(s.candidates_after) == 4


def test_a_padded_batch_gives_each_rows_own_logits(golden_model):
    model, golden = golden_model
    rows = [case["ids"][:8] for case in golden["cases"]]
    batch, last = model.logits(rows)
    assert batch.shape == (len(rows), max(len(r) for r in rows), model.config["vocab_size"])
    for i, row in enumerate(rows):
        assert last[i] == len(row) - 1
        solo = model.logits(row)
        np.testing.assert_array_equal(batch[i, : len(row)], solo)
        assert not batch[i, len(row):].any()


def test_forward_with_a_cache_continues_the_sequence(golden_model):
    model, golden = golden_model
    ids = max((case["ids"] for case in golden["cases"]), key=len)
    assert len(ids) > 5
    whole = model.logits(ids)
    first, cache = model.forward(ids[:5])
    rest, same = model.forward(ids[5:], cache)
    assert same is cache and cache.length == len(ids)
    np.testing.assert_allclose(np.concatenate([first, rest]), whole, atol=TOL, rtol=0)
    with pytest.raises(ValueError, match="another model"):
        glass.load(None, threads=1).forward([1], cache)


def test_output_logits_are_the_steps_logits(golden_model):
    model, golden = golden_model
    ids = golden["cases"][1]["ids"]
    out = model.generate(ids, do_sample=False, repetition_penalty=1.0, max_new_tokens=5, output_logits=True)
    assert out.logits.shape == (len(out.ids), model.config["vocab_size"])
    assert [int(np.argmax(r)) for r in out.logits] == out.ids
    np.testing.assert_array_equal(out.logits[0], model.logits(ids)[-1])
    # Scores: after the processors. Greedy with a repetition penalty changes the rows of
    # ids already seen; sampling with top_k leaves k finite entries, the drawn one among them.
    out = model.generate(ids, do_sample=False, repetition_penalty=1.3, max_new_tokens=4, output_scores=True)
    assert [int(np.argmax(r)) for r in out.scores] == out.ids
    assert out.logits is None
    out = model.generate(ids, do_sample=True, top_k=7, temperature=1.0, top_p=1.0, min_p=0.0, repetition_penalty=1.0,
                         seed=3, max_new_tokens=4, output_logits=True, output_scores=True)
    for raw, scored, token in zip(out.logits, out.scores, out.ids):
        kept = np.isfinite(scored)
        assert kept.sum() == 7 and kept[token]
        np.testing.assert_array_equal(scored[kept], raw[kept])


def test_logit_bias_is_added_to_the_logits_first():
    model = glass.load(None, threads=1)
    ids = [1, 2, 3]
    plain = model.generate(ids, do_sample=False, max_new_tokens=4, output_logits=True)
    forced = model.generate(ids, do_sample=False, max_new_tokens=4, logit_bias={100: 100.0})
    assert forced.ids == [100] * 4
    # The scores are the raw logits plus the bias, in float32.
    out = model.generate(ids, do_sample=False, repetition_penalty=1.0, max_new_tokens=1, output_scores=True,
                         output_logits=True, logit_bias={7: -3.5, plain.ids[0]: -100.0})
    expected = out.logits[0].copy()
    expected[7] += np.float32(-3.5)
    expected[plain.ids[0]] += np.float32(-100.0)
    drawable = model.tokenizer.vocab_size
    np.testing.assert_array_equal(out.scores[0][:drawable], expected[:drawable])
    assert out.ids[0] != plain.ids[0]


def test_trace_arrays_are_glass_trace_dumps(golden_model, tmp_path):
    model, golden = golden_model
    ids = max((case["ids"] for case in golden["cases"][:3]), key=len)
    trace = model.trace(ids)
    binary = os.environ.get("GLASS_BINARY")
    if not binary:
        pytest.skip("GLASS_BINARY (the glass command, which CTest sets) is not set")
    subprocess.run([binary, "trace", "-m", model.path, "--ids", " ".join(map(str, ids)), "--dump", str(tmp_path / "dump"),
                    "-q", "--format", "json"], check=True, stdout=subprocess.DEVNULL)
    index = json.loads((tmp_path / "dump" / "index.json").read_text())
    names = [entry["name"] for entry in index["tensors"]]
    assert sorted(names) == sorted(trace.keys())
    for entry in index["tensors"]:
        dumped = np.load(tmp_path / "dump" / entry["file"])
        ours = trace[entry["name"]]
        assert ours.shape == dumped.shape, entry["name"]
        assert trace.axes[entry["name"]] == tuple(entry["axes"]), entry["name"]
        np.testing.assert_array_equal(ours, dumped, err_msg=entry["name"])


def test_the_logit_lens_ends_at_the_models_logits(golden_model):
    model, golden = golden_model
    ids = golden["cases"][1]["ids"]
    trace = model.trace(ids, stages=["embed"], lens_positions=[0, -1])
    assert list(trace.keys()) == ["embed"]
    assert trace.lens_positions == [0, len(ids) - 1]
    assert trace.lens.shape == (model.config["num_hidden_layers"], 2, model.config["vocab_size"])
    logits = model.logits(ids)
    np.testing.assert_allclose(trace.lens[-1, 1], logits[-1], atol=1e-5, rtol=0)
    np.testing.assert_allclose(trace.lens[-1, 0], logits[0], atol=1e-5, rtol=0)
    same = glass.compare(logits[-1], trace.lens[-1, 1])
    assert same["top1_agreement"] == 1.0 and same["max_abs_diff"] <= 1e-5
    shifted = glass.compare(logits, logits + 0.5)  # softmax ignores a shift
    assert len(shifted["rows"]) == len(ids)
    assert abs(shifted["max_abs_diff"] - 0.5) < 1e-3 and shifted["max_kl"] < 1e-6 and shifted["top1_agreement"] == 1.0
    with pytest.raises(ValueError, match="not a stage"):
        model.trace(ids, stages=["nope"])
    with pytest.raises(ValueError, match="not a position"):
        model.trace(ids, lens_positions=[len(ids)])
    with pytest.raises(ValueError, match="shape"):
        glass.compare(logits[0], logits[:2])


def test_the_tokenizer_gives_hugging_faces_ids():
    model = glass.load(str(FIXTURES / "tiny-qwen2"), threads=1)
    cases = json.loads((FIXTURES / "tokenizer-cases" / "hf_cases.json").read_text())["cases"]
    for case in cases:
        assert model.tokenizer.encode(case["text"]) == case["ids"], case["text"]
        assert model.tokenizer.decode(case["ids"]) == case["decoded"]


def test_the_chat_template_renders_and_tokenizes():
    model = glass.load(None, threads=1)  # the built-in demo model (Qwen2.5's tokenizer and template)
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    text = model.tokenizer.apply_chat_template(messages)
    assert text == "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    assert model.tokenizer.apply_chat_template(messages, tokenize=True) == model.tokenizer.encode(text)
    assert not model.tokenizer.apply_chat_template(messages, add_generation_prompt=False).endswith("assistant\n")
    out = model.generate(model.tokenizer.apply_chat_template(messages), max_new_tokens=4, seed=1)
    assert len(out.ids) <= 4 and out.finish_reason in ("length", "eos")


def test_bad_input_raises_with_the_engines_message(tmp_path):
    with pytest.raises(FileNotFoundError, match="no-such-model"):
        glass.load(str(tmp_path / "no-such-model"))
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match="config.json"):
        glass.load(str(tmp_path / "broken"))
    with pytest.raises(ValueError, match="^weight_type: .*q9_0"):
        glass.load(None, weight_type="q9_0")
    with pytest.raises(ValueError, match="^backend: .*gpu"):
        glass.load(None, backend="gpu")
    with pytest.raises(ValueError, match="^kv_type: "):
        glass.load(None, kv_type="f8")
    with pytest.raises(ValueError, match='^matmul_precision: "fp8" is not one of float, bf16'):
        glass.load(None, matmul_precision="fp8")
    model = glass.load(None, threads=1)
    vocab = model.config["vocab_size"]
    with pytest.raises(ValueError, match=f"token id {vocab} is outside the vocabulary"):
        model.logits([1, vocab])
    with pytest.raises(ValueError, match="no token ids"):
        model.logits([])
    with pytest.raises(ValueError, match="temperature"):
        model.generate([1, 2], do_sample=True, temperature=-1.0)
    with pytest.raises(ValueError, match="max_new_tokens"):
        model.generate([1, 2], max_new_tokens=0)
    with pytest.raises(ValueError, match=f"^logit_bias: token id {vocab} is outside the vocabulary"):
        model.generate([1, 2], logit_bias={vocab: 1.0})
    with pytest.raises(ValueError, match="logit_bias of token 5 must be between -100 and 100"):
        model.generate([1, 2], logit_bias={5: 100.5})
    with pytest.raises(ValueError, match="^logit_bias: -1 is not a token id"):
        model.generate([1, 2], logit_bias={-1: 1.0})
    with pytest.raises(TypeError):
        model.generate([1, 2], logit_bias={"5": 1.0})
    with pytest.raises(TypeError):
        model.tokenizer.apply_chat_template([{"role": "user", "content": object()}])


def test_the_gil_is_released_while_the_model_runs():
    model = glass.load(None, threads=1)
    ids = list(range(1000, 1400))
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    counter = threading.Thread(target=count)
    counter.start()
    calls = []
    for _ in range(3):
        start = time.perf_counter()
        model.logits(ids)
        calls.append((start, time.perf_counter()))
    stop.set()
    counter.join()
    # The other thread ran inside every call. Were the GIL held, it could not tick in the
    # middle of one (the ends are left out: it may take the GIL as a call begins or ends).
    # Not a bound on gaps, which a busy machine can stretch: one tick per call is enough.
    for start, end in calls:
        margin = 0.1 * (end - start)
        inside = [t for t in ticks if start + margin < t < end - margin]
        assert inside, ("no tick during a call of", end - start, "s")


def test_two_models_run_in_two_threads():
    a, b = glass.load(None, threads=1), glass.load(None, threads=1)
    expected = a.logits([1, 2, 3])
    results = {}

    def run(name, model):
        results[name] = model.logits([1, 2, 3])

    threads = [threading.Thread(target=run, args=(n, m)) for n, m in (("a", a), ("b", b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_array_equal(results["a"], expected)
    np.testing.assert_array_equal(results["b"], expected)
