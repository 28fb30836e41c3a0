#!/usr/bin/env python3
"""Regenerates tests/tokenizer/data/hf_oracle_cases.json: edge cases beyond the shared
fixtures (whitespace runs, Unicode spaces, added tokens next to spaces, contractions,
marks, digits, long runs, random text from a tricky alphabet, the U+FFFD that invalid
UTF-8 becomes), with ids and decoded text from Hugging Face tokenizers itself through
../shared/peers/hf_tokenizers.sh. Deterministic: a fixed seed.

usage: scripts/make-tokenizer-oracle-cases.py [TOKENIZER_JSON]
"""
import json
import os
import random
import subprocess
import sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
tokenizer = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "../shared/fixtures/qwen2.5-tokenizer/tokenizer.json")
peer = os.path.join(root, "../shared/peers/hf_tokenizers.sh")
out = os.path.join(root, "tests/tokenizer/data/hf_oracle_cases.json")

spaces = ["\u0085", "\u00a0", "\u1680", "\u180e", "\u2000", "\u2005", "\u200a", "\u200b", "\u2028", "\u2029",
          "\u202f", "\u205f", "\u3000", "\ufeff", "\u001c", "\u001f", "\u000b", "\u000c", "\t", "\r", "\n", " "]
texts = []
# The U+FFFD that each invalid UTF-8 sequence becomes (the tests feed the raw bytes).
texts += ["\ufffd", "a\ufffdb", "x\ufffd\ufffdy", "\ufffd\ufffd\ufffd", " \ufffd", "你\ufffd好"]
# Whitespace runs.
texts += [" " * n for n in (1, 2, 3, 4, 5, 17, 100, 1000)]
texts += ["\n" * n for n in (1, 2, 3, 10)]
texts += [" \n \n  x", "\t\t x", "\r\n\r\n", "a  \n  b", "abc   ", "  abc", "a \t b", " \r\n x", "x\n\n\n y", "\n \n"]
for s in spaces:
    texts += ["!" + s + "!", s + "!", "a" + s + s + "b", s * 3 + "x", "x" + s]
# Added tokens and the spaces around them.
texts += [" <|im_end|> ", "<|im_start|>user\nhi<|im_end|>\n", "<|im_end|><|im_end|>", "<|im_end", "<|im_start|",
          "<tool_call>x</tool_call>", "a<|endoftext|>b", "<|fim_prefix|>def<|fim_suffix|>", "  <|im_end|>  x",
          "<|im_end|>\n\n", "<<|im_end|>>", "<|im_end|>'s", "<|vision_start|><|image_pad|><|vision_end|>"]
# Contractions and case.
texts += ["'s 'S 'RE 're 'Ll 'lL 'ſ 'K 'd 'D 'M 'T 'VE", "don't", "DON'T", "I'M", "'ve'", "''s", "'", "a'", "'''",
          "x's", "X'S", "'sa", "'ſt"]
# Numbers.
texts += ["1234567", "١٢٣٤", "½ ¾", "Ⅻ ⅻ", "x² y³", "3.14159", "1,000,000", "٣abc", "12ab34"]
# Marks and normalization.
texts += ["e\u0301", "\u0301", "a\u0308\u0308", "\u1100\u1161\u11a8", "ﬁ", "\u212b", "\u0344", "q\u0307\u0323",
          "\u0958", "가\u11a8", "Å", "e\u0301\u0301x", "\u0301abc", " \u0301"]
# Mixed.
texts += ["👨‍👩‍👧‍👦", "🇨🇳🇺🇸", "def f(x):\n    return x**2\n", "SELECT * FROM t WHERE a='b';", "https://example.com/a?b=c#d",
          "$$\\sum_{i=1}^n i$$", "Ｆｕｌｌｗｉｄｔｈ", "ＡＢＣ１２３", "\u0000a\u0000", "tab\tsep\tvalues"]
# Long runs.
texts += ["a" * 5000 + " b", "  " * 3000, "😀" * 500, "的" * 2000, "ab" * 2500, "1" * 3000, "\n" * 2000, "-" * 3000]

rng = random.Random(20240601)
alphabet = (list("aAbzZ09 '\t\r\n.,!?-_\"<>|") + ["s", "t", "re", "LL", "ſ"] + spaces +
            list("éüßΩжЖ你好世界ひらカナ한국ىعア١٢½Ⅻ²") + ["\u0301", "\u0308", "\u094d", "\u200d", "\u1161", "\u11a8", "\u1100"] +
            list("😀👍🏽🇨") + ["<|im_end|>", "<|endoftext|>", "<tool_call>"])
for _ in range(300):
    n = rng.randint(1, 40)
    texts.append("".join(rng.choice(alphabet) for _ in range(n)))

result = subprocess.run([peer, "ids", tokenizer], input=json.dumps({"texts": texts}), capture_output=True, text=True,
                        check=True)
cases = json.loads(result.stdout)["cases"]
assert len(cases) == len(texts)
with open(out, "w") as f:
    json.dump({"source": "Hugging Face tokenizers (npm @anush008/tokenizers 0.6.0) via scripts/make-tokenizer-oracle-cases.py",
               "cases": cases}, f, ensure_ascii=False, indent=0)
print(f"wrote {len(cases)} cases to {out}")
