#!/usr/bin/env python3
"""Builds the seed corpus of each fuzz target (scripts/fuzz.sh runs it).

usage: make_seeds.py OUT_DIR FIXTURES_DIR [TOKENIZER_DIR] [MAX_LEN_target=N ...]

OUT_DIR/<target>/ gets: the hand-written seeds in fuzz/corpus/<target>/, synthetic ones
made here (small safetensors and GGUF files, tiny tokenizer.json documents) and seeds
derived from the fixtures (config.json files, safetensors headers, GGUF files cut to a
few rows per tensor, chat templates and their conversations, tokenizer cases), and from TOKENIZER_DIR (the bundled Qwen2.5
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


# GGUF value type ids and struct formats (llama.cpp's gguf.h).
GGUF_FORMATS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "B", 10: "Q", 11: "q", 12: "d"}
GGUF_STRING, GGUF_ARRAY = 8, 9
# ggml type id -> (values per block, bytes per block), the types glass reads.
GGML_BLOCKS = {0: (1, 4), 1: (1, 2), 30: (1, 2), 8: (32, 34), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24),
               10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210)}


def gguf_string(s):
    b = s if isinstance(s, bytes) else s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf_value(vtype, value):
    """The encoding of `value` of GGUF type `vtype`; an array is (element type, [values])."""
    if vtype == GGUF_STRING:
        return gguf_string(value)
    if vtype == GGUF_ARRAY:
        etype, items = value
        return struct.pack("<IQ", etype, len(items)) + b"".join(gguf_value(etype, v) for v in items)
    return struct.pack("<" + GGUF_FORMATS[vtype], value)


def gguf_file(kvs, tensors, alignment=32, version=3):
    """kvs: [(key, type, value)]; tensors: [(name, ne, ggml type, data bytes)], laid out in order."""
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs))
    for key, vtype, value in kvs:
        out += gguf_string(key) + struct.pack("<I", vtype) + gguf_value(vtype, value)
    offset, blobs = 0, []
    for name, ne, gtype, data in tensors:
        out += gguf_string(name) + struct.pack("<I", len(ne)) + struct.pack(f"<{len(ne)}q", *ne)
        out += struct.pack("<IQ", gtype, offset)
        padded = data + b"\0" * (-len(data) % alignment)
        blobs.append(padded)
        offset += len(padded)
    out += b"\0" * (-len(out) % alignment)
    return out + b"".join(blobs)


def gguf_tensor_bytes(ne, gtype):
    values, block_bytes = GGML_BLOCKS[gtype]
    n = 1
    for d in ne:
        n *= d
    return n // values * block_bytes


def gguf_read(path):
    """(kvs, tensor infos, data offset) of a GGUF file, kvs as gguf_file takes them."""
    with open(path, "rb") as f:
        data = f.read()
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return v[0]

    def string():
        nonlocal pos
        n = take("Q")
        pos += n
        return data[pos - n:pos]

    def value(vtype):
        if vtype == GGUF_STRING:
            return string()
        if vtype == GGUF_ARRAY:
            etype, n = take("I"), take("Q")
            return etype, [value(etype) for _ in range(n)]
        return take(GGUF_FORMATS[vtype])

    version, n_tensors, n_kv = struct.unpack_from("<IQQ", data, 4)
    pos = 24
    kvs = []
    for _ in range(n_kv):
        key = string()
        vtype = take("I")
        kvs.append((key, vtype, value(vtype)))
    alignment = 32
    for key, vtype, v in kvs:
        if key == b"general.alignment":
            alignment = v
    infos = []
    for _ in range(n_tensors):
        name = string()
        ne = [take("q") for _ in range(take("I"))]
        infos.append((name, ne, take("I"), take("Q")))
    start = pos + (-pos % alignment)
    return kvs, infos, data, start


def gguf_seeds():
    f32 = struct.pack("<8f", *[0.5 * i - 1 for i in range(8)])
    every = [("t.u8", 0, 200), ("t.i8", 1, -5), ("t.u16", 2, 60000), ("t.i16", 3, -300), ("t.u32", 4, 7),
             ("t.i32", 5, -7), ("t.f32", 6, 1e-6), ("t.bool", 7, 1), ("t.string", GGUF_STRING, "qwen2"),
             ("t.u64", 10, 1 << 40), ("t.i64", 11, -(1 << 40)), ("t.f64", 12, 1e6),
             ("t.strings", GGUF_ARRAY, (GGUF_STRING, ["!", "", "\u0120the", "<|im_end|>"])),
             ("t.ints", GGUF_ARRAY, (5, [1, -2, 3])), ("t.floats", GGUF_ARRAY, (6, [0.25, -1.5])),
             ("t.bools", GGUF_ARRAY, (7, [1, 0])),
             ("t.nested", GGUF_ARRAY, (GGUF_ARRAY, [(GGUF_STRING, ["a", "bc"]), (4, [9]), (GGUF_ARRAY, [(12, [2.5])])])),
             ("t.empty", GGUF_ARRAY, (0, []))]
    q8 = bytes((i * 7) % 256 for i in range(34 * 2))
    q4 = bytes((i * 13) % 256 for i in range(18 * 2))
    tensors = [("output_norm.weight", [8], 0, f32), ("blk.0.attn_q.weight", [32, 2], 8, q8),
               ("blk.0.attn_k.weight", [64], 2, q4), ("f16", [4, 2], 1, f32[:16]), ("bf16", [2, 2, 2], 30, f32[:16])]
    yield gguf_file(every, tensors)
    yield gguf_file(every[:3], tensors[:2], version=2)
    yield gguf_file([("general.alignment", 4, 64)] + every[8:10], tensors, alignment=64)
    yield gguf_file([("general.alignment", 4, 1)], tensors[:3], alignment=1)
    yield gguf_file([("general.architecture", GGUF_STRING, "qwen2")], [])
    yield gguf_file([("split.no", 2, 0), ("split.count", 2, 1), ("split.tensors.count", 5, 1)], tensors[:1])
    yield gguf_file([], [("w", [4, 1, 1, 2], 0, f32)])
    # Every k-quant and legacy type glass reads, one block each.
    blocks = [(f"t{gtype}", [values], gtype, bytes((i * 31 + gtype) % 256 for i in range(nbytes)))
              for gtype, (values, nbytes) in GGML_BLOCKS.items()]
    yield gguf_file([], blocks)


def gguf_fixture_seeds(fixtures):
    """Each fixture GGUF's own metadata and tensor types, with its tensors cut to one or two
    rows of their real bytes (a seed stays small; the quantized blocks stay real)."""
    for path in sorted(glob.glob(os.path.join(fixtures, "gguf", "**", "*.gguf"), recursive=True)):
        try:
            kvs, infos, data, start = gguf_read(path)
        except (struct.error, KeyError, ValueError):
            continue
        vocab_big = any(key == b"tokenizer.ggml.tokens" and len(v[1]) > 2000 for key, t, v in kvs if t == GGUF_ARRAY)
        if vocab_big:  # the real vocabulary: keep its scalars and the first entries of its arrays
            kvs = [(k, t, (v[0], v[1][:64]) if t == GGUF_ARRAY else v) for k, t, v in kvs]
        tensors, seen = [], set()
        for name, ne, gtype, offset in infos:
            if gtype not in GGML_BLOCKS or (gtype, len(ne)) in seen:
                continue
            seen.add((gtype, len(ne)))
            small_ne = [ne[0]] + [min(d, 2) for d in ne[1:]]
            n = gguf_tensor_bytes(small_ne, gtype)
            tensors.append((name, small_ne, gtype, data[start + offset:start + offset + n]))
        yield gguf_file(kvs, tensors)
        # The metadata alone, with every tensor info as the file has it (the data cut off).
        yield data[:start]


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
            if ids:  # POST /inspect bodies (the same target reads them)
                yield "completion_request", json.dumps({"tokens": ids, "prompt_tokens": len(ids) // 2, "token": ids[-1],
                                                        "top": 5, "temperature": 0.7, "top_k": 20, "lens": False}).encode()


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
    for data in gguf_seeds():
        put("gguf", data)
    # The grammar tests' GBNF files (written in llama.cpp's format) seed the grammar_gbnf target.
    for path in sorted(glob.glob(os.path.join(HERE, "..", "tests", "grammar", "data", "*.gbnf"))):
        put("grammar_gbnf", open(path, "rb").read())
    if os.path.isdir(fixtures):
        for target, data in fixture_seeds(fixtures):
            put(target, data)
        for data in gguf_fixture_seeds(fixtures):
            put("gguf", data)
    else:
        print(f"make_seeds: no fixtures at {fixtures}; hand-written and synthetic seeds only", file=sys.stderr)
    if tokenizer_dir:
        for target, data in fixture_seeds(tokenizer_dir):
            put(target, data)
    print("make_seeds: " + ", ".join(f"{t} {n}" for t, n in sorted(counts.items())), file=sys.stderr)


if __name__ == "__main__":
    main()
