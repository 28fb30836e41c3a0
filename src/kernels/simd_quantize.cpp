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

// ---- The k-quants (Q2_K to Q6_K): the reference quantizers' scale searches run
// on many sub-blocks at once, one sub-block per lane, and each super-block is finished by
// the scalar code (kquant_parts.h). A lane does its sub-block's float operations in the
// scalar search's order (values are never summed across lanes) and its branches become
// masks, so the bytes are the scalar codec's on every target, whatever the lane count.
// The searches' sums are chains of dependent adds; kGroups vectors of sub-blocks go through
// each loop together so that the chains overlap.

// ggml's nearest_int (quant/rounding.h) on every lane: add 1.5 * 2^23, keep the low bits.
template <class DF, class V>
HWY_INLINE auto NearestInt(DF df, V v) {
  const hn::RebindToSigned<DF> di;
  const auto shifted = hn::BitCast(di, hn::Add(v, hn::Set(df, 12582912.0f)));
  return hn::Sub(hn::And(shifted, hn::Set(di, 0x007fffff)), hn::Set(di, 0x00400000));
}

// clamp_int(nearest_int(v), lo, hi) as a float.
template <class DF, class V>
HWY_INLINE V RoundedCode(DF df, V v, int lo, int hi) {
  const hn::RebindToSigned<DF> di;
  return hn::ConvertTo(df, hn::Min(hn::Max(NearestInt(df, v), hn::Set(di, lo)), hn::Set(di, hi)));
}

// Lane buffers: value i of the sub-block in lane k of group g at [(i * kGroups + g) * N + k].
constexpr int kGroups = 2;
constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(float);
constexpr size_t kMaxSubBlock = 32;
constexpr size_t kLaneBuffer = kMaxSubBlock * kGroups * kMaxLanes;

template <class DF>
HWY_INLINE size_t LaneIndex(DF df, int i, int g) {
  return (static_cast<size_t>(i) * kGroups + static_cast<size_t>(g)) * hn::Lanes(df);
}

