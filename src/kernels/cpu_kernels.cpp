#include "kernels/cpu_kernels.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>

#include "base/error.h"
#include "hwy/targets.h"
#include "kernels/amx_kernels.h"
#include "kernels/bf16_dot_kernels.h"
#include "kernels/reference_kernels.h"
#include "kernels/simd_kernels.h"

namespace glass {

namespace {
// Rows per thread-range boundary: a multiple of every tile height (8 rows of the vector
// kernels' interleaved groups, 16 of a tiled matrix's).
constexpr int64_t kRowGrain = 8;
// Rows a thread's range is a multiple of: whole groups of 16 for the tile kernels.
int64_t row_grain(const WeightMatrix& w, bool tiles) { return w.tiled || tiles ? kTileRows : kRowGrain; }

// AmxEmulated: the AMX kernels on the emulated tile unit (amx_tile_emulation.h), slowly, on a
// CPU with AVX-512 but no AMX; for testing the AMX path (layouts and kernels) end to end.
enum class Path { Scalar, Avx2, Avx512, Amx, AmxEmulated };

bool parse_path(std::string_view s, Path* out) {
  if (s == "amx") *out = Path::Amx;
  else if (s == "amx-emulated") *out = Path::AmxEmulated;
  else if (s == "avx512") *out = Path::Avx512;
  else if (s == "avx2") *out = Path::Avx2;
  else if (s == "scalar") *out = Path::Scalar;
  else return false;
  return true;
}

bool cpu_has_avx2() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
#else
  return false;
#endif
}

bool cpu_has_avx512() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}

CpuFeatures detect_once() {
  int64_t disabled = 0;
  CpuFeatures f = CpuFeatures::decide(std::getenv("GLASS_CPU"), amx::request_tile_permission, &disabled);
  if (disabled != 0) hwy::DisableTargets(disabled);
  if (!f.note.empty()) std::fprintf(stderr, "glass: %s\n", f.note.c_str());
  return f;
}
}  // namespace

CpuFeatures CpuFeatures::decide(const char* glass_cpu, PermissionRequest request_permission, int64_t* disabled_targets) {
  const bool has_amx = amx::cpu_has_amx(), has_avx512 = cpu_has_avx512(), has_avx2 = cpu_has_avx2();
  Path path = has_amx ? Path::Amx : has_avx512 ? Path::Avx512 : has_avx2 ? Path::Avx2 : Path::Scalar;
  if (glass_cpu != nullptr && *glass_cpu != '\0') {
    Path asked;
    if (!parse_path(glass_cpu, &asked))
      fail("GLASS_CPU: \"", glass_cpu, "\" is not one of amx, amx-emulated, avx512, avx2, scalar");
    const bool has = asked == Path::Amx           ? has_amx
                     : asked == Path::AmxEmulated ? amx::cpu_can_emulate_tiles()  // AVX-512 and more
                     : asked == Path::Avx512      ? has_avx512
                     : asked == Path::Avx2        ? has_avx2
                                                  : true;
    if (!has)
      fail("GLASS_CPU=", glass_cpu, ": this CPU does not have ",
           asked == Path::Amx           ? "AMX (AMX-TILE, AMX-INT8, AMX-BF16 with AVX512-BF16 and VNNI)"
           : asked == Path::AmxEmulated ? "the AVX-512 subsets around the tiles (F, BW, DQ, VL, VNNI, BF16)"
           : asked == Path::Avx512      ? "AVX-512 (F, BW, DQ, VL)"
                                        : "AVX2 with FMA and F16C");
    path = asked;
  }
  CpuFeatures f;
  f.avx512_vnni = path >= Path::Avx512 && simd::cpu_has_avx512_vnni() && amx::cpu_has_vnni512();
  f.avx2_vnni = path >= Path::Avx2 && (simd::cpu_has_avx_vnni() || simd::cpu_has_avx512_vnni());
  f.avx512_bf16 = path >= Path::Avx512 && bf16dot::cpu_has_avx512_bf16();
  f.lanes = path >= Path::Avx512;
  if (path == Path::AmxEmulated) f.amx = f.amx_emulated = true;  // no tile instruction runs: nothing to ask
  if (path == Path::Amx) {
    std::string reason;
    f.amx = request_permission(&reason);
    if (!f.amx) f.note = "this CPU has AMX but Linux refused the tile permission (" + reason + "); using AVX-512";
  }
  *disabled_targets = 0;
  if (path <= Path::Avx2) *disabled_targets |= HWY_AVX3 | HWY_AVX3_DL;
  if (path == Path::Scalar) *disabled_targets |= HWY_AVX2 | HWY_SSE4 | HWY_SSSE3;
  return f;
}

