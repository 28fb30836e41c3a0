#include "model/decoder_model.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>

#include "kernels/backend.h"
#include "kernels/cpu_kernels.h"
#include "kernels/reference_kernels.h"
#include "support/test_support.h"

namespace glass {
namespace {

using test::TempDir;
using test::thrown_error;

std::vector<float> run_prompt(const DecoderModel& m, const std::vector<int32_t>& ids, bool all) {
  KVCache cache(m.config(), KVType::F32, 64);
  ReferenceKernels k;
  std::vector<float> logits;
  m.forward(Batch::prompt(ids, cache.add_sequence(), 0, all), cache, k, logits);
  return logits;
}

// A run with GLASS_CPU naming a path this CPU lacks (model_test_amx_emulated where AVX-512
// BF16 is missing) skips every test; cpu_path_available says why ("skipped: GLASS_CPU...",
// which ctest reads as the whole run skipped).
class CpuPathEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    if (!test::cpu_path_available()) GTEST_SKIP() << "GLASS_CPU names a path this CPU lacks";
  }
};
[[maybe_unused]] ::testing::Environment* const kCpuPathEnvironment =
    ::testing::AddGlobalTestEnvironment(new CpuPathEnvironment);

TEST(DecoderModel, LogitsHaveTheVocabShapeAndAreFinite) {
  TempDir tmp;
  test::write_tiny_checkpoint(tmp.path(), test::tiny_config());
  DecoderModel m = DecoderModel::load(tmp.path());
  const auto all = run_prompt(m, {1, 2, 3, 4}, true);
  ASSERT_EQ(all.size(), 4u * 128u);
  for (float v : all) ASSERT_TRUE(std::isfinite(v));
  const auto last = run_prompt(m, {1, 2, 3, 4}, false);
  ASSERT_EQ(last.size(), 128u);
  for (int i = 0; i < 128; ++i) EXPECT_EQ(last[i], all[3 * 128 + i]);
}

TEST(DecoderModel, DecodeWithCacheEqualsFullRecompute) {
  TempDir tmp;
  test::write_tiny_checkpoint(tmp.path(), test::tiny_config());
  DecoderModel m = DecoderModel::load(tmp.path());
  const std::vector<int32_t> ids = {5, 17, 99, 3, 42, 7, 64, 1, 2, 127, 0, 33, 8, 9, 10, 11, 12, 13};
  for (KVType kv : {KVType::F32, KVType::BF16}) {
    // The full pass reads K/V back from a cache of the same type, so both round alike.
    KVCache full_cache(m.config(), kv, 64);
    ReferenceKernels fk;
    std::vector<float> full;
    m.forward(Batch::prompt(ids, full_cache.add_sequence(), 0, true), full_cache, fk, full);
    KVCache cache(m.config(), kv, 64, 4);  // small blocks: the sequence spans several
    const int32_t s = cache.add_sequence();
    ReferenceKernels k;
    std::vector<float> logits;
    m.forward(Batch::prompt({ids.begin(), ids.begin() + 5}, s, 0, true), cache, k, logits);
    std::vector<float> stepwise = logits;
    for (size_t p = 5; p < ids.size(); ++p) {
      m.forward(Batch::prompt({ids[p]}, s, static_cast<int32_t>(p), false), cache, k, logits);
      stepwise.insert(stepwise.end(), logits.begin(), logits.end());
    }
    ASSERT_EQ(stepwise.size(), full.size());
    for (size_t i = 0; i < full.size(); ++i) ASSERT_NEAR(stepwise[i], full[i], 1e-5) << kv_type_name(kv) << " " << i;
  }
}

