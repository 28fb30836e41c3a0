// Conversion at load, vectorized: q8_0 and q4_0 quantization giving the bytes of quant's
// scalar codecs (llama.cpp's reference quantizers) bit for bit, and bf16 / f16 widened to
// floats, at the speed a 7B load needs. Compiled once per CPU
// target by Highway's foreach_target and dispatched at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/simd_quantize.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/half.h"
#include "kernels/simd_kernels.h"
#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/kquant_parts.h"
#include "quant/weight_type.h"

HWY_BEFORE_NAMESPACE();
namespace glass::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The largest |x| of a block of 32, and whether every value is finite. Blocks with NaN or
// infinity go to the scalar codec, whose handling of them is ggml's.
template <class DF>
HWY_INLINE float BlockAbsMax(DF df, const float* x, bool* finite) {
  const size_t N = hn::Lanes(df);
  auto amax = hn::Zero(df);
  auto ok = hn::FirstN(df, N);
  for (size_t j = 0; j < 32; j += N) {
    const auto v = hn::LoadU(df, x + j);
    amax = hn::Max(amax, hn::Abs(v));
    ok = hn::And(ok, hn::IsFinite(v));
  }
  *finite = hn::AllTrue(df, ok);
  return hn::GetLane(hn::MaxOfLanes(df, amax));
}

// round_to_int (rounding.h) of finite values within int32: truncate, then correct by the
// exact remainder, with the same operations.
template <class DF, class V>
HWY_INLINE auto RoundHalfAway(DF df, V v) {
  const hn::RebindToSigned<DF> di;
  const auto i = hn::ConvertTo(di, v);
  const auto frac = hn::Sub(v, hn::ConvertTo(df, i));
  const auto one = hn::Set(di, 1);
  const auto up = hn::IfThenElseZero(hn::RebindMask(di, hn::Ge(frac, hn::Set(df, 0.5f))), one);
  const auto down = hn::IfThenElseZero(hn::RebindMask(di, hn::Le(frac, hn::Set(df, -0.5f))), one);
  return hn::Sub(hn::Add(i, up), down);
}

void QuantizeQ8_0(const float* in, std::byte* out, int64_t blocks) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<int8_t, decltype(di)> d8;
  const size_t N = hn::Lanes(df);
  auto* b = reinterpret_cast<BlockQ8_0*>(out);
  for (int64_t i = 0; i < blocks; ++i, in += 32) {
    bool finite = false;
    const float amax = BlockAbsMax(df, in, &finite);
    const float scale = amax / 127.0f;
    const float inverse = scale != 0.0f ? 1.0f / scale : 0.0f;
    if (!finite || !std::isfinite(inverse)) {
      codecs::quantize_q8_0(in, reinterpret_cast<std::byte*>(b + i), 1);
      continue;
    }
    b[i].scale = f32_to_f16(scale);
    const auto vinv = hn::Set(df, inverse);
    for (size_t j = 0; j < 32; j += N)
      hn::StoreU(hn::DemoteTo(d8, RoundHalfAway(df, hn::Mul(hn::LoadU(df, in + j), vinv))), d8, b[i].q + j);
  }
}