CpuFeatures CpuFeatures::detect() {
  static const CpuFeatures detected = detect_once();  // set once, read-only after
  return detected;
}

namespace {
// Matrices that fill whole tiles (every Qwen shape does) are tiled; the tile kernels handle
// any shape, but padding an odd one would make it larger than the checkpoint's.
bool tiles_for(const WeightMatrix& w, const CpuFeatures& features) {
  return features.amx && tileable(w.type) && (w.type == WeightType::BF16 || features.amx_int8) &&
         w.rows % kTileRows == 0 && w.cols % kTileChunk == 0;
}
}  // namespace

bool cpu_layout_tiles(const WeightMatrix& w, const CpuFeatures& features) { return tiles_for(w, features) && !w.tiled; }

bool cpu_layout_differs(const WeightMatrix& w, const CpuFeatures& features) {
  if (tiles_for(w, features)) return !w.tiled;
  if (w.tiled) return true;
  if (lane_blockable(w.type)) return w.block_lanes != features.lanes;
  return interleavable(w.type) && !w.interleaved && w.rows >= kInterleaveRows;
}

WeightMatrix cpu_layout(const WeightMatrix& w, std::unique_ptr<std::byte[]>& storage, const CpuFeatures& features) {
  if (!cpu_layout_differs(w, features)) return w;
  WeightMatrix out;
  std::unique_ptr<std::byte[]> bytes;
  if (lane_blockable(w.type)) {  // into lanes, or back to row-major
    std::byte* const at = aligned_bytes(bytes, w.bytes());
    out = w.block_lanes ? unlane_block_rows(w, at) : lane_block_rows(w, at);
  } else if (tiles_for(w, features)) {
    out = tiled_view(w, aligned_bytes(bytes, tiled_bytes(w.type, w.rows, w.cols)));
    // Groups are independent: a few threads make loading a large model that much faster.
    const int64_t groups = w.rows / kTileRows;
    const int64_t workers = conversion_threads(groups);
    std::vector<std::jthread> threads;
    for (int64_t i = 1; i < workers; ++i)
      threads.emplace_back([&, i] { tile_groups(w, out, groups * i / workers, groups * (i + 1) / workers); });
    tile_groups(w, out, 0, groups / workers);
  } else {
    // Back to row-major (a tiled matrix under features without AMX), then interleaved if it
    // pays (interleave_rows reads row-major).
    WeightMatrix row_major = w;
    std::unique_ptr<std::byte[]> rm;  // only when w is not row-major already
    if (w.tiled || w.interleaved) {
      row_major.tiled = row_major.interleaved = false;
      row_major.row_bytes = weight_row_bytes(w.type, w.cols);
      std::byte* const rows = aligned_bytes(rm, row_major.bytes());
      std::vector<float> values(static_cast<size_t>(w.cols));
      for (int64_t r = 0; r < w.rows; ++r) {
        dequantize_row(w, r, values.data());
        quantize_row(w.type, values.data(), w.cols, rows + static_cast<size_t>(r) * row_major.row_bytes);
      }
      row_major.data = rows;
    }
    if (interleavable(w.type) && w.rows >= kInterleaveRows) {
      out = interleave_rows(row_major, aligned_bytes(bytes, row_major.bytes()));
    } else if (rm) {
      bytes = std::move(rm);
      out = row_major;
    } else {  // row-major already, with bytes that are not storage's: a copy of its own
      std::byte* const at = aligned_bytes(bytes, row_major.bytes());
      std::memcpy(at, row_major.data, row_major.bytes());
      out = row_major;
      out.data = at;
    }
  }
  storage = std::move(bytes);
  return out;
}

