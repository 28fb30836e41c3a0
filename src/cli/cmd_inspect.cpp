// glass inspect: what a checkpoint is, tensor by tensor, and what its KV cache costs.
#include <cstdio>
#include <iostream>
#include <memory>

#include "base/checked_math.h"
#include "base/error.h"
#include "cli/commands.h"
#include "cli/model_source.h"
#include "cli/runtime_options.h"
#include "io/checkpoint.h"
#include "io/gguf.h"
#include "model/decoder_model.h"
#include "model/rope.h"

namespace glass::cli {

namespace {

std::string rope_text(const ModelConfig& c) {
  const RopeScaling& s = c.rope_scaling;
  if (s.type == RopeScalingType::kNone) return "none";
  std::string text = str_cat(rope_scaling_type_name(s.type), ", factor ", s.factor);
  if (s.type == RopeScalingType::kYarn) {
    const RopeTable r = RopeTable::from_config(c);
    text += str_cat(" over ", s.original_max_position_embeddings, " original positions, beta_fast ", s.beta_fast,
                    " / beta_slow ", s.beta_slow, ", dimension pairs ", r.correction_low, "..", r.correction_high,
                    " blended", s.truncate ? " (truncated)" : "", ", attention factor ", r.attention_factor);
  }
  return text;
}

void print_config(const ModelConfig& c) {
  std::printf("architecture          %s\n", architecture_class_name(c.architecture));
  std::printf("hidden size           %lld\n", static_cast<long long>(c.hidden_size));
  std::printf("layers                %lld\n", static_cast<long long>(c.num_layers));
  std::printf("attention heads       %lld query / %lld KV (GQA, %lld query heads per KV head)\n",
              static_cast<long long>(c.num_heads), static_cast<long long>(c.num_kv_heads),
              static_cast<long long>(c.num_heads / c.num_kv_heads));
  std::printf("head dim              %lld%s\n", static_cast<long long>(c.head_dim),
              c.q_dim() != c.hidden_size ? str_cat(" (heads x head dim = ", c.q_dim(), " != hidden ", c.hidden_size, ")").c_str()
                                         : "");
  std::printf("q/k/v bias            %s\n", c.attention_bias ? "yes" : "no");
  std::printf("q/k norm              %s\n", c.qk_norm ? "yes (RMSNorm per head before RoPE)" : "no");
  if (c.num_experts > 0) {
    std::printf("experts               %lld of intermediate %lld, %lld routed per token%s\n",
                static_cast<long long>(c.num_experts), static_cast<long long>(c.moe_intermediate_size),
                static_cast<long long>(c.num_experts_per_tok), c.norm_topk_prob ? " (weights renormalised)" : "");
    std::printf("sparse layers         %lld of %lld", static_cast<long long>(c.sparse_layer_count()),
                static_cast<long long>(c.num_layers));
    if (c.sparse_layer_count() < c.num_layers)
      std::printf(" (dense MLP intermediate %lld elsewhere)", static_cast<long long>(c.intermediate_size));
    std::printf("\n");
  } else {
    std::printf("MLP intermediate      %lld\n", static_cast<long long>(c.intermediate_size));
  }
  std::printf("vocab rows            %lld\n", static_cast<long long>(c.vocab_size));
  std::printf("tied embeddings       %s\n", c.tie_word_embeddings ? "yes" : "no");
  std::printf("rope theta            %g\n", c.rope_theta);
  std::printf("rope scaling          %s\n", rope_text(c).c_str());
  std::printf("rms norm eps          %g\n", c.rms_norm_eps);
  std::printf("max positions         %lld\n", static_cast<long long>(c.max_position_embeddings));
  std::printf("parameters            %s (from the config's shapes%s)\n",
              format_count(static_cast<unsigned long long>(c.parameter_count())).c_str(),
              c.tie_word_embeddings ? "; the tied embedding counted once" : "");
  if (c.num_experts > 0)
    std::printf("active per token      %s\n",
                format_count(static_cast<unsigned long long>(c.active_parameter_count())).c_str());
}

void print_kv(const ModelConfig& c, KVType kv) {
  const size_t esz = kv_type_size(kv);
  const int64_t per_token = c.kv_bytes_per_token(esz);
  std::printf("KV cache (%s)         %s bytes per token (%s) = 2 (K,V) x %lld layers x %lld KV heads x %lld dim x %zu bytes\n",
              kv_type_name(kv), format_count(static_cast<unsigned long long>(per_token)).c_str(),
              format_bytes(static_cast<double>(per_token)).c_str(), static_cast<long long>(c.num_layers),
              static_cast<long long>(c.num_kv_heads), static_cast<long long>(c.head_dim), esz);
  const int64_t full = checked_mul(per_token, c.max_position_embeddings, "KV cache bytes for the full context");
  std::printf("KV cache, full context %s bytes (%s) for %lld tokens\n",
              format_count(static_cast<unsigned long long>(full)).c_str(), format_bytes(static_cast<double>(full)).c_str(),
              static_cast<long long>(c.max_position_embeddings));
}

// Bits per stored value: a quantized type's scales included (q4_K: 4.5).
double bits_per_weight(const CheckpointTensor& t) {
  return t.numel() > 0 ? 8.0 * static_cast<double>(t.nbytes) / static_cast<double>(t.numel()) : 0.0;
}

int64_t stored_values(const Checkpoint& ckpt) {
  int64_t n = 0;
  for (const CheckpointTensor* t : ckpt.tensors()) n += t->numel();
  return n;
}

double file_bits_per_weight(const Checkpoint& ckpt) {
  const int64_t n = stored_values(ckpt);
  return n > 0 ? 8.0 * static_cast<double>(ckpt.weight_bytes()) / static_cast<double>(n) : 0.0;
}

// A GGUF file's header and metadata; long values (the vocabulary arrays) as excerpts.
void print_gguf(const GgufSet& set) {
  const GgufFile& first = set.parts().front();
  std::printf("format                GGUF v%u, alignment %u, %zu part(s)\n", first.version(), first.alignment(),
              set.parts().size());
  std::printf("\n%-44s %s\n", "metadata key", "value");
  for (const GgufKeyValue& kv : set.metadata().entries())
    std::printf("%-44s %s\n", text_excerpt(kv.key).c_str(), kv.value.excerpt(72).c_str());
  std::printf("\n");
}

Json gguf_json(const GgufSet& set) {
  Json metadata = Json::object();
  for (const GgufKeyValue& kv : set.metadata().entries()) metadata[text_excerpt(kv.key)] = kv.value.excerpt(72);
  return {{"version", set.parts().front().version()},
          {"alignment", set.parts().front().alignment()},
          {"parts", set.parts().size()},
          {"metadata", metadata}};
}

Json inspect_json(const ModelConfig& c, KVType kv, const Checkpoint* ckpt) {
  const int64_t per_token = c.kv_bytes_per_token(kv_type_size(kv));
  Json j = {{"config", c.to_json()},
            {"parameters", c.parameter_count()},
            {"active_parameters", c.active_parameter_count()},
            {"kv_cache", {{"dtype", kv_type_name(kv)},
                          {"bytes_per_token", per_token},
                          {"context", c.max_position_embeddings},
                          {"bytes_full_context", checked_mul(per_token, c.max_position_embeddings, "KV cache bytes for the full context")}}}};
  if (ckpt != nullptr) {
    Json tensors = Json::array();
    for (const CheckpointTensor* t : ckpt->tensors())
      tensors.push_back({{"name", t->name}, {"shape", t->shape}, {"dtype", t->dtype}, {"bytes", t->nbytes},
                         {"bits_per_weight", bits_per_weight(*t)}});
    j["tensors"] = tensors;
    j["weight_bytes"] = ckpt->weight_bytes();
    j["bits_per_weight"] = file_bits_per_weight(*ckpt);
    if (ckpt->gguf() != nullptr) j["gguf"] = gguf_json(*ckpt->gguf());
    j["weight_files"] = ckpt->weight_files();
  }
  return j;
}

}  // namespace

Command add_inspect_command(CLI::App& app) {
  struct Options {
    std::string model, kv_type = kDefaultKVType, format = "text";
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("inspect", "Architecture, tensors, parameter count and KV-cache size of a checkpoint");
  sub->add_option("-m,--model", o->model,
                  "Checkpoint folder, GGUF file, or a config.json alone (default: the built-in demo model)");
  sub->add_option("--kv-type", o->kv_type, "KV-cache element type: f32, f16, bf16 (the default of run, chat and serve)")
      ->capture_default_str();
  sub->add_option("--format", o->format, "text or json")->capture_default_str();

  return {sub, [o] {
            KVType kv;
            if (!parse_kv_type(o->kv_type.c_str(), &kv)) fail("--kv-type: \"", o->kv_type, "\" is not one of f32, f16, bf16");
            if (o->format != "text" && o->format != "json") fail("--format: \"", o->format, "\" is not one of text, json");
            const bool config_only = !o->model.empty() && !is_directory(o->model) && !is_gguf_path(o->model);
            std::unique_ptr<Checkpoint> ckpt;
            ModelConfig c;
            if (config_only) {
              c = load_model_config(o->model);
            } else {
              ckpt = std::make_unique<Checkpoint>(resolve_model_dir(o->model));
              c = ckpt->config();
            }
            if (o->format == "json") {
              if (ckpt) DecoderModel model(std::shared_ptr<const Checkpoint>(ckpt.get(), [](const Checkpoint*) {}));
              std::cout << inspect_json(c, kv, ckpt.get()).dump() << "\n";
              return 0;
            }
            std::printf("model                 %s\n", config_only ? o->model.c_str() : ckpt->path().c_str());
            print_config(c);
            print_kv(c, kv);
            if (!ckpt) {
              std::printf("weights               not read (config only)\n");
              return 0;
            }
            // Validates every tensor the forward pass reads against the config.
            DecoderModel model(std::shared_ptr<const Checkpoint>(ckpt.get(), [](const Checkpoint*) {}));
            std::printf("weights               %s bytes (%s) in %zu file(s), %s parameters stored, %.2f bits per weight\n",
                        format_count(ckpt->weight_bytes()).c_str(), format_bytes(static_cast<double>(ckpt->weight_bytes())).c_str(),
                        ckpt->weight_files().size(), format_count(static_cast<unsigned long long>(stored_values(*ckpt))).c_str(),
                        file_bits_per_weight(*ckpt));
            if (ckpt->gguf() != nullptr) print_gguf(*ckpt->gguf());
            else std::printf("\n");
            std::printf("%-56s %-16s %-6s %5s %s\n", "tensor", "shape", "dtype", "bits", "bytes");
            for (const CheckpointTensor* t : ckpt->tensors())
              std::printf("%-56s %-16s %-6s %5.2f %s\n", t->name.c_str(), t->shape_string().c_str(), t->dtype.c_str(),
                          bits_per_weight(*t), format_count(t->nbytes).c_str());
            return 0;
          }};
}

}  // namespace glass::cli
