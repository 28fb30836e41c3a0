#include "cli/model_session.h"

#include <chrono>

#include "base/error.h"
#include "cli/model_source.h"
#include "cli/progress.h"
#include "model/kv_cache.h"
#include "runtime/model_files.h"

namespace glass::cli {

ModelSession::ModelSession(const std::string& model_flag, const RuntimeOptions& runtime, SessionNeeds needs)
    : path_(resolve_model_dir(model_flag)), kv_(runtime.kv()) {
  LoadOptions load = runtime.load_options();  // checks --weight-type before anything loads
  backend_ = runtime.backend();
  const auto start = std::chrono::steady_clock::now();
  if (needs.tokenizer == Need::kYes || (needs.tokenizer == Need::kIfPresent && model_has_tokenizer(path_)))
    tokenizer_ = load_model_tokenizer(path_);
  if (needs.chat_template == Need::kYes) {
    chat_template_ = std::make_unique<ChatTemplate>(load_model_chat_template(path_));
  } else if (needs.chat_template == Need::kIfPresent) {
    try {
      chat_template_ = std::make_unique<ChatTemplate>(load_model_chat_template(path_));
    } catch (const Error& e) {
      chat_template_error_ = e.what();
    }
  }
  ProgressBar bar(load.weight_type ? str_cat("converting to ", weight_type_name(*load.weight_type)) : "loading",
                  progress_wanted(runtime.quiet));
  if (bar.enabled())
    load.progress = [&bar](size_t done, size_t total) {
      bar.update(static_cast<double>(done), static_cast<double>(total),
                 str_cat(format_bytes(static_cast<double>(done)), " of ", format_bytes(static_cast<double>(total))));
    };
  model_.emplace(DecoderModel::load(path_, load));
  bar.clear();
  load_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

const Tokenizer& ModelSession::tokenizer() const {
  if (!tokenizer_) fail(path_, ": no tokenizer was loaded");
  return *tokenizer_;
}

const ChatTemplate& ModelSession::chat_template() const {
  if (!chat_template_)
    fail(chat_template_error_.empty() ? str_cat(path_, ": no chat template was loaded") : chat_template_error_);
  return *chat_template_;
}

std::string ModelSession::summary(const KVCache* cache) const {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.2f", load_seconds_);
  const size_t weights = model_ ? model_->matrix_bytes() : 0;
  const std::optional<size_t> kv = cache ? std::optional<size_t>(cache->committed_bytes()) : std::nullopt;
  return str_cat("loaded in ", seconds, " s; peak memory ", peak_memory_text(peak_rss_bytes(), weights, kv), "; ",
                 backend_->description());
}

}  // namespace glass::cli