CpuKernels::CpuKernels(ThreadPool& pool, CpuFeatures features, MatmulPrecision precision)
    : Kernels(precision), pool_(pool), features_(std::move(features)) {
  if (!features_.amx || features_.amx_emulated) return;
  // The permission is the process's, but a tile instruction faults in any thread without
  // it: every worker checks before its first one.
  std::atomic<int> refused{0};
  pool_.run([&](int) {
    if (!amx::tile_permission_granted()) refused.fetch_add(1, std::memory_order_relaxed);
  });
  if (refused.load() > 0) {
    features_.amx = false;
    features_.note = str_cat("AMX is off: ", refused.load(), " of ", pool_.size(),
                             " threads may not run tile instructions (ARCH_GET_XCOMP_PERM); using AVX-512");
  }
}

const char* CpuKernels::simd_target() { return simd::target_name(); }

bool CpuKernels::target_vnni() const {
  const std::string target = simd_target();
  return target.rfind("AVX3", 0) == 0 ? features_.avx512_vnni : target == "AVX2" && features_.avx2_vnni;
}

std::string CpuKernels::simd_path() const {
  std::string s = simd_target();
  const bool avx3 = s.rfind("AVX3", 0) == 0;
  if (target_vnni()) s += " + VNNI";
  if (features_.amx && avx3) s += features_.amx_emulated ? " + AMX (emulated)" : " + AMX";
  if (features_.avx512_bf16 && avx3 && matmul_precision() == MatmulPrecision::Bf16) s += " + BF16";
  return s;
}

std::string CpuKernels::matmul_path(const WeightMatrix& w, int64_t n) const {
  switch (route(w, n)) {
    case Route::Tiles:
      return str_cat(w.type == WeightType::BF16 ? "AMX-BF16" : "AMX-INT8", features_.amx_emulated ? " (emulated)" : "");
    case Route::Vnni: return "AVX3 + VNNI (tiled layout)";
    case Route::Decoded: return std::string(simd_target()) + " (decoded to f32)";
    case Route::Bf16Dot: return "AVX3 + BF16";
    case Route::Vector: break;
  }
  std::string s = simd_target();
  if (rounds_activations(w.type)) s += " (activations rounded to bf16)";
  const ActivationFormat format = activation_format(w);
  if (is_block_quantized(w.type) && format == ActivationFormat::Float) s += " (blocks decoded to f32)";
  if (format == ActivationFormat::Int12x256)
    s += w.block_lanes ? " (integer dot products in lanes, 12-bit activations)" : " (integer dot products, 12-bit activations)";
  if (format == ActivationFormat::Int12x32) s += " (integer dot products, a block a lane, 12-bit activations)";
  // VNNI: the int8 and lane kernels on both x86 targets, the k-quant ones on AVX-512 (vpdpwssd).
  const bool avx3 = s.rfind("AVX3", 0) == 0;
  const bool lanes = format == ActivationFormat::Int12x32;
  if ((interleavable(w.type) || lanes || (traits(w.type).activation == ActivationFormat::Int12x256 && avx3)) &&
      target_vnni())
    s += " + VNNI";
  return s;
}

