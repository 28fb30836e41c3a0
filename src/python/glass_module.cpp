// `import glass`: the engine from Python, in transformers' vocabulary where it has a word.
//   model = glass.load(path)                 a folder, a GGUF file, ORG/NAME in the HF
//                                            cache, or None for the built-in demo model
//   model.config                             the model description (a dict)
//   model.tokenizer.encode / decode / apply_chat_template
//   model.logits(ids)                        numpy float32 [n, vocab]; a list of lists is
//                                            a padded batch [b, longest, vocab] and the
//                                            last real position of each row
//   model.forward(ids, cache=None)           (logits, cache): continue a sequence
//   model.trace(ids, layers, stages)         every stage as named arrays, and the logit lens
//   glass.compare(a, b)                      two logit arrays, as `glass compare`
//   model.generate(ids or text, ...)         a GenerateOutput, or with stream=True an
//                                            iterator of GenerationStep
// The model runs with the GIL released, so other Python threads go on; each Model holds
// its own kernels and buffers, and one Model runs one call at a time (a lock), so two
// models can be used from two threads. Engine errors are Python exceptions carrying the
// engine's message: a missing path FileNotFoundError, an unsupported model
// NotImplementedError, anything else the engine refuses ValueError.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "cli/model_session.h"
#include "model/kv_cache.h"
#include "runtime/chat_prompt.h"
#include "runtime/generator.h"
#include "runtime/model_files.h"
#include "sampling/processor_chain.h"
#include "sampling/token_history.h"
#include "trace/logit_compare.h"
#include "trace/trace_recorder.h"

namespace py = pybind11;

namespace glass::python {

namespace {

// A float vector handed to numpy without a copy: the array owns it.
py::array_t<float> to_numpy(std::vector<float>&& values, std::vector<py::ssize_t> shape) {
  auto* owned = new std::vector<float>(std::move(values));
  py::capsule free_when_done(owned, [](void* p) { delete static_cast<std::vector<float>*>(p); });
  return py::array_t<float>(shape, owned->data(), free_when_done);
}

// A Python value as JSON (dicts, lists, strings, numbers, bools, None), for chat messages
// and template variables.
jinja::OrderedJson to_json(const py::handle& v, const std::string& where) {
  if (v.is_none()) return nullptr;
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>();
  if (py::isinstance<py::int_>(v)) return v.cast<int64_t>();
  if (py::isinstance<py::float_>(v)) return v.cast<double>();
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::dict>(v)) {
    jinja::OrderedJson out = jinja::OrderedJson::object();
    for (const auto& [key, value] : v.cast<py::dict>()) {
      if (!py::isinstance<py::str>(key)) throw py::type_error(where + ": dict keys must be strings");
      const std::string k = key.cast<std::string>();
      out[k] = to_json(value, where + "." + k);
    }
    return out;
  }
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    jinja::OrderedJson out = jinja::OrderedJson::array();
    size_t i = 0;
    for (const auto& item : v) out.push_back(to_json(item, str_cat(where, "[", i++, "]")));
    return out;
  }
  throw py::type_error(str_cat(where, ": ", std::string(py::str(v.get_type().attr("__name__"))),
                               " is not a JSON value (dict, list, str, int, float, bool, None)"));
}

py::object to_python(const jinja::OrderedJson& j) { return py::module_::import("json").attr("loads")(j.dump()); }

class Model;

class TokenizerView {
 public:
  explicit TokenizerView(std::shared_ptr<const Model> model) : model_(std::move(model)) {}
  std::vector<int32_t> encode(const std::string& text, bool add_special_tokens) const;
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const;
  py::object apply_chat_template(const py::object& messages, bool add_generation_prompt, bool tokenize,
                                 const py::object& tools, const py::kwargs& kwargs) const;
  size_t vocab_size() const;

 private:
  std::shared_ptr<const Model> model_;
};

// One step of a streamed generation.
struct GenerationStep {
  int32_t token = -1;
  std::string text;
  std::optional<std::string> finish_reason;
  // (id, logit, probability) of the best candidates before and after the processors.
  std::vector<std::tuple<int32_t, float, float>> candidates_before, candidates_after;
  std::vector<std::string> stages;  // each processor, as --show-top names it
};

struct GenerateOutput {
  std::vector<int32_t> prompt_ids, ids;
  std::string text;
  std::string finish_reason;
  uint64_t seed = 0;
  std::optional<py::array_t<float>> logits;  // output_logits: [new tokens, vocab]
  std::optional<py::array_t<float>> scores;  // output_scores: the same after the processors
};