void QuantizeQ4_0(const float* in, std::byte* out, int64_t blocks) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<uint8_t, decltype(di)> d8;
  const size_t N = hn::Lanes(df);
  auto* b = reinterpret_cast<BlockQ4_0*>(out);
  for (int64_t i = 0; i < blocks; ++i, in += 32) {
    bool finite = false;
    const float amax = BlockAbsMax(df, in, &finite);
    // The value of largest magnitude with its sign, the first on ties; +0 when all are 0
    // (signed_absmax starts from +0 and keeps it).
    float extreme = 0.0f;
    if (amax != 0.0f && finite) {
      const auto vmax = hn::Set(df, amax);
      for (size_t j = 0; j < 32; j += N) {
        const auto v = hn::LoadU(df, in + j);
        const intptr_t at = hn::FindFirstTrue(df, hn::Eq(hn::Abs(v), vmax));
        if (at >= 0) {
          extreme = in[j + static_cast<size_t>(at)];
          break;
        }
      }
    }
    const float scale = extreme / -8.0f;
    const float inverse = scale != 0.0f ? 1.0f / scale : 0.0f;
    if (!finite || !std::isfinite(inverse)) {
      codecs::quantize_q4_0(in, reinterpret_cast<std::byte*>(b + i), 1);
      continue;
    }
    b[i].scale = f32_to_f16(scale);
    const auto vinv = hn::Set(df, inverse);
    const auto half8 = hn::Set(df, 8.5f);
    const auto top = hn::Set(di, 15);
    // capped_code: truncate x * inverse + 8.5 (no fused multiply-add, as the scalar code),
    // at most 15; value j in the low nibble of byte j, value j + 16 in the high one.
    const auto code = [&](size_t j) {
      return hn::Min(hn::ConvertTo(di, hn::Add(hn::Mul(hn::LoadU(df, in + j), vinv), half8)), top);
    };
    for (size_t j = 0; j < 16; j += N)
      hn::StoreU(hn::DemoteTo(d8, hn::Or(code(j), hn::ShiftLeft<4>(code(j + 16)))), d8, b[i].q + j);
  }
}

// ---- The k-quants (Q2_K, Q4_K, Q5_K, Q6_K): the reference quantizers' scale searches run
// on many sub-blocks at once, one sub-block per lane, and each super-block is finished by
// the scalar code (kquant_parts.h). A lane does its sub-block's float operations in the
// scalar search's order (values are never summed across lanes) and its branches become
// masks, so the bytes are the scalar codec's on every target, whatever the lane count.

// ggml's nearest_int (quant/rounding.h) on every lane: add 1.5 * 2^23, keep the low bits.
template <class DF, class V>
HWY_INLINE auto NearestInt(DF df, V v) {
  const hn::RebindToSigned<DF> di;
  const auto shifted = hn::BitCast(di, hn::Add(v, hn::Set(df, 12582912.0f)));
  return hn::Sub(hn::And(shifted, hn::Set(di, 0x007fffff)), hn::Set(di, 0x00400000));
}

template <class DI, class V>
HWY_INLINE V ClampInt(DI di, V v, int lo, int hi) {
  return hn::Min(hn::Max(v, hn::Set(di, lo)), hn::Set(di, hi));
}

// Lane buffers: value i of the sub-block in lane k at [i * N + k].
constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(float);
constexpr int kMaxSubBlock = 32;