TEST(DecoderModel, MixedBatchEqualsSequencesAlone) {
  TempDir tmp;
  test::write_tiny_checkpoint(tmp.path(), test::tiny_config());
  DecoderModel m = DecoderModel::load(tmp.path());
  const std::vector<int32_t> a = {1, 2, 3, 4, 5, 6, 7}, b = {100, 50};
  const auto alone_a = run_prompt(m, a, false), alone_b = run_prompt(m, b, false);
  KVCache cache(m.config(), KVType::F32, 64, 4);
  const int32_t sa = cache.add_sequence(), sb = cache.add_sequence();
  Batch batch;
  for (size_t i = 0; i < a.size(); ++i) batch.add(a[i], static_cast<int32_t>(i), sa, i + 1 == a.size());
  for (size_t i = 0; i < b.size(); ++i) batch.add(b[i], static_cast<int32_t>(i), sb, i + 1 == b.size());
  ReferenceKernels k;
  std::vector<float> logits;
  m.forward(batch, cache, k, logits);
  ASSERT_EQ(logits.size(), 2u * 128u);
  for (int i = 0; i < 128; ++i) {
    EXPECT_NEAR(logits[i], alone_a[i], 1e-5);
    EXPECT_NEAR(logits[128 + i], alone_b[i], 1e-5);
  }
}

TEST(DecoderModel, UntiedAndF32AndF16Checkpoints) {
  ModelConfig c = test::tiny_config();
  c.tie_word_embeddings = false;
  for (DType d : {DType::F32, DType::F16, DType::BF16}) {
    TempDir tmp;
    test::write_tiny_checkpoint(tmp.path(), c, d);
    DecoderModel m = DecoderModel::load(tmp.path());
    const auto logits = run_prompt(m, {3, 1, 4}, false);
    ASSERT_EQ(logits.size(), 128u);
    for (float v : logits) ASSERT_TRUE(std::isfinite(v)) << dtype_name(d);
  }
}

TEST(DecoderModel, ConvertedWeightTypesStayClose) {
  TempDir tmp;
  test::write_tiny_checkpoint(tmp.path(), test::tiny_config(), DType::F32);
  const std::vector<int32_t> ids = {9, 8, 7, 6, 5};
  const auto ref = run_prompt(DecoderModel::load(tmp.path()), ids, false);
  // Bounds on the relative rms logit error against f32 weights, a few times what each
  // format's rounding gives on this tiny model (hidden 32: little averaging of errors).
  for (auto [t, tol] : {std::pair{WeightType::BF16, 0.015f}, {WeightType::F16, 0.002f}, {WeightType::Q8_0, 0.03f},
                        {WeightType::Q4_0, 0.35f}}) {
    LoadOptions o;
    o.weight_type = t;
    DecoderModel m = DecoderModel::load(tmp.path(), o);
    EXPECT_EQ(m.weight_type(), t);
    const auto got = run_prompt(m, ids, false);
    double err = 0, norm = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      err += (double(got[i]) - ref[i]) * (double(got[i]) - ref[i]);
      norm += double(ref[i]) * ref[i];
    }
    std::printf("%s: relative rms error %.5f\n", weight_type_name(t), std::sqrt(err / norm));
    EXPECT_LT(std::sqrt(err / norm), tol) << weight_type_name(t);
    EXPECT_GT(err, 0.0) << weight_type_name(t) << " should differ from f32 at all";
  }
}

// Converted at load into the interleaved layout a group of 8 rows at a time: matrices
// whose rows are not a multiple of 8 keep their last rows row-major. Every logit stays
// near the f32 model's, the tail rows' included.
TEST(DecoderModel, ConversionWithRowsPastTheLastGroup) {
  TempDir tmp;
  ModelConfig c = test::tiny_config();
  c.vocab_size = 131;         // 16 groups of the lm_head and 3 rows after them
  c.intermediate_size = 96;   // 12 groups
  c.tie_word_embeddings = false;
  test::write_tiny_checkpoint(tmp.path(), c, DType::F32);
  const std::vector<int32_t> ids = {130, 2, 129, 7};
  const auto ref = run_prompt(DecoderModel::load(tmp.path()), ids, false);
  LoadOptions o;
  o.weight_type = WeightType::Q8_0;
  const auto got = run_prompt(DecoderModel::load(tmp.path(), o), ids, false);
  ASSERT_EQ(got.size(), ref.size());
  float scale = 0;
  for (float v : ref) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(got[i], ref[i], 0.05f * scale) << "logit " << i;
}