class Model : public std::enable_shared_from_this<Model> {
 public:
  Model(const std::string& path, const cli::RuntimeOptions& runtime)
      : session_(path, runtime, {.tokenizer = cli::Need::kIfPresent, .chat_template = cli::Need::kIfPresent}),
        defaults_(load_generation_defaults(session_.path()).params) {}

  const cli::ModelSession& session() const { return session_; }
  std::mutex& mutex() const { return mutex_; }
  const SamplingParams& defaults() const { return defaults_; }

  py::object config() const { return to_python(session_.config().to_json()); }

  // Logits at every position of `ids`, [n, vocab].
  std::vector<float> all_logits(const std::vector<int32_t>& ids) const {
    check_ids(ids, "ids");
    const ModelConfig& c = session_.config();
    std::vector<float> logits;
    const std::lock_guard<std::mutex> lock(mutex_);
    KVCache cache(c, session_.kv_type(), static_cast<int64_t>(ids.size()));
    const int32_t seq = cache.add_sequence();
    session_.model().forward(Batch::prompt(ids, seq, 0, true), cache, session_.kernels(), logits);
    return logits;
  }

  void check_ids(const std::vector<int32_t>& ids, const char* what) const {
    const ModelConfig& c = session_.config();
    if (ids.empty()) throw py::value_error(str_cat(what, ": no token ids"));
    for (int32_t id : ids)
      if (id < 0 || id >= c.vocab_size)
        throw py::value_error(str_cat(what, ": token id ", id, " is outside the vocabulary of ", c.vocab_size));
    if (static_cast<int64_t>(ids.size()) > c.max_position_embeddings)
      throw py::value_error(str_cat(what, ": ", ids.size(), " tokens exceed the model's context of ", c.max_position_embeddings));
  }

 private:
  cli::ModelSession session_;
  SamplingParams defaults_;
  mutable std::mutex mutex_;
};

// The KV cache of one sequence that forward() continues: positions so far. Its memory is
// reserved for the model's whole context and committed as positions are written.
class Cache {
 public:
  explicit Cache(std::shared_ptr<const Model> model)
      : model_(std::move(model)),
        kv_(std::make_unique<KVCache>(model_->session().config(), model_->session().kv_type(),
                                      model_->session().config().max_position_embeddings)),
        sequence_(kv_->add_sequence()) {}

  const Model* model() const { return model_.get(); }
  int64_t length() const { return length_; }

  // Logits at every position of `ids`, which continue the sequence.
  std::vector<float> forward(const std::vector<int32_t>& ids) {
    model_->check_ids(ids, "ids");
    const int64_t context = model_->session().config().max_position_embeddings;
    if (length_ + static_cast<int64_t>(ids.size()) > context)
      throw py::value_error(str_cat("ids: ", ids.size(), " more tokens after ", length_, " exceed the model's context of ",
                                    context));
    std::vector<float> logits;
    const std::lock_guard<std::mutex> lock(model_->mutex());
    model_->session().model().forward(Batch::prompt(ids, sequence_, static_cast<int32_t>(length_), true), *kv_,
                                      model_->session().kernels(), logits);
    length_ += static_cast<int64_t>(ids.size());
    return logits;
  }

 private:
  std::shared_ptr<const Model> model_;
  std::unique_ptr<KVCache> kv_;
  int32_t sequence_;
  int64_t length_ = 0;
};

std::vector<int32_t> TokenizerView::encode(const std::string& text, bool add_special_tokens) const {
  EncodeOptions options;
  options.add_special_tokens = add_special_tokens;
  return model_->session().tokenizer().encode(text, options);
}

std::string TokenizerView::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  return model_->session().tokenizer().decode(ids, skip_special_tokens);
}

size_t TokenizerView::vocab_size() const { return model_->session().tokenizer().vocab_size(); }

py::object TokenizerView::apply_chat_template(const py::object& messages, bool add_generation_prompt, bool tokenize,
                                              const py::object& tools, const py::kwargs& kwargs) const {
  const jinja::OrderedJson m = to_json(messages, "messages");
  if (!m.is_array()) throw py::type_error("messages: expected a list of {'role', 'content'} dicts");
  const jinja::OrderedJson vars = to_json(kwargs, "kwargs");
  const ChatPrompt prompt = encode_chat(model_->session().chat_template(), model_->session().tokenizer(), m,
                                        tools.is_none() ? jinja::OrderedJson(nullptr) : to_json(tools, "tools"),
                                        add_generation_prompt, vars);
  if (tokenize) return py::cast(prompt.ids);
  return py::cast(prompt.text);
}