// codecs' fit_scale_and_min on N sub-blocks of n values (x and weights in lane buffers):
// scale_out / min_out per lane (the min as an amount to subtract), best the codes.
template <bool kAbsoluteError, class DF>
HWY_INLINE void FitScaleAndMinLanes(DF df, const float* HWY_RESTRICT xt, const float* HWY_RESTRICT wt, int n,
                                    const codecs::ScaleMinSearch& s, int32_t* HWY_RESTRICT best,
                                    int32_t* HWY_RESTRICT trial, float* HWY_RESTRICT scale_out,
                                    float* HWY_RESTRICT min_out) {
  const hn::RebindToSigned<DF> di;
  const size_t N = hn::Lanes(df);
  const auto zero = hn::Zero(df);
  const auto x_at = [&](int i) { return hn::Load(df, xt + static_cast<size_t>(i) * N); };
  const auto w_at = [&](int i) { return hn::Load(df, wt + static_cast<size_t>(i) * N); };
  const auto error_of = [](auto diff) {
    if constexpr (kAbsoluteError) return hn::Abs(diff);
    else return hn::Mul(diff, diff);
  };
  const auto code_of = [&](auto iscale, auto x, auto min) {
    return ClampInt(di, NearestInt(df, hn::Mul(iscale, hn::Sub(x, min))), 0, s.nmax);
  };

  auto min = x_at(0), max = min, sum_w = w_at(0);
  auto sum_x = hn::Mul(sum_w, min);
  for (int i = 1; i < n; ++i) {
    const auto x = x_at(i), w = w_at(i);
    min = hn::IfThenElse(hn::Lt(x, min), x, min);
    max = hn::IfThenElse(hn::Gt(x, max), x, max);
    sum_w = hn::Add(sum_w, w);
    sum_x = hn::Add(sum_x, hn::Mul(w, x));
  }
  min = hn::IfThenElse(hn::Gt(min, zero), zero, min);
  const auto flat = hn::Eq(max, min);  // the scalar search stops here: codes 0, scale 0
  const auto flat_min = min;
  const auto iscale = hn::Div(hn::Set(df, static_cast<float>(s.nmax)), hn::Sub(max, min));
  auto scale = hn::Div(hn::Set(df, 1.0f), iscale);
  auto best_error = zero;
  for (int i = 0; i < n; ++i) {
    const auto x = x_at(i);
    const auto code = code_of(iscale, x, min);
    hn::Store(code, di, best + static_cast<size_t>(i) * N);
    const auto diff = hn::Sub(hn::Add(hn::Mul(scale, hn::ConvertTo(df, code)), min), x);
    best_error = hn::Add(best_error, hn::Mul(w_at(i), error_of(diff)));
  }
  for (int step = 0; step <= s.steps; ++step) {
    const float numerator = s.rmin + s.rdelta * static_cast<float>(step) + static_cast<float>(s.nmax);
    // ggml's quirk: once a step wins, the later ones start from its min.
    const auto step_iscale = hn::Div(hn::Set(df, numerator), hn::Sub(max, min));
    auto sum_l = zero, sum_l2 = zero, sum_xl = zero;
    for (int i = 0; i < n; ++i) {
      const auto x = x_at(i);
      const auto code = code_of(step_iscale, x, min);
      hn::Store(code, di, trial + static_cast<size_t>(i) * N);
      const auto l = hn::ConvertTo(df, code);
      const auto wl = hn::Mul(w_at(i), l);
      sum_l = hn::Add(sum_l, wl);
      sum_l2 = hn::Add(sum_l2, hn::Mul(wl, l));
      sum_xl = hn::Add(sum_xl, hn::Mul(wl, x));
    }
    const auto det = hn::Sub(hn::Mul(sum_w, sum_l2), hn::Mul(sum_l, sum_l));
    const auto fitted = hn::Gt(det, zero);
    if (hn::AllFalse(df, fitted)) continue;
    auto this_scale = hn::Div(hn::Sub(hn::Mul(sum_w, sum_xl), hn::Mul(sum_x, sum_l)), det);
    auto this_min = hn::Div(hn::Sub(hn::Mul(sum_l2, sum_x), hn::Mul(sum_l, sum_xl)), det);
    const auto positive_min = hn::Gt(this_min, zero);  // not representable: the scale alone
    this_scale = hn::IfThenElse(positive_min, hn::Div(sum_xl, sum_l2), this_scale);
    this_min = hn::IfThenElse(positive_min, zero, this_min);
    auto error = zero;
    for (int i = 0; i < n; ++i) {
      const auto l = hn::ConvertTo(df, hn::Load(di, trial + static_cast<size_t>(i) * N));
      const auto diff = hn::Sub(hn::Add(hn::Mul(this_scale, l), this_min), x_at(i));
      error = hn::Add(error, hn::Mul(w_at(i), error_of(diff)));
    }
    const auto better = hn::And(fitted, hn::Lt(error, best_error));
    if (hn::AllFalse(df, better)) continue;
    const auto better_i = hn::RebindMask(di, better);
    for (int i = 0; i < n; ++i) {
      int32_t* b = best + static_cast<size_t>(i) * N;
      hn::Store(hn::IfThenElse(better_i, hn::Load(di, trial + static_cast<size_t>(i) * N), hn::Load(di, b)), di, b);
    }
    best_error = hn::IfThenElse(better, error, best_error);
    scale = hn::IfThenElse(better, this_scale, scale);
    min = hn::IfThenElse(better, this_min, min);
  }
  const auto flat_i = hn::RebindMask(di, flat);
  for (int i = 0; i < n; ++i) {
    int32_t* b = best + static_cast<size_t>(i) * N;
    hn::Store(hn::IfThenZeroElse(flat_i, hn::Load(di, b)), di, b);
  }
  hn::StoreU(hn::IfThenZeroElse(flat, scale), df, scale_out);
  hn::StoreU(hn::Neg(hn::IfThenElse(flat, flat_min, min)), df, min_out);
}

