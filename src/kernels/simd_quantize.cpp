// Conversion at load, vectorized: q8_0 and q4_0 quantization giving the bytes of quant's
// scalar codecs (llama.cpp's reference quantizers) bit for bit, and bf16 / f16 widened to
// floats, at the speed a 7B load needs. Compiled once per CPU
// target by Highway's foreach_target and dispatched at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/simd_quantize.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"

#include <cmath>
#include <cstring>

#include "base/half.h"
#include "kernels/simd_kernels.h"
#include "quant/blocks.h"
#include "quant/codecs.h"
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
  return false;
}

}  // namespace glass::simd
#endif