// The bytes of `path` mapped into this process's memory now (Rss of its maps in
// /proc/self/smaps; mincore would report the page cache instead).
size_t resident_mapped_bytes(const std::string& path) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool ours = false;
  size_t kb = 0;
  while (std::getline(smaps, line)) {
    // A map's header: "start-end perms offset dev inode   path".
    if (!line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) && line.find('-') < line.find(' ')) {
      ours = line.size() >= path.size() && line.ends_with(path);
    } else if (ours && line.starts_with("Rss:")) {
      kb += std::stoull(line.substr(4));
    }
  }
  return kb * 1024;
}

// A load that converts the weights leaves their source in the page cache, not in the
// process: peak memory is the converted weights plus a bounded window of the source.
// A tiny model whose tensors span whole pages: a 4 MiB bf16 embedding dominates the file.
ModelConfig paged_config() {
  ModelConfig c = test::tiny_config();
  c.vocab_size = 8192;
  c.hidden_size = 256;
  c.intermediate_size = 512;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 64;
  return c;
}

TEST(DecoderModel, ConvertingAtLoadReleasesTheSourcePages) {
  if (!std::ifstream("/proc/self/smaps")) GTEST_SKIP() << "no /proc/self/smaps to read resident pages from";
  TempDir tmp;
  const ModelConfig c = paged_config();
  test::write_tiny_checkpoint(tmp.path(), c, DType::BF16);
  const std::string weights = std::filesystem::canonical(tmp.file("model.safetensors")).string();
  const size_t file_bytes = std::filesystem::file_size(weights);
  for (WeightType t : {WeightType::Q8_0, WeightType::Q4_0}) {
    LoadOptions o;
    o.weight_type = t;
    const DecoderModel m = DecoderModel::load(tmp.path(), o);
    const size_t resident = resident_mapped_bytes(weights);
    // The header, the norms and biases read into floats, and the pages tensors share.
    EXPECT_LT(resident, file_bytes / 20) << weight_type_name(t) << ": " << resident << " of " << file_bytes
                                         << " bytes of the source still resident";
    const auto logits = run_prompt(m, {3, 1, 4}, false);
    for (float v : logits) ASSERT_TRUE(std::isfinite(v));
  }
  // Read in place (f32 weights as stored, on any CPU): the map is the weights.
  TempDir f32;
  test::write_tiny_checkpoint(f32.path(), c, DType::F32);
  const std::string f32_weights = std::filesystem::canonical(f32.file("model.safetensors")).string();
  const DecoderModel m = DecoderModel::load(f32.path());
  (void)run_prompt(m, {3, 1, 4}, false);
  EXPECT_GT(resident_mapped_bytes(f32_weights), std::filesystem::file_size(f32_weights) / 2);
}

// The layout the weights take on this process's CPU path (ctest runs model_test again with
// GLASS_CPU=amx-emulated): q8_0 / q4_0 converted at load interleaved in groups of 8 rows, or
// with AMX tiled (the tiles give the interleaved kernels' bits); bf16 as stored in place, or
// tiled with AMX. (A GGUF's own q8_0 / q4_0 rows stay row-major on every path:
// gguf_model_fixture_test's GgufWeightLayout.)
TEST(DecoderModel, WeightsTakeTheLayoutOfTheCpuPath) {
  const CpuFeatures cpu = CpuFeatures::detect();  // a GLASS_CPU this CPU lacks skipped the run (CpuPathEnvironment)
  TempDir tmp;
  const ModelConfig c = paged_config();  // every matrix of whole tiles
  test::write_tiny_checkpoint(tmp.path(), c, DType::BF16);
  for (const std::optional<WeightType> t : {std::optional<WeightType>{}, std::optional{WeightType::Q8_0},
                                            std::optional{WeightType::Q4_0}}) {
    LoadOptions o;
    o.weight_type = t;
    const DecoderModel m = DecoderModel::load(tmp.path(), o);
    const WeightMatrix& w = m.representative_matrix();
    SCOPED_TRACE(std::string(weight_type_name(w.type)) + (cpu.amx ? " with AMX" : " without AMX"));
    EXPECT_EQ(w.type, t.value_or(WeightType::BF16));
    EXPECT_EQ(w.tiled, cpu.amx);
    EXPECT_EQ(w.interleaved, !cpu.amx && t.has_value());
    const auto logits = run_prompt(m, {3, 1, 4}, false);
    for (float v : logits) ASSERT_TRUE(std::isfinite(v));
  }
}