// codecs' fit_q6_scale on N sub-blocks of 16: scale_out per lane, best the stored codes.
template <class DF>
HWY_INLINE void FitQ6ScaleLanes(DF df, const float* HWY_RESTRICT xt, int32_t* HWY_RESTRICT best,
                                int32_t* HWY_RESTRICT trial, float* HWY_RESTRICT scale_out) {
  constexpr int n = 16, nmax = 32;
  const hn::RebindToSigned<DF> di;
  const size_t N = hn::Lanes(df);
  const auto zero = hn::Zero(df);
  const auto x_at = [&](int i) { return hn::Load(df, xt + static_cast<size_t>(i) * N); };
  auto value = zero, magnitude = zero;  // signed_extreme: the first on ties
  for (int i = 0; i < n; ++i) {
    const auto x = x_at(i), ax = hn::Abs(x);
    const auto larger = hn::Gt(ax, magnitude);
    value = hn::IfThenElse(larger, x, value);
    magnitude = hn::IfThenElse(larger, ax, magnitude);
  }
  const auto all_zero = hn::Lt(magnitude, hn::Set(df, 1e-15f));  // ggml's GROUP_MAX_EPS
  // The x^2-weighted fit of the codes of iscale; codes stored + nmax into `codes`.
  struct Fit {
    hn::Vec<DF> sumlx, suml2;
  };
  const auto fit = [&](auto iscale, int32_t* codes) {
    Fit f{zero, zero};
    for (int i = 0; i < n; ++i) {
      const auto x = x_at(i);
      const auto code = ClampInt(di, NearestInt(df, hn::Mul(iscale, x)), -nmax, nmax - 1);
      hn::Store(hn::Add(code, hn::Set(di, nmax)), di, codes + static_cast<size_t>(i) * N);
      const auto l = hn::ConvertTo(df, code);
      const auto w = hn::Mul(x, x);
      f.sumlx = hn::Add(f.sumlx, hn::Mul(hn::Mul(w, x), l));
      f.suml2 = hn::Add(f.suml2, hn::Mul(hn::Mul(w, l), l));
    }
    return f;
  };
  const Fit first = fit(hn::Div(hn::Set(df, static_cast<float>(-nmax)), value), best);
  // suml2 != 0 as C compares: true for NaN too.
  auto scale = hn::IfThenElse(hn::Not(hn::Eq(first.suml2, zero)), hn::Div(first.sumlx, first.suml2), zero);
  auto best_fit = hn::Mul(scale, first.sumlx);
  for (int step = -9; step <= 9; ++step) {
    if (step == 0) continue;
    const float numerator = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(step));
    const Fit f = fit(hn::Div(hn::Set(df, numerator), value), trial);
    const auto better =
        hn::And(hn::Gt(f.suml2, zero), hn::Gt(hn::Mul(f.sumlx, f.sumlx), hn::Mul(best_fit, f.suml2)));
    if (hn::AllFalse(df, better)) continue;
    const auto better_i = hn::RebindMask(di, better);
    for (int i = 0; i < n; ++i) {
      int32_t* b = best + static_cast<size_t>(i) * N;
      hn::Store(hn::IfThenElse(better_i, hn::Load(di, trial + static_cast<size_t>(i) * N), hn::Load(di, b)), di, b);
    }
    scale = hn::IfThenElse(better, hn::Div(f.sumlx, f.suml2), scale);
    best_fit = hn::IfThenElse(better, hn::Mul(scale, f.sumlx), best_fit);
  }
  const auto all_zero_i = hn::RebindMask(di, all_zero);
  for (int i = 0; i < n; ++i) {
    int32_t* b = best + static_cast<size_t>(i) * N;
    hn::Store(hn::IfThenZeroElse(all_zero_i, hn::Load(di, b)), di, b);
  }
  hn::StoreU(hn::IfThenZeroElse(all_zero, scale), df, scale_out);
}