CpuKernels::ComputePath CpuKernels::compute_path(const WeightMatrix& w, int64_t n) const {
  const WeightType type = w.type;
  ComputePath p;
  p.name = matmul_path(w, n);
  const std::string target = simd_target();
  const bool avx3 = target.rfind("AVX3", 0) == 0, avx2 = target == "AVX2";
  switch (route(w, n)) {
    case Route::Tiles:
      p.valid = !features_.amx_emulated;  // no tile instruction to measure on the emulated unit
      if (type == WeightType::BF16) {
        p.instruction = ComputeInstruction::TileBf16;
        p.passes = amx::bf16_parts(matmul_precision());
        p.how = p.passes == 1 ? "tdpbf16ps, activations rounded to bf16"
                              : str_cat("tdpbf16ps, activations in ", p.passes, " bf16 parts");
      } else if (traits(type).activation == ActivationFormat::Int12x256) {
        p.instruction = ComputeInstruction::TileInt8;  // whole 64-value lines
        p.passes = 4;
        p.how = "tdpbssd on two 6-bit parts of weights x sub-block scales and of 12-bit activations (4 products)";
      } else {
        p.instruction = ComputeInstruction::TileInt8Block;
        p.how = "tdpbssd per 32-value block, scales applied per block with AVX-512";
      }
      return p;
    case Route::Vnni:
      p.valid = true;
      p.instruction = ComputeInstruction::Vnni512;
      p.how = "vpdpbusd zmm on the tiled layout";
      return p;
    case Route::Bf16Dot:
      p.valid = true;
      p.instruction = ComputeInstruction::DpBf16_512;
      p.how = "vdpbf16ps zmm, activations rounded to bf16";
      return p;
    case Route::Decoded:
    case Route::Vector: break;
  }
  if (traits(type).activation == ActivationFormat::Int12x256) {  // prefill's kernel (decode reads bytes)
    p.valid = avx3 || avx2;
    p.instruction = avx3 && target_vnni() ? ComputeInstruction::Int16Vnni512
                    : avx3                 ? ComputeInstruction::Int16Madd512
                                           : ComputeInstruction::Int16Madd256;
    p.how = str_cat(compute_instruction_name(p.instruction), " on rows unpacked to int16, 12-bit activations");
  } else if (activation_format(w) == ActivationFormat::Int12x32) {  // two byte planes: 2 products a value
    p.passes = 2;
    if (target_vnni() && avx3) p.instruction = ComputeInstruction::Vnni512, p.valid = true;
    else if (target_vnni() && avx2 && simd::cpu_has_avx_vnni()) p.instruction = ComputeInstruction::AvxVnni256, p.valid = true;
    else if (target_vnni() && avx2) p.instruction = ComputeInstruction::Vnni256, p.valid = true;
    else if (avx2) p.instruction = ComputeInstruction::Int8Avx2, p.valid = true;
    p.how = p.valid ? str_cat(compute_instruction_name(p.instruction), ", a block a lane, on two planes of 12-bit activations")
                    : "no peak loop for this path";
  } else if (interleavable(type)) {
    if (target_vnni() && avx2 && simd::cpu_has_avx_vnni())
      p.instruction = ComputeInstruction::AvxVnni256, p.valid = true, p.how = "vpdpbusd ymm (AVX-VNNI)";
    else if (target_vnni()) p.instruction = ComputeInstruction::Vnni256, p.valid = true, p.how = "vpdpbusd ymm";
    else if (avx3 || avx2) p.instruction = ComputeInstruction::Int8Avx2, p.valid = true, p.how = "vpmaddubsw ymm";
  } else if (avx3) {
    p.instruction = ComputeInstruction::Fma512, p.valid = true, p.how = "fp32 FMA zmm";
  } else if (avx2) {
    p.instruction = ComputeInstruction::Fma256, p.valid = true, p.how = "fp32 FMA ymm";
  }
  return p;
}

CpuKernels::Route CpuKernels::route(const WeightMatrix& w, int64_t n) const {
  if (!w.tiled) {
    // q4_K, q5_K and q6_K rows (a GGUF's, as they are) are unpacked for the tiles per matmul.
    const bool kquant = traits(w.type).activation == ActivationFormat::Int12x256;
    if (features_.amx && kquant && n >= features_.int8_tile_min_tokens) return Route::Tiles;
    return rounds_activations(w.type) && features_.avx512_bf16 ? Route::Bf16Dot : Route::Vector;
  }
  if (w.type == WeightType::BF16) return features_.amx ? Route::Tiles : Route::Decoded;
  if (features_.amx && n >= features_.int8_tile_min_tokens) return Route::Tiles;
  return features_.avx512_vnni ? Route::Vnni : Route::Decoded;
}

