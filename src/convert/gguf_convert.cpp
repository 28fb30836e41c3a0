#include "convert/gguf_convert.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <set>

#include "base/error.h"
#include "base/json_fields.h"
#include "base/mapped_file.h"
#include "convert/quant_preset.h"
#include "io/checkpoint.h"
#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "kernels/thread_pool.h"
#include "kernels/weight_matrix.h"
#include "model/tensor_names.h"
#include "tokenizer/tokenizer.h"

namespace glass {

namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------- metadata

// A GGUF file's metadata again, with the new file type; the split and alignment keys are
// the writer's.
GgufMetadataToWrite gguf_metadata(const GgufMetadata& m, uint32_t file_type) {
  GgufMetadataToWrite out;
  bool typed = false;
  for (const GgufKeyValue& kv : m.entries()) {
    if (kv.key.starts_with("split.") || kv.key == "general.alignment") continue;
    if (kv.key == "general.file_type") {
      out.emplace_back("general.file_type", GgufWriteValue::u32(file_type));
      typed = true;
      continue;
    }
    out.emplace_back(std::string(kv.key), GgufWriteValue::copy(kv.value));
  }
  if (!typed) out.emplace_back("general.file_type", GgufWriteValue::u32(file_type));
  return out;
}

const char* gguf_architecture(Architecture a) {
  switch (a) {
    case Architecture::Qwen2: return "qwen2";
    case Architecture::Qwen3: return "qwen3";
    case Architecture::Qwen3Moe: return "qwen3moe";
  }
  return "qwen2";
}

// "tiny-qwen2" -> "Tiny Qwen2", as gguf-py names a model after its folder.
std::string model_name_of(const std::string& folder) {
  std::string base = fs::path(folder).filename().string();
  if (base.empty()) base = fs::path(folder).parent_path().filename().string();
  std::string out;
  bool start = true;
  for (char c : base) {
    if (c == '-' || c == '_') {
      out += ' ';
      start = true;
      continue;
    }
    out += start ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    start = false;
  }
  return out;
}

// The content of a tokenizer_config.json special-token entry: a string or {"content"}.
std::optional<std::string> token_content(const Json& entry) {
  if (entry.is_string()) return entry.get<std::string>();
  if (entry.is_object() && entry.contains("content") && entry["content"].is_string()) return entry["content"].get<std::string>();
  return std::nullopt;
}

bool looks_special(const std::string& t) {
  const auto wrapped = [&](std::string_view open, std::string_view close) {
    return t.size() >= open.size() + close.size() && t.starts_with(open) && t.ends_with(close);
  };
  return t == "<pad>" || t == "<mask>" || wrapped("<|", "|>") || wrapped("<\xef\xbd\x9c", "\xef\xbd\x9c>");
}

// tokenizer.ggml.* and the chat template from a Hugging Face folder, as gguf-py's
// SpecialVocab and convert_hf_to_gguf.py's get_vocab_base build them.
void add_tokenizer_metadata(const std::string& dir, const ModelConfig& c, GgufMetadataToWrite& out) {
  const std::string tokenizer_path = dir + "/tokenizer.json";
  if (!path_exists(tokenizer_path)) fail(dir, ": no tokenizer.json (glass convert writes the tokenizer into the GGUF file)");
  const Json tok = read_json_file(tokenizer_path);
  const Json* model = tok.contains("model") ? &tok["model"] : nullptr;
  if (model == nullptr || !model->is_object() || model->value("type", "") != "BPE" || !model->contains("vocab") ||
      !(*model)["vocab"].is_object())
    refuse(tokenizer_path, ": glass convert writes byte-level BPE tokenizers (\"model\": {\"type\": \"BPE\", \"vocab\": ...})");

  std::map<int64_t, std::string> by_id;
  for (const auto& [token, id] : (*model)["vocab"].items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= c.vocab_size + (int64_t{1} << 20))
      fail(tokenizer_path, ": model.vocab[\"", text_excerpt(token), "\"] must be a non-negative id");
    by_id[id.get<int64_t>()] = token;
  }
  std::map<int64_t, bool> added;  // id -> special
  std::vector<std::pair<std::string, int64_t>> added_by_content;
  if (tok.contains("added_tokens") && tok["added_tokens"].is_array()) {
    for (const Json& a : tok["added_tokens"]) {
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") ||
          !a["content"].is_string())
        fail(tokenizer_path, ": added_tokens entries need an integer \"id\" and a string \"content\"");
      const int64_t id = a["id"].get<int64_t>();
      if (id < 0) fail(tokenizer_path, ": added token id ", id, " is negative");
      by_id[id] = a["content"].get<std::string>();
      added[id] = a.value("special", false);
      added_by_content.emplace_back(a["content"].get<std::string>(), id);
    }
  }
  const int64_t vocab = std::max<int64_t>(c.vocab_size, by_id.empty() ? 0 : by_id.rbegin()->first + 1);
  if (vocab > c.vocab_size)
    fail(tokenizer_path, ": token id ", vocab - 1, " is past the model's vocab_size ", c.vocab_size);
  std::vector<std::string> tokens(static_cast<size_t>(vocab));
  std::vector<int32_t> types(static_cast<size_t>(vocab));
  for (int64_t i = 0; i < vocab; ++i) {
    const auto it = by_id.find(i);
    if (it == by_id.end()) {
      tokens[i] = "[PAD" + std::to_string(i) + "]";
      types[i] = static_cast<int32_t>(GgmlTokenType::kUnused);
      continue;
    }
    tokens[i] = it->second;
    const auto a = added.find(i);
    types[i] = static_cast<int32_t>(a == added.end()                          ? GgmlTokenType::kNormal
                                    : a->second || looks_special(it->second) ? GgmlTokenType::kControl
                                                                             : GgmlTokenType::kUserDefined);
  }
  std::vector<std::string> merges;
  if (model->contains("merges") && (*model)["merges"].is_array()) {
    for (const Json& m : (*model)["merges"]) {
      if (m.is_string()) merges.push_back(m.get<std::string>());
      else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
        merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
      else fail(tokenizer_path, ": model.merges entries must be \"a b\" strings or [a, b] pairs");
    }
  }
  out.emplace_back("tokenizer.ggml.model", GgufWriteValue::string("gpt2"));
  // Qwen2's pre-tokenizer regex: Qwen2.5 and Qwen3 share it (llama.cpp's "qwen2").
  out.emplace_back("tokenizer.ggml.pre", GgufWriteValue::string("qwen2"));
  out.emplace_back("tokenizer.ggml.tokens", GgufWriteValue::strings(tokens));
  out.emplace_back("tokenizer.ggml.token_type", GgufWriteValue::numbers(types));
  out.emplace_back("tokenizer.ggml.merges", GgufWriteValue::strings(merges));

  // Special tokens: tokenizer_config.json's *_token strings first, config.json's *_token_id
  // for those it leaves unset; written in the order they were set.
  const std::string tc_path = dir + "/tokenizer_config.json";
  const Json tc = path_exists(tc_path) ? read_json_file(tc_path) : Json::object();
  const Json config = read_json_file(dir + "/config.json");
  static constexpr std::pair<const char*, const char*> kSpecial[] = {
      {"bos", "bos_token_id"}, {"eos", "eos_token_id"}, {"unk", "unknown_token_id"}, {"sep", "seperator_token_id"},
      {"pad", "padding_token_id"}, {"cls", "cls_token_id"}, {"mask", "mask_token_id"}};
  std::vector<std::pair<const char*, int64_t>> ids;
  const auto set = [&](const char* key, int64_t id) {
    for (const auto& [k, v] : ids)
      if (std::string_view(k) == key) return;
    if (id >= 0 && id < vocab) ids.emplace_back(key, id);
  };
  if (tc.is_object()) {
    for (const auto& [typ, key] : kSpecial) {
      const std::string field = std::string(typ) + "_token";
      if (!tc.contains(field)) continue;
      const std::optional<std::string> content = token_content(tc[field]);
      if (!content) continue;
      for (const auto& [text, id] : added_by_content)
        if (text == *content) {
          set(key, id);
          break;
        }
    }
  }
  for (const auto& [typ, key] : kSpecial) {
    const std::string field = std::string(typ) + "_token_id";
    if (config.contains(field) && config[field].is_number_integer()) set(key, config[field].get<int64_t>());
  }
  for (const auto& [key, id] : ids)
    out.emplace_back(std::string("tokenizer.ggml.") + key, GgufWriteValue::u32(static_cast<uint32_t>(id)));
  for (const char* typ : {"bos", "eos"}) {
    const std::string field = std::string("add_") + typ + "_token";
    if (tc.is_object() && tc.contains(field) && tc[field].is_boolean())
      out.emplace_back("tokenizer.ggml." + field, GgufWriteValue::boolean(tc[field].get<bool>()));
  }

  // The chat template: tokenizer_config.json's, else chat_template.jinja.
  const Json* t = tc.is_object() && tc.contains("chat_template") ? &tc["chat_template"] : nullptr;
  if (t != nullptr && t->is_string()) {
    out.emplace_back("tokenizer.chat_template", GgufWriteValue::string(t->get<std::string>()));
  } else if (t != nullptr && t->is_array()) {
    std::vector<std::string> names;
    for (const Json& e : *t) {
      if (!e.is_object() || !e.contains("name") || !e["name"].is_string() || !e.contains("template") ||
          !e["template"].is_string())
        fail(tc_path, ": chat_template entries need a string \"name\" and \"template\"");
      const std::string name = e["name"].get<std::string>();
      if (name == "default") {
        out.emplace_back("tokenizer.chat_template", GgufWriteValue::string(e["template"].get<std::string>()));
      } else {
        out.emplace_back("tokenizer.chat_template." + name, GgufWriteValue::string(e["template"].get<std::string>()));
        names.push_back(name);
      }
    }
    if (!names.empty()) out.emplace_back("tokenizer.chat_templates", GgufWriteValue::strings(names));
  } else if (path_exists(dir + "/chat_template.jinja")) {
    out.emplace_back("tokenizer.chat_template", GgufWriteValue::string(read_text_file(dir + "/chat_template.jinja")));
  }
}

