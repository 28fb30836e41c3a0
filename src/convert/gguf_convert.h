// glass convert: a Hugging Face folder (or a GGUF file, to requantize it) written as a GGUF
// file that llama.cpp loads: the metadata llama.cpp's convert_hf_to_gguf.py writes (model
// keys, tokenizer.ggml.*, the chat template, general.sampling.*), llama.cpp's tensor names
// and dimension order, and each tensor in the type a llama-quantize preset gives it,
// quantized by the same reference algorithms (byte-identical, docs/formats.md).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "quant/weight_type.h"

namespace glass {

struct ConvertProgress {
  size_t tensor = 0;   // tensors written so far
  size_t tensors = 0;  // in all
  std::string name;    // the one being written
  WeightType type = WeightType::F32;
};

struct ConvertOptions {
  std::string type = "Q8_0";  // a preset: quant_preset_names()
  bool pure = false;          // every quantizable tensor in the preset's base type
  int threads = 0;            // 0: every CPU
  std::function<void(const ConvertProgress&)> progress;  // before each tensor
};

struct ConvertedTensor {
  std::string name;  // llama.cpp's
  WeightType type;
  bool fell_back;  // the preset's choice did not fit the rows (llama-quantize's fallback)
  size_t bytes;
};

struct ConvertReport {
  std::vector<ConvertedTensor> tensors;
  size_t bytes = 0;    // tensor data
  int64_t values = 0;  // stored values (parameters)
};

// Converts `model_path` into `out_path` (written atomically: an error leaves nothing there).
// Throws glass::Error naming the option, file, tensor or key at fault.
ConvertReport convert_to_gguf(const std::string& model_path, const std::string& out_path, const ConvertOptions& options);

}  // namespace glass