const std::byte* CpuKernels::prepare(Route route, const WeightMatrix& w, const float* x, int64_t n,
                                     std::vector<std::byte>& buffer) {
  const WeightType type = w.type;
  const int64_t cols = w.cols;
  const ActivationFormat format = activation_format(w);
  // Token ranges across the threads (one token: this thread alone).
  auto by_tokens = [&](auto&& f) {
    if (n == 1) f(0, 1);
    else pool_.parallel_for(n, 1, f);
  };
  // `bytes` of buffer starting on a cache line (64 bytes more): tile loads of split lines are slower.
  auto aligned = [&](size_t bytes) {
    if (buffer.size() < bytes + 64) buffer.resize(bytes + 64);
    return buffer.data() + (64 - reinterpret_cast<uintptr_t>(buffer.data()) % 64) % 64;
  };
  // Activations for bf16 dot products, or rounded to bf16 for the kernels that read floats.
  if (route == Route::Bf16Dot) {
    auto* out = reinterpret_cast<uint16_t*>(aligned(static_cast<size_t>(bf16dot::row_values(cols) * n) * sizeof(uint16_t)));
    by_tokens([&](int64_t b, int64_t e) { bf16dot::prepare_rows(x, b, e, cols, out); });
    return reinterpret_cast<const std::byte*>(out);
  }
  if (rounds_activations(type)) {
    if (rounded_.size() < static_cast<size_t>(n * cols)) rounded_.resize(static_cast<size_t>(n * cols));
    float* out = rounded_.data();
    by_tokens([&](int64_t b, int64_t e) { simd::round_to_bf16(x + b * cols, out + b * cols, (e - b) * cols); });
    x = out;
  }
  // Rows decoded to f32 and the float kernels read x as it is, but for bf16's reordering
  // (simd::prepare_rows).
  if (route == Route::Decoded || (type != WeightType::BF16 && format == ActivationFormat::Float))
    return reinterpret_cast<const std::byte*>(x);
  const bool amx = route == Route::Tiles || route == Route::Vnni;
  const int parts = amx::bf16_parts(matmul_precision());
  const size_t bytes =
      amx ? amx::prepared_bytes(type, parts, n, cols) : simd::prepared_row_bytes(format, cols) * static_cast<size_t>(n);
  std::byte* out = aligned(bytes);
  if (amx) {
    if (n <= 16) amx::prepare_rows(type, parts, x, n, 0, n, cols, out);
    else pool_.parallel_for(n, 16, [&](int64_t b, int64_t e) { amx::prepare_rows(type, parts, x, n, b, e, cols, out); });
    return out;
  }
  const size_t row = simd::prepared_row_bytes(format, cols);
  by_tokens([&](int64_t b, int64_t e) {
    simd::prepare_rows(type, x + b * cols, e - b, cols, out + static_cast<size_t>(b) * row);
  });
  return out;
}

void CpuKernels::decoded_rows(const WeightMatrix& w, const float* x, int64_t n, int64_t row_begin, int64_t row_end,
                              const float* bias, float* y) const {
  // Every output is the same f32 dot product whatever the split, so invariance holds as
  // for the other kernels.
  const int64_t cols = w.cols;
  std::vector<float> rows(static_cast<size_t>(kRowGrain * cols)), out(static_cast<size_t>(kRowGrain * n));
  for (int64_t r0 = row_begin; r0 < row_end; r0 += kRowGrain) {
    const int64_t m = std::min(kRowGrain, row_end - r0);
    for (int64_t i = 0; i < m; ++i) dequantize_row(w, r0 + i, &rows[static_cast<size_t>(i * cols)]);
    const WeightMatrix f{WeightType::F32, reinterpret_cast<const std::byte*>(rows.data()), m, cols,
                         static_cast<size_t>(cols) * sizeof(float)};
    simd::matmul_rows(f, reinterpret_cast<const std::byte*>(x), n, 0, m, bias != nullptr ? bias + r0 : nullptr,
                      out.data(), false);
    for (int64_t t = 0; t < n; ++t)
      for (int64_t i = 0; i < m; ++i) y[t * w.rows + r0 + i] = out[static_cast<size_t>(t * m + i)];
  }
}