// Float tensors off a cache line (a header padded to 8 bytes only, as most writers pad it)
// are read onto one, since the kernels' vector loads of a row would split lines otherwise;
// on a line (glass's own writer pads the header to 64) they stay in the map. Same bits.
TEST(DecoderModel, FloatTensorsOffACacheLineAreReadOntoOne) {
  if (!std::ifstream("/proc/self/smaps")) GTEST_SKIP() << "no /proc/self/smaps to read resident pages from";
  TempDir tmp;
  const ModelConfig c = paged_config();
  test::write_tiny_checkpoint(tmp.path(), c, DType::BF16);
  const std::string weights = std::filesystem::canonical(tmp.file("model.safetensors")).string();
  const size_t file_bytes = std::filesystem::file_size(weights);
  std::vector<float> in_place;
  {
    const DecoderModel m = DecoderModel::load(tmp.path());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(m.representative_matrix().data) % 64, 0u);
    in_place = run_prompt(m, {3, 1, 4, 1, 5}, true);
    if (m.representative_matrix().tiled)  // laid out for AMX tiles: copies, the map's pages released
      EXPECT_LT(resident_mapped_bytes(weights), file_bytes / 20);
    else
      EXPECT_GT(resident_mapped_bytes(weights), file_bytes / 2);  // the map is the weights
  }
  // The same file with its header 8 bytes longer: every tensor 8 bytes past a line.
  const std::string bytes = test::read_string(weights);
  uint64_t length = 0;
  for (int i = 0; i < 8; ++i) length |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  std::string shifted = bytes.substr(0, 8) + bytes.substr(8, length) + std::string(8, ' ') + bytes.substr(8 + length);
  length += 8;
  for (int i = 0; i < 8; ++i) shifted[i] = static_cast<char>(length >> (8 * i));
  test::write_string(weights, shifted);
  const DecoderModel m = DecoderModel::load(tmp.path());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m.representative_matrix().data) % 64, 0u);
  const auto read_onto_lines = run_prompt(m, {3, 1, 4, 1, 5}, true);
  EXPECT_LT(resident_mapped_bytes(weights), file_bytes / 20);
  ASSERT_EQ(read_onto_lines.size(), in_place.size());
  for (size_t i = 0; i < in_place.size(); ++i) ASSERT_EQ(read_onto_lines[i], in_place[i]) << i;
}

// Rewrites dir/model.safetensors through `edit`.
void edit_weights(const std::string& dir, const std::function<void(std::vector<TensorToWrite>&)>& edit) {
  const std::string bytes = test::read_string(dir + "/model.safetensors");
  TempDir hold;
  test::write_string(hold.file("copy.safetensors"), bytes);
  SafetensorsFile f(hold.file("copy.safetensors"));
  std::vector<TensorToWrite> ts;
  for (const auto& [name, t] : f.tensors()) ts.push_back({name, t.dtype, t.shape, t.data, t.nbytes});
  edit(ts);
  write_safetensors(dir + "/model.safetensors", ts);
}

TEST(DecoderModel, MissingTensorNamesIt) {
  TempDir tmp;
  test::write_tiny_checkpoint(tmp.path(), test::tiny_config());
  edit_weights(tmp.path(), [](auto& ts) {
    std::erase_if(ts, [](const TensorToWrite& t) { return t.name == "model.layers.1.self_attn.k_proj.bias"; });
  });
  const std::string e = thrown_error([&] { DecoderModel::load(tmp.path()); });
  EXPECT_NE(e.find("tensor \"model.layers.1.self_attn.k_proj.bias\" is missing"), std::string::npos) << e;
}