// The metadata convert_hf_to_gguf.py writes for a Qwen2 / Qwen3 / Qwen3-MoE folder.
GgufMetadataToWrite folder_metadata(const std::string& dir, const ModelConfig& c, uint32_t file_type) {
  GgufMetadataToWrite out;
  const std::string arch = gguf_architecture(c.architecture);
  const auto key = [&](const char* suffix) { return arch + "." + suffix; };
  out.emplace_back("general.architecture", GgufWriteValue::string(arch));
  out.emplace_back("general.type", GgufWriteValue::string("model"));
  // generation_config.json's sampling defaults, as gguf-py's Metadata reads them.
  const std::string gen_path = dir + "/generation_config.json";
  if (path_exists(gen_path)) {
    const Json g = read_json_file(gen_path);
    if (g.is_object()) {
      if (g.contains("top_k") && g["top_k"].is_number_integer())
        out.emplace_back("general.sampling.top_k", GgufWriteValue::i32(g["top_k"].get<int32_t>()));
      const std::pair<const char*, const char*> floats[] = {{"top_p", "general.sampling.top_p"},
                                                            {"min_p", "general.sampling.min_p"},
                                                            {"temperature", "general.sampling.temp"},
                                                            {"repetition_penalty", "general.sampling.penalty_repeat"}};
      for (const auto& [field, k] : floats)
        if (g.contains(field) && g[field].is_number())
          out.emplace_back(k, GgufWriteValue::f32(g[field].get<float>()));
    }
  }
  out.emplace_back("general.name", GgufWriteValue::string(model_name_of(dir)));
  out.emplace_back(key("block_count"), GgufWriteValue::u32(static_cast<uint32_t>(c.num_layers)));
  out.emplace_back(key("context_length"), GgufWriteValue::u32(static_cast<uint32_t>(c.max_position_embeddings)));
  out.emplace_back(key("embedding_length"), GgufWriteValue::u32(static_cast<uint32_t>(c.hidden_size)));
  out.emplace_back(key("feed_forward_length"), GgufWriteValue::u32(static_cast<uint32_t>(c.intermediate_size)));
  out.emplace_back(key("attention.head_count"), GgufWriteValue::u32(static_cast<uint32_t>(c.num_heads)));
  out.emplace_back(key("attention.head_count_kv"), GgufWriteValue::u32(static_cast<uint32_t>(c.num_kv_heads)));
  const Json config = read_json_file(dir + "/config.json");
  if (config.contains("head_dim") && config["head_dim"].is_number_integer()) {
    out.emplace_back(key("attention.key_length"), GgufWriteValue::u32(static_cast<uint32_t>(c.head_dim)));
    out.emplace_back(key("attention.value_length"), GgufWriteValue::u32(static_cast<uint32_t>(c.head_dim)));
  }
  out.emplace_back(key("rope.freq_base"), GgufWriteValue::f32(static_cast<float>(c.rope_theta)));
  out.emplace_back(key("attention.layer_norm_rms_epsilon"), GgufWriteValue::f32(static_cast<float>(c.rms_norm_eps)));
  if (c.rope_scaling.type == RopeScalingType::kLinear || c.rope_scaling.type == RopeScalingType::kYarn) {
    const bool yarn = c.rope_scaling.type == RopeScalingType::kYarn;
    out.emplace_back(key("rope.scaling.type"), GgufWriteValue::string(yarn ? "yarn" : "linear"));
    out.emplace_back(key("rope.scaling.factor"), GgufWriteValue::f32(static_cast<float>(c.rope_scaling.factor)));
    if (yarn)
      out.emplace_back(key("rope.scaling.original_context_length"),
                       GgufWriteValue::u32(static_cast<uint32_t>(c.rope_scaling.original_max_position_embeddings)));
  }
  if (c.num_experts > 0) {
    out.emplace_back(key("expert_count"), GgufWriteValue::u32(static_cast<uint32_t>(c.num_experts)));
    out.emplace_back(key("expert_used_count"), GgufWriteValue::u32(static_cast<uint32_t>(c.num_experts_per_tok)));
    out.emplace_back(key("expert_feed_forward_length"), GgufWriteValue::u32(static_cast<uint32_t>(c.moe_intermediate_size)));
  }
  out.emplace_back("general.file_type", GgufWriteValue::u32(file_type));
  out.emplace_back("general.quantization_version", GgufWriteValue::u32(2));
  add_tokenizer_metadata(dir, c, out);
  return out;
}