// The request a generate() call makes: ids (text is encoded), the model's defaults with
// the call's settings.
struct GenerateArgs {
  std::vector<int32_t> prompt;
  SamplingParams params;
};

GenerateArgs generate_args(const Model& model, const py::object& input, std::optional<int64_t> max_new_tokens,
                           std::optional<bool> do_sample, std::optional<double> temperature,
                           std::optional<int64_t> top_k, std::optional<double> top_p, std::optional<double> min_p,
                           std::optional<double> repetition_penalty, std::optional<int64_t> seed,
                           const std::optional<std::vector<std::string>>& stop,
                           const std::optional<std::map<int64_t, double>>& logit_bias) {
  GenerateArgs a;
  if (py::isinstance<py::str>(input)) {
    a.prompt = model.session().tokenizer().encode(input.cast<std::string>());
  } else {
    a.prompt = input.cast<std::vector<int32_t>>();
  }
  model.check_ids(a.prompt, "input");
  SamplingOverrides o;
  o.do_sample = do_sample;
  o.temperature = temperature;
  o.top_k = top_k;
  o.top_p = top_p;
  o.min_p = min_p;
  o.repetition_penalty = repetition_penalty;
  if (seed) {
    if (*seed < 0) throw py::value_error(str_cat("seed: must be a non-negative integer, got ", *seed));
    o.seed = static_cast<uint64_t>(*seed);
  }
  if (max_new_tokens) {
    if (*max_new_tokens < 1) throw py::value_error(str_cat("max_new_tokens: must be at least 1, got ", *max_new_tokens));
    o.max_new_tokens = max_new_tokens;
  }
  if (stop) o.stop_strings = *stop;
  if (logit_bias) {
    // A map's ids are ascending and distinct; validate() checks the biases' range.
    std::vector<TokenBias> biases;
    for (const auto& [id, bias] : *logit_bias) {
      if (id < 0 || id > std::numeric_limits<int32_t>::max())
        throw py::value_error(str_cat("logit_bias: ", id, " is not a token id"));
      biases.push_back({static_cast<int32_t>(id), static_cast<float>(bias)});
    }
    check_logit_bias_ids(biases, model.session().config().vocab_size, "logit_bias");
    o.logit_bias = std::move(biases);
  }
  a.params = apply_overrides(model.defaults(), o);
  a.params.validate("generate()");
  return a;
}

// One request on a cache and generator of its own: what generate() runs to the end and a
// stream runs step by step. Behind pointers: the generator refers to the cache, and a
// stream's run is moved into its Python object.
struct GenerationRun {
  GenerationRun(const Model& model, GenerateArgs args, size_t show_top) {
    const ModelConfig& c = model.session().config();
    const int64_t positions = std::min<int64_t>(
        c.max_position_embeddings, static_cast<int64_t>(args.prompt.size()) + args.params.max_new_tokens.value_or(c.max_position_embeddings));
    cache = std::make_unique<KVCache>(c, model.session().kv_type(), positions);
    generator = std::make_unique<Generator>(model.session().model(), model.session().kernels(), *cache,
                                            model.session().tokenizer(), c.max_position_embeddings);
    GenerationRequest request;
    request.prompt = std::move(args.prompt);
    request.params = std::move(args.params);
    request.show_top = show_top;
    handle = generator->add(std::move(request));
  }

  std::unique_ptr<KVCache> cache;
  std::unique_ptr<Generator> generator;
  int handle = -1;
};

// A streamed generation: each next() is one step of the model (the GIL released).
class StepIterator {
 public:
  StepIterator(std::shared_ptr<const Model> model, GenerateArgs args, size_t top)
      : model_(std::move(model)), run_(*model_, std::move(args), top) {}

  GenerationStep next() {
    if (done_) throw py::stop_iteration();
    std::optional<GenerationStep> step;
    {
      py::gil_scoped_release release;
      const std::lock_guard<std::mutex> lock(model_->mutex());
      while (!step && !run_.generator->idle()) {
        run_.generator->step([&](const GenerationEvent& e) {
          if (e.handle != run_.handle) return;
          GenerationStep s;
          s.token = e.token;
          s.text = e.text;
          if (e.finish) s.finish_reason = std::string(e.finish->name());
          if (e.trace != nullptr) {
            for (const auto& c : e.trace->top_before) s.candidates_before.emplace_back(c.id, c.logit, c.prob);
            for (const auto& c : e.trace->top_after) s.candidates_after.emplace_back(c.id, c.logit, c.prob);
            for (const auto& st : e.trace->steps) s.stages.push_back(st.setting);
          }
          step = std::move(s);
        });
      }
    }
    if (!step) throw py::stop_iteration();
    if (step->finish_reason) done_ = true;
    return *step;
  }