TEST(DecoderModel, WrongShapeNamesTensorAndConfig) {
  TempDir tmp;
  test::write_tiny_checkpoint(tmp.path(), test::tiny_config());
  std::vector<uint16_t> wrong(64 * 32);
  edit_weights(tmp.path(), [&](auto& ts) {
    for (auto& t : ts)
      if (t.name == "model.layers.0.mlp.up_proj.weight") t = {t.name, DType::BF16, {32, 64}, wrong.data(), wrong.size() * 2};
  });
  const std::string e = thrown_error([&] { DecoderModel::load(tmp.path()); });
  EXPECT_NE(e.find("\"model.layers.0.mlp.up_proj.weight\" has shape [32, 64]"), std::string::npos) << e;
  EXPECT_NE(e.find("config.json implies [64, 32]"), std::string::npos) << e;
}

TEST(DecoderModel, UnsupportedDtypeNamesIt) {
  TempDir tmp;
  test::write_tiny_checkpoint(tmp.path(), test::tiny_config());
  std::vector<int8_t> q(32);
  edit_weights(tmp.path(), [&](auto& ts) {
    for (auto& t : ts)
      if (t.name == "model.norm.weight") t = {t.name, DType::I8, {32}, q.data(), q.size()};
  });
  const std::string e = thrown_error([&] { DecoderModel::load(tmp.path()); });
  EXPECT_NE(e.find("\"model.norm.weight\" has dtype I8"), std::string::npos) << e;
  EXPECT_NE(e.find("BF16, F16 and F32"), std::string::npos) << e;
}

TEST(DecoderModel, RejectsOutOfRangeTokensAndFullCache) {
  TempDir tmp;
  test::write_tiny_checkpoint(tmp.path(), test::tiny_config());
  DecoderModel m = DecoderModel::load(tmp.path());
  KVCache cache(m.config(), KVType::F32, 4, 4);
  ReferenceKernels k;
  std::vector<float> logits;
  const int32_t s = cache.add_sequence();
  std::string e = thrown_error([&] { m.forward(Batch::prompt({1, 128}, s, 0, false), cache, k, logits); });
  EXPECT_NE(e.find("token id 128 is out of range"), std::string::npos) << e;
  e = thrown_error([&] { m.forward(Batch::prompt({1, 2, 3, 4, 5}, s, 0, false), cache, k, logits); });
  EXPECT_NE(e.find("KV cache is full"), std::string::npos) << e;
}

TEST(DecoderModel, TwoModelsAreIndependent) {
  TempDir a, b;
  test::write_tiny_checkpoint(a.path(), test::tiny_config(), DType::BF16, 1);
  test::write_tiny_checkpoint(b.path(), test::tiny_config(), DType::BF16, 2);
  DecoderModel ma = DecoderModel::load(a.path()), mb = DecoderModel::load(b.path());
  const auto la = run_prompt(ma, {1, 2}, false), lb = run_prompt(mb, {1, 2}, false);
  EXPECT_NE(la, lb);
  EXPECT_EQ(run_prompt(ma, {1, 2}, false), la);
}

ModelConfig tiny_qwen3_config() {
  ModelConfig c = test::tiny_config();
  c.architecture = Architecture::Qwen3;
  c.head_dim = 16;  // heads x head_dim = 64 != hidden 32, as in Qwen3-0.6B
  c.attention_bias = false;
  c.qk_norm = true;
  return c;
}

ModelConfig tiny_moe_config() {
  ModelConfig c = tiny_qwen3_config();
  c.architecture = Architecture::Qwen3Moe;
  c.num_layers = 3;
  c.num_experts = 6;
  c.num_experts_per_tok = 2;
  c.moe_intermediate_size = 32;
  c.norm_topk_prob = true;
  c.mlp_only_layers = {1};  // one dense layer between two sparse ones
  return c;
}