// ---------------------------------------------------------------- tensors

// One tensor of the output: the stored tensors it is made of (several for a folder's
// experts, stacked), its llama.cpp name and dimensions, and its type.
struct PlannedTensor {
  std::string name;
  std::vector<int64_t> ne;
  std::vector<const CheckpointTensor*> sources;
  QuantChoice choice{WeightType::F32};
};

// The per-layer weights, in the order llama.cpp's converter writes a layer.
constexpr const char* TensorNames::*kLayerFields[] = {
    &TensorNames::attn_norm,   &TensorNames::attn_q,      &TensorNames::attn_k,      &TensorNames::attn_v,
    &TensorNames::attn_o,      &TensorNames::attn_q_bias, &TensorNames::attn_k_bias, &TensorNames::attn_v_bias,
    &TensorNames::attn_q_norm, &TensorNames::attn_k_norm, &TensorNames::ffn_norm,    &TensorNames::ffn_gate,
    &TensorNames::ffn_up,      &TensorNames::ffn_down,    &TensorNames::ffn_router,  &TensorNames::expert_gate,
    &TensorNames::expert_up,   &TensorNames::expert_down,
};

// A folder's tensors under llama.cpp's names: the embedding, layer by layer, the final
// norm and the output. A tensor the name table does not account for is refused.
std::vector<PlannedTensor> plan_folder(const Checkpoint& ckpt) {
  const ModelConfig& c = ckpt.config();
  std::vector<PlannedTensor> plan;
  std::set<std::string> used;
  const auto add = [&](const char* TensorNames::*field, int64_t layer) {
    const char* hf = kHuggingFaceTensorNames.*field;
    PlannedTensor p;
    p.name = tensor_name(kGgufTensorNames.*field, layer);
    if (!stacked_experts(hf)) {  // one tensor per expert in the folder, stacked in the file
      for (int64_t e = 0; e < c.num_experts; ++e) {
        const std::string name = tensor_name(hf, layer, e);
        const CheckpointTensor* t = ckpt.find(name);
        if (t == nullptr) {
          if (e == 0) return;  // a dense layer
          fail(ckpt.path(), ": tensor \"", name, "\" is missing (other experts of layer ", layer, " are there)");
        }
        if (!p.sources.empty() && t->shape != p.sources.front()->shape)
          fail(ckpt.path(), ": tensor \"", name, "\" is ", t->shape_string(), ", unlike the other experts of its layer");
        p.sources.push_back(t);
        used.insert(name);
      }
      if (p.sources.empty()) return;
      const auto& s = p.sources.front()->shape;
      p.ne = {s.back(), s.front(), static_cast<int64_t>(p.sources.size())};
    } else {
      const std::string name = tensor_name(hf, layer);
      const CheckpointTensor* t = ckpt.find(name);
      if (t == nullptr) return;
      p.sources.push_back(t);
      used.insert(name);
      p.ne = gguf_ne_of_shape(t->shape);
    }
    plan.push_back(std::move(p));
  };
  add(&TensorNames::token_embedding, -1);
  if (plan.empty()) fail(ckpt.path(), ": no \"", kHuggingFaceTensorNames.token_embedding, "\"");
  for (int64_t l = 0; l < c.num_layers; ++l)
    for (auto field : kLayerFields) add(field, l);
  add(&TensorNames::output_norm, -1);
  add(&TensorNames::output, -1);
  for (const CheckpointTensor* t : ckpt.tensors())
    if (!used.count(t->name)) refuse(ckpt.path(), ": tensor \"", t->name, "\" is not part of the model glass converts");
  return plan;
}