 private:
  std::shared_ptr<const Model> model_;
  GenerationRun run_;
  bool done_ = false;
};

GenerateOutput generate(const Model& model, GenerateArgs args, bool output_logits, bool output_scores) {
  GenerateOutput out;
  out.prompt_ids = args.prompt;
  const ModelConfig& c = model.session().config();
  {
    py::gil_scoped_release release;
    const std::lock_guard<std::mutex> lock(model.mutex());
    GenerationRun run(model, args, 0);
    while (!run.generator->idle()) run.generator->step([](const GenerationEvent&) {});
    GenerationResult r = *run.generator->take_result(run.handle);
    out.ids = std::move(r.tokens);
    out.text = std::move(r.text);
    out.finish_reason = std::string(r.finish.name());
    out.seed = r.seed;
  }
  if ((output_logits || output_scores) && !out.ids.empty()) {
    // Logits of the positions that chose each new token: one pass over prompt + output.
    std::vector<int32_t> all = out.prompt_ids;
    all.insert(all.end(), out.ids.begin(), out.ids.end() - 1);
    const size_t vocab = static_cast<size_t>(c.vocab_size);
    const size_t first = out.prompt_ids.size() - 1;
    const py::ssize_t rows = static_cast<py::ssize_t>(out.ids.size());
    std::vector<float> chosen, scores;
    {
      py::gil_scoped_release release;
      const std::vector<float> logits = model.all_logits(all);
      chosen.assign(logits.begin() + static_cast<std::ptrdiff_t>(first * vocab), logits.end());
      if (output_scores) {
        // transformers' scores: each row after the processors, with the history the step had.
        scores = chosen;
        const ProcessorChain chain = ProcessorChain::from_params(args.params);
        TokenHistory history(out.prompt_ids);
        const size_t drawable = std::min(vocab, model.session().tokenizer().vocab_size());
        for (size_t i = 0; i < out.ids.size(); ++i) {
          chain.apply(std::span<float>(scores.data() + i * vocab, vocab), history, nullptr, drawable);
          history.add_output(out.ids[i]);
        }
      }
    }
    if (output_scores) out.scores = to_numpy(std::move(scores), {rows, static_cast<py::ssize_t>(vocab)});
    if (output_logits) out.logits = to_numpy(std::move(chosen), {rows, static_cast<py::ssize_t>(vocab)});
  }
  return out;
}

// What model.trace() returns: every traced stage as an array named as `glass trace --dump`
// names its files ("embed", "layer3.q", "final_norm", "logits"), each with its axis names,
// and the logit lens.
struct Trace {
  py::dict tensors;  // name -> numpy array
  py::dict axes;     // name -> tuple of axis names
  py::array_t<float> lens;  // [layers, lens positions, vocab]
  std::vector<int32_t> lens_positions;
};

