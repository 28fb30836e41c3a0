// glass logits: raw next-token logits for a list of token ids, as float32 little-endian.
#include <bit>
#include <iostream>
#include <memory>

#include "base/error.h"
#include "base/mapped_file.h"
#include "cli/commands.h"
#include "cli/model_session.h"
#include "cli/token_ids.h"
#include "model/decoder_model.h"

namespace glass::cli {

static_assert(std::endian::native == std::endian::little, "logits files are written in host order");

Command add_logits_command(CLI::App& app) {
  struct Options {
    std::string model, ids, out;
    bool all_positions = false;
    RuntimeOptions runtime;
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("logits", "Write the logits for token ids to a float32 file");
  sub->add_option("-m,--model", o->model, "Checkpoint folder, GGUF file, or ORG/NAME[@REVISION] in the Hugging Face cache (default: the built-in demo model)");
  sub->add_option("--ids", o->ids, "Token ids, e.g. \"9707 11 1879\"")->required();
  sub->add_flag("--all-positions", o->all_positions, "Logits at every position, not only the last");
  sub->add_option("--out", o->out, "Output file: float32 little-endian, shape [positions, vocab_size]")->required();
  o->runtime.add_to(sub);

  return {sub, [o] {
            const std::vector<int32_t> ids = parse_token_ids(o->ids, "--ids");
            const ModelSession session(o->model, o->runtime, {.tokenizer = Need::kNo});
            const KVType kv = session.kv_type();
            const DecoderModel& model = session.model();
            const ModelConfig& c = model.config();
            for (int32_t id : ids)
              if (id >= c.vocab_size)
                fail("--ids: token id ", id, " is out of range; the model's vocabulary has ", c.vocab_size, " rows");
            if (static_cast<int64_t>(ids.size()) > c.max_position_embeddings)
              fail("--ids: ", ids.size(), " tokens exceed the model's context of ", c.max_position_embeddings);
            KVCache cache(c, kv, static_cast<int64_t>(ids.size()));
            const int32_t seq = cache.add_sequence();
            std::vector<float> logits;
            model.forward(Batch::prompt(ids, seq, 0, o->all_positions), cache, session.kernels(), logits);
            write_file_atomic(o->out, logits.data(), logits.size() * sizeof(float));
            std::cerr << "glass: wrote logits [" << logits.size() / static_cast<size_t>(c.vocab_size) << ", "
                      << c.vocab_size << "] float32 to " << o->out << "; " << session.summary(&cache) << "\n";
            return 0;
          }};
}

}  // namespace glass::cli
