// What every command that runs the model does first, in one place: find the model
// (-m folder, GGUF, ORG/NAME in the Hugging Face cache, or the demo), start the kernels,
// load the weights with a progress bar on a terminal, and the tokenizer and chat template
// the command needs; then report load time and peak memory the same way everywhere. A
// new model source or runtime flag is added here once.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "chat/chat_template.h"
#include "cli/runtime_options.h"
#include "kernels/backend.h"
#include "model/decoder_model.h"
#include "tokenizer/tokenizer.h"

namespace glass::cli {

enum class Need {
  kNo,         // not loaded
  kIfPresent,  // loaded when the model has it; its absence is not an error
  kYes,        // loaded; its absence or a bad file is an error
};

struct SessionNeeds {
  Need tokenizer = Need::kYes;
  Need chat_template = Need::kNo;
};

class ModelSession {
 public:
  // `model_flag`: the -m value ("" for the demo model).
  ModelSession(const std::string& model_flag, const RuntimeOptions& runtime, SessionNeeds needs);

  // The local folder or GGUF file the model came from.
  const std::string& path() const { return path_; }
  KVType kv_type() const { return kv_; }
  Backend& backend() const { return *backend_; }
  Kernels& kernels() const { return backend_->kernels(); }
  const DecoderModel& model() const { return *model_; }
  const ModelConfig& config() const { return model_->config(); }

  // The tokenizer; fails when it was not loaded.
  const Tokenizer& tokenizer() const;
  const Tokenizer* tokenizer_if_loaded() const { return tokenizer_ ? &*tokenizer_ : nullptr; }
  // The chat template; fails (with the reason it is missing) when it was not loaded.
  const ChatTemplate& chat_template() const;
  const ChatTemplate* chat_template_if_loaded() const { return chat_template_.get(); }
  // Why an optional (Need::kIfPresent) chat template is missing; "" when it loaded.
  const std::string& chat_template_error() const { return chat_template_error_; }

  // Seconds from the start of loading (tokenizer, template, weights) to the end.
  double load_seconds() const { return load_seconds_; }
  // "loaded in 1.23 s; peak memory 612 MiB; cpu (AVX-512, 2 threads)", peak memory as of now.
  // "loaded in 1.23 s; peak memory 4.1 GiB (weights 3.9 GiB, KV cache 24.0 MiB, other
  // 190 MiB); <kernels>": the peak resident memory and its parts, the weights computed with
  // and the KV cache's committed blocks (`cache`, when the command has one); other is the
  // rest of the peak (activations, tokenizer, buffers).
  std::string summary(const KVCache* cache = nullptr) const;

 private:
  std::string path_;
  KVType kv_;
  std::unique_ptr<Backend> backend_;
  std::optional<Tokenizer> tokenizer_;
  std::unique_ptr<ChatTemplate> chat_template_;
  std::string chat_template_error_;
  std::optional<DecoderModel> model_;
  double load_seconds_ = 0;
};

}  // namespace glass::cli
