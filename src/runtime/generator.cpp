#include "runtime/generator.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "base/error.h"

namespace glass {

struct Generator::Sequence {
  Sequence(int h, GenerationRequest r, const Tokenizer& tok, int64_t context)
      : handle(h),
        request(std::move(r)),
        sampler(request.params),
        history(request.prompt),
        checker(request.params, context, static_cast<int64_t>(request.prompt.size())),
        decoder(tok, request.skip_special_tokens) {
    trace.top_n = request.show_top;
  }
  int handle;
  GenerationRequest request;
  Sampler sampler;
  TokenHistory history;
  StopChecker checker;
  StreamingDecoder decoder;
  ChainTrace trace;
  int32_t kv_sequence = -1;
  int leader = -1;            // a choice after the first: the handle it forks from, until it has
  int64_t cached = 0;         // prompt positions attached from the prefix cache
  int64_t prefilled = 0;      // prompt positions already in the KV cache
  std::vector<int32_t> ids;   // the ids at the sequence's positions: prompt, then output
  int32_t last_token = -1;    // generated, not yet fed back
  std::vector<int32_t> tokens;
  std::string text;
  std::optional<FinishReason> finished;
  std::optional<grammar::GrammarMatcher> matcher;  // with a grammar: where its output is
  grammar::TokenMask mask;                         // the matcher's allowed ids this step
  bool grammar_active = false;                     // the grammar constrains the next token
  bool grammar_quiet = false;                      // in the request's quiet span: no trigger
  std::string trigger_tail;  // a triggered grammar, inactive: the output's last bytes, for its trigger
};

Generator::Generator(const DecoderModel& model, Kernels& kernels, KVCache& cache, const Tokenizer& tokenizer,
                     int64_t context_length, int64_t prefill_chunk)
    : model_(model),
      kernels_(kernels),
      cache_(cache),
      tokenizer_(tokenizer),
      context_length_(std::min(context_length, model.config().max_position_embeddings)),
      prefill_chunk_(std::max<int64_t>(1, prefill_chunk)) {
  if (context_length <= 0) fail("context length must be positive, got ", context_length);
}

Generator::~Generator() {
  for (auto& s : sequences_)
    if (s->kv_sequence >= 0) cache_.remove_sequence(s->kv_sequence);
}

void Generator::validate(const GenerationRequest& request) const {
  request.params.validate();
  if (request.prompt.empty()) fail("the prompt is empty: generation needs at least one token");
  const int64_t vocab = model_.config().vocab_size;
  for (int32_t id : request.prompt)
    if (id < 0 || id >= vocab) fail("prompt token id ", id, " is outside the model's vocabulary of ", vocab);
  check_logit_bias_ids(request.params.logit_bias, vocab);
  if (static_cast<int64_t>(request.prompt.size()) >= context_length_)
    fail("the prompt has ", request.prompt.size(), " tokens; the context holds ", context_length_,
         " (prompt plus at least one generated token)");
  // A grammar's output ends with an eos token once it is complete; without one the
  // grammar could leave nothing to choose.
  if (!request.grammar_trigger.empty() && !request.grammar)
    fail("a grammar trigger ('", request.grammar_trigger, "') needs a grammar to apply after it");
  if (request.grammar && request.grammar_trigger.empty() && request.params.eos_token_ids.empty())
    fail("a grammar needs an end-of-sequence token to end its output; there is none (ignore_eos, or a model with "
         "no eos_token_id)");
}

std::shared_ptr<const grammar::TokenVocabulary> Generator::grammar_vocabulary(const std::vector<int32_t>& end_tokens) {
  for (const auto& [ends, vocabulary] : grammar_vocabularies_)
    if (ends == end_tokens) return vocabulary;
  auto vocabulary =
      std::make_shared<const grammar::TokenVocabulary>(grammar::TokenVocabulary::from_tokenizer(tokenizer_, end_tokens));
  grammar_vocabularies_.emplace_back(end_tokens, vocabulary);
  return vocabulary;
}

namespace {

// The most positions a request can fill: its prompt and max_new_tokens, within the
// context and the cache.
int64_t worst_positions(const GenerationRequest& r, int64_t context, const KVCache& cache) {
  const auto prompt = static_cast<int64_t>(r.prompt.size());
  const int64_t most = std::min(context, cache.total_blocks() * cache.block_size());
  // max_new_tokens may be anything up to INT64_MAX.
  const int64_t left = most - std::min(prompt, most);
  return prompt + std::min(left, r.params.max_new_tokens.value_or(left));
}

}  // namespace

int64_t Generator::blocks_needed(const GenerationRequest& request, size_t choices) const {
  const KVCache::PrefixMatch m = cache_.match_prefix(request.prompt);
  const int64_t worst = cache_.blocks_for(worst_positions(request, context_length_, cache_));
  // Each further choice shares the prompt's full blocks and copies the partial one.
  const int64_t shared = static_cast<int64_t>(request.prompt.size()) / cache_.block_size();
  return worst - m.blocks + m.unheld + static_cast<int64_t>(choices - 1) * (worst - shared);
}

int Generator::add(GenerationRequest request) { return add_choices(std::move(request), 1).front(); }

std::vector<int> Generator::add_choices(GenerationRequest request, size_t choices) {
  validate(request);
  if (choices == 0) fail("n (the number of choices) must be at least 1");
  const int64_t worst = cache_.blocks_for(worst_positions(request, context_length_, cache_));
  const int64_t shared = static_cast<int64_t>(request.prompt.size()) / cache_.block_size();
  std::vector<int> handles;
  for (size_t i = 0; i < choices; ++i) {
    GenerationRequest r = request;
    if (r.params.seed) r.params.seed = *r.params.seed + i;
    auto s = std::make_unique<Sequence>(next_handle_++, std::move(r), tokenizer_, context_length_);
    if (s->request.grammar) {
      s->matcher.emplace(*s->request.grammar, grammar_vocabulary(s->request.params.eos_token_ids));
      s->grammar_active = s->request.grammar_trigger.empty();
      s->grammar_quiet = s->request.grammar_quiet && s->request.grammar_quiet->open_at_start;
    }
    s->kv_sequence = cache_.add_sequence();
    s->ids = s->request.prompt;
    int64_t fresh = worst - shared;
    if (i == 0) {
      s->cached = cache_.attach_prefix(s->kv_sequence, s->ids);
      s->prefilled = s->cached;
      fresh = worst - s->cached / cache_.block_size();
    } else {
      s->leader = handles.front();
    }
    // What admission counted (the scheduler checked that it fits); without a scheduler,
    // as much of it as is left.
    cache_.promise(s->kv_sequence, std::clamp<int64_t>(cache_.available_blocks(), 0, fresh));
    if (auto reason = s->checker.before_first_token()) finish(*s, *reason);
    handles.push_back(s->handle);
    sequences_.push_back(std::move(s));
  }
  return handles;
}

void Generator::follow_grammar(Sequence& s, int32_t token) {
  grammar::GrammarMatcher& m = *s.matcher;
  const std::string& trigger = s.request.grammar_trigger;
  if (s.grammar_active) {
    if (!m.accept_token(token)) fail("internal error: the grammar refused token ", token, ", which its mask allowed");
    // A triggered grammar whose string is complete hands the output back.
    if (!trigger.empty() && m.is_complete()) {
      s.grammar_active = false;
      s.trigger_tail.clear();
    }
    return;
  }
  // Inactive, waiting for the trigger in the output's bytes (it may span tokens), outside
  // the quiet span.
  if (const auto& quiet = s.request.grammar_quiet) {
    if (token == quiet->open || token == quiet->close) {
      s.grammar_quiet = token == quiet->open;
      s.trigger_tail.clear();
      return;
    }
    if (s.grammar_quiet) return;
  }
  s.trigger_tail += m.vocabulary()->bytes(token);
  const size_t at = s.trigger_tail.find(trigger);
  if (at == std::string::npos) {
    if (s.trigger_tail.size() >= trigger.size()) s.trigger_tail.erase(0, s.trigger_tail.size() - (trigger.size() - 1));
    return;
  }
  // The grammar starts at the trigger's end, with the rest of this token's bytes; a token
  // whose rest the grammar refuses leaves it inactive (the text is then no call).
  const std::string rest = s.trigger_tail.substr(at + trigger.size());
  s.trigger_tail.clear();
  m.reset();
  s.grammar_active = m.accept_bytes(rest) && !m.is_complete();
}

void Generator::finish(Sequence& s, FinishReason reason) {
  s.finished = std::move(reason);
  if (s.kv_sequence >= 0) {
    cache_.remove_sequence(s.kv_sequence);
    s.kv_sequence = -1;
  }
}

void Generator::cancel(int handle) {
  for (auto it = sequences_.begin(); it != sequences_.end(); ++it) {
    if ((*it)->handle == handle) {
      if ((*it)->kv_sequence >= 0) cache_.remove_sequence((*it)->kv_sequence);
      sequences_.erase(it);
      break;
    }
  }
  // Choices still waiting for the cancelled one: the first computes the prompt itself.
  Sequence* heir = nullptr;
  for (auto& s : sequences_) {
    if (s->leader != handle) continue;
    if (heir == nullptr) {
      heir = s.get();
      heir->leader = -1;
      if (heir->kv_sequence >= 0) {
        heir->cached = cache_.attach_prefix(heir->kv_sequence, heir->ids);
        heir->prefilled = heir->cached;
        const int64_t fresh = cache_.blocks_for(worst_positions(heir->request, context_length_, cache_)) -
                              heir->cached / cache_.block_size();
        cache_.promise(heir->kv_sequence, std::clamp<int64_t>(cache_.available_blocks(), 0, fresh));
      }
    } else {
      s->leader = heir->handle;
    }
  }
}

int64_t Generator::cached_tokens(int handle) const {
  for (const auto& s : sequences_)
    if (s->handle == handle) return s->cached;
  fail("no generation with handle ", handle);
}

int64_t Generator::sample_width() const {
  return std::min(model_.config().vocab_size, static_cast<int64_t>(tokenizer_.vocab_size()));
}

bool Generator::idle() const { return live() == 0; }

size_t Generator::live() const {
  size_t n = 0;
  for (const auto& s : sequences_) n += !s->finished;
  return n;
}

std::optional<GenerationResult> Generator::take_result(int handle) {
  for (auto it = sequences_.begin(); it != sequences_.end(); ++it) {
    Sequence& s = **it;
    if (s.handle != handle) continue;
    if (!s.finished) return std::nullopt;
    GenerationResult r{std::move(s.request.prompt), s.cached, std::move(s.tokens), std::move(s.text), *s.finished,
                       s.sampler.seed()};
    sequences_.erase(it);
    return r;
  }
  fail("no generation with handle ", handle);
}

bool Generator::next_block_computed_by(const std::vector<Prefill>& prefills, const Sequence& s) const {
  const int64_t end = s.prefilled + cache_.block_size();  // the block it would compute next
  if (end >= static_cast<int64_t>(s.request.prompt.size())) return false;  // not one it could attach
  for (const Prefill& p : prefills) {
    // Only a chunk that ends that block in this pass publishes it after the pass; one
    // computed earlier and still not attachable will not become so by waiting.
    if (p.from >= end || p.sequence->prefilled < end) continue;
    if (std::equal(s.ids.begin(), s.ids.begin() + end, p.sequence->ids.begin())) return true;
  }
  return false;
}

void Generator::step(const std::function<void(const GenerationEvent&)>& on_event) {
  // Build the pass: a prompt chunk for each prefilling sequence (within the budget),
  // one row for each decoding sequence.
  batch_.clear();
  // Sequences whose logits this pass returns, with their logit row (choices forked in
  // this pass share their leader's).
  struct Sampled {
    Sequence* s;
    size_t row;
    bool forked = false;
  };
  std::vector<Sampled> sampled;
  std::vector<Sequence*> in_pass;  // sequences with rows in this pass
  std::vector<Prefill> prefills;   // of those, the prompt chunks: where each starts
  int64_t prompt_rows = 0;
  for (auto& ptr : sequences_) {
    Sequence& s = *ptr;
    if (s.finished || s.leader >= 0) continue;  // a choice waiting for its leader's prompt
    const auto prompt_len = static_cast<int64_t>(s.request.prompt.size());
    if (s.prefilled < prompt_len) {
      const int64_t budget = prefill_chunk_ - prompt_rows;
      if (budget <= 0) continue;
      if (s.prefilled == s.cached && cache_.prefix_cache()) {
        // Nothing computed yet: blocks published since it was added are attached now,
        // and it waits a pass when another sequence is computing its next block in this
        // one (sixteen users sending one system prompt at once compute it once).
        s.cached = s.prefilled = cache_.attach_prefix(s.kv_sequence, s.ids);
        if (next_block_computed_by(prefills, s)) continue;
      }
      const int64_t take = std::min(budget, prompt_len - s.prefilled);
      for (int64_t i = 0; i < take; ++i) {
        const int64_t pos = s.prefilled + i;
        batch_.add(s.request.prompt[pos], static_cast<int32_t>(pos), s.kv_sequence, pos + 1 == prompt_len);
      }
      prefills.push_back({&s, s.prefilled});
      s.prefilled += take;
      prompt_rows += take;
      in_pass.push_back(&s);
      if (s.prefilled == prompt_len) sampled.push_back({&s, sampled.size()});
    } else {
      const int64_t pos = prompt_len + static_cast<int64_t>(s.tokens.size()) - 1;
      batch_.add(s.last_token, static_cast<int32_t>(pos), s.kv_sequence, true);
      sampled.push_back({&s, sampled.size()});
      in_pass.push_back(&s);
    }
  }
  if (batch_.size() == 0) return;

  const auto start = std::chrono::steady_clock::now();
  model_.forward(batch_, cache_, kernels_, logits_);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++timings_.forward_passes;
  if (prompt_rows > 0) {
    timings_.prompt_seconds += seconds;
    timings_.prompt_tokens += prompt_rows;
  } else {
    timings_.generation_seconds += seconds;
  }
  // Blocks filled by this pass become prefixes later prompts can start with.
  for (Sequence* s : in_pass) cache_.publish(s->kv_sequence, s->ids);
  // Choices whose leader finished its prompt in this pass start from its blocks and
  // its logits; the rows they share are kept as the model gave them.
  const int64_t vocab = model_.config().vocab_size;
  std::vector<std::pair<size_t, std::vector<float>>> shared_rows;
  const size_t leaders = sampled.size();
  for (size_t i = 0; i < leaders; ++i) {
    Sequence& l = *sampled[i].s;
    if (!l.tokens.empty()) continue;  // decoding, not at the end of its prompt
    for (auto& ptr : sequences_) {
      Sequence& f = *ptr;
      if (f.leader != l.handle || f.finished) continue;
      if (!cache_.fork(l.kv_sequence, f.kv_sequence)) fail("KV cache is full: no block for choice ", f.handle);
      f.leader = -1;
      f.cached = l.cached;
      f.prefilled = l.prefilled;
      sampled.push_back({&f, i, true});
      if (shared_rows.empty() || shared_rows.back().first != i)
        shared_rows.emplace_back(i, std::vector<float>(logits_.begin() + static_cast<int64_t>(i) * vocab,
                                                       logits_.begin() + static_cast<int64_t>(i + 1) * vocab));
    }
  }

  std::stable_sort(sampled.begin(), sampled.end(), [](const Sampled& a, const Sampled& b) { return a.s->handle < b.s->handle; });
  const int64_t width = sample_width();
  std::vector<float> fork_row;
  for (const Sampled& entry : sampled) {
    Sequence& s = *entry.s;
    const size_t i = entry.row;
    std::span<float> row(logits_.data() + static_cast<int64_t>(i) * vocab, static_cast<size_t>(vocab));
    if (entry.forked) {
      // The sampler rewrites its row: each choice gets the model's.
      for (const auto& [r, values] : shared_rows)
        if (r == i) fork_row = values;
      row = std::span<float>(fork_row);
    }
    const bool show = s.request.show_top > 0;
    float chosen_before_logit = 0, chosen_before_prob = 0;
    RowSoftmax raw;
    std::vector<float> raw_copy;
    if (show) raw_copy.assign(row.begin(), row.end());  // the sampler rewrites the row
    // Only the tokenizer's ids are drawn; the embedding's padding rows past it never are,
    // nor, with a grammar, tokens that cannot continue its output.
    AllowedTokens allowed;
    if (s.grammar_active) {
      s.matcher->fill_mask(s.mask);
      // The grammar leaves nothing to choose only past the matcher's limits (a hostile
      // grammar): the sequence ends there, cut short, rather than fail the pass.
      if (s.mask.count() == 0) {
        finish(s, FinishReason::grammar());
        continue;
      }
      allowed = {s.mask.words, s.mask.size, "grammar"};
    }
    const int32_t token = s.sampler.sample(row, s.history, show ? &s.trace : nullptr, static_cast<size_t>(width),
                                           s.grammar_active ? &allowed : nullptr);
    if (s.matcher) follow_grammar(s, token);
    GenerationEvent e;
    if (show) {
      raw = row_softmax(raw_copy);
      chosen_before_logit = raw_copy[token];
      chosen_before_prob = raw.prob(chosen_before_logit);
      const RowSoftmax processed = row_softmax(row);
      auto after = [&](int32_t id) { return std::isinf(row[id]) ? 0.0f : processed.prob(row[id]); };
      // log(exp(logit - max) * inv_sum), without the exp.
      const float log_inv_sum = std::log(raw.inv_sum);
      auto logprob = [&](float logit) { return logit - raw.max + log_inv_sum; };
      for (const TokenCandidate& c : s.trace.top_before)
        e.candidates.push_back({c.id, c.logit, c.prob, after(c.id), logprob(c.logit)});
      e.chosen = {token, chosen_before_logit, chosen_before_prob, after(token), logprob(chosen_before_logit)};
      e.chosen_rank = 1;
      for (size_t id = 0; id < raw_copy.size(); ++id) {
        const float x = raw_copy[id];
        if (std::isfinite(x) && (x > chosen_before_logit || (x == chosen_before_logit && std::cmp_less(id, token))))
          ++e.chosen_rank;
      }
      e.trace = &s.trace;
    }
    s.history.add_output(token);
    s.tokens.push_back(token);
    s.ids.push_back(token);
    s.last_token = token;
    ++timings_.generated_tokens;
    std::string piece = s.decoder.push(token);
    StopChecker::Step st = s.checker.on_token(token, piece);
    if (st.finish && st.finish->kind != FinishReason::Kind::stop_string) {
      // The decoder may still hold the start of a character; release it with the end.
      st.text += s.decoder.flush();
    }
    s.text += st.text;
    e.handle = s.handle;
    e.token = token;
    e.text = std::move(st.text);
    e.finish = st.finish;
    if (st.finish) finish(s, *st.finish);
    if (on_event) on_event(e);
  }
}

std::vector<GenerationResult> Generator::run_all(const DecoderModel& model, Kernels& kernels, KVCache& cache,
                                                 const Tokenizer& tokenizer, int64_t context_length,
                                                 std::vector<GenerationRequest> requests,
                                                 const std::function<void(const GenerationEvent&)>& on_event,
                                                 GenerationTimings* timings) {
  Generator g(model, kernels, cache, tokenizer, context_length);
  std::vector<int> handles;
  for (auto& r : requests) handles.push_back(g.add(std::move(r)));
  while (!g.idle()) g.step(on_event);
  std::vector<GenerationResult> results;
  for (int h : handles) results.push_back(*g.take_result(h));
  if (timings != nullptr) *timings = g.timings();
  return results;
}

}  // namespace glass
