// NumPy .npy files: the trace dumps tensors as version 1.0, '<f4', C order, and
// `glass compare` reads them back (from glass or from numpy itself, e.g. logits saved
// next to a transformers run). The reader trusts nothing in the header: the magic,
// version, header length, every key of the header dict and the data size are checked
// against the file, and a mismatch is an error naming the file and what is wrong.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace glass {

struct NpyArray {
  std::vector<int64_t> shape;  // empty for a 0-d array
  std::vector<float> data;     // C order
  std::string descr;           // the element type as stored: "<f4", "<f8" or "<f2"

  int64_t numel() const;
};

// The complete file contents for a float32 C-order array. `shape`'s product must
// equal data.size().
std::string encode_npy(const std::vector<int64_t>& shape, std::span<const float> data);

// Writes encode_npy(...) to `path` atomically (no partial file on failure).
void write_npy(const std::string& path, const std::vector<int64_t>& shape, std::span<const float> data);

// Parses a whole .npy file held in memory; `source` names it in errors. Accepts
// versions 1.0-3.0, little-endian float32, float64 and float16 (converted to float32),
// C order (or Fortran order when at most one axis is longer than 1: same layout).
NpyArray decode_npy(std::string_view bytes, const std::string& source);
NpyArray read_npy(const std::string& path);

// Whether `bytes` start with the .npy magic ("\x93NUMPY").
bool has_npy_magic(std::string_view bytes);

// "(5, 896)", "(3,)", "()": a shape as Python writes a tuple.
std::string npy_shape_tuple(const std::vector<int64_t>& shape);

}  // namespace glass
