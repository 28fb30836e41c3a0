// glass bench: prompt processing and generation speed, the way llama-bench measures
// them (pp: one batch of p tokens; tg: n single-token decode steps, each computing
// the full logits row and taking its argmax; with a depth d, both after d tokens already
// in the cache, as llama-bench's -d, where attention's cost shows), plus load time, peak memory (loading and
// running the model; the probes' buffers are not counted), the decode's weight-read rate
// against the machine's measured read bandwidth, and the prefill's matmul rate against the
// measured peak of the instruction its kernels use.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

#include "base/error.h"
#include "cli/commands.h"
#include "cli/option_range.h"
#include "cli/grammar_options.h"
#include "cli/model_session.h"
#include "cli/progress.h"
#include "kernels/bandwidth.h"
#include "kernels/compute_peak.h"
#include "kernels/cpu_kernels.h"
#include "kernels/thread_pool.h"
#include "grammar/matcher.h"
#include "model/decoder_model.h"
#include "runtime/model_files.h"

namespace glass::cli {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Multiply-adds of the weight matrices for one prompt token: every layer's projections
// (the routed experts and the router of a sparse layer); the lm_head runs for the last
// position only.
double matmul_macs_per_token(const ModelConfig& c) {
  const auto h = static_cast<double>(c.hidden_size);
  double per_layer_attention = h * static_cast<double>(c.q_dim() + 2 * c.kv_dim()) + static_cast<double>(c.q_dim()) * h;
  double total = 0;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    total += per_layer_attention;
    if (c.is_sparse_layer(l))
      total += static_cast<double>(c.num_experts_per_tok) * 3 * h * static_cast<double>(c.moe_intermediate_size) +
               h * static_cast<double>(c.num_experts);
    else
      total += 3 * h * static_cast<double>(c.intermediate_size);
  }
  return total;
}


// A benchmark token id for position i (any ids do: the weights are what is measured).
int32_t bench_token(int64_t i, int64_t vocab) { return static_cast<int32_t>((1000 + (i * 7919) % 50000) % vocab); }

// Fills the sequence's first `depth` positions, untimed, in passes of 512 tokens.
void fill_depth(const DecoderModel& model, KVCache& cache, int32_t seq, int depth, Kernels& k,
                std::vector<float>& logits) {
  constexpr int kPass = 512;
  for (int start = 0; start < depth; start += kPass) {
    std::vector<int32_t> ids(static_cast<size_t>(std::min(kPass, depth - start)));
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = bench_token(start + static_cast<int64_t>(i), model.config().vocab_size);
    model.forward(Batch::prompt(ids, seq, start, false), cache, k, logits);
  }
}

// Decode constrained by a grammar: the best repetition's speed and the mask's share.
struct GrammarBench {
  double tg = 0;
  double mask_s_per_step = 0;
  double first_mask_s = 0;  // the first step's mask, on a grammar not seen before
  double vocabulary_s = 0;  // the vocabulary's trie, built once per model
  int64_t outputs = 0;      // complete outputs (end tokens chosen)
};

}  // namespace

