// A GGUF file as a model description: the ModelConfig that its metadata and tensor shapes
// describe, and where each weight lives (the GGUF names of the decoder's tensors).
#pragma once

#include "io/gguf.h"
#include "io/model_config.h"

namespace glass {

// general.architecture "qwen2", "qwen3" or "qwen3moe" and its <arch>.* keys, as llama.cpp's
// converter writes them for Qwen2ForCausalLM, Qwen3ForCausalLM and Qwen3MoeForCausalLM.
// What GGUF leaves out is taken from the tensors (vocabulary rows, tied output, q/k/v
// biases) or from what llama.cpp assumes (head_dim = embedding / heads when
// attention.key_length is absent; for qwen3moe every layer sparse and the chosen experts'
// weights renormalised). Errors name the file and the key; other architectures are
// refused (glass::Unsupported).
ModelConfig model_config_from_gguf(const GgufSet& gguf);

}  // namespace glass