Trace trace(const Model& model, const std::vector<int32_t>& ids, const std::optional<std::vector<int>>& layers,
            const std::optional<std::vector<std::string>>& stages,
            const std::optional<std::vector<int32_t>>& lens_positions) {
  model.check_ids(ids, "ids");
  const ModelConfig& c = model.session().config();
  const auto n = static_cast<int32_t>(ids.size());
  TraceSelection selection;
  if (layers) {
    for (int l : *layers)
      if (l < 0 || l >= c.num_layers) throw py::value_error(str_cat("layers: ", l, " is not a layer of the ", c.num_layers));
    selection.layers = std::set<int>(layers->begin(), layers->end());
  }
  if (stages) {
    const auto& known = trace_stage_names();
    for (const std::string& st : *stages) {
      if (std::find(known.begin(), known.end(), st) != known.end()) continue;
      std::string names;
      for (const std::string& k : known) names += (names.empty() ? "" : ", ") + k;
      throw py::value_error(str_cat("stages: '", st, "' is not a stage; the stages are ", names));
    }
    selection.stages = std::set<std::string>(stages->begin(), stages->end());
  }
  std::vector<int32_t> lens_at = lens_positions.value_or(std::vector<int32_t>{n - 1});
  for (int32_t& p : lens_at) {
    if (p < 0) p += n;  // -1: the last
    if (p < 0 || p >= n) throw py::value_error(str_cat("lens_positions: ", p, " is not a position of the ", n, " ids"));
  }
  RecorderOptions keep;
  keep.keep_data = true;
  TraceRecorder recorder(selection, keep);
  TraceSelection residual;  // each layer's output at the lens positions
  residual.stages = std::set<std::string>{"output"};
  residual.positions = std::set<int32_t>(lens_at.begin(), lens_at.end());
  TraceRecorder lens_rows(residual, keep);
  TraceFanout fanout;
  fanout.subscribe(&recorder);
  if (!lens_at.empty()) fanout.subscribe(&lens_rows);
  std::vector<float> lens;
  {
    py::gil_scoped_release release;
    const std::lock_guard<std::mutex> lock(model.mutex());
    KVCache cache(c, model.session().kv_type(), n);
    std::vector<float> logits;
    model.session().model().forward(Batch::prompt(ids, cache.add_sequence(), 0, true), cache, model.session().kernels(),
                                    logits, &fanout);
    for (const StageRecord& r : lens_rows.stages()) {
      std::vector<float> row_logits;
      // Rows in position order; the lens keeps the order asked for.
      std::vector<float> x;
      for (int32_t p : lens_at) {
        const auto at = std::find(r.positions.begin(), r.positions.end(), p) - r.positions.begin();
        x.insert(x.end(), r.data.begin() + at * r.row_size(), r.data.begin() + (at + 1) * r.row_size());
      }
      model.session().model().project_to_vocab(x.data(), static_cast<int64_t>(lens_at.size()), model.session().kernels(),
                                               row_logits);
      lens.insert(lens.end(), row_logits.begin(), row_logits.end());
    }
  }
  Trace t;
  for (StageRecord& r : recorder.take_stages()) {
    const std::vector<int64_t> dims = r.shape();
    std::vector<py::ssize_t> shape(dims.begin(), dims.end());
    py::tuple names(r.axes.size());
    for (size_t i = 0; i < r.axes.size(); ++i) names[i] = r.axes[i].name;
    const std::string name = r.name();
    t.axes[py::str(name)] = names;
    t.tensors[py::str(name)] = to_numpy(std::move(r.data), std::move(shape));
  }
  t.lens = to_numpy(std::move(lens), {static_cast<py::ssize_t>(lens_at.empty() ? 0 : lens_rows.stages().size()),
                                      static_cast<py::ssize_t>(lens_at.size()), static_cast<py::ssize_t>(c.vocab_size)});
  t.lens_positions = std::move(lens_at);
  return t;
}

}  // namespace

