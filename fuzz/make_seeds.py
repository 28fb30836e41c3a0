#!/usr/bin/env python3
"""Builds the seed corpus of each fuzz target (scripts/fuzz.sh runs it).

usage: make_seeds.py OUT_DIR FIXTURES_DIR [TOKENIZER_DIR] [MAX_LEN_target=N ...]

OUT_DIR/<target>/ gets: the hand-written seeds in fuzz/corpus/<target>/, synthetic ones
made here (small safetensors files, tiny tokenizer.json documents) and seeds derived from
the fixtures (config.json files, safetensors headers, chat templates and their
conversations, tokenizer cases), and from TOKENIZER_DIR (the bundled Qwen2.5
tokenizer_config.json's chat template). A missing fixtures folder only means fewer seeds.
Seeds longer than the target's -max_len are left out (libFuzzer would cut them).
"""

import glob
import hashlib
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def byte_level_alphabet():
    """GPT-2's bytes_to_unicode: byte -> the character tokenizer.json writes for it."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


BYTE = byte_level_alphabet()
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
               r"\s*[\r\n]+|\s+(?!\S)|\s+")


def bl(s):
    return "".join(BYTE[b] for b in s.encode())


def tiny_tokenizer(merges, split=None, pair_merges=False, added=(), post=None, byte_level_regex=False,
                   normalizer={"type": "NFC"}, decoder=None):
    vocab = {BYTE[b]: b for b in range(256)}
    merge_list = []
    for left, right in merges:
        a, b = bl(left), bl(right)
        merge_list.append([a, b] if pair_merges else a + " " + b)
        vocab.setdefault(a + b, len(vocab))
    pre = []
    if split is not None:
        pre.append({"type": "Split", "pattern": split[0], "behavior": split[1], "invert": split[2]})
    pre.append({"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": byte_level_regex})
    added_tokens = []
    for i, (content, special, flags) in enumerate(added):
        t = {"id": len(vocab) + i, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": not special, "special": special}
        t.update(flags)
        added_tokens.append(t)
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added_tokens,
        "normalizer": normalizer,
        "pre_tokenizer": pre[0] if len(pre) == 1 else {"type": "Sequence", "pretokenizers": pre},
        "post_processor": post or {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False},
        "decoder": decoder or {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": merge_list},
    }


def tokenizer_seeds():
    merges = [("h", "e"), ("l", "l"), ("he", "ll"), ("hell", "o"), (" ", "w"), ("o", "r"), (" w", "or"), ("l", "d"),
              (" wor", "ld")]
    im = [("<|im_start|>", True, {}), ("<|im_end|>", True, {}), ("<tool_call>", False, {}),
          (" lstrip", False, {"lstrip": True}), ("rstrip ", False, {"rstrip": True}),
          ("word", False, {"single_word": True}), ("Norm\u00e9", False, {"normalized": True})]
    bos = {"type": "TemplateProcessing",
           "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
           "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [256], "tokens": ["<s>"]}}}
    yield tiny_tokenizer(merges, split=({"Regex": QWEN2_SPLIT}, "Isolated", False))
    yield tiny_tokenizer(merges, split=({"Regex": QWEN2_SPLIT}, "Isolated", False), pair_merges=True, added=im)
    yield tiny_tokenizer(merges, byte_level_regex=True, normalizer=None)
    yield tiny_tokenizer(merges, split=({"String": " "}, "MergedWithNext", False), post=bos,
                         added=[("<s>", True, {})])
    yield tiny_tokenizer(merges, split=({"Regex": r"\d+"}, "Removed", True),
                         decoder={"type": "Sequence", "decoders": [{"type": "ByteLevel"}]},
                         normalizer={"type": "Sequence", "normalizers": [{"type": "NFC"}]})
    for behavior in ("MergedWithPrevious", "Contiguous"):
        yield tiny_tokenizer(merges[:4], split=({"Regex": r"\s+"}, behavior, False))


def safetensors_file(tensors, metadata=None, pad=True):
    header, blobs, offset = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    sizes = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1,
             "F8_E4M3": 1, "U16": 2, "U32": 4, "U64": 8, "F8_E5M2": 1}
    for name, dtype, shape in tensors:
        n = sizes[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        blobs.append(bytes((offset + i) % 251 for i in range(n)))
        offset += n
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def safetensors_seeds():
    yield safetensors_file([("model.embed_tokens.weight", "BF16", [8, 4]), ("model.norm.weight", "F32", [4])],
                           {"format": "pt"})
    yield safetensors_file([("a", "F16", [2, 3]), ("b", "I8", [5]), ("empty", "F32", [0, 7]), ("scalar", "F64", [])],
                           pad=False)
    yield safetensors_file([(f"t{i}", dt, [i + 1]) for i, dt in enumerate(
        ["F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "BOOL", "F8_E4M3", "F8_E5M2", "U16", "U32",
         "U64"])])
    yield safetensors_file([], {"note": "no tensors"})


def fixture_seeds(fixtures):
    """(target, bytes) pairs from a fixtures folder of the layout in DESIGN.md."""
    for path in sorted(glob.glob(os.path.join(fixtures, "**", "config.json"), recursive=True)):
        yield "model_config", open(path, "rb").read()
    for path in sorted(glob.glob(os.path.join(fixtures, "**", "*.safetensors"), recursive=True)):
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) == 8:
                n = struct.unpack("<Q", head)[0]
                if n < (1 << 20):
                    yield "safetensors_header", head + f.read(n)  # the header; its data is cut off
    for path in sorted(glob.glob(os.path.join(fixtures, "**", "tokenizer_config.json"), recursive=True)):
        try:
            t = json.load(open(path, encoding="utf-8")).get("chat_template")
        except (ValueError, OSError):
            continue
        if isinstance(t, str):
            yield "jinja_template", t.encode()
    cases_path = os.path.join(fixtures, "chat-templates", "cases.json")
    if os.path.exists(cases_path):
        d = json.load(open(cases_path, encoding="utf-8"))
        templates = d.get("templates", {})
        for text in templates.values():
            yield "jinja_template", text.encode()
        for case in d.get("cases", []):
            t = case.get("template")
            if isinstance(t, str) and t not in templates:
                yield "jinja_template", t.encode()
            messages = case.get("messages")
            if isinstance(messages, list) and messages:
                body = {"model": "m", "messages": messages}
                if case.get("tools"):
                    body["tools"] = case["tools"]
                yield "completion_request", json.dumps(body, ensure_ascii=False).encode()
    for path in sorted(glob.glob(os.path.join(fixtures, "tokenizer-cases", "*.json"))):
        for case in json.load(open(path, encoding="utf-8")).get("cases", []):
            text = case.get("text", "").encode("utf-8", "surrogatepass")
            yield "tokenizer_encode", bytes([1]) + text
            ids = case.get("ids") or []
            yield "tokenizer_decode", bytes([0]) + b"".join(struct.pack("<I", i)[:3] for i in ids)
            yield "completion_request", json.dumps({"prompt": case.get("text", ""), "max_tokens": 4}).encode()


def main():
    out, fixtures = sys.argv[1], sys.argv[2]
    tokenizer_dir = sys.argv[3] if len(sys.argv) > 3 else ""
    max_len = {}
    for arg in sys.argv[4:]:
        name, _, n = arg.partition("=")
        max_len[name] = int(n)
    counts = {}

    def put(target, data):
        if target in max_len and len(data) > max_len[target]:
            return
        folder = os.path.join(out, target)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "seed-" + hashlib.sha1(data).hexdigest())
        if not os.path.exists(path):
            with open(path, "wb") as f:
                f.write(data)
            counts[target] = counts.get(target, 0) + 1

    for target_dir in sorted(glob.glob(os.path.join(HERE, "corpus", "*"))):
        for path in sorted(glob.glob(os.path.join(target_dir, "*"))):
            put(os.path.basename(target_dir), open(path, "rb").read())
    for t in tokenizer_seeds():
        put("tokenizer_json", json.dumps(t, ensure_ascii=False).encode())
        put("tokenizer_json", json.dumps(t, ensure_ascii=True, indent=1).encode())
    for data in safetensors_seeds():
        put("safetensors_header", data)
    if os.path.isdir(fixtures):
        for target, data in fixture_seeds(fixtures):
            put(target, data)
    else:
        print(f"make_seeds: no fixtures at {fixtures}; hand-written and synthetic seeds only", file=sys.stderr)
    if tokenizer_dir:
        for target, data in fixture_seeds(tokenizer_dir):
            put(target, data)
    print("make_seeds: " + ", ".join(f"{t} {n}" for t, n in sorted(counts.items())), file=sys.stderr)


if __name__ == "__main__":
    main()
