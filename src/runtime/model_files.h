// What a model brings besides its weights, from either form `-m` accepts: a Hugging Face
// folder (tokenizer.json, tokenizer_config.json, generation_config.json) or a GGUF file
// (any part of a split set), whose metadata holds the same things under tokenizer.ggml.*,
// tokenizer.chat_template and general.sampling.*.
#pragma once

#include <string>

#include "chat/chat_template.h"
#include "sampling/sampling_params.h"
#include "tokenizer/tokenizer.h"

namespace glass {

// The tokenizer: Tokenizer::load on a folder; from tokenizer.ggml.* for a GGUF file.
Tokenizer load_model_tokenizer(const std::string& model_path);

// Whether the model has a tokenizer at all (a folder may hold weights only).
bool model_has_tokenizer(const std::string& model_path);

// The chat template: ChatTemplate::from_checkpoint on a folder. For a GGUF file,
// tokenizer.chat_template (or tokenizer.chat_template.<name> for `template_name`), with
// the special tokens named by tokenizer.ggml.{bos,eos,padding,unknown}_token_id.
ChatTemplate load_model_chat_template(const std::string& model_path, const std::string& template_name = "");

// Generation defaults before any flag or request overrides them.
struct GenerationDefaults {
  SamplingParams params;
  std::string source;  // the file they were read from, for error messages
  // Set where the model states no defaults of its own, or states some glass does not
  // apply: one line saying what is used instead (commands print it on stderr).
  std::string note;
};

// A folder: generation_config.json (transformers' defaults without one), eos ids from
// config.json when it lists none. A GGUF file: general.sampling.{temp,top_k,top_p,min_p,
// penalty_repeat} (sampling on when any is present and temp is not 0; greedy, as
// transformers' defaults, when none is), eos ids tokenizer.ggml.eos_token_id and the
// vocabulary's end-of-turn control tokens (<|im_end|>, <|endoftext|>, as llama.cpp
// treats them).
GenerationDefaults load_generation_defaults(const std::string& model_path);

}  // namespace glass