void CpuKernels::matmul_rows(Route route, const WeightMatrix& w, const std::byte* xp, int64_t n, int64_t row_begin,
                             int64_t row_end, const float* bias, float* y) const {
  switch (route) {
    case Route::Tiles:
      amx::matmul_tiles(tile_unit(), w, xp, amx::bf16_parts(matmul_precision()), n, row_begin, row_end, bias, y);
      return;
    case Route::Vnni: amx::matmul_vnni(w, xp, n, row_begin, row_end, bias, y); return;
    case Route::Decoded: decoded_rows(w, reinterpret_cast<const float*>(xp), n, row_begin, row_end, bias, y); return;
    case Route::Bf16Dot:
      bf16dot::matmul_rows(w, reinterpret_cast<const uint16_t*>(xp), n, row_begin, row_end, bias, y);
      return;
    case Route::Vector: break;
  }
  simd::matmul_rows(w, xp, n, row_begin, row_end, bias, y, target_vnni());
}

void CpuKernels::matmul(const WeightMatrix& w, const float* x, int64_t n, const float* bias, float* y) {
  const Route r = route(w, n);
  const std::byte* xp = prepare(r, w, x, n, prepared_);
  pool_.parallel_for(w.rows, row_grain(w, r == Route::Tiles),
                     [&](int64_t b, int64_t e) { matmul_rows(r, w, xp, n, b, e, bias, y); });
}

void CpuKernels::matmul_multi(const MatmulOutput* outputs, size_t count, const float* x, int64_t n) {
  bool same_kind = true;
  int64_t total_rows = 0;
  for (size_t i = 0; i < count; ++i) {
    const WeightMatrix& w = *outputs[i].w;
    same_kind = same_kind && w.type == outputs[0].w->type && w.cols == outputs[0].w->cols &&
                w.tiled == outputs[0].w->tiled && activation_format(w) == activation_format(*outputs[0].w);
    total_rows += w.rows;
  }
  if (!same_kind || count == 0) {
    Kernels::matmul_multi(outputs, count, x, n);
    return;
  }
  const Route r = route(*outputs[0].w, n);
  const std::byte* xp = prepare(r, *outputs[0].w, x, n, prepared_);
  // One range over the concatenated rows of all outputs.
  pool_.parallel_for(total_rows, row_grain(*outputs[0].w, r == Route::Tiles), [&](int64_t b, int64_t e) {
    int64_t offset = 0;
    for (size_t i = 0; i < count; ++i) {
      const int64_t rows = outputs[i].w->rows;
      const int64_t lo = std::max(b, offset), hi = std::min(e, offset + rows);
      if (lo < hi) matmul_rows(r, *outputs[i].w, xp, n, lo - offset, hi - offset, outputs[i].bias, outputs[i].y);
      offset += rows;
    }
  });
}

void CpuKernels::mlp_gate_up(const WeightMatrix& gate, const WeightMatrix& up, const float* x, int64_t n, float* out) {
  const Route gr = route(gate, n), ur = route(up, n);
  const std::byte* gp = prepare(gr, gate, x, n, prepared_);
  const std::byte* upp = up.type == gate.type && activation_format(up) == activation_format(gate) && ur == gr
                             ? gp
                             : prepare(ur, up, x, n, prepared_up_);
  const auto count = static_cast<size_t>(n * up.rows);
  if (up_scratch_.size() < count) up_scratch_.resize(count);
  float* u = up_scratch_.data();
  const int64_t rows = gate.rows;
  const int64_t grain = std::max(row_grain(gate, gr == Route::Tiles), row_grain(up, ur == Route::Tiles));
  pool_.parallel_for(rows, grain, [&](int64_t b, int64_t e) {
    matmul_rows(gr, gate, gp, n, b, e, nullptr, out);
    matmul_rows(ur, up, upp, n, b, e, nullptr, u);
    for (int64_t t = 0; t < n; ++t) simd::silu_mul(out + t * rows + b, u + t * rows + b, e - b, out + t * rows + b);
  });
}