Command add_bench_command(CLI::App& app) {
  struct Options {
    std::string model, format = "text";
    int prompt = 512, generate = 128, depth = 0, repetitions = 3;
    RuntimeOptions runtime;
    GrammarOptions constraint;
    bool no_bandwidth = false, no_peak = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("bench", "Prompt-processing and generation speed (like llama-bench)");
  sub->add_option("-m,--model", o->model, "Checkpoint folder, GGUF file, or ORG/NAME[@REVISION] in the Hugging Face cache (default: the built-in demo model)");
  sub->add_option("-p,--prompt", o->prompt, "Prompt tokens processed in one batch (0 skips)")->capture_default_str();
  sub->add_option("-n,--generate", o->generate, "Decode steps (0 skips)")->capture_default_str();
  sub->add_option("-d,--depth", o->depth,
                  "Tokens already in the context before each test (llama-bench's -d): pp then processes its batch "
                  "after them and tg decodes from there; filling them is not timed")
      ->capture_default_str();
  sub->add_option("-r,--repetitions", o->repetitions, "Repetitions; the best is reported")->capture_default_str();
  o->runtime.add_to(sub);
  o->constraint.add_to(sub);
  for (const char* flag : {"--grammar", "--grammar-file", "--json-schema"})
    sub->get_option(flag)->description(sub->get_option(flag)->get_description() +
                                       "; bench then also runs the decode steps constrained by it and reports the mask's "
                                       "cost per step");
  sub->add_option("--format", o->format, "text or json")->capture_default_str();
  sub->add_flag("--no-bandwidth", o->no_bandwidth,
                "Skip measuring the machine's read bandwidth (its 512 MiB buffer is not in the peak RSS either way: "
                "the probe runs after)");
  sub->add_flag("--no-peak", o->no_peak, "Skip measuring the compute peak of the prefill's instruction");

  return {sub, [o] {
            check_range("--prompt", o->prompt, 0, kMaxContextOption);
            check_range("--generate", o->generate, 0, kMaxContextOption);
            check_range("--depth", o->depth, 0, kMaxContextOption);
            check_range("--repetitions", o->repetitions, 1, 1000);
            if (o->format != "text" && o->format != "json") fail("--format: \"", o->format, "\" is not one of text, json");
            const std::optional<grammar::Grammar> constraint = o->constraint.resolve();
            const ModelSession session(o->model, o->runtime, {.tokenizer = constraint ? Need::kYes : Need::kNo});
            const KVType kv = session.kv_type();
            Backend& backend = session.backend();
            const std::string& dir = session.path();
            const DecoderModel& model = session.model();
            const double load_s = session.load_seconds();
            const ModelConfig& c = model.config();
            if (o->depth + o->prompt + o->generate > c.max_position_embeddings)
              fail("--depth + --prompt + --generate (", o->depth + o->prompt + o->generate,
                   ") exceed the model's context of ", c.max_position_embeddings);
            const int depth = o->depth;

            Kernels& k = backend.kernels();
            std::vector<float> logits;
            double best_pp = 0, best_tg = 0;
            size_t kv_bytes = 0;  // the largest cache's committed blocks, for peak memory's parts
            size_t kv_token_bytes = 0;  // K and V of one position, all layers
            for (int rep = 0; rep < o->repetitions; ++rep) {
              if (o->prompt > 0) {
                KVCache cache(c, kv, depth + o->prompt);
                const int32_t seq = cache.add_sequence();
                fill_depth(model, cache, seq, depth, k, logits);
                std::vector<int32_t> ids(static_cast<size_t>(o->prompt));
                for (int i = 0; i < o->prompt; ++i) ids[i] = bench_token(depth + i, c.vocab_size);
                const auto start = std::chrono::steady_clock::now();
                model.forward(Batch::prompt(ids, seq, depth, false), cache, k, logits);
                best_pp = std::max(best_pp, o->prompt / seconds_since(start));
                kv_bytes = std::max(kv_bytes, cache.committed_bytes());
              }
              if (o->generate > 0) {
                KVCache cache(c, kv, depth + o->generate);
                const int32_t seq = cache.add_sequence();
                fill_depth(model, cache, seq, depth, k, logits);
                int32_t token = static_cast<int32_t>(1000 % c.vocab_size);
                const auto start = std::chrono::steady_clock::now();
                for (int i = 0; i < o->generate; ++i) {
                  model.forward(Batch::prompt({token}, seq, depth + i, false), cache, k, logits);
                  token = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
                }
                best_tg = std::max(best_tg, o->generate / seconds_since(start));
                kv_token_bytes = cache.bytes_per_token();
                kv_bytes = std::max(kv_bytes, cache.committed_bytes());
              }
            }
            // Decode again with the grammar's mask each step (computed, applied, the
            // chosen token accepted): the constraint's cost per step, back to back with
            // the unconstrained decode above. The argmax of the masked logits walks the
            // grammar; a finished output starts over.
            GrammarBench constrained;
            if (constraint && o->generate > 0) {
              const auto vocab_start = std::chrono::steady_clock::now();
              const auto vocab = std::make_shared<const grammar::TokenVocabulary>(grammar::TokenVocabulary::from_tokenizer(
                  session.tokenizer(), load_generation_defaults(dir).params.eos_token_ids));
              constrained.vocabulary_s = seconds_since(vocab_start);
              grammar::TokenMask mask;
              for (int rep = 0; rep < o->repetitions; ++rep) {
                KVCache cache(c, kv, depth + o->generate);
                const int32_t seq = cache.add_sequence();
                fill_depth(model, cache, seq, depth, k, logits);
                grammar::GrammarMatcher matcher(*constraint, vocab);
                int32_t token = static_cast<int32_t>(1000 % c.vocab_size);
                double mask_s = 0;
                const auto start = std::chrono::steady_clock::now();
                for (int i = 0; i < o->generate; ++i) {
                  model.forward(Batch::prompt({token}, seq, depth + i, false), cache, k, logits);
                  const auto mask_start = std::chrono::steady_clock::now();
                  matcher.fill_mask(mask);
                  const double step_mask_s = seconds_since(mask_start);
                  if (rep == 0 && i == 0) constrained.first_mask_s = step_mask_s;
                  mask_s += step_mask_s;
                  grammar::apply_token_mask(mask, logits);
                  token = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
                  if (!matcher.accept_token(token) || matcher.is_terminated()) matcher.reset();
                  if (vocab->is_end(token)) ++constrained.outputs;
                }
                const double seconds = seconds_since(start);
                if (o->generate / seconds > constrained.tg) {
                  constrained.tg = o->generate / seconds;
                  constrained.mask_s_per_step = mask_s / o->generate;
                }
              }
            }
            // The model's peak, taken before the bandwidth probe: its buffer (512 MiB) is
            // the probe's, not the model's.
            const size_t peak_rss = peak_rss_bytes();
            const std::optional<size_t> huge_pages = huge_page_bytes();
            double bandwidth = 0;
            if (!o->no_bandwidth) {
              ThreadPool pool(backend.threads());
              bandwidth = measure_read_bandwidth(pool);
            }
            // The paths the matmuls run, and prefill against its instruction's measured peak.
            const auto* cpu = dynamic_cast<const CpuKernels*>(&k);
            CpuKernels::ComputePath prefill_path, decode_path;
            double peak = 0;
            if (cpu != nullptr) {
              prefill_path = cpu->compute_path(model.representative_matrix(), std::max(o->prompt, 1));
              decode_path = cpu->compute_path(model.representative_matrix(), 1);
              if (!o->no_peak && o->prompt > 0 && prefill_path.valid) {
                ThreadPool pool(backend.threads());
                const CpuKernels permitted(pool);  // checks the tile permission in each thread
                if (permitted.features().amx || !is_tile(prefill_path.instruction))
                  peak = measure_compute_peak(pool, prefill_path.instruction);
              }
            }
            const double prefill_macs = best_pp * matmul_macs_per_token(c);
            const double path_peak = peak / prefill_path.passes;
            // A decode step reads the weights and the K and V of every position before it:
            // on average depth + (generate + 1) / 2 of them over the steps.
            const double decode_kv_bytes =
                static_cast<double>(kv_token_bytes) * (depth + (o->generate + 1) / 2.0);
            const double decode_bytes = static_cast<double>(model.decode_weight_bytes()) + decode_kv_bytes;
            const double weight_rate = best_tg * decode_bytes;
            const double roofline = bandwidth > 0 ? bandwidth / decode_bytes : 0;

            if (o->format == "json") {
              Json j = {{"engine", "glass"},
                        {"model", dir},
                        {"backend", backend.description()},
                        {"threads", backend.threads()},
                        {"weight_type", weight_type_name(model.weight_type())},
                        {"kv_type", kv_type_name(kv)},
                        {"matmul_precision", matmul_precision_name(backend.kernels().matmul_precision())},
                        {"pp", o->prompt},
                        {"tg", o->generate},
                        {"depth", depth},
                        {"pp_tok_s", std::round(best_pp * 10) / 10},
                        {"tg_tok_s", std::round(best_tg * 10) / 10},
                        {"load_s", load_s},
                        {"peak_rss_bytes", peak_rss},
                        {"huge_page_bytes", huge_pages ? Json(*huge_pages) : Json()},
                        {"weight_bytes", model.matrix_bytes()},
                        {"kv_cache_bytes", kv_bytes},
                        {"decode_weight_bytes", model.decode_weight_bytes()},
                        {"decode_kv_bytes", decode_kv_bytes},
                        {"decode_read_gb_s", weight_rate / 1e9}};
              if (cpu != nullptr) {
                j["prefill_path"] = prefill_path.name;
                j["decode_path"] = decode_path.name;
              }
              if (o->prompt > 0) j["prefill_matmul_gmac_s"] = prefill_macs / 1e9;
              if (peak > 0) {
                j["peak_instruction"] = compute_instruction_name(prefill_path.instruction);
                j["peak_gmac_s"] = peak / 1e9;
                j["peak_passes"] = prefill_path.passes;
                j["prefill_peak_fraction"] = prefill_macs / path_peak;
              }
              if (bandwidth > 0) {
                j["read_bandwidth_gb_s"] = bandwidth / 1e9;
                j["roofline_tg_tok_s"] = roofline;
                j["roofline_fraction"] = best_tg / roofline;
              }
              if (constrained.tg > 0) {
                j["grammar_tg_tok_s"] = std::round(constrained.tg * 10) / 10;
                j["grammar_mask_ms_per_step"] = constrained.mask_s_per_step * 1e3;
                j["grammar_first_mask_ms"] = constrained.first_mask_s * 1e3;
                j["grammar_vocabulary_ms"] = constrained.vocabulary_s * 1e3;
                j["grammar_tg_fraction"] = constrained.tg / best_tg;
              }
              std::cout << j.dump() << "\n";
              return 0;
            }
            std::printf("model      %s (%s, %lld layers, hidden %lld, %s weights, %s read per decode step%s)\n", dir.c_str(),
                        architecture_class_name(c.architecture), static_cast<long long>(c.num_layers),
                        static_cast<long long>(c.hidden_size), weight_type_name(model.weight_type()),
                        format_bytes(decode_bytes).c_str(),
                        c.num_experts > 0 ? str_cat(": the routed ", c.num_experts_per_tok, " of ", c.num_experts,
                                                    " experts per layer").c_str()
                                          : "");
            std::printf("backend    %s, KV cache %s\n", backend.description().c_str(), kv_type_name(kv));
            std::printf("load       %.2f s, peak RSS %s%s\n", load_s,
                        peak_memory_text(peak_rss, model.matrix_bytes(), kv_bytes).c_str(),
                        huge_pages ? str_cat(", ", format_bytes(static_cast<double>(*huge_pages)), " in 2 MiB pages").c_str()
                                   : "");
            if (cpu != nullptr)
              std::printf("path       prefill %s (%s), decode %s\n", prefill_path.name.c_str(),
                          prefill_path.how.empty() ? "scalar" : prefill_path.how.c_str(), decode_path.name.c_str());
            const std::string at_depth = depth > 0 ? str_cat(" @ d", depth) : "";
            if (o->prompt > 0) {
              std::printf("%-10s %.1f tok/s (best of %d), matmuls at %.1f GMAC/s\n",
                          str_cat("pp", o->prompt, at_depth).c_str(), best_pp, o->repetitions, prefill_macs / 1e9);
              if (peak > 0)
                std::printf("compute    measured peak of %s: %.0f GMAC/s%s -> prefill matmuls reach %.0f%%\n",
                            compute_instruction_name(prefill_path.instruction), peak / 1e9,
                            prefill_path.passes > 1
                                ? str_cat(", ", prefill_path.passes, " per multiply-add of the model: ",
                                          static_cast<int>(path_peak / 1e9), " GMAC/s").c_str()
                                : "",
                            100.0 * prefill_macs / path_peak);
            }
            if (o->generate > 0) {
              std::printf("%-10s %.1f tok/s (best of %d), weights%s read at %.1f GB/s\n",
                          str_cat("tg", o->generate, at_depth).c_str(), best_tg, o->repetitions,
                          depth > 0 ? str_cat(" and KV cache (", format_bytes(decode_kv_bytes), " a step)").c_str() : "",
                          weight_rate / 1e9);
              if (bandwidth > 0)
                std::printf("roofline   measured read bandwidth %.1f GB/s -> at most %.1f tok/s; decode reaches %.0f%%\n",
                            bandwidth / 1e9, roofline, 100.0 * best_tg / roofline);
              if (constrained.tg > 0)
                std::printf("grammar    tg%d %.1f tok/s constrained (%.0f%% of unconstrained); mask %.3f ms per step, "
                            "first %.2f ms; vocabulary trie %.0f ms once per model; %lld outputs completed\n",
                            o->generate, constrained.tg, 100.0 * constrained.tg / best_tg,
                            constrained.mask_s_per_step * 1e3, constrained.first_mask_s * 1e3,
                            constrained.vocabulary_s * 1e3, static_cast<long long>(constrained.outputs));
            }
            return 0;
          }};
}

}  // namespace glass::cli