std::vector<PlannedTensor> plan_gguf(const Checkpoint& ckpt) {
  std::vector<PlannedTensor> plan;
  for (const GgufTensor* t : ckpt.gguf()->tensors()) {
    PlannedTensor p;
    p.name = t->name;
    p.ne = t->ne;
    p.sources.push_back(&ckpt.get(t->name));
    plan.push_back(std::move(p));
  }
  return plan;
}

}  // namespace

ConvertReport convert_to_gguf(const std::string& model_path, const std::string& out_path, const ConvertOptions& options) {
  const QuantPreset* preset = find_quant_preset(options.type);
  if (preset == nullptr) fail("--type: \"", options.type, "\" is not one of ", quant_preset_names());
  if (fs::exists(model_path) && fs::exists(out_path) && fs::equivalent(model_path, out_path))
    fail("--out: ", out_path, " is the model being converted");
  const Checkpoint ckpt(model_path);
  const ModelConfig& c = ckpt.config();
  const bool from_gguf = ckpt.format() == CheckpointFormat::kGguf;

  std::vector<PlannedTensor> plan = from_gguf ? plan_gguf(ckpt) : plan_folder(ckpt);
  const QuantModelShape shape{.layers = c.num_layers,
                              .experts = c.num_experts,
                              .gqa = c.num_heads / std::max<int64_t>(1, c.num_kv_heads),
                              .tied_embeddings = c.tie_word_embeddings,
                              .size_class_70b = c.architecture == Architecture::Qwen2 && c.num_layers == 80};
  for (PlannedTensor& p : plan) {
    const CheckpointTensor& first = *p.sources.front();
    for (const CheckpointTensor* s : p.sources)
      if (!s->type || !traits(*s->type).dequantize)
        refuse(s->file, ": tensor \"", s->name, "\" is ", s->dtype, ", which glass cannot read to convert");
    // What llama.cpp's converter stores a tensor in before any quantization: 1-D tensors and
    // the router as F32; a GGUF file's tensors as they are.
    const WeightType stored = from_gguf ? *first.type : WeightType::F32;
    p.choice = quant_type_for(*preset, options.pure, shape, p.name, static_cast<int64_t>(p.ne.size()), p.ne.front(), stored);
  }

  GgufMetadataToWrite metadata =
      from_gguf ? gguf_metadata(ckpt.gguf()->metadata(), preset->file_type) : folder_metadata(ckpt.path(), c, preset->file_type);
  std::vector<GgufTensorToWrite> infos;
  ConvertReport report;
  for (const PlannedTensor& p : plan) {
    infos.push_back({p.name, p.choice.type, p.ne, nullptr});
    const size_t bytes = gguf_tensor_bytes(p.choice.type, p.ne, p.name);
    int64_t values = 1;
    for (int64_t d : p.ne) values *= d;
    report.tensors.push_back({p.name, p.choice.type, p.choice.fell_back, bytes});
    report.bytes += bytes;
    report.values += values;
  }

  ThreadPool pool(options.threads);
  write_gguf_streamed(out_path, metadata, infos, [&](size_t i, std::span<std::byte> out) {
    const PlannedTensor& p = plan[i];
    if (options.progress) options.progress({i, plan.size(), p.name, p.choice.type});
    const int64_t cols = p.ne.front();
    const size_t out_row = weight_row_bytes(p.choice.type, cols);
    int64_t rows_per_source = 1;
    for (size_t d = 1; d < p.ne.size(); ++d) rows_per_source *= p.ne[d];
    rows_per_source /= static_cast<int64_t>(p.sources.size());
    const int64_t rows = rows_per_source * static_cast<int64_t>(p.sources.size());
    // Rows in chunks per thread: each decodes its rows to float and encodes them again.
    const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / cols);
    pool.parallel_for(rows, grain, [&](int64_t begin, int64_t end) {
      std::vector<float> values;
      for (int64_t r = begin; r < end;) {
        const int64_t s = r / rows_per_source, local = r % rows_per_source;
        const int64_t n = std::min(end - r, rows_per_source - local);
        const CheckpointTensor& src = *p.sources[static_cast<size_t>(s)];
        values.resize(static_cast<size_t>(n * cols));
        const size_t in_row = weight_row_bytes(*src.type, cols);
        const std::byte* in = src.data + static_cast<size_t>(local) * in_row;
        std::byte* dst = out.data() + static_cast<size_t>(r) * out_row;
        decode_values(*src.type, in, values.data(), n * cols);
        quantize_row(p.choice.type, values.data(), n * cols, dst);  // n rows' values, in one run of blocks
        r += n;
      }
    });
    // The sources are read once: their pages leave this process (they stay in the page
    // cache), so converting a 7B folder holds one tensor, not the whole checkpoint.
    for (const CheckpointTensor* src : p.sources) ckpt.release_pages(src->data, src->nbytes);
  });
  return report;
}

}  // namespace glass