// codecs' fit_scale_and_min on kGroups * N sub-blocks of n values (x and weights in lane
// buffers): scale_out / min_out per lane (the min as an amount to subtract), and in `best`
// the codes as floats.
template <bool kAbsoluteError, class DF>
HWY_INLINE void FitScaleAndMinLanes(DF df, const float* HWY_RESTRICT xt, const float* HWY_RESTRICT wt, int n,
                                    const codecs::ScaleMinSearch& s, float* HWY_RESTRICT best,
                                    float* HWY_RESTRICT trial, float* HWY_RESTRICT scale_out,
                                    float* HWY_RESTRICT min_out) {
  using V = hn::Vec<DF>;
  using M = hn::Mask<DF>;
  const size_t N = hn::Lanes(df);
  const V zero = hn::Zero(df);
  const auto x_at = [&](int i, int g) { return hn::Load(df, xt + LaneIndex(df, i, g)); };
  const auto w_at = [&](int i, int g) { return hn::Load(df, wt + LaneIndex(df, i, g)); };
  const auto error_of = [](V diff) {
    if constexpr (kAbsoluteError) return hn::Abs(diff);
    else return hn::Mul(diff, diff);
  };
  const auto code_of = [&](V iscale, V x, V min) { return RoundedCode(df, hn::Mul(iscale, hn::Sub(x, min)), 0, s.nmax); };

  V min[kGroups], max[kGroups], sum_w[kGroups], sum_x[kGroups], scale[kGroups], best_error[kGroups];
  M flat[kGroups];
  V flat_min[kGroups];
  for (int g = 0; g < kGroups; ++g) {
    min[g] = max[g] = x_at(0, g);
    sum_w[g] = w_at(0, g);
    sum_x[g] = hn::Mul(sum_w[g], min[g]);
  }
  for (int i = 1; i < n; ++i) {
    for (int g = 0; g < kGroups; ++g) {
      const V x = x_at(i, g), w = w_at(i, g);
      min[g] = hn::IfThenElse(hn::Lt(x, min[g]), x, min[g]);
      max[g] = hn::IfThenElse(hn::Gt(x, max[g]), x, max[g]);
      sum_w[g] = hn::Add(sum_w[g], w);
      sum_x[g] = hn::Add(sum_x[g], hn::Mul(w, x));
    }
  }
  V iscale[kGroups];
  for (int g = 0; g < kGroups; ++g) {
    min[g] = hn::IfThenElse(hn::Gt(min[g], zero), zero, min[g]);
    flat[g] = hn::Eq(max[g], min[g]);  // the scalar search stops here: codes 0, scale 0
    flat_min[g] = min[g];
    iscale[g] = hn::Div(hn::Set(df, static_cast<float>(s.nmax)), hn::Sub(max[g], min[g]));
    scale[g] = hn::Div(hn::Set(df, 1.0f), iscale[g]);
    best_error[g] = zero;
  }
  for (int i = 0; i < n; ++i) {
    for (int g = 0; g < kGroups; ++g) {
      const V x = x_at(i, g);
      const V l = code_of(iscale[g], x, min[g]);
      hn::Store(l, df, best + LaneIndex(df, i, g));
      const V diff = hn::Sub(hn::Add(hn::Mul(scale[g], l), min[g]), x);
      best_error[g] = hn::Add(best_error[g], hn::Mul(w_at(i, g), error_of(diff)));
    }
  }
  for (int step = 0; step <= s.steps; ++step) {
    const float numerator = s.rmin + s.rdelta * static_cast<float>(step) + static_cast<float>(s.nmax);
    V step_iscale[kGroups], sum_l[kGroups], sum_l2[kGroups], sum_xl[kGroups];
    for (int g = 0; g < kGroups; ++g) {
      // ggml's quirk: once a step wins, the later ones start from its min.
      step_iscale[g] = hn::Div(hn::Set(df, numerator), hn::Sub(max[g], min[g]));
      sum_l[g] = sum_l2[g] = sum_xl[g] = zero;
    }
    for (int i = 0; i < n; ++i) {
      for (int g = 0; g < kGroups; ++g) {
        const V x = x_at(i, g);
        const V l = code_of(step_iscale[g], x, min[g]);
        hn::Store(l, df, trial + LaneIndex(df, i, g));
        const V wl = hn::Mul(w_at(i, g), l);
        sum_l[g] = hn::Add(sum_l[g], wl);
        sum_l2[g] = hn::Add(sum_l2[g], hn::Mul(wl, l));
        sum_xl[g] = hn::Add(sum_xl[g], hn::Mul(wl, x));
      }
    }
    M fitted[kGroups];
    V this_scale[kGroups], this_min[kGroups], error[kGroups];
    bool any_fitted = false;
    for (int g = 0; g < kGroups; ++g) {
      const V det = hn::Sub(hn::Mul(sum_w[g], sum_l2[g]), hn::Mul(sum_l[g], sum_l[g]));
      fitted[g] = hn::Gt(det, zero);
      any_fitted = any_fitted || !hn::AllFalse(df, fitted[g]);
      this_scale[g] = hn::Div(hn::Sub(hn::Mul(sum_w[g], sum_xl[g]), hn::Mul(sum_x[g], sum_l[g])), det);
      this_min[g] = hn::Div(hn::Sub(hn::Mul(sum_l2[g], sum_x[g]), hn::Mul(sum_l[g], sum_xl[g])), det);
      const M positive_min = hn::Gt(this_min[g], zero);  // not representable: the scale alone
      this_scale[g] = hn::IfThenElse(positive_min, hn::Div(sum_xl[g], sum_l2[g]), this_scale[g]);
      this_min[g] = hn::IfThenElse(positive_min, zero, this_min[g]);
      error[g] = zero;
    }
    if (!any_fitted) continue;
    for (int i = 0; i < n; ++i) {
      for (int g = 0; g < kGroups; ++g) {
        const V l = hn::Load(df, trial + LaneIndex(df, i, g));
        const V diff = hn::Sub(hn::Add(hn::Mul(this_scale[g], l), this_min[g]), x_at(i, g));
        error[g] = hn::Add(error[g], hn::Mul(w_at(i, g), error_of(diff)));
      }
    }
    for (int g = 0; g < kGroups; ++g) {
      const M better = hn::And(fitted[g], hn::Lt(error[g], best_error[g]));
      if (hn::AllFalse(df, better)) continue;
      for (int i = 0; i < n; ++i) {
        float* b = best + LaneIndex(df, i, g);
        hn::Store(hn::IfThenElse(better, hn::Load(df, trial + LaneIndex(df, i, g)), hn::Load(df, b)), df, b);
      }
      best_error[g] = hn::IfThenElse(better, error[g], best_error[g]);
      scale[g] = hn::IfThenElse(better, this_scale[g], scale[g]);
      min[g] = hn::IfThenElse(better, this_min[g], min[g]);
    }
  }
  for (int g = 0; g < kGroups; ++g) {
    for (int i = 0; i < n; ++i) {
      float* b = best + LaneIndex(df, i, g);
      hn::Store(hn::IfThenZeroElse(flat[g], hn::Load(df, b)), df, b);
    }
    hn::StoreU(hn::IfThenZeroElse(flat[g], scale[g]), df, scale_out + static_cast<size_t>(g) * N);
    hn::StoreU(hn::Neg(hn::IfThenElse(flat[g], flat_min[g], min[g])), df, min_out + static_cast<size_t>(g) * N);
  }
}

