// The AMX tile unit in plain C++: eight tile registers of up to 16 rows of 64 bytes, the
// palette-1 configuration, and the instructions glass's tile kernels use, as Intel's
// Software Developer's Manual defines them. The kernels in amx_kernels.cpp are written
// against a tile unit type; with this one they run (slowly) on any CPU that has the AVX-512
// subsets around the tiles, so their layouts, tile configurations and loops are tested on
// machines without AMX. What the CPU would fault on (#UD: a tile instruction without a
// configuration, a tile used unconfigured, shapes that do not chain) throws here, naming the
// instruction and the tiles.
//
// Arithmetic. tdpbssd: exact int32 dot products of signed bytes, wrapping as the CPU does,
// so results are the hardware's bit for bit. tdpbf16ps: each pair of bf16 products added to
// the fp32 accumulator in the manual's order (products of bf16 values are exact in fp32),
// denormal inputs read as zero and denormal results flushed to zero; the CPU adds in an order
// of its own, so emulated and hardware bf16 results may differ in the last bits.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "base/error.h"
#include "base/half.h"
#include "kernels/amx_kernels.h"

namespace glass::amx {

class EmulatedTiles {
 public:
  // ldtilecfg: palette 1, every tile's rows (at most 16) and bytes per row (at most 64, a
  // multiple of 4 where rows are set); tiles with 0 rows or bytes are unconfigured. Zeroes
  // every tile, as the instruction does.
  void config(const TileConfig* c) {
    if (c->palette != 1) fail("emulated ldtilecfg: palette ", int{c->palette}, ", only palette 1 is emulated");
    if (c->start_row != 0) fail("emulated ldtilecfg: start_row ", int{c->start_row}, ", 0 expected");
    for (int t = 0; t < kTiles; ++t) {
      if (c->rows[t] > 16 || c->colsb[t] > 64 || (c->rows[t] != 0) != (c->colsb[t] != 0))
        fail("emulated ldtilecfg: tile ", t, " configured as ", int{c->rows[t]}, " rows of ", c->colsb[t],
             " bytes (rows 1-16 and bytes 1-64, or both 0)");
      rows_[t] = c->rows[t];
      colsb_[t] = c->colsb[t];
    }
    std::memset(data_, 0, sizeof data_);
    configured_ = true;
  }
  // tilerelease: back to the initial state (no configuration).
  void release() {
    configured_ = false;
    std::memset(data_, 0, sizeof data_);
  }

  template <int T>
  void zero() {
    check("tilezero", T);
    std::memset(data_[T], 0, sizeof data_[T]);
  }
  // tileloadd: the tile's rows, each its configured bytes from base + row * stride; the rest
  // of every row, and the rows past the configured ones, zero.
  template <int T>
  void load(const void* base, int64_t stride) {
    check("tileloadd", T);
    std::memset(data_[T], 0, sizeof data_[T]);
    for (int r = 0; r < rows_[T]; ++r)
      std::memcpy(data_[T][r], static_cast<const std::byte*>(base) + r * stride, colsb_[T]);
  }
  // tilestored: the configured rows and bytes of the tile.
  template <int T>
  void store(void* base, int64_t stride) const {
    check("tilestored", T);
    for (int r = 0; r < rows_[T]; ++r) std::memcpy(static_cast<std::byte*>(base) + r * stride, data_[T][r], colsb_[T]);
  }

  // tdpbf16ps C += A B: A's rows are pairs of bf16 (k), B's rows hold, per fp32 column n of
  // C, a pair of bf16 of row k.
  template <int C, int A, int B>
  void dpbf16ps() {
    check_product("tdpbf16ps", C, A, B);
    for (int m = 0; m < rows_[C]; ++m) {
      float acc[16];
      std::memcpy(acc, data_[C][m], sizeof acc);
      for (int k = 0; k < colsb_[A] / 4; ++k) {
        const float a0 = bf16_daz(A, m, 2 * k), a1 = bf16_daz(A, m, 2 * k + 1);
        for (int n = 0; n < colsb_[C] / 4; ++n) {
          acc[n] = ftz(acc[n] + a0 * bf16_daz(B, k, 2 * n));
          acc[n] = ftz(acc[n] + a1 * bf16_daz(B, k, 2 * n + 1));
        }
      }
      std::memcpy(data_[C][m], acc, static_cast<size_t>(colsb_[C]));
    }
  }
  // tdpbssd C += A B: quads of signed bytes, int32 sums wrapping around.
  template <int C, int A, int B>
  void dpbssd() {
    check_product("tdpbssd", C, A, B);
    for (int m = 0; m < rows_[C]; ++m) {
      uint32_t acc[16];
      std::memcpy(acc, data_[C][m], sizeof acc);
      for (int k = 0; k < colsb_[A] / 4; ++k)
        for (int n = 0; n < colsb_[C] / 4; ++n) {
          int32_t dot = 0;
          for (int i = 0; i < 4; ++i)
            dot += static_cast<int32_t>(static_cast<int8_t>(data_[A][m][4 * k + i])) *
                   static_cast<int32_t>(static_cast<int8_t>(data_[B][k][4 * n + i]));
          acc[n] += static_cast<uint32_t>(dot);
        }
      std::memcpy(data_[C][m], acc, static_cast<size_t>(colsb_[C]));
    }
  }

 private:
  static constexpr int kTiles = 8;

  void check(const char* instruction, int t) const {
    if (!configured_) fail("emulated ", instruction, " tmm", t, ": no tile configuration loaded (#UD)");
    if (rows_[t] == 0) fail("emulated ", instruction, " tmm", t, ": the tile is not configured (#UD)");
  }
  // The manual's #UD conditions of the dot-product instructions.
  void check_product(const char* instruction, int c, int a, int b) const {
    check(instruction, c);
    check(instruction, a);
    check(instruction, b);
    if (c == a || c == b || a == b) fail("emulated ", instruction, ": tiles ", c, ", ", a, ", ", b, " must differ (#UD)");
    if (colsb_[c] % 4 != 0 || colsb_[a] % 4 != 0 || colsb_[b] % 4 != 0 || rows_[c] != rows_[a] ||
        colsb_[a] / 4 != rows_[b] || colsb_[c] != colsb_[b])
      fail("emulated ", instruction, " tmm", c, ", tmm", a, ", tmm", b, ": shapes ", int{rows_[c]}, "x", colsb_[c], " += ",
           int{rows_[a]}, "x", colsb_[a], " * ", int{rows_[b]}, "x", colsb_[b],
           " bytes do not chain (C rows = A rows, A bytes / 4 = B rows, C bytes = B bytes; #UD)");
  }
  float bf16_daz(int t, int row, int index) const {
    uint16_t h;
    std::memcpy(&h, data_[t][row] + 2 * index, 2);
    if ((h & 0x7f80u) == 0) h &= 0x8000u;  // a denormal input reads as a zero of its sign
    return bf16_to_f32(h);
  }
  static float ftz(float f) {
    const uint32_t u = std::bit_cast<uint32_t>(f);
    return (u & 0x7f800000u) == 0 ? std::bit_cast<float>(u & 0x80000000u) : f;
  }

  bool configured_ = false;
  uint8_t rows_[kTiles] = {};
  uint16_t colsb_[kTiles] = {};
  alignas(64) unsigned char data_[kTiles][16][64] = {};
};

}  // namespace glass::amx