TEST(DecoderModel, Qwen3AndMoeCheckpointsRunAndCacheLikeFullRecompute) {
  for (const ModelConfig& c : {tiny_qwen3_config(), tiny_moe_config()}) {
    TempDir tmp;
    test::write_tiny_checkpoint(tmp.path(), c);
    DecoderModel m = DecoderModel::load(tmp.path());
    const std::vector<int32_t> ids = {5, 17, 99, 3, 42, 7, 64, 1};
    const auto full = run_prompt(m, ids, true);
    for (float v : full) ASSERT_TRUE(std::isfinite(v));
    KVCache cache(m.config(), KVType::F32, 64);
    const int32_t s = cache.add_sequence();
    ReferenceKernels k;
    std::vector<float> logits, got;
    m.forward(Batch::prompt({ids.begin(), ids.begin() + 3}, s, 0, true), cache, k, logits);
    got = logits;
    for (size_t p = 3; p < ids.size(); ++p) {
      m.forward(Batch::prompt({ids[p]}, s, static_cast<int32_t>(p), false), cache, k, logits);
      got.insert(got.end(), logits.begin(), logits.end());
    }
    ASSERT_EQ(got.size(), full.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], full[i], 1e-5) << architecture_class_name(c.architecture);
  }
}

// A sequence's logits are bit-identical whatever else shares its batch, on the fast
// kernels too, although the rows each expert runs over change with the batch.
TEST(DecoderModel, MoeLogitsDoNotDependOnTheBatch) {
  TempDir tmp;
  test::write_tiny_checkpoint(tmp.path(), tiny_moe_config());
  DecoderModel m = DecoderModel::load(tmp.path());
  for (const char* name : {"reference", "cpu"}) {
    Backend backend(name, 2);
    const std::vector<int32_t> a = {1, 2, 3, 4, 5, 6, 7, 8, 9}, b = {100, 50, 12, 99, 0}, c = {77};
    auto alone = [&](const std::vector<int32_t>& ids) {
      KVCache cache(m.config(), KVType::F32, 64);
      std::vector<float> logits;
      m.forward(Batch::prompt(ids, cache.add_sequence(), 0, true), cache, backend.kernels(), logits);
      return logits;
    };
    const auto la = alone(a), lb = alone(b), lc = alone(c);
    KVCache cache(m.config(), KVType::F32, 64);
    const int32_t sa = cache.add_sequence(), sb = cache.add_sequence(), sc = cache.add_sequence();
    Batch batch;  // interleaved rows of three sequences
    for (size_t i = 0; i < a.size(); ++i) {
      batch.add(a[i], static_cast<int32_t>(i), sa, true);
      if (i < b.size()) batch.add(b[i], static_cast<int32_t>(i), sb, true);
      if (i < c.size()) batch.add(c[i], static_cast<int32_t>(i), sc, true);
    }
    std::vector<float> logits;
    m.forward(batch, cache, backend.kernels(), logits);
    size_t row = 0, ia = 0, ib = 0, ic = 0;
    const int64_t v = m.config().vocab_size;
    for (int64_t t = 0; t < batch.size(); ++t, ++row) {
      const float* got = &logits[row * v];
      const float* want = batch.sequences[t] == sa ? &la[ia++ * v] : batch.sequences[t] == sb ? &lb[ib++ * v] : &lc[ic++ * v];
      for (int64_t i = 0; i < v; ++i) ASSERT_EQ(got[i], want[i]) << name << " row " << t << " logit " << i;
    }
  }
}

TEST(DecoderModel, MoeDecodeReadsOnlyTheRoutedExperts) {
  TempDir tmp;
  test::write_tiny_checkpoint(tmp.path(), tiny_moe_config());
  const DecoderModel m = DecoderModel::load(tmp.path());
  const ModelConfig& c = m.config();
  const size_t bf16 = 2, h = static_cast<size_t>(c.hidden_size);
  const size_t attention = (2 * c.q_dim() * h + 2 * c.kv_dim() * h) * bf16;
  const size_t expert = 3 * static_cast<size_t>(c.moe_intermediate_size) * h * bf16;
  const size_t dense = 3 * static_cast<size_t>(c.intermediate_size) * h * bf16;
  const size_t router = static_cast<size_t>(c.num_experts) * h * bf16;
  const size_t lm_head = static_cast<size_t>(c.vocab_size) * h * bf16;
  EXPECT_EQ(m.decode_weight_bytes(), lm_head + 3 * attention + 2 * (router + 2 * expert) + dense);
  EXPECT_EQ(m.matrix_bytes(), lm_head + 3 * attention + 2 * (router + 6 * expert) + dense);
}