PYBIND11_MODULE(glass, m) {
  m.doc() = "glass: the Qwen-family inference engine from Python (load, tokenizer, logits, generate)";

  // glass::Error is what the engine refuses: ValueError with its message; the subclasses
  // for a missing file and for what the engine does not implement.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Unsupported& e) {
      PyErr_SetString(PyExc_NotImplementedError, e.what());
    } catch (const Error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });

  py::class_<TokenizerView>(m, "Tokenizer")
      .def("encode", &TokenizerView::encode, py::arg("text"), py::arg("add_special_tokens") = true,
           "Token ids of `text` (special tokens written in it are recognised)")
      .def("decode", &TokenizerView::decode, py::arg("ids"), py::arg("skip_special_tokens") = false)
      .def("apply_chat_template", &TokenizerView::apply_chat_template, py::arg("messages"),
           py::arg("add_generation_prompt") = true, py::arg("tokenize") = false, py::arg("tools") = py::none(),
           "The checkpoint's chat template over `messages` (text, or ids with tokenize=True); extra keyword "
           "arguments are template variables (enable_thinking=False)")
      .def_property_readonly("vocab_size", &TokenizerView::vocab_size);

  py::class_<GenerationStep>(m, "GenerationStep")
      .def_readonly("token", &GenerationStep::token)
      .def_readonly("text", &GenerationStep::text)
      .def_readonly("finish_reason", &GenerationStep::finish_reason)
      .def_readonly("candidates_before", &GenerationStep::candidates_before,
                    "(id, logit, probability) of the best candidates of the raw logits")
      .def_readonly("candidates_after", &GenerationStep::candidates_after,
                    "(id, logit, probability) of the best candidates after every processor: the distribution sampled from")
      .def_readonly("stages", &GenerationStep::stages)
      .def("__repr__", [](const GenerationStep& s) {
        return str_cat("GenerationStep(token=", s.token, ", text=", std::string(py::repr(py::str(s.text))),
                       s.finish_reason ? ", finish_reason=" + *s.finish_reason : "", ")");
      });

  py::class_<Trace>(m, "Trace")
      .def_readonly("tensors", &Trace::tensors, "stage name -> numpy array (the names of glass trace --dump)")
      .def_readonly("axes", &Trace::axes, "stage name -> its axis names")
      .def_readonly("lens", &Trace::lens,
                    "the logit lens: the final norm and lm_head on each layer's output, [layers, lens positions, vocab]")
      .def_readonly("lens_positions", &Trace::lens_positions)
      .def("__getitem__", [](const Trace& t, const std::string& name) -> py::object {
        if (!t.tensors.contains(name)) throw py::key_error(name);
        return t.tensors[py::str(name)];
      })
      .def("__contains__", [](const Trace& t, const std::string& name) { return t.tensors.contains(name); })
      .def("keys", [](const Trace& t) { return t.tensors.attr("keys")(); });

  // For scripts/python-overhead.sh: `calls` of what model.logits(ids) runs, looped in C++
  // in this process (the same thread pool), so its time per call is the baseline of the
  // Python call's. Seconds per call.
  m.def(
      "_logits_loop_seconds",
      [](const Model& model, const std::vector<int32_t>& ids, int64_t calls) {
        if (calls < 1) throw py::value_error("calls: at least 1");
        py::gil_scoped_release release;
        std::vector<float> logits;
        const auto start = std::chrono::steady_clock::now();
        for (int64_t i = 0; i < calls; ++i) logits = model.all_logits(ids);
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / static_cast<double>(calls);
      },
      py::arg("model"), py::arg("ids"), py::arg("calls"));

  m.def(
      "compare",
      [](const py::array_t<float, py::array::c_style | py::array::forcecast>& a,
         const py::array_t<float, py::array::c_style | py::array::forcecast>& b) {
        const auto shape_of = [](const py::array& x) { return std::string(py::str(x.attr("shape"))); };
        bool same = a.ndim() == b.ndim();
        for (py::ssize_t d = 0; same && d < a.ndim(); ++d) same = a.shape(d) == b.shape(d);
        if (!same || a.ndim() < 1 || a.ndim() > 2)
          throw py::value_error(str_cat("compare: a has shape ", shape_of(a), " and b ", shape_of(b),
                                        "; both must have the same shape, [vocab] or [rows, vocab]"));
        const int64_t width = a.shape(a.ndim() - 1);
        if (width == 0) throw py::value_error("compare: empty rows");
        const LogitComparison r = compare_logits({a.data(), static_cast<size_t>(a.size())},
                                                 {b.data(), static_cast<size_t>(b.size())}, width);
        py::dict out;
        out["max_abs_diff"] = r.max_abs_diff;
        out["mean_kl"] = r.mean_kl;
        out["max_kl"] = r.max_kl;
        out["top1_agreement"] = r.top1_agreement;
        py::list rows;
        for (const RowComparison& row : r.rows)
          rows.append(py::dict(py::arg("max_abs_diff") = row.max_abs_diff, py::arg("rel_error") = row.rel_error,
                               py::arg("kl") = row.kl, py::arg("top1_agree") = row.top1_agree,
                               py::arg("top1_a") = row.top1_a, py::arg("top1_b") = row.top1_b));
        out["rows"] = rows;
        return out;
      },
      py::arg("a"), py::arg("b"),
      "Two logit arrays ([vocab] or [rows, vocab]; `a` the reference) compared as glass compare does: max |b - a|, "
      "KL(softmax(a) || softmax(b)) per row, top-1 agreement");

  py::class_<Cache, std::shared_ptr<Cache>>(m, "Cache")
      .def_property_readonly("length", &Cache::length, "positions the cache holds")
      .def("__len__", &Cache::length);

  py::class_<StepIterator>(m, "GenerationStream")
      .def("__iter__", [](StepIterator& it) -> StepIterator& { return it; })
      .def("__next__", &StepIterator::next);

  py::class_<GenerateOutput>(m, "GenerateOutput")
      .def_readonly("prompt_ids", &GenerateOutput::prompt_ids)
      .def_readonly("ids", &GenerateOutput::ids, "the new token ids (an eos token included when it ended the reply)")
      .def_readonly("text", &GenerateOutput::text)
      .def_readonly("finish_reason", &GenerateOutput::finish_reason)
      .def_readonly("seed", &GenerateOutput::seed)
      .def_readonly("logits", &GenerateOutput::logits, "with output_logits=True: float32 [new tokens, vocab]")
      .def_readonly("scores", &GenerateOutput::scores,
                    "with output_scores=True: the logits after the processors (transformers' scores), [new tokens, vocab]")
      .def("__repr__", [](const GenerateOutput& o) {
        return str_cat("GenerateOutput(ids=[", o.ids.size(), " tokens], text=", std::string(py::repr(py::str(o.text))),
                       ", finish_reason=", o.finish_reason, ")");
      });

  py::class_<Model, std::shared_ptr<Model>>(m, "Model")
      .def_property_readonly("config", &Model::config, "the model description (config.json's fields)")
      .def_property_readonly("tokenizer",
                             [](const std::shared_ptr<Model>& self) {
                               (void)self->session().tokenizer();  // fails when the model has none
                               return TokenizerView(self);
                             })
      .def_property_readonly("path", [](const Model& self) { return self.session().path(); })
      .def(
          "logits",
          [](const Model& self, const py::object& ids) -> py::object {
            const bool batch = py::isinstance<py::list>(ids) && py::len(ids) > 0 && py::isinstance<py::list>(ids[py::int_(0)]);
            const auto vocab = static_cast<py::ssize_t>(self.session().config().vocab_size);
            if (!batch) {
              const auto row = ids.cast<std::vector<int32_t>>();
              std::vector<float> logits;
              {
                py::gil_scoped_release release;
                logits = self.all_logits(row);
              }
              return to_numpy(std::move(logits), {static_cast<py::ssize_t>(row.size()), vocab});
            }
            // A padded batch: each row alone (the kernels are batch-invariant, so this is
            // what a batch gives), zeros past a row's end, and each row's last position.
            const auto rows = ids.cast<std::vector<std::vector<int32_t>>>();
            size_t longest = 0;
            for (const auto& r : rows) longest = std::max(longest, r.size());
            std::vector<float> out(rows.size() * longest * static_cast<size_t>(vocab), 0.0f);
            std::vector<int64_t> last(rows.size());
            {
              py::gil_scoped_release release;
              for (size_t i = 0; i < rows.size(); ++i) {
                const std::vector<float> l = self.all_logits(rows[i]);
                std::copy(l.begin(), l.end(), out.begin() + static_cast<std::ptrdiff_t>(i * longest * static_cast<size_t>(vocab)));
                last[i] = static_cast<int64_t>(rows[i].size()) - 1;
              }
            }
            return py::make_tuple(to_numpy(std::move(out), {static_cast<py::ssize_t>(rows.size()),
                                                            static_cast<py::ssize_t>(longest), vocab}),
                                  py::cast(last));
          },
          py::arg("ids"),
          "float32 logits at every position of `ids`: [n, vocab]. A list of lists is a padded batch: "
          "([batch, longest, vocab], the last real position of each row)")
      .def(
          "forward",
          [](const std::shared_ptr<Model>& self, const std::vector<int32_t>& ids, std::shared_ptr<Cache> cache) {
            if (!cache) cache = std::make_shared<Cache>(self);
            if (cache->model() != self.get()) throw py::value_error("cache: it belongs to another model");
            std::vector<float> logits;
            {
              py::gil_scoped_release release;
              logits = cache->forward(ids);
            }
            const auto vocab = static_cast<py::ssize_t>(self->session().config().vocab_size);
            return py::make_tuple(to_numpy(std::move(logits), {static_cast<py::ssize_t>(ids.size()), vocab}), cache);
          },
          py::arg("ids"), py::arg("cache") = py::none(),
          "(logits [len(ids), vocab], cache): `ids` after what `cache` holds (a new cache when None); pass the cache "
          "back to continue")
      .def(
          "trace",
          [](const Model& self, const std::vector<int32_t>& ids, std::optional<std::vector<int>> layers,
             std::optional<std::vector<std::string>> stages, std::optional<std::vector<int32_t>> lens_positions) {
            return trace(self, ids, layers, stages, lens_positions);
          },
          py::arg("ids"), py::kw_only(), py::arg("layers") = py::none(), py::arg("stages") = py::none(),
          py::arg("lens_positions") = py::none(),
          "One forward pass over `ids` with every stage (or `stages`, at `layers`) kept as numpy arrays, and the "
          "logit lens at `lens_positions` (default: the last; -1 counts from the end)")
      .def(
          "generate",
          [](const std::shared_ptr<Model>& self, const py::object& input, std::optional<int64_t> max_new_tokens,
             std::optional<bool> do_sample, std::optional<double> temperature, std::optional<int64_t> top_k,
             std::optional<double> top_p, std::optional<double> min_p, std::optional<double> repetition_penalty,
             std::optional<int64_t> seed, std::optional<std::vector<std::string>> stop,
             std::optional<std::map<int64_t, double>> logit_bias, bool stream, size_t top, bool output_logits,
             bool output_scores) -> py::object {
            GenerateArgs args = generate_args(*self, input, max_new_tokens, do_sample, temperature, top_k, top_p,
                                              min_p, repetition_penalty, seed, stop, logit_bias);
            if (stream) {
              if (output_logits || output_scores)
                throw py::value_error("output_logits, output_scores: not with stream=True (each step has its candidates)");
              return py::cast(StepIterator(self, std::move(args), top));
            }
            return py::cast(generate(*self, std::move(args), output_logits, output_scores));
          },
          py::arg("input"), py::kw_only(), py::arg("max_new_tokens") = py::none(), py::arg("do_sample") = py::none(),
          py::arg("temperature") = py::none(), py::arg("top_k") = py::none(), py::arg("top_p") = py::none(),
          py::arg("min_p") = py::none(), py::arg("repetition_penalty") = py::none(), py::arg("seed") = py::none(),
          py::arg("stop") = py::none(), py::arg("logit_bias") = py::none(), py::arg("stream") = false, py::arg("top") = 5,
          py::arg("output_logits") = false, py::arg("output_scores") = false,
          "Generate from token ids or text with the checkpoint's generation_config.json defaults and these "
          "settings (logit_bias: {token id: bias in [-100, 100]}, added to the logits first, as OpenAI's); "
          "stream=True gives an iterator of GenerationStep, each with the `top` candidates before and after the "
          "processors");

  m.def(
      "load",
      [](const std::optional<std::string>& path, const std::optional<std::string>& weight_type,
         const std::optional<std::string>& kv_type, std::optional<int> threads, const std::string& backend,
         const std::string& matmul_precision) {
        const std::string where = path.value_or("");
        cli::RuntimeOptions runtime;
        runtime.kernels = backend;
        if (threads) {
          if (*threads < 0) throw py::value_error(str_cat("threads: must be 0 (all cores) or more, got ", *threads));
          runtime.threads = *threads;
        }
        if (weight_type) runtime.weight_type = *weight_type;
        if (kv_type) runtime.kv_type = *kv_type;
        runtime.matmul_precision = matmul_precision;
        runtime.quiet = true;
        try {
          py::gil_scoped_release release;
          return std::make_shared<Model>(where, runtime);
        } catch (const Unsupported&) {
          throw;
        } catch (const Error& e) {
          // The runtime options' messages name the CLI's flags; here they are arguments.
          std::string message = e.what();
          for (const auto& [flag, argument] : {std::pair{"--kernels", "backend"}, {"--weight-type", "weight_type"},
                                               {"--kv-type", "kv_type"}, {"--threads", "threads"},
                                               {"--matmul-precision", "matmul_precision"}})
            if (message.starts_with(flag)) message = argument + message.substr(std::string_view(flag).size());
          // A path (or ORG/NAME) that is not there: FileNotFoundError, with the engine's
          // message (which says where it looked).
          const bool missing = !where.empty() && !std::filesystem::exists(where);
          PyErr_SetString(missing ? PyExc_FileNotFoundError : PyExc_ValueError, message.c_str());
          throw py::error_already_set();
        }
      },
      py::arg("path") = py::none(), py::kw_only(), py::arg("weight_type") = py::none(), py::arg("kv_type") = py::none(),
      py::arg("threads") = py::none(), py::arg("backend") = "cpu", py::arg("matmul_precision") = "float",
      "Load a model: a checkpoint folder, a GGUF file, ORG/NAME in the Hugging Face cache, or None for the built-in "
      "demo model. weight_type converts at load (q8_0, q4_0, f16, ...), kv_type is the KV cache's (f32, f16, bf16); "
      "matmul_precision='bf16' rounds the activations of bf16 weights' matmuls to bf16 (llama.cpp's and "
      "transformers-in-bfloat16's numerics, about twice the prefill speed on AVX512-BF16 CPUs), 'float' keeps them.");
}

}  // namespace glass::python