// Whether all `count` values are finite. Super-blocks with NaN or infinity go to the
// scalar codec, whose handling of them is ggml's.
template <class DF>
HWY_INLINE bool AllFinite(DF df, const float* x, size_t count) {
  const size_t N = hn::Lanes(df);
  auto ok = hn::FirstN(df, N);
  for (size_t j = 0; j < count; j += N) ok = hn::And(ok, hn::IsFinite(hn::LoadU(df, x + j)));
  return hn::AllTrue(df, ok);
}

// The layout of a k-quant for the lane search: sub-blocks per super-block and their length.
struct KQuantShape {
  int sub_blocks, sub_length;
  size_t block_bytes;
};

// Runs `search(first sub-block, count, scales, mins, codes)` for the sub-blocks of up to
// kBatch super-blocks at a time, then finishes each finite super-block with `finish` and
// the others with `scalar`.
template <class Search, class Finish>
HWY_INLINE void QuantizeKQuantBlocks(const float* in, std::byte* out, int64_t blocks, KQuantShape shape,
                                     const Search& search, const Finish& finish, QuantizeBlocks scalar) {
  constexpr int64_t kBatch = 8;
  const hn::ScalableTag<float> df;
  float scales[kBatch * 16], mins[kBatch * 16];
  uint8_t codes[kBatch * 256];
  for (int64_t first = 0; first < blocks; first += kBatch) {
    const int64_t count = std::min<int64_t>(kBatch, blocks - first);
    const float* x = in + first * 256;
    search(x, static_cast<int>(count) * shape.sub_blocks, scales, mins, codes);
    for (int64_t b = 0; b < count; ++b) {
      std::byte* block = out + static_cast<size_t>(first + b) * shape.block_bytes;
      if (AllFinite(df, x + b * 256, 256))
        finish(x + b * 256, scales + b * shape.sub_blocks, mins + b * shape.sub_blocks, codes + b * 256, block);
      else
        scalar(x + b * 256, block, 1);
    }
  }
}