// The config and the weights must describe the same model; each mismatch names the
// file and the tensor or field.
TEST(DecoderModel, RefusesWeightsThatAreNotTheConfigsModel) {
  {  // q_norm in a Qwen2 checkpoint
    TempDir tmp;
    test::write_tiny_checkpoint(tmp.path(), test::tiny_config());
    std::vector<uint16_t> ones(8, 0x3f80);
    edit_weights(tmp.path(), [&](auto& ts) {
      ts.push_back({"model.layers.0.self_attn.q_norm.weight", DType::BF16, {8}, ones.data(), ones.size() * 2});
    });
    const std::string e = thrown_error([&] { DecoderModel::load(tmp.path()); });
    EXPECT_NE(e.find("model.safetensors: tensor \"model.layers.0.self_attn.q_norm.weight\" is not part of a "
                     "Qwen2ForCausalLM"),
              std::string::npos)
        << e;
    EXPECT_NE(e.find("config.json"), std::string::npos) << e;
  }
  {  // head_dim in config.json inconsistent with the projections
    TempDir tmp;
    test::write_tiny_checkpoint(tmp.path(), tiny_qwen3_config());
    Json config = read_json_file(tmp.file("config.json"));
    config["head_dim"] = 8;
    test::write_string(tmp.file("config.json"), config.dump());
    const std::string e = thrown_error([&] { DecoderModel::load(tmp.path()); });
    EXPECT_NE(e.find("\"model.layers.0.self_attn.q_proj.weight\" has shape [64, 32] but"), std::string::npos) << e;
    EXPECT_NE(e.find("config.json implies [32, 32]"), std::string::npos) << e;
  }
  {  // a missing expert
    TempDir tmp;
    test::write_tiny_checkpoint(tmp.path(), tiny_moe_config());
    edit_weights(tmp.path(), [](auto& ts) {
      std::erase_if(ts, [](const TensorToWrite& t) { return t.name == "model.layers.2.mlp.experts.5.up_proj.weight"; });
    });
    const std::string e = thrown_error([&] { DecoderModel::load(tmp.path()); });
    EXPECT_NE(e.find("tensor \"model.layers.2.mlp.experts.5.up_proj.weight\" is missing"), std::string::npos) << e;
  }
  {  // experts in a layer mlp_only_layers makes dense
    TempDir tmp;
    test::write_tiny_checkpoint(tmp.path(), tiny_moe_config());
    Json config = read_json_file(tmp.file("config.json"));
    config["mlp_only_layers"] = {0, 1};
    test::write_string(tmp.file("config.json"), config.dump());
    const std::string e = thrown_error([&] { DecoderModel::load(tmp.path()); });
    EXPECT_NE(e.find("tensor \"model.layers.0.mlp.gate_proj.weight\" is missing"), std::string::npos) << e;
  }
  {  // q/k/v biases in a Qwen3 checkpoint whose config says attention_bias false
    TempDir tmp;
    ModelConfig biased = tiny_qwen3_config();
    biased.attention_bias = true;
    test::write_tiny_checkpoint(tmp.path(), biased);
    Json config = read_json_file(tmp.file("config.json"));
    config["attention_bias"] = false;
    test::write_string(tmp.file("config.json"), config.dump());
    const std::string e = thrown_error([&] { DecoderModel::load(tmp.path()); });
    EXPECT_NE(e.find("_proj.bias\" is not part of a Qwen3ForCausalLM"), std::string::npos) << e;
  }
}

TEST(DecoderModel, ATiedCheckpointMayCarryItsOutputMatrix) {
  TempDir tmp;
  test::write_tiny_checkpoint(tmp.path(), test::tiny_config());
  std::vector<uint16_t> head(128 * 32, 0);
  edit_weights(tmp.path(), [&](auto& ts) {
    ts.push_back({"lm_head.weight", DType::BF16, {128, 32}, head.data(), head.size() * 2});
    ts.push_back({"model.layers.0.self_attn.rotary_emb.inv_freq", DType::BF16, {4}, head.data(), 8});
  });
  EXPECT_NO_THROW(DecoderModel::load(tmp.path()));
}

}  // namespace
}  // namespace glass
