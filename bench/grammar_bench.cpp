// Grammar-constrained decoding overhead: the per-step token mask (and accept_token) over a
// JSON document on the real Qwen2.5 vocabulary (151,665 tokens), for a JSON schema and for
// json_object mode; cold (a freshly compiled grammar, every state new) and warm (the
// grammar's state and mask caches already hold the document's states, as for a repeated
// schema). Counters: us_per_step = mask + accept per generated token.
//   build/glass_grammar_bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <chrono>
#include <memory>
#include <string>

#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "tokenizer/tokenizer.h"

using namespace glass;
using namespace glass::grammar;

namespace {

const char* const kSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "email": {"type": "string"},
    "city": {"type": "string", "enum": ["Paris", "東京", "New York", "Zürich"]},
    "scores": {"type": "array", "items": {"type": "number"}, "maxItems": 8},
    "address": {
      "type": "object",
      "properties": {"street": {"type": "string"}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
      "required": ["street", "zip"], "additionalProperties": false
    },
    "tags": {"type": "array", "items": {"type": "string"}},
    "active": {"type": "boolean"},
    "note": {"type": ["string", "null"]}
  },
  "required": ["name", "age", "email", "city", "scores", "address", "tags", "active", "note"],
  "additionalProperties": false
})";

const char* const kDocument = R"({"name": "Marie Curie-Skłodowska", "age": 66, "email": "marie.curie@example.org", "city": "Paris", "scores": [97.5, 88, 100, 73.25], "address": {"street": "11 rue Pierre et Marie Curie", "zip": "75005"}, "tags": ["physics", "chemistry", "radioactivity", "Nobel prize ×2", "放射能"], "active": false, "note": "Discovered polonium and radium; the first person to win two Nobel prizes in different sciences."})";

struct Setup {
  Tokenizer tok;
  std::shared_ptr<const TokenVocabulary> vocab;
  std::vector<int32_t> ids;
};

const Setup& setup() {
  static Setup s = [] {
    Tokenizer tok = Tokenizer::load(std::string(GLASS_DEMO_MODEL_DIR) + "/tokenizer.json");
    auto vocab = std::make_shared<const TokenVocabulary>(TokenVocabulary::from_tokenizer(tok, {151643, 151645}));
    std::vector<int32_t> ids = tok.encode(kDocument);
    return Setup{tok, vocab, ids};
  }();
  return s;
}

// Runs the document through a matcher: mask, then accept, at every step.
void run_document(const Grammar& g, const Setup& s, TokenMask& mask) {
  GrammarMatcher m(g, s.vocab);
  for (int32_t id : s.ids) {
    m.fill_mask(mask);
    if (!mask.allowed(id) || !m.accept_token(id)) throw Error("the benchmark document does not fit the grammar");
  }
  m.fill_mask(mask);
  if (!m.can_end()) throw Error("the benchmark document is incomplete");
}

Grammar make_grammar(bool schema) { return schema ? json_schema_grammar(std::string_view(kSchema)) : json_object_grammar(); }

void BM_DocumentCold(benchmark::State& state) {
  const Setup& s = setup();
  bool schema = state.range(0) == 1;
  TokenMask mask;
  double seconds = 0;
  for (auto _ : state) {
    state.PauseTiming();
    Grammar g = make_grammar(schema);
    state.ResumeTiming();
    auto t0 = std::chrono::steady_clock::now();
    run_document(g, s, mask);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  state.counters["steps"] = static_cast<double>(s.ids.size() + 1);
  state.counters["us_per_step"] = seconds * 1e6 / static_cast<double>(state.iterations()) / static_cast<double>(s.ids.size() + 1);
  state.SetLabel(schema ? "json_schema" : "json_object");
}
BENCHMARK(BM_DocumentCold)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

void BM_DocumentWarm(benchmark::State& state) {
  const Setup& s = setup();
  bool schema = state.range(0) == 1;
  Grammar g = make_grammar(schema);
  TokenMask mask;
  run_document(g, s, mask);  // fills the caches
  double seconds = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    run_document(g, s, mask);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  state.counters["us_per_step"] = seconds * 1e6 / static_cast<double>(state.iterations()) / static_cast<double>(s.ids.size() + 1);
  state.SetLabel(schema ? "json_schema" : "json_object");
}
BENCHMARK(BM_DocumentWarm)->Arg(1)->Arg(0)->Unit(benchmark::kMicrosecond);

// The first mask of a request: compiling the grammar plus the first mask.
void BM_CompileAndFirstMask(benchmark::State& state) {
  const Setup& s = setup();
  bool schema = state.range(0) == 1;
  TokenMask mask;
  for (auto _ : state) {
    Grammar g = make_grammar(schema);
    GrammarMatcher m(g, s.vocab);
    m.fill_mask(mask);
    benchmark::DoNotOptimize(mask.words.data());
  }
  state.SetLabel(schema ? "json_schema" : "json_object");
}
BENCHMARK(BM_CompileAndFirstMask)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

// Inside a string (most of the vocabulary allowed): the costliest state, cold.
void BM_StringStateMaskCold(benchmark::State& state) {
  const Setup& s = setup();
  TokenMask mask;
  for (auto _ : state) {
    state.PauseTiming();
    Grammar g = json_object_grammar();
    GrammarMatcher m(g, s.vocab);
    m.accept_bytes("{\"key\": \"some text");
    state.ResumeTiming();
    m.fill_mask(mask);
    benchmark::DoNotOptimize(mask.words.data());
  }
}
BENCHMARK(BM_StringStateMaskCold)->Unit(benchmark::kMillisecond);

// Applying a mask to a logits row (151,936 floats: the embedding's rows), in a state where
// few tokens are allowed (after a value in an object) and in a string (most allowed).
void BM_ApplyMask(benchmark::State& state) {
  const Setup& s = setup();
  Grammar g = json_object_grammar();
  GrammarMatcher m(g, s.vocab);
  m.accept_bytes(state.range(0) == 0 ? "{\"a\": 1" : "{\"a\": \"text");
  TokenMask mask = m.mask();
  std::vector<float> logits(151936, 0.5f);
  for (auto _ : state) {
    apply_token_mask(mask, logits);
    benchmark::DoNotOptimize(logits.data());
  }
  state.SetLabel(state.range(0) == 0 ? "few allowed" : "most allowed");
}
BENCHMARK(BM_ApplyMask)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

void BM_BuildVocabulary(benchmark::State& state) {
  const Setup& s = setup();
  for (auto _ : state) {
    TokenVocabulary v = TokenVocabulary::from_tokenizer(s.tok, {151643, 151645});
    benchmark::DoNotOptimize(v.trie_nodes());
  }
}
BENCHMARK(BM_BuildVocabulary)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