// The searches of Q2_K (sub-blocks of 16, weights |x|) and Q4_K / Q5_K (of 32, weights
// rms + |x|) over `count` consecutive sub-blocks, N at a time (zeros in the lanes past the
// end: a flat sub-block).
template <bool kAbsoluteError, bool kRmsWeights>
HWY_INLINE void SearchScaleMinLanes(const float* x, int count, int n, const codecs::ScaleMinSearch& s,
                                    float* scales, float* mins, uint8_t* codes) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  HWY_ALIGN float xt[kMaxSubBlock * kMaxLanes], wt[kMaxSubBlock * kMaxLanes];
  HWY_ALIGN int32_t best[kMaxSubBlock * kMaxLanes], trial[kMaxSubBlock * kMaxLanes];
  HWY_ALIGN float scale_lanes[kMaxLanes], min_lanes[kMaxLanes];
  for (int g = 0; g < count; g += static_cast<int>(N)) {
    const int lanes = std::min(static_cast<int>(N), count - g);
    for (int k = 0; k < static_cast<int>(N); ++k)
      for (int i = 0; i < n; ++i) xt[static_cast<size_t>(i) * N + k] = k < lanes ? x[(g + k) * n + i] : 0.0f;
    if constexpr (kRmsWeights) {
      auto sum_x2 = hn::Zero(df);
      for (int i = 0; i < n; ++i) {
        const auto v = hn::Load(df, xt + static_cast<size_t>(i) * N);
        sum_x2 = hn::Add(sum_x2, hn::Mul(v, v));
      }
      const auto rms = hn::Sqrt(hn::Div(sum_x2, hn::Set(df, static_cast<float>(n))));
      for (int i = 0; i < n; ++i)
        hn::Store(hn::Add(rms, hn::Abs(hn::Load(df, xt + static_cast<size_t>(i) * N))), df, wt + static_cast<size_t>(i) * N);
    } else {
      for (int i = 0; i < n; ++i)
        hn::Store(hn::Abs(hn::Load(df, xt + static_cast<size_t>(i) * N)), df, wt + static_cast<size_t>(i) * N);
    }
    FitScaleAndMinLanes<kAbsoluteError>(df, xt, wt, n, s, best, trial, scale_lanes, min_lanes);
    for (int k = 0; k < lanes; ++k) {
      scales[g + k] = scale_lanes[k];
      mins[g + k] = min_lanes[k];
      for (int i = 0; i < n; ++i) codes[(g + k) * n + i] = static_cast<uint8_t>(best[static_cast<size_t>(i) * N + k]);
    }
  }
}

void QuantizeQ2_K(const float* in, std::byte* out, int64_t blocks) {
  const auto search = [](const float* x, int count, float* scales, float* mins, uint8_t* codes) {
    SearchScaleMinLanes<true, false>(x, count, 16, codecs::kQ2KSearch, scales, mins, codes);
  };
  QuantizeKQuantBlocks(in, out, blocks, {16, 16, sizeof(BlockQ2_K)}, search, codecs::finish_q2_K, codecs::quantize_q2_K);
}

void QuantizeQ4_K(const float* in, std::byte* out, int64_t blocks) {
  const auto search = [](const float* x, int count, float* scales, float* mins, uint8_t* codes) {
    SearchScaleMinLanes<false, true>(x, count, 32, codecs::kQ4KSearch, scales, mins, codes);
  };
  QuantizeKQuantBlocks(in, out, blocks, {8, 32, sizeof(BlockQ4_K)}, search, codecs::finish_q4_K, codecs::quantize_q4_K);
}

void QuantizeQ5_K(const float* in, std::byte* out, int64_t blocks) {
  const auto search = [](const float* x, int count, float* scales, float* mins, uint8_t* codes) {
    SearchScaleMinLanes<false, true>(x, count, 32, codecs::kQ5KSearch, scales, mins, codes);
  };
  QuantizeKQuantBlocks(in, out, blocks, {8, 32, sizeof(BlockQ5_K)}, search, codecs::finish_q5_K, codecs::quantize_q5_K);
}