// codecs' fit_q6_scale on kGroups * N sub-blocks of 16: scale_out per lane, and in `best`
// the stored codes (code + 32) as floats.
template <class DF>
HWY_INLINE void FitQ6ScaleLanes(DF df, const float* HWY_RESTRICT xt, float* HWY_RESTRICT best,
                                float* HWY_RESTRICT trial, float* HWY_RESTRICT scale_out) {
  using V = hn::Vec<DF>;
  using M = hn::Mask<DF>;
  constexpr int n = 16, nmax = 32;
  const size_t N = hn::Lanes(df);
  const V zero = hn::Zero(df), offset = hn::Set(df, static_cast<float>(nmax));
  const auto x_at = [&](int i, int g) { return hn::Load(df, xt + LaneIndex(df, i, g)); };
  V value[kGroups], magnitude[kGroups];  // signed_extreme: the first on ties
  for (int g = 0; g < kGroups; ++g) value[g] = magnitude[g] = zero;
  for (int i = 0; i < n; ++i) {
    for (int g = 0; g < kGroups; ++g) {
      const V x = x_at(i, g), ax = hn::Abs(x);
      const M larger = hn::Gt(ax, magnitude[g]);
      value[g] = hn::IfThenElse(larger, x, value[g]);
      magnitude[g] = hn::IfThenElse(larger, ax, magnitude[g]);
    }
  }
  // The x^2-weighted fits of the codes of iscale[g]; codes stored + nmax into `codes`.
  const auto fit = [&](const V* iscale, float* codes, V* sumlx, V* suml2) {
    for (int g = 0; g < kGroups; ++g) sumlx[g] = suml2[g] = zero;
    for (int i = 0; i < n; ++i) {
      for (int g = 0; g < kGroups; ++g) {
        const V x = x_at(i, g);
        const V l = RoundedCode(df, hn::Mul(iscale[g], x), -nmax, nmax - 1);
        hn::Store(hn::Add(l, offset), df, codes + LaneIndex(df, i, g));
        const V w = hn::Mul(x, x);
        sumlx[g] = hn::Add(sumlx[g], hn::Mul(hn::Mul(w, x), l));
        suml2[g] = hn::Add(suml2[g], hn::Mul(hn::Mul(w, l), l));
      }
    }
  };
  V iscale[kGroups], sumlx[kGroups], suml2[kGroups], scale[kGroups], best_fit[kGroups];
  for (int g = 0; g < kGroups; ++g) iscale[g] = hn::Div(hn::Set(df, static_cast<float>(-nmax)), value[g]);
  fit(iscale, best, sumlx, suml2);
  for (int g = 0; g < kGroups; ++g) {
    // suml2 != 0 as C compares: true for NaN too.
    scale[g] = hn::IfThenElse(hn::Not(hn::Eq(suml2[g], zero)), hn::Div(sumlx[g], suml2[g]), zero);
    best_fit[g] = hn::Mul(scale[g], sumlx[g]);
  }
  for (int step = -9; step <= 9; ++step) {
    if (step == 0) continue;
    const float numerator = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(step));
    for (int g = 0; g < kGroups; ++g) iscale[g] = hn::Div(hn::Set(df, numerator), value[g]);
    fit(iscale, trial, sumlx, suml2);
    for (int g = 0; g < kGroups; ++g) {
      const M better = hn::And(hn::Gt(suml2[g], zero),
                               hn::Gt(hn::Mul(sumlx[g], sumlx[g]), hn::Mul(best_fit[g], suml2[g])));
      if (hn::AllFalse(df, better)) continue;
      for (int i = 0; i < n; ++i) {
        float* b = best + LaneIndex(df, i, g);
        hn::Store(hn::IfThenElse(better, hn::Load(df, trial + LaneIndex(df, i, g)), hn::Load(df, b)), df, b);
      }
      scale[g] = hn::IfThenElse(better, hn::Div(sumlx[g], suml2[g]), scale[g]);
      best_fit[g] = hn::IfThenElse(better, hn::Mul(scale[g], sumlx[g]), best_fit[g]);
    }
  }
  for (int g = 0; g < kGroups; ++g) {
    const M all_zero = hn::Lt(magnitude[g], hn::Set(df, 1e-15f));  // ggml's GROUP_MAX_EPS
    for (int i = 0; i < n; ++i) {
      float* b = best + LaneIndex(df, i, g);
      hn::Store(hn::IfThenZeroElse(all_zero, hn::Load(df, b)), df, b);
    }
    hn::StoreU(hn::IfThenZeroElse(all_zero, scale[g]), df, scale_out + static_cast<size_t>(g) * N);
  }
}