void CpuKernels::rmsnorm(const float* x, const float* weight, int64_t n, int64_t dim, float eps, float* y) {
  if (n < 16) {
    simd::rmsnorm(x, weight, n, dim, eps, y);
    return;
  }
  pool_.parallel_for(n, 1, [&](int64_t b, int64_t e) { simd::rmsnorm(x + b * dim, weight, e - b, dim, eps, y + b * dim); });
}

void CpuKernels::rope(float* x, int64_t n, int64_t heads, int64_t head_dim, const float* cos, const float* sin) {
  const int64_t half = head_dim / 2;
  if (n < 16) {
    simd::rope(x, n, heads, head_dim, cos, sin);
    return;
  }
  pool_.parallel_for(n, 1, [&](int64_t b, int64_t e) {
    simd::rope(x + b * heads * head_dim, e - b, heads, head_dim, cos + b * half, sin + b * half);
  });
}

void CpuKernels::silu_mul(const float* gate, const float* up, int64_t count, float* out) {
  simd::silu_mul(gate, up, count, out);
}

void CpuKernels::add(float* x, const float* y, int64_t count) { simd::add(x, y, count); }

void CpuKernels::attention(const AttentionArgs& args) {
  if (args.weights_out != nullptr || args.scores_out != nullptr) {  // the trace wants them: the reference keeps them
    ReferenceKernels().attention(args);
    return;
  }
  if (features_.amx && amx::attention_supported(args)) {
    attention_tiles(args);
    return;
  }
  // Consecutive rows of one sequence (a prompt's) share a task, up to a tile's worth: each
  // K/V block is converted once for all of them. Decoding rows are each a sequence of
  // their own.
  attention_row_tiles_.clear();
  for (int64_t t = 0; t < args.n;) {
    int64_t rows = 1;
    while (t + rows < args.n && rows < simd::kMaxAttentionTileRows &&
           args.rows[t + rows].block_ids == args.rows[t].block_ids)
      ++rows;
    attention_row_tiles_.push_back({t, rows});
    t += rows;
  }
  const auto row_tiles = static_cast<int64_t>(attention_row_tiles_.size());
  // A task takes a KV head's whole group of query heads (each K/V row is read once for
  // all of them), unless that leaves threads idle, as decoding one sequence does.
  const int64_t group = args.heads / args.kv_heads, pairs = row_tiles * args.kv_heads;
  const int64_t chunks = std::clamp<int64_t>((pool_.size() + pairs - 1) / pairs, 1, group);
  const int64_t heads_per_task = (group + chunks - 1) / chunks;
  const int64_t tasks = pairs * ((group + heads_per_task - 1) / heads_per_task);
  const int threads = static_cast<int>(std::min<int64_t>(pool_.size(), tasks));
  const int64_t per_thread = simd::attention_scratch_floats(args, heads_per_task);
  if (attention_scratch_.size() < static_cast<size_t>(per_thread * threads))
    attention_scratch_.resize(static_cast<size_t>(per_thread * threads));
  float* scratch = attention_scratch_.data();
  // Causal rows grow with position, so threads take interleaved tasks rather than
  // contiguous halves; each result is independent of the split.
  pool_.run([&](int thread) {
    if (thread >= threads) return;
    float* mine = scratch + per_thread * thread;
    for (int64_t task = thread; task < tasks; task += threads)
      simd::attention_tasks(args, attention_row_tiles_.data(), heads_per_task, task, task + 1, mine);
  });
}

}  // namespace glass