void QuantizeQ6_K(const float* in, std::byte* out, int64_t blocks) {
  const auto search = [](const float* x, int count, float* scales, float*, uint8_t* codes) {
    const hn::ScalableTag<float> df;
    const size_t N = hn::Lanes(df);
    constexpr int n = 16;
    HWY_ALIGN float xt[n * kMaxLanes];
    HWY_ALIGN int32_t best[n * kMaxLanes], trial[n * kMaxLanes];
    HWY_ALIGN float scale_lanes[kMaxLanes];
    for (int g = 0; g < count; g += static_cast<int>(N)) {
      const int lanes = std::min(static_cast<int>(N), count - g);
      for (int k = 0; k < static_cast<int>(N); ++k)
        for (int i = 0; i < n; ++i) xt[static_cast<size_t>(i) * N + k] = k < lanes ? x[(g + k) * n + i] : 0.0f;
      FitQ6ScaleLanes(df, xt, best, trial, scale_lanes);
      for (int k = 0; k < lanes; ++k) {
        scales[g + k] = scale_lanes[k];
        for (int i = 0; i < n; ++i) codes[(g + k) * n + i] = static_cast<uint8_t>(best[static_cast<size_t>(i) * N + k]);
      }
    }
  };
  const auto finish = [](const float* x, const float* scales, const float*, uint8_t* codes, std::byte* block) {
    codecs::finish_q6_K(x, scales, reinterpret_cast<int8_t*>(codes), block);
  };
  QuantizeKQuantBlocks(in, out, blocks, {16, 16, sizeof(BlockQ6_K)}, search, finish, codecs::quantize_q6_K);
}

// bf16 / f16 values to floats, exactly (both widen without rounding).
void WidenToFloat(WeightType type, const std::byte* src, float* out, int64_t count) {
  const hn::ScalableTag<float> df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  int64_t i = 0;
  if (type == WeightType::BF16) {
    const hn::Rebind<hwy::bfloat16_t, decltype(df)> db;
    const auto* p = reinterpret_cast<const hwy::bfloat16_t*>(src);
    for (; i + N <= count; i += N) hn::StoreU(hn::PromoteTo(df, hn::LoadU(db, p + i)), df, out + i);
  } else {
#if HWY_TARGET == HWY_SCALAR || HWY_TARGET == HWY_EMU128
    // Highway's software f16 conversion there turns infinity and NaN into numbers.
    dequantize_values(type, src, out, count);
    return;
#endif
    const hn::Rebind<hwy::float16_t, decltype(df)> dh;
    const auto* p = reinterpret_cast<const hwy::float16_t*>(src);
    for (; i + N <= count; i += N) hn::StoreU(hn::PromoteTo(df, hn::LoadU(dh, p + i)), df, out + i);
  }
  if (i < count) dequantize_values(type, src + i * 2, out + i, count - i);
}

}  // namespace HWY_NAMESPACE
}  // namespace glass::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace glass::simd {

HWY_EXPORT(QuantizeQ8_0);
HWY_EXPORT(QuantizeQ4_0);
HWY_EXPORT(QuantizeQ2_K);
HWY_EXPORT(QuantizeQ4_K);
HWY_EXPORT(QuantizeQ5_K);
HWY_EXPORT(QuantizeQ6_K);
HWY_EXPORT(WidenToFloat);

bool widen_to_float(WeightType type, const std::byte* src, float* out, int64_t count) {
  if (type != WeightType::BF16 && type != WeightType::F16) return false;
  HWY_DYNAMIC_DISPATCH(WidenToFloat)(type, src, out, count);
  return true;
}

bool quantize_blocks(WeightType type, const float* in, std::byte* out, int64_t blocks) {
  if (type == WeightType::Q8_0) {
    HWY_DYNAMIC_DISPATCH(QuantizeQ8_0)(in, out, blocks);
    return true;
  }
  if (type == WeightType::Q4_0) {
    HWY_DYNAMIC_DISPATCH(QuantizeQ4_0)(in, out, blocks);
    return true;
  }
  switch (type) {
    case WeightType::Q2_K: HWY_DYNAMIC_DISPATCH(QuantizeQ2_K)(in, out, blocks); return true;
    case WeightType::Q4_K: HWY_DYNAMIC_DISPATCH(QuantizeQ4_K)(in, out, blocks); return true;
    case WeightType::Q5_K: HWY_DYNAMIC_DISPATCH(QuantizeQ5_K)(in, out, blocks); return true;
    case WeightType::Q6_K: HWY_DYNAMIC_DISPATCH(QuantizeQ6_K)(in, out, blocks); return true;
    default: return false;
  }
}

}  // namespace glass::simd
#endif
