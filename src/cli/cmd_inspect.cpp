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

// The summary is one column of labels and one of values; a label is at most this wide.
constexpr int kLabelWidth = 21;

void print_row(const char* label, const std::string& value) {
  std::printf("%-*s %s\n", kLabelWidth, label, value.c_str());
}

std::string count_text(int64_t n) { return format_count(static_cast<unsigned long long>(n)); }

// A size in a human unit, with the exact bytes only when the unit's one decimal rounds
// them (a per-token figure is multiplied by context lengths).
std::string size_text(int64_t bytes) {
  int64_t unit = 1;
  for (int i = 0; i < 4 && bytes / unit >= 1024; ++i) unit *= 1024;
  const std::string human = format_bytes(static_cast<double>(bytes));
  return bytes % unit * 10 % unit == 0 ? human : str_cat(human, " (", count_text(bytes), " bytes)");
}

void print_config(const ModelConfig& c) {
  print_row("architecture", architecture_class_name(c.architecture));
  print_row("hidden size", str_cat(c.hidden_size));
  print_row("layers", str_cat(c.num_layers));
  print_row("attention heads", str_cat(c.num_heads, " query / ", c.num_kv_heads, " KV (GQA, ",
                                       c.num_heads / c.num_kv_heads, " query heads per KV head)"));
  print_row("head dim", str_cat(c.head_dim,
                                c.q_dim() != c.hidden_size
                                    ? str_cat(" (heads x head dim = ", c.q_dim(), " != hidden ", c.hidden_size, ")")
                                    : ""));
  print_row("q/k/v bias", c.attention_bias ? "yes" : "no");
  print_row("q/k norm", c.qk_norm ? "yes (RMSNorm per head before RoPE)" : "no");
  if (c.num_experts > 0) {
    print_row("experts", str_cat(c.num_experts, " of intermediate ", c.moe_intermediate_size, ", ",
                                 c.num_experts_per_tok, " routed per token",
                                 c.norm_topk_prob ? " (weights renormalised)" : ""));
    print_row("sparse layers",
              str_cat(c.sparse_layer_count(), " of ", c.num_layers,
                      c.sparse_layer_count() < c.num_layers
                          ? str_cat(" (dense MLP intermediate ", c.intermediate_size, " elsewhere)")
                          : ""));
  } else {
    print_row("MLP intermediate", str_cat(c.intermediate_size));
  }
  print_row("vocab rows", str_cat(c.vocab_size));
  print_row("tied embeddings", c.tie_word_embeddings ? "yes" : "no");
  print_row("rope theta", str_cat(c.rope_theta));
  print_row("rope scaling", rope_text(c));
  print_row("rms norm eps", str_cat(c.rms_norm_eps));
  print_row("max positions", str_cat(c.max_position_embeddings));
  print_row("parameters", str_cat(count_text(c.parameter_count()), " (from the config's shapes",
                                  c.tie_word_embeddings ? "; the tied embedding counted once" : "", ")"));
  if (c.num_experts > 0) print_row("active per token", count_text(c.active_parameter_count()));
}

void print_kv(const ModelConfig& c, KVType kv) {
  const size_t esz = kv_type_size(kv);
  const int64_t per_token = c.kv_bytes_per_token(esz);
  print_row("KV cache per token", str_cat(size_text(per_token), " in ", kv_type_name(kv), " = 2 (K, V) x ",
                                          c.num_layers, " layers x ", c.num_kv_heads, " KV heads x ", c.head_dim,
                                          " dim x ", esz, " bytes"));
  const int64_t full = checked_mul(per_token, c.max_position_embeddings, "KV cache bytes for the full context");
  print_row("KV cache full context",
            str_cat(format_bytes(static_cast<double>(full)), " for ", c.max_position_embeddings, " tokens"));
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
  print_row("format", str_cat("GGUF v", first.version(), ", alignment ", first.alignment(), ", ", set.parts().size(),
                              " part(s)"));
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
            if (!o->model.empty()) o->model = local_model_path(o->model, "config.json");
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
            print_row("model", config_only ? o->model : ckpt->path());
            print_config(c);
            print_kv(c, kv);
            if (!ckpt) {
              print_row("weights", "not read (config only)");
              return 0;
            }
            // Validates every tensor the forward pass reads against the config.
            DecoderModel model(std::shared_ptr<const Checkpoint>(ckpt.get(), [](const Checkpoint*) {}));
            char bits[32];
            std::snprintf(bits, sizeof bits, "%.2f", file_bits_per_weight(*ckpt));
            print_row("weights", str_cat(format_bytes(static_cast<double>(ckpt->weight_bytes())), " in ",
                                         ckpt->weight_files().size(), " file(s), ", count_text(stored_values(*ckpt)),
                                         " parameters stored, ", bits, " bits per weight"));
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