// codecs' fit_q3_scale on kGroups * N sub-blocks of 16: the scale mapping the extreme
// onto -4, then up to 5 passes that move single codes where that improves the x^2-weighted
// fit. A lane whose pass changed nothing stops, as the scalar loop breaks. scale_out per
// lane, and in `best` the stored codes (code + 4) as floats.
template <class DF>
HWY_INLINE void FitQ3ScaleLanes(DF df, const float* HWY_RESTRICT xt, float* HWY_RESTRICT best,
                                float* HWY_RESTRICT scale_out) {
  using V = hn::Vec<DF>;
  using M = hn::Mask<DF>;
  constexpr int n = 16, nmax = 4;
  const size_t N = hn::Lanes(df);
  const V zero = hn::Zero(df);
  const auto x_at = [&](int i, int g) { return hn::Load(df, xt + LaneIndex(df, i, g)); };
  V value[kGroups], magnitude[kGroups], sumlx[kGroups], suml2[kGroups];
  M active[kGroups];
  for (int g = 0; g < kGroups; ++g) value[g] = magnitude[g] = sumlx[g] = suml2[g] = zero;
  for (int i = 0; i < n; ++i) {
    for (int g = 0; g < kGroups; ++g) {
      const V x = x_at(i, g), ax = hn::Abs(x);
      const M larger = hn::Gt(ax, magnitude[g]);
      value[g] = hn::IfThenElse(larger, x, value[g]);
      magnitude[g] = hn::IfThenElse(larger, ax, magnitude[g]);
    }
  }
  for (int g = 0; g < kGroups; ++g) {
    const V iscale = hn::Div(hn::Set(df, static_cast<float>(-nmax)), value[g]);
    for (int i = 0; i < n; ++i) {
      const V x = x_at(i, g);
      const V l = RoundedCode(df, hn::Mul(iscale, x), -nmax, nmax - 1);
      hn::Store(l, df, best + LaneIndex(df, i, g));
      const V w = hn::Mul(x, x);
      sumlx[g] = hn::Add(sumlx[g], hn::Mul(hn::Mul(w, x), l));
      suml2[g] = hn::Add(suml2[g], hn::Mul(hn::Mul(w, l), l));
    }
    active[g] = hn::FirstN(df, N);
  }
  for (int pass = 0; pass < 5; ++pass) {
    bool any_changed = false;
    for (int g = 0; g < kGroups; ++g) {
      if (hn::AllFalse(df, active[g])) continue;
      M changed = hn::FirstN(df, 0);
      for (int i = 0; i < n; ++i) {
        float* code = best + LaneIndex(df, i, g);
        const V x = x_at(i, g), w = hn::Mul(x, x), wx = hn::Mul(w, x);
        const V old_l = hn::Load(df, code);
        V slx = hn::Sub(sumlx[g], hn::Mul(wx, old_l));  // the sums without value i
        V sl2 = hn::Sub(suml2[g], hn::Mul(hn::Mul(w, old_l), old_l));
        const V new_l = RoundedCode(df, hn::Div(hn::Mul(x, sl2), slx), -nmax, nmax - 1);
        const M moves = hn::And(hn::And(active[g], hn::Gt(slx, zero)), hn::Not(hn::Eq(new_l, old_l)));
        slx = hn::Add(slx, hn::Mul(wx, new_l));
        sl2 = hn::Add(sl2, hn::Mul(hn::Mul(w, new_l), new_l));
        const M better = hn::And(moves, hn::And(hn::Gt(sl2, zero), hn::Gt(hn::Mul(hn::Mul(slx, slx), suml2[g]),
                                                                          hn::Mul(hn::Mul(sumlx[g], sumlx[g]), sl2))));
        hn::Store(hn::IfThenElse(better, new_l, old_l), df, code);
        sumlx[g] = hn::IfThenElse(better, slx, sumlx[g]);
        suml2[g] = hn::IfThenElse(better, sl2, suml2[g]);
        changed = hn::Or(changed, better);
      }
      active[g] = hn::And(active[g], changed);
      any_changed = any_changed || !hn::AllFalse(df, active[g]);
    }
    if (!any_changed) break;
  }
  const V offset = hn::Set(df, static_cast<float>(nmax));
  for (int g = 0; g < kGroups; ++g) {
    const M all_zero = hn::Lt(magnitude[g], hn::Set(df, 1e-15f));  // ggml's GROUP_MAX_EPS
    for (int i = 0; i < n; ++i) {
      float* b = best + LaneIndex(df, i, g);
      hn::Store(hn::IfThenZeroElse(all_zero, hn::Add(hn::Load(df, b), offset)), df, b);
    }
    const V scale = hn::IfThenElse(hn::Gt(suml2[g], zero), hn::Div(sumlx[g], suml2[g]), zero);
    hn::StoreU(hn::IfThenZeroElse(all_zero, scale), df, scale_out + static_cast<size_t>(g) * N);
  }
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

// `count` consecutive sub-blocks of n values into lane buffers for the searches, a
// kGroups * N batch at a time, and their codes back: run(xt, codes_t, scales, mins) fills
// the batch's scales and mins (kGroups * N each) and codes_t. Lanes past the end hold
// zeros (a flat sub-block) and are dropped.
template <class DF, class Run>
HWY_INLINE void ForLaneBatches(DF df, const float* x, int count, int n, float* scales, float* mins, uint8_t* codes,
                               const Run& run) {
  const int lanes = static_cast<int>(hn::Lanes(df)) * kGroups;
  HWY_ALIGN float xt[kLaneBuffer], codes_t[kLaneBuffer];
  HWY_ALIGN float scale_lanes[kGroups * kMaxLanes], min_lanes[kGroups * kMaxLanes];
  const auto at = [&](int i, int lane) { return LaneIndex(df, i, 0) + static_cast<size_t>(lane); };
  for (int first = 0; first < count; first += lanes) {
    const int used = std::min(lanes, count - first);
    for (int lane = 0; lane < lanes; ++lane)
      for (int i = 0; i < n; ++i) xt[at(i, lane)] = lane < used ? x[(first + lane) * n + i] : 0.0f;
    run(xt, codes_t, scale_lanes, min_lanes);
    for (int lane = 0; lane < used; ++lane) {
      scales[first + lane] = scale_lanes[lane];
      if (mins != nullptr) mins[first + lane] = min_lanes[lane];
      for (int i = 0; i < n; ++i) codes[(first + lane) * n + i] = static_cast<uint8_t>(codes_t[at(i, lane)]);
    }
  }
}

// The searches of Q2_K (sub-blocks of 16, weights |x|) and Q4_K / Q5_K (of 32, weights
// rms + |x|) over `count` consecutive sub-blocks.
template <bool kAbsoluteError, bool kRmsWeights>
HWY_INLINE void SearchScaleMinLanes(const float* x, int count, int n, const codecs::ScaleMinSearch& s,
                                    float* scales, float* mins, uint8_t* codes) {
  const hn::ScalableTag<float> df;
  const auto run = [&](const float* xt, float* codes_t, float* scale_lanes, float* min_lanes) {
    HWY_ALIGN float wt[kLaneBuffer], trial[kLaneBuffer];
    for (int g = 0; g < kGroups; ++g) {
      auto rms = hn::Zero(df);
      if constexpr (kRmsWeights) {
        auto sum_x2 = hn::Zero(df);
        for (int i = 0; i < n; ++i) {
          const auto v = hn::Load(df, xt + LaneIndex(df, i, g));
          sum_x2 = hn::Add(sum_x2, hn::Mul(v, v));
        }
        rms = hn::Sqrt(hn::Div(sum_x2, hn::Set(df, static_cast<float>(n))));
      }
      for (int i = 0; i < n; ++i) {
        const auto ax = hn::Abs(hn::Load(df, xt + LaneIndex(df, i, g)));
        hn::Store(kRmsWeights ? hn::Add(rms, ax) : ax, df, wt + LaneIndex(df, i, g));
      }
    }
    FitScaleAndMinLanes<kAbsoluteError>(df, xt, wt, n, s, codes_t, trial, scale_lanes, min_lanes);
  };
  ForLaneBatches(df, x, count, n, scales, mins, codes, run);
}

void SearchQ3ScaleLanes(const float* x, int count, float* scales, float*, uint8_t* codes) {
  const hn::ScalableTag<float> df;
  const auto run = [&](const float* xt, float* codes_t, float* scale_lanes, float*) {
    FitQ3ScaleLanes(df, xt, codes_t, scale_lanes);
  };
  ForLaneBatches(df, x, count, 16, scales, nullptr, codes, run);
}

void SearchQ6ScaleLanes(const float* x, int count, float* scales, float*, uint8_t* codes) {
  const hn::ScalableTag<float> df;
  const auto run = [&](const float* xt, float* codes_t, float* scale_lanes, float*) {
    HWY_ALIGN float trial[kLaneBuffer];
    FitQ6ScaleLanes(df, xt, codes_t, trial, scale_lanes);
  };
  ForLaneBatches(df, x, count, 16, scales, nullptr, codes, run);
}

// The layout of a k-quant for the lane search: sub-blocks per super-block, block bytes.
struct KQuantShape {
  int sub_blocks;
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

// The types with a min: Q2_K (sub-blocks of 16, absolute error, weights |x|) and Q4_K /
// Q5_K (of 32, squared error, weights rms + |x|).
template <bool kAbsoluteError, bool kRmsWeights, class Finish>
HWY_INLINE void QuantizeScaleMinBlocks(const float* in, std::byte* out, int64_t blocks, int sub_length,
                                       const codecs::ScaleMinSearch& s, KQuantShape shape, const Finish& finish,
                                       QuantizeBlocks scalar) {
  const auto search = [&](const float* x, int count, float* scales, float* mins, uint8_t* codes) {
    SearchScaleMinLanes<kAbsoluteError, kRmsWeights>(x, count, sub_length, s, scales, mins, codes);
  };
  QuantizeKQuantBlocks(in, out, blocks, shape, search, finish, scalar);
}

// The finish of a type with signed codes (Q3_K, Q6_K) in QuantizeKQuantBlocks's signature.
template <void (*kFinish)(const float*, const float*, int8_t*, std::byte*)>
void FinishSigned(const float* x, const float* scales, const float*, uint8_t* codes, std::byte* block) {
  kFinish(x, scales, reinterpret_cast<int8_t*>(codes), block);
}

void QuantizeQ2_K(const float* in, std::byte* out, int64_t blocks) {
  QuantizeScaleMinBlocks<true, false>(in, out, blocks, 16, codecs::kQ2KSearch, {16, sizeof(BlockQ2_K)},
                                      codecs::finish_q2_K, codecs::quantize_q2_K);
}
void QuantizeQ3_K(const float* in, std::byte* out, int64_t blocks) {
  QuantizeKQuantBlocks(in, out, blocks, {16, sizeof(BlockQ3_K)}, SearchQ3ScaleLanes, FinishSigned<codecs::finish_q3_K>,
                       codecs::quantize_q3_K);
}
void QuantizeQ4_K(const float* in, std::byte* out, int64_t blocks) {
  QuantizeScaleMinBlocks<false, true>(in, out, blocks, 32, codecs::kQ4KSearch, {8, sizeof(BlockQ4_K)},
                                      codecs::finish_q4_K, codecs::quantize_q4_K);
}
void QuantizeQ5_K(const float* in, std::byte* out, int64_t blocks) {
  QuantizeScaleMinBlocks<false, true>(in, out, blocks, 32, codecs::kQ5KSearch, {8, sizeof(BlockQ5_K)},
                                      codecs::finish_q5_K, codecs::quantize_q5_K);
}
void QuantizeQ6_K(const float* in, std::byte* out, int64_t blocks) {
  QuantizeKQuantBlocks(in, out, blocks, {16, sizeof(BlockQ6_K)}, SearchQ6ScaleLanes, FinishSigned<codecs::finish_q6_K>,
                       codecs::quantize_q6_K);
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

// Floats rounded to bf16 and widened back, bit for bit f32_to_bf16_flushed: RNE on the bits,
// NaNs made quiet, zeros and denormals to a zero of their sign.
void RoundToBf16(const float* in, float* out, int64_t count) {
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du;  // the arithmetic (wraps)
  const hn::RebindToSigned<decltype(df)> di;    // the comparison: both sides are below 2^31
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const auto high = hn::Set(du, 0xffff0000u), exponent = hn::Set(du, 0x7f800000u);
  int64_t i = 0;
  for (; i + N <= count; i += N) {
    const auto u = hn::BitCast(du, hn::LoadU(df, in + i));
    const auto bias = hn::Add(hn::Set(du, 0x7fffu), hn::And(hn::ShiftRight<16>(u), hn::Set(du, 1u)));
    const auto rounded = hn::And(hn::Add(u, bias), high);
    const auto quiet = hn::And(hn::Or(u, hn::Set(du, 0x00400000u)), high);
    const auto nan = hn::Gt(hn::BitCast(di, hn::And(u, hn::Set(du, 0x7fffffffu))), hn::BitCast(di, exponent));
    auto r = hn::IfThenElse(hn::RebindMask(du, nan), quiet, rounded);
    r = hn::IfThenElse(hn::Eq(hn::And(u, exponent), hn::Zero(du)), hn::And(u, hn::Set(du, 0x80000000u)), r);
    hn::StoreU(hn::BitCast(df, r), df, out + i);
  }
  for (; i < count; ++i) out[i] = bf16_to_f32(f32_to_bf16_flushed(in[i]));
}

}  // namespace HWY_NAMESPACE
}  // namespace glass::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace glass::simd {

HWY_EXPORT(QuantizeQ8_0);
HWY_EXPORT(QuantizeQ4_0);
HWY_EXPORT(QuantizeQ2_K);
HWY_EXPORT(QuantizeQ3_K);
HWY_EXPORT(QuantizeQ4_K);
HWY_EXPORT(QuantizeQ5_K);
HWY_EXPORT(QuantizeQ6_K);
HWY_EXPORT(WidenToFloat);
HWY_EXPORT(RoundToBf16);

void round_to_bf16(const float* in, float* out, int64_t count) { HWY_DYNAMIC_DISPATCH(RoundToBf16)(in, out, count); }

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
    case WeightType::Q3_K: HWY_DYNAMIC_DISPATCH(QuantizeQ3_K)(in, out, blocks); return true;
    case WeightType::Q4_K: HWY_DYNAMIC_DISPATCH(QuantizeQ4_K)(in, out, blocks); return true;
    case WeightType::Q5_K: HWY_DYNAMIC_DISPATCH(QuantizeQ5_K)(in, out, blocks); return true;
    case WeightType::Q6_K: HWY_DYNAMIC_DISPATCH(QuantizeQ6_K)(in, out, blocks); return true;
    default: return false;
  }
}

}  // namespace glass::simd
#endif
