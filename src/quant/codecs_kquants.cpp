// llama.cpp's k-quants: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, 256 values per super-block
// (layouts in blocks.h).
//
// Dequantization computes ggml's dequantize_row_* expressions in the same order. The
// quantizers are llama.cpp's reference quantizers (quantize_row_*_ref in ggml-quants.c,
// what llama-quantize runs without an importance matrix), so their bytes are
// llama-quantize's: every sub-block gets a scale (and a min) from a small search, the
// sub-block scales are themselves quantized against the super-block's largest, and the
// values are then re-quantized with the scales as stored. Bit-identity rests on doing the
// same float operations in the same order: each expression below keeps ggml's
// association, and this file is compiled without FMA contraction (src/quant/CMakeLists.txt),
// as ggml-quants.c is on x86-64 (ggml-base has no -march, so no FMA to contract into).
#include <cmath>
#include <cstring>

#include "base/half.h"
#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/kquant_parts.h"
#include "quant/rounding.h"

namespace glass::codecs {

using quant::nearest_int;

namespace {

// ggml's GROUP_MAX_EPS: a group whose largest magnitude is below it counts as all zero.
constexpr float kGroupMaxEps = 1e-15f;

int clamp_int(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

// The value of largest magnitude, with its sign (the first one on ties), and its magnitude.
struct Extreme {
  float value, magnitude;
};
Extreme signed_extreme(const float* x, int n) {
  Extreme e{0.0f, 0.0f};
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > e.magnitude) e = {x[i], ax};
  }
  return e;
}

// ---- Scale searches (ggml's make_qx_quants, make_q3_quants and make_qkx2_quants, for
// the arguments the reference quantizers pass: rmse_type 1 and no importance weights).

// Q6_K's sub-block scale (16 values, codes in [-32, 31] stored + 32): starting from the
// scale that maps the extreme value onto -32, try 18 nearby ones and keep the one whose
// least-squares fit, weighted by x^2, explains the most. Returns the fitted scale (0 for
// an all-zero group).
float fit_q6_scale(const float* x, int8_t* codes) {
  constexpr int n = 16, nmax = 32;
  const Extreme e = signed_extreme(x, n);
  if (e.magnitude < kGroupMaxEps) {
    std::memset(codes, 0, n);
    return 0.0f;
  }
  auto code_of = [](float iscale, float v) { return clamp_int(nearest_int(iscale * v), -nmax, nmax - 1); };
  // The fit x ~ scale * l is weighted by w = x^2; w and w * x are the same in every trial.
  float w[n], wx[n];
  for (int i = 0; i < n; ++i) {
    w[i] = x[i] * x[i];
    wx[i] = w[i] * x[i];
  }
  // The sums of the weighted fit for the codes of iscale (accumulated in ggml's order);
  // codes are written only when a trial wins.
  struct Fit {
    float sumlx, suml2;
  };
  auto fit = [&](float iscale) {
    float l[n];
    for (int i = 0; i < n; ++i) l[i] = static_cast<float>(code_of(iscale, x[i]));
    Fit f{0.0f, 0.0f};
    for (int i = 0; i < n; ++i) {
      f.sumlx += wx[i] * l[i];
      f.suml2 += w[i] * l[i] * l[i];
    }
    return f;
  };
  auto write_codes = [&](float iscale) {
    for (int i = 0; i < n; ++i) codes[i] = static_cast<int8_t>(code_of(iscale, x[i]) + nmax);
  };
  const float first_iscale = static_cast<float>(-nmax) / e.value;
  write_codes(first_iscale);
  const Fit first = fit(first_iscale);
  float scale = first.suml2 != 0.0f ? first.sumlx / first.suml2 : 0.0f;
  float best = scale * first.sumlx;
  for (int step = -9; step <= 9; ++step) {
    if (step == 0) continue;
    const float iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(step)) / e.value;
    const Fit f = fit(iscale);
    if (f.suml2 > 0.0f && f.sumlx * f.sumlx > best * f.suml2) {
      write_codes(iscale);
      scale = f.sumlx / f.suml2;
      best = scale * f.sumlx;
    }
  }
  return scale;
}