namespace glass {

// Every query row through the tiles (amx_kernels.h): the KV blocks the batch reads are
// converted into tiles once (in parallel), then the rows of each KV head and sequence go
// through them 16 at a time, tasks interleaved over the threads (causal rows grow with their
// position). A row's result does not depend on the rows it shares a tile with.
void CpuKernels::attention_tiles(const AttentionArgs& a) {
  const int64_t group = a.heads / a.kv_heads;
  // The KV blocks read, and how many of their positions are written (the longest row's).
  int32_t max_id = -1;
  for (int64_t t = 0; t < a.n; ++t)
    for (int64_t b = 0; b * 16 < a.rows[t].length; ++b) max_id = std::max(max_id, a.rows[t].block_ids[b]);
  std::vector<int64_t> valid(static_cast<size_t>(max_id + 1), 0);
  for (int64_t t = 0; t < a.n; ++t)
    for (int64_t b = 0; b * 16 < a.rows[t].length; ++b) {
      int64_t& v = valid[static_cast<size_t>(a.rows[t].block_ids[b])];
      v = std::max(v, std::min<int64_t>(16, a.rows[t].length - 16 * b));
    }
  std::vector<int32_t> slot(valid.size(), -1), ids;
  for (size_t id = 0; id < valid.size(); ++id)
    if (valid[id] > 0) slot[id] = static_cast<int32_t>(ids.size()), ids.push_back(static_cast<int32_t>(id));
  const size_t block_bytes = amx::attention_block_bytes(a);
  const size_t rows_scratch = amx::attention_rows_scratch_bytes(a);
  const size_t blocks_bytes = ids.size() * block_bytes;
  const size_t scratch_bytes = blocks_bytes + static_cast<size_t>(pool_.size()) * rows_scratch;
  if (attention_tiles_.size() < scratch_bytes + 64) attention_tiles_.resize(scratch_bytes + 64);
  std::byte* base = attention_tiles_.data() + (64 - reinterpret_cast<uintptr_t>(attention_tiles_.data()) % 64) % 64;
  auto prepare = [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      amx::attention_prepare_block(a, ids[static_cast<size_t>(i)], valid[static_cast<size_t>(ids[static_cast<size_t>(i)])],
                                   base + static_cast<size_t>(i) * block_bytes);
  };
  if (ids.size() <= 2) prepare(0, static_cast<int64_t>(ids.size()));
  else pool_.parallel_for(static_cast<int64_t>(ids.size()), 1, prepare);

  // Tasks: per run of tokens with one block table (a sequence), per KV head, 16 rows
  // (token, head) at a time in token order.
  struct Task {
    int64_t kv_head, first_row, tiles_at;
    int count;
  };
  std::vector<Task> tasks;
  std::vector<int64_t> task_rows;
  std::vector<const std::byte*> block_tiles;
  for (int64_t t0 = 0; t0 < a.n;) {
    int64_t t1 = t0 + 1, longest = a.rows[t0].length;
    while (t1 < a.n && a.rows[t1].block_ids == a.rows[t0].block_ids) longest = std::max(longest, a.rows[t1++].length);
    const auto tiles_at = static_cast<int64_t>(block_tiles.size());
    for (int64_t b = 0; b * 16 < longest; ++b)
      block_tiles.push_back(base + static_cast<size_t>(slot[static_cast<size_t>(a.rows[t0].block_ids[b])]) * block_bytes);
    for (int64_t kh = 0; kh < a.kv_heads; ++kh) {
      const int64_t rows = (t1 - t0) * group;
      for (int64_t r0 = 0; r0 < rows; r0 += 16) {
        const int count = static_cast<int>(std::min<int64_t>(16, rows - r0));
        tasks.push_back({kh, static_cast<int64_t>(task_rows.size()), tiles_at, count});
        for (int64_t r = r0; r < r0 + count; ++r) task_rows.push_back((t0 + r / group) * a.heads + kh * group + r % group);
      }
    }
    t0 = t1;
  }
  const int threads = static_cast<int>(std::min<int64_t>(pool_.size(), static_cast<int64_t>(tasks.size())));
  pool_.run([&](int thread) {
    if (thread >= threads) return;
    std::byte* scratch = base + blocks_bytes + static_cast<size_t>(thread) * rows_scratch;
    for (size_t i = static_cast<size_t>(thread); i < tasks.size(); i += static_cast<size_t>(threads)) {
      const Task& task = tasks[i];
      amx::attention_rows(tile_unit(), a, task.kv_head, task_rows.data() + task.first_row, task.count,
                          block_tiles.data() + task.tiles_at, scratch);
    }
  });
}

}  // namespace glass