// Q3_K's sub-block scale (16 values, codes in [-4, 3] stored + 4): the scale mapping the
// extreme value onto -4, then up to 5 passes that move single codes where that improves
// the x^2-weighted fit. Returns the fitted scale (0 for an all-zero group).
float fit_q3_scale(const float* x, int8_t* codes) {
  constexpr int n = 16, nmax = 4;
  const Extreme e = signed_extreme(x, n);
  if (e.magnitude < kGroupMaxEps) {
    std::memset(codes, 0, n);
    return 0.0f;
  }
  const float iscale = static_cast<float>(-nmax) / e.value;
  float sumlx = 0.0f, suml2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    codes[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  for (int pass = 0; pass < 5; ++pass) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      const auto old_l = static_cast<float>(codes[i]);
      float slx = sumlx - w * x[i] * old_l;  // the sums without value i
      if (!(slx > 0.0f)) continue;
      float sl2 = suml2 - w * old_l * old_l;
      const int new_l = clamp_int(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
      if (new_l == codes[i]) continue;
      slx += w * x[i] * static_cast<float>(new_l);
      sl2 += w * static_cast<float>(new_l) * static_cast<float>(new_l);
      if (sl2 > 0.0f && slx * slx * suml2 > sumlx * sumlx * sl2) {
        codes[i] = static_cast<int8_t>(new_l);
        sumlx = slx;
        suml2 = sl2;
        ++changed;
      }
    }
    if (changed == 0) break;
  }
  for (int i = 0; i < n; ++i) codes[i] = static_cast<int8_t>(codes[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// The search of the types with a min (ScaleMinSearch, kquant_parts.h). Returns the scale; *min_out gets the min as a non-negative amount to subtract.
float fit_scale_and_min(const float* x, const float* weights, int n, const ScaleMinSearch& s, uint8_t* codes,
                        uint8_t* scratch, float* min_out) {
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += weights[i];
    sum_x += weights[i] * x[i];
  }
  if (min > 0.0f) min = 0.0f;
  if (max == min) {
    std::memset(codes, 0, static_cast<size_t>(n));
    *min_out = -min;
    return 0.0f;
  }
  auto error_of = [&](float diff) { return s.absolute_error ? std::fabs(diff) : diff * diff; };
  float iscale = static_cast<float>(s.nmax) / (max - min);
  float scale = 1.0f / iscale;
  float best_error = 0.0f;
  for (int i = 0; i < n; ++i) {
    codes[i] = static_cast<uint8_t>(clamp_int(nearest_int(iscale * (x[i] - min)), 0, s.nmax));
    best_error += weights[i] * error_of(scale * static_cast<float>(codes[i]) + min - x[i]);
  }
  for (int step = 0; step <= s.steps; ++step) {
    iscale = (s.rmin + s.rdelta * static_cast<float>(step) + static_cast<float>(s.nmax)) / (max - min);
    float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_int(nearest_int(iscale * (x[i] - min)), 0, s.nmax);
      scratch[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      const auto fl = static_cast<float>(l);
      sum_l += w * fl;
      sum_l2 += w * fl * fl;
      sum_xl += w * fl * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (!(det > 0.0f)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0.0f) {  // a positive offset is not representable: fit the scale alone
      this_min = 0.0f;
      this_scale = sum_xl / sum_l2;
    }
    float error = 0.0f;
    for (int i = 0; i < n; ++i)
      error += weights[i] * error_of(this_scale * static_cast<float>(scratch[i]) + this_min - x[i]);
    if (error < best_error) {
      std::memcpy(codes, scratch, static_cast<size_t>(n));
      best_error = error;
      scale = this_scale;
      min = this_min;
    }
  }
  *min_out = -min;
  return scale;
}

// ---- Packing shared by several types.

// Q2_K / Q3_K: four 2-bit codes per byte; in each half h of 128 values, byte 32h + l holds
// values 128h + l, +32, +64, +96 at bits 0, 2, 4, 6.
void pack_2bit(const uint8_t* codes, uint8_t* q) {
  for (int h = 0; h < 2; ++h) {
    const uint8_t* c = codes + 128 * h;
    for (int l = 0; l < 32; ++l)
      q[32 * h + l] = static_cast<uint8_t>(c[l] | (c[l + 32] << 2) | (c[l + 64] << 4) | (c[l + 96] << 6));
  }
}

void pack_scale_min(uint8_t* packed, int j, uint8_t scale, uint8_t min) {
  if (j < 4) {
    packed[j] = scale;
    packed[j + 4] = min;
  } else {
    packed[j + 4] = static_cast<uint8_t>((scale & 0x0f) | ((min & 0x0f) << 4));
    packed[j - 4] = static_cast<uint8_t>(packed[j - 4] | ((scale >> 4) << 6));
    packed[j] = static_cast<uint8_t>(packed[j] | ((min >> 4) << 6));
  }
}


// Q4_K and Q5_K share everything but the code width and the search: 8 sub-blocks of 32,
// each weighted by (rms of the sub-block + |x|), fitted with a min.
void search_scales_and_mins(const float* x, const ScaleMinSearch& search, float* scales, float* mins,
                            uint8_t* codes) {
  float weights[32];
  uint8_t scratch[32];
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0.0f;
    for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float rms = std::sqrt(sum_x2 / 32.0f);
    for (int l = 0; l < 32; ++l) weights[l] = rms + std::fabs(xs[l]);
    scales[j] = fit_scale_and_min(xs, weights, 32, search, codes + 32 * j, scratch, &mins[j]);
  }
}

// Then the scales and mins quantized to 6 bits against the largest, and the values
// re-quantized with the stored ones. Writes the packed scales, the two fp16 super-block
// scales and the 256 codes.
void finish_scales_and_mins(const float* x, int nmax, const float* scales, const float* mins, uint8_t* packed,
                            uint16_t* scale_bits, uint16_t* min_bits, uint8_t* codes) {
  float max_scale = 0.0f, max_min = 0.0f;  // scales come out positive: the min absorbs the offset
  for (int j = 0; j < 8; ++j) {
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
  for (int j = 0; j < 8; ++j) {
    // Stored through uint8_t first, as ggml does: a negative code wraps, then caps at 63.
    const auto ls = static_cast<uint8_t>(nearest_int(inv_scale * scales[j]));
    const auto lm = static_cast<uint8_t>(nearest_int(inv_min * mins[j]));
    pack_scale_min(packed, j, ls < 63 ? ls : 63, lm < 63 ? lm : 63);
  }
  *scale_bits = f32_to_f16(max_scale / 63.0f);
  *min_bits = f32_to_f16(max_min / 63.0f);

  const float d_all = f16_to_f32(*scale_bits), m_all = f16_to_f32(*min_bits);
  for (int j = 0; j < 8; ++j) {
    const ScaleMin sm = unpack_scale_min(packed, j);
    const float d = d_all * static_cast<float>(sm.scale);
    if (d == 0.0f) continue;  // the sub-block keeps the search's codes
    const float dm = m_all * static_cast<float>(sm.min);
    for (int l = 0; l < 32; ++l)
      codes[32 * j + l] = static_cast<uint8_t>(clamp_int(nearest_int((x[32 * j + l] + dm) / d), 0, nmax));
  }
}

}  // namespace

// ---- Q2_K

void dequantize_q2_K(const std::byte* src, float* out, int64_t blocks) {
  const auto* b = reinterpret_cast<const BlockQ2_K*>(src);
  for (int64_t i = 0; i < blocks; ++i, out += 256) {
    const float d = f16_to_f32(b[i].scale);
    const float m = f16_to_f32(b[i].min_scale);
    // Sub-block s (16 values) takes bits 2 * ((s % 8) / 2) of q[32 * (s / 8) + 16 * (s % 2) + l].
    for (int s = 0; s < 16; ++s) {
      const float dl = d * static_cast<float>(b[i].scales[s] & 0x0f);
      const float ml = m * static_cast<float>(b[i].scales[s] >> 4);
      const uint8_t* q = b[i].q + 32 * (s / 8) + 16 * (s % 2);
      const int shift = 2 * ((s % 8) / 2);
      for (int l = 0; l < 16; ++l) out[16 * s + l] = dl * static_cast<float>((q[l] >> shift) & 3) - ml;
    }
  }
}

void finish_q2_K(const float* x, const float* scales, const float* mins, uint8_t* codes, std::byte* block) {
  BlockQ2_K& blk = *reinterpret_cast<BlockQ2_K*>(block);
  float max_scale = 0.0f, max_min = 0.0f;
  for (int s = 0; s < 16; ++s) {
    if (scales[s] > max_scale) max_scale = scales[s];
    if (mins[s] > max_min) max_min = mins[s];
  }
  // 4-bit sub-block scales (low nibble) and mins (high nibble) against the largest.
  std::memset(blk.scales, 0, sizeof blk.scales);
  blk.scale = f32_to_f16(0.0f);
  blk.min_scale = f32_to_f16(0.0f);
  if (max_scale > 0.0f) {
    const float iscale = 15.0f / max_scale;
    for (int s = 0; s < 16; ++s) blk.scales[s] = static_cast<uint8_t>(nearest_int(iscale * scales[s]));
    blk.scale = f32_to_f16(max_scale / 15.0f);
  }
  if (max_min > 0.0f) {
    const float iscale = 15.0f / max_min;
    for (int s = 0; s < 16; ++s)
      blk.scales[s] = static_cast<uint8_t>(blk.scales[s] | (nearest_int(iscale * mins[s]) << 4));
    blk.min_scale = f32_to_f16(max_min / 15.0f);
  }
  const float d_all = f16_to_f32(blk.scale), m_all = f16_to_f32(blk.min_scale);
  for (int s = 0; s < 16; ++s) {
    const float d = d_all * static_cast<float>(blk.scales[s] & 0x0f);
    if (d == 0.0f) continue;  // the sub-block keeps the search's codes
    const float dm = m_all * static_cast<float>(blk.scales[s] >> 4);
    for (int l = 0; l < 16; ++l)
      codes[16 * s + l] = static_cast<uint8_t>(clamp_int(nearest_int((x[16 * s + l] + dm) / d), 0, 3));
  }
  pack_2bit(codes, blk.q);
}

void quantize_q2_K(const float* in, std::byte* out, int64_t blocks) {
  uint8_t codes[256], scratch[16];
  float weights[16], scales[16], mins[16];
  for (int64_t i = 0; i < blocks; ++i, in += 256) {
    for (int s = 0; s < 16; ++s) {
      const float* xs = in + 16 * s;
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(xs[l]);
      scales[s] = fit_scale_and_min(xs, weights, 16, kQ2KSearch, codes + 16 * s, scratch, &mins[s]);
    }
    finish_q2_K(in, scales, mins, codes, out + i * static_cast<int64_t>(sizeof(BlockQ2_K)));
  }
}

// ---- Q3_K

void dequantize_q3_K(const std::byte* src, float* out, int64_t blocks) {
  const auto* b = reinterpret_cast<const BlockQ3_K*>(src);
  for (int64_t i = 0; i < blocks; ++i, out += 256) {
    const float d = f16_to_f32(b[i].scale);
    // The low 2 bits as Q2_K's; the third bit of value v is bit v / 32 of high_bits[v % 32].
    for (int s = 0; s < 16; ++s) {
      const float dl = d * static_cast<float>(unpack_q3_scale(b[i].scales, s));
      const uint8_t* q = b[i].q + 32 * (s / 8) + 16 * (s % 2);
      const uint8_t* high = b[i].high_bits + 16 * (s % 2);
      const int shift = 2 * ((s % 8) / 2), high_bit = s / 2;
      for (int l = 0; l < 16; ++l) {
        const int code = ((q[l] >> shift) & 3) - (((high[l] >> high_bit) & 1) ? 0 : 4);
        out[16 * s + l] = dl * static_cast<float>(code);
      }
    }
  }
}

void finish_q3_K(const float* x, const float* scales, int8_t* codes, std::byte* block) {
  BlockQ3_K& blk = *reinterpret_cast<BlockQ3_K*>(block);
  const float max_scale = signed_extreme(scales, 16).value;  // the scale of largest magnitude, signed
  // Signed 6-bit sub-block scales against the largest (which maps to -32).
  std::memset(blk.scales, 0, sizeof blk.scales);
  blk.scale = f32_to_f16(0.0f);
  if (max_scale != 0.0f) {
    const float iscale = -32.0f / max_scale;
    for (int s = 0; s < 16; ++s) {
      const int l = clamp_int(static_cast<int8_t>(nearest_int(iscale * scales[s])), -32, 31) + 32;
      if (s < 8)
        blk.scales[s] = static_cast<uint8_t>(l & 0x0f);
      else
        blk.scales[s - 8] = static_cast<uint8_t>(blk.scales[s - 8] | ((l & 0x0f) << 4));
      blk.scales[8 + s % 4] = static_cast<uint8_t>(blk.scales[8 + s % 4] | ((l >> 4) << (2 * (s / 4))));
    }
    blk.scale = f32_to_f16(1.0f / iscale);
  }
  const float d_all = f16_to_f32(blk.scale);
  for (int s = 0; s < 16; ++s) {
    const float d = d_all * static_cast<float>(unpack_q3_scale(blk.scales, s));
    if (d == 0.0f) continue;  // the sub-block keeps the search's codes
    for (int l = 0; l < 16; ++l)
      codes[16 * s + l] = static_cast<int8_t>(clamp_int(nearest_int(x[16 * s + l] / d), -4, 3) + 4);
  }
  // Codes 0..7: the third bit goes to high_bits, the low two are packed as Q2_K's.
  uint8_t low[256];
  std::memset(blk.high_bits, 0, sizeof blk.high_bits);
  for (int v = 0; v < 256; ++v) {
    const int c = codes[v];
    if (c > 3) blk.high_bits[v % 32] = static_cast<uint8_t>(blk.high_bits[v % 32] | (1 << (v / 32)));
    low[v] = static_cast<uint8_t>(c > 3 ? c - 4 : c);
  }
  pack_2bit(low, blk.q);
}

void quantize_q3_K(const float* in, std::byte* out, int64_t blocks) {
  int8_t codes[256];
  float scales[16];
  for (int64_t i = 0; i < blocks; ++i, in += 256) {
    for (int s = 0; s < 16; ++s) scales[s] = fit_q3_scale(in + 16 * s, codes + 16 * s);
    finish_q3_K(in, scales, codes, out + i * static_cast<int64_t>(sizeof(BlockQ3_K)));
  }
}

// ---- Q4_K

void dequantize_q4_K(const std::byte* src, float* out, int64_t blocks) {
  const auto* b = reinterpret_cast<const BlockQ4_K*>(src);
  for (int64_t i = 0; i < blocks; ++i, out += 256) {
    const float d = f16_to_f32(b[i].scale);
    const float m = f16_to_f32(b[i].min_scale);
    for (int j = 0; j < 8; ++j) {
      const ScaleMin sm = unpack_scale_min(b[i].scales, j);
      const float dj = d * static_cast<float>(sm.scale);
      const float mj = m * static_cast<float>(sm.min);
      const uint8_t* q = b[i].q + 32 * (j / 2);
      const int shift = 4 * (j % 2);
      for (int l = 0; l < 32; ++l) out[32 * j + l] = dj * static_cast<float>((q[l] >> shift) & 0x0f) - mj;
    }
  }
}

void finish_q4_K(const float* x, const float* scales, const float* mins, uint8_t* codes, std::byte* block) {
  BlockQ4_K& blk = *reinterpret_cast<BlockQ4_K*>(block);
  finish_scales_and_mins(x, kQ4KSearch.nmax, scales, mins, blk.scales, &blk.scale, &blk.min_scale, codes);
  for (int h = 0; h < 4; ++h)
    for (int l = 0; l < 32; ++l)
      blk.q[32 * h + l] = static_cast<uint8_t>(codes[64 * h + l] | (codes[64 * h + 32 + l] << 4));
}

void quantize_q4_K(const float* in, std::byte* out, int64_t blocks) {
  uint8_t codes[256];
  float scales[8], mins[8];
  for (int64_t i = 0; i < blocks; ++i, in += 256) {
    search_scales_and_mins(in, kQ4KSearch, scales, mins, codes);
    finish_q4_K(in, scales, mins, codes, out + i * static_cast<int64_t>(sizeof(BlockQ4_K)));
  }
}

// ---- Q5_K

void dequantize_q5_K(const std::byte* src, float* out, int64_t blocks) {
  const auto* b = reinterpret_cast<const BlockQ5_K*>(src);
  for (int64_t i = 0; i < blocks; ++i, out += 256) {
    const float d = f16_to_f32(b[i].scale);
    const float m = f16_to_f32(b[i].min_scale);
    for (int j = 0; j < 8; ++j) {
      const ScaleMin sm = unpack_scale_min(b[i].scales, j);
      const float dj = d * static_cast<float>(sm.scale);
      const float mj = m * static_cast<float>(sm.min);
      const uint8_t* q = b[i].q + 32 * (j / 2);
      const int shift = 4 * (j % 2);
      const uint8_t high_mask = static_cast<uint8_t>(1u << j);
      for (int l = 0; l < 32; ++l) {
        const int code = ((q[l] >> shift) & 0x0f) + ((b[i].high_bits[l] & high_mask) ? 16 : 0);
        out[32 * j + l] = dj * static_cast<float>(code) - mj;
      }
    }
  }
}

void finish_q5_K(const float* x, const float* scales, const float* mins, uint8_t* codes, std::byte* block) {
  BlockQ5_K& blk = *reinterpret_cast<BlockQ5_K*>(block);
  finish_scales_and_mins(x, kQ5KSearch.nmax, scales, mins, blk.scales, &blk.scale, &blk.min_scale, codes);
  std::memset(blk.high_bits, 0, sizeof blk.high_bits);
  for (int h = 0; h < 4; ++h) {
    for (int l = 0; l < 32; ++l) {
      const int lo = codes[64 * h + l], hi = codes[64 * h + 32 + l];
      blk.q[32 * h + l] = static_cast<uint8_t>((lo & 0x0f) | ((hi & 0x0f) << 4));
      blk.high_bits[l] = static_cast<uint8_t>(blk.high_bits[l] | ((lo >> 4) << (2 * h)) | ((hi >> 4) << (2 * h + 1)));
    }
  }
}

void quantize_q5_K(const float* in, std::byte* out, int64_t blocks) {
  uint8_t codes[256];
  float scales[8], mins[8];
  for (int64_t i = 0; i < blocks; ++i, in += 256) {
    search_scales_and_mins(in, kQ5KSearch, scales, mins, codes);
    finish_q5_K(in, scales, mins, codes, out + i * static_cast<int64_t>(sizeof(BlockQ5_K)));
  }
}

// ---- Q6_K

void dequantize_q6_K(const std::byte* src, float* out, int64_t blocks) {
  const auto* b = reinterpret_cast<const BlockQ6_K*>(src);
  for (int64_t i = 0; i < blocks; ++i, out += 256) {
    const float d = f16_to_f32(b[i].scale);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* low = b[i].low + 64 * h;
      const uint8_t* high = b[i].high + 32 * h;
      for (int k = 0; k < 4; ++k) {
        const int shift = 4 * (k / 2);
        const uint8_t* lo = low + 32 * (k % 2);
        float* o = out + 128 * h + 32 * k;
        for (int half = 0; half < 2; ++half) {  // two sub-blocks of 16, each with its scale
          const float dl = d * static_cast<float>(b[i].scales[8 * h + 2 * k + half]);  // ggml: (d * sc) * q
          for (int l = 16 * half; l < 16 * half + 16; ++l) {
            const int code = ((lo[l] >> shift) & 0x0f) | (((high[l] >> (2 * k)) & 3) << 4);
            o[l] = dl * static_cast<float>(code - 32);
          }
        }
      }
    }
  }
}

void finish_q6_K(const float* x, const float* scales, int8_t* codes, std::byte* block) {
  BlockQ6_K& blk = *reinterpret_cast<BlockQ6_K*>(block);
  const Extreme largest = signed_extreme(scales, 16);  // the scale of largest magnitude, signed
  const float max_scale = largest.value, max_magnitude = largest.magnitude;
  if (max_magnitude < kGroupMaxEps) {
    std::memset(&blk, 0, sizeof blk);  // an all-zero super-block
    return;
  }
  // Signed 8-bit sub-block scales against the largest (which maps to -128).
  const float iscale = -128.0f / max_scale;
  blk.scale = f32_to_f16(1.0f / iscale);
  for (int s = 0; s < 16; ++s) {
    const int l = nearest_int(iscale * scales[s]);
    blk.scales[s] = static_cast<int8_t>(l < 127 ? l : 127);
  }
  const float d_all = f16_to_f32(blk.scale);
  for (int s = 0; s < 16; ++s) {
    const float d = d_all * static_cast<float>(blk.scales[s]);
    if (d == 0.0f) continue;  // the sub-block keeps the search's codes
    for (int l = 0; l < 16; ++l)
      codes[16 * s + l] = static_cast<int8_t>(clamp_int(nearest_int(x[16 * s + l] / d), -32, 31) + 32);
  }
  for (int h = 0; h < 2; ++h) {
    const int8_t* c = codes + 128 * h;
    uint8_t* low = blk.low + 64 * h;
    uint8_t* high = blk.high + 32 * h;
    for (int l = 0; l < 32; ++l) {
      low[l] = static_cast<uint8_t>((c[l] & 0x0f) | ((c[l + 64] & 0x0f) << 4));
      low[l + 32] = static_cast<uint8_t>((c[l + 32] & 0x0f) | ((c[l + 96] & 0x0f) << 4));
      high[l] = static_cast<uint8_t>((c[l] >> 4) | ((c[l + 32] >> 4) << 2) | ((c[l + 64] >> 4) << 4) |
                                     ((c[l + 96] >> 4) << 6));
    }
  }
}

void quantize_q6_K(const float* in, std::byte* out, int64_t blocks) {
  int8_t codes[256];
  float scales[16];
  for (int64_t i = 0; i < blocks; ++i, in += 256) {
    for (int s = 0; s < 16; ++s) scales[s] = fit_q6_scale(in + 16 * s, codes + 16 * s);
    finish_q6_K(in, scales, codes, out + i * static_cast<int64_t>(sizeof(BlockQ6_K)));
  }
}

}  // namespace glass::codecs
