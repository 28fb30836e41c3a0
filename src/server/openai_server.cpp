#include "server/openai_server.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <span>

#include "runtime/chat_prompt.h"
#include "runtime/reasoning.h"
#include "server/api_error.h"
#include "server/completion_id.h"
#include "server/completion_request.h"
#include "server/grammar_cache.h"
#include "server/http_front.h"
#include "server/openai_response.h"
#include "server/output_format.h"
#include "server/response_store.h"
#include "server/responses_request.h"
#include "server/request_log.h"
#include "server/serving_metrics.h"
#include "server/tokenize_endpoints.h"
#include "server/inspect_endpoint.h"
#include "server/web_page.h"

namespace glass::server {

namespace {

// How long a stream may stay silent before it sends an SSE comment (which also tells
// whether the client is still there).
constexpr std::chrono::milliseconds kHeartbeat{1000};
// How often a non-streamed request looks at its connection while nothing arrives (it
// also looks after every token).
constexpr std::chrono::milliseconds kClientCheck{100};

HttpLimits limits_of(const ServerOptions& o) {
  HttpLimits l;
  l.header_timeout = o.header_timeout;
  l.request_timeout = o.request_timeout;
  l.keep_alive_timeout = o.keep_alive_timeout;
  l.max_connections = o.max_connections;
  l.max_body_bytes = o.max_body_bytes;
  l.listen_backlog = o.listen_backlog;
  return l;
}

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status();
  res.set_content(dump_json(e.body()), "application/json");
}

HttpAccess access_of(const ServerOptions& o) {
  HttpAccess a{HostPolicy::make(o.host, o.allowed_hosts), CorsPolicy::make(o.cors_origins), std::nullopt, {"/health"}};
  // The page itself holds nothing secret and must load to ask for the key.
  if (o.webui)
    for (std::string& path : web_page_paths()) a.open_paths.push_back(std::move(path));
  if (o.api_key) a.api_key = ApiKey::make(*o.api_key, "ServerOptions::api_key");
  return a;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

struct OpenAIServer::Impl {
  Scheduler& scheduler;
  ServedModel model;
  ServerOptions options;
  RequestLog request_log;
  ServingMetrics metrics;
  GrammarCache grammars;  // compiled constraints (response_format, grammar), by their GBNF
  ResponseStore responses;  // for /v1/responses with store
  HttpFront http;  // after what its handlers use: its connections end first
  int64_t started_at = std::time(nullptr);
  CompletionIds ids;  // of completions, responses, their items and tool calls
  ToolCallFormat tool_call_format;

  Impl(Scheduler& s, ServedModel m, ServerOptions o)
      : scheduler(s),
        model(std::move(m)),
        options(std::move(o)),
        request_log(options.log_format, options.log_requests),
        metrics(model.id, [this] { return scheduler.stats(); }),
        responses(options.responses_store),
        http(limits_of(options), access_of(options), [this](const RequestLogEntry& e) { request_log.write(e); }) {
    if (model.tokenizer == nullptr) fail("the server needs a tokenizer");
    tool_call_format = model.tool_call_format ? *model.tool_call_format
                       : model.chat_template  ? tool_call_format_of(*model.chat_template)
                                              : ToolCallFormat::none;
    http.set_tcp_nodelay(true);  // each token is a small write; do not let Nagle hold it
    routes();
  }

  // A request answered with an error before it ran.
  void log_refusal(const httplib::Request& req, const ApiError& e, const std::string& request_id = "",
                   std::optional<double> seconds = std::nullopt) const {
    RequestLogEntry entry;
    entry.method = req.method;
    entry.path = req.path;
    entry.status = e.status();
    entry.request_id = request_id;
    entry.error = e.what();
    entry.seconds = seconds;
    request_log.write(entry);
  }

  // GET /props (llama.cpp's name): what a client such as the web UI needs to know
  // before its first request.
  OJson props_json() const {
    const SamplingParams& d = model.defaults;
    const ModelConfig& c = scheduler.model_config();
    auto optional = [](const auto& v) { return v ? OJson(*v) : OJson(nullptr); };
    return {{"model", model.id},
            {"context_length", scheduler.context_length()},
            {"chat_template", model.chat_template != nullptr},
            {"inspect", options.inspect},
            {"default_generation_settings",
             {{"temperature", d.sampling() ? d.temperature : 0.0},
              {"top_k", d.top_k},
              {"top_p", d.top_p},
              {"min_p", d.min_p},
              {"repetition_penalty", d.repetition_penalty},
              {"presence_penalty", d.presence_penalty},
              {"frequency_penalty", d.frequency_penalty},
              {"max_tokens", optional(d.max_new_tokens)},
              {"seed", optional(d.seed)},
              {"chain_order", std::string(chain_order_name(d.chain_order))}}},
            {"architecture",
             {{"layers", c.num_layers},
              {"heads", c.num_heads},
              {"kv_heads", c.num_kv_heads},
              {"experts", c.num_experts},
              {"experts_per_token", c.num_experts_per_tok},
              {"vocab_size", c.vocab_size}}}};
  }

  // POST /inspect: the step runs on the scheduler thread (the model and kernels run one
  // pass at a time) between two batch passes.
  void inspect(const httplib::Request& req, httplib::Response& res) {
    const auto arrival = std::chrono::steady_clock::now();
    try {
      if (!options.inspect)
        throw not_found("The inspection API is off on this server (glass serve --no-inspect)", std::nullopt,
                        "inspect_disabled");
      InspectRequest r = parse_inspect_request(req.body, model, scheduler.context_length());
      r.options.tokenizer_vocab = model.tokenizer->vocab_size();
      const Tokenizer& tokenizer = *model.tokenizer;
      const TokenText text = token_text_of(tokenizer);
      StepInspection step;
      std::future<void> done;
      try {
        // The handler waits for the job, so the references it takes outlive it.
        // In the served cache: the generation that wrote the reply left its blocks there.
        done = scheduler.run_on_model([&](const DecoderModel& m, Kernels& k, KVCache& cache) {
          step = inspect_step(m, k, r.tokens, r.prompt_tokens, r.token, r.sampling, r.options, text, &cache);
        });
        done.get();
      } catch (const Unavailable& e) {
        throw ApiError(503, e.what(), "server_error", std::nullopt, "server_busy");
      }
      res.set_content(dump_json(inspection_json(step, r, text)), "application/json");
    } catch (const ApiError& e) {
      log_refusal(req, e, "", seconds_since(arrival));
      send_error(res, e);
    }
  }

  OJson model_json() const {
    return {{"id", model.id}, {"object", "model"}, {"created", started_at}, {"owned_by", "glass"},
            {"max_model_len", scheduler.context_length()}};
  }

  void routes() {
    http.get("/health", [this](const httplib::Request&, httplib::Response& res) {
      const SchedulerStats s = scheduler.stats();
      const OJson j = {{"status", "ok"},
                       {"model", model.id},
                       {"context_length", scheduler.context_length()},
                       {"running", s.running},
                       {"waiting", s.waiting},
                       {"max_running", s.max_running},
                       {"max_waiting", s.max_waiting},
                       {"peak_running", s.peak_running},
                       {"kv_blocks_total", s.kv_blocks_total},
                       {"kv_blocks_free", s.kv_blocks_free},
                       {"kv_blocks_cached", s.kv_blocks_cached},
                       {"kv_blocks_evicted", s.kv_blocks_evicted},
                       {"kv_blocks_reserved", s.kv_blocks_reserved},
                       {"prefix_cache_queries", s.prefix_cache_queries},
                       {"prefix_cache_hits", s.prefix_cache_hits},
                       {"forward_passes", s.forward_passes},
                       {"completed", s.completed},
                       {"cancelled", s.cancelled},
                       {"rejected", s.rejected}};
      res.set_content(dump_json(j), "application/json");
    });
    http.get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(dump_json({{"object", "list"}, {"data", OJson::array({model_json()})}}), "application/json");
    });
    http.get(R"(/v1/models/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
      if (req.matches[1] != model.id)
        return send_error(res, not_found(str_cat("The model '", req.matches[1].str(), "' does not exist; this server serves '",
                                                 model.id, "'"),
                                         "model", "model_not_found"));
      res.set_content(dump_json(model_json()), "application/json");
    });
    http.post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      complete(req, res, Endpoint::chat_completions);
    });
    http.post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
      complete(req, res, Endpoint::completions);
    });
    http.post("/v1/responses", [this](const httplib::Request& req, httplib::Response& res) { respond(req, res); });
    http.get(R"(/v1/responses/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
      if (auto stored = stored_response(req, res)) res.set_content(dump_json(stored->response), "application/json");
    });
    http.get(R"(/v1/responses/([^/]+)/input_items)", [this](const httplib::Request& req, httplib::Response& res) {
      auto stored = stored_response(req, res);
      if (!stored) return;
      try {
        res.set_content(dump_json(input_items_page(stored->input_items, req)), "application/json");
      } catch (const ApiError& e) {
        send_error(res, e);
      }
    });
    http.del(R"(/v1/responses/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
      const std::string id = req.matches[1];
      if (!responses.erase(id)) return send_error(res, unknown_response(id));
      res.set_content(dump_json({{"id", id}, {"object", "response.deleted"}, {"deleted", true}}), "application/json");
    });
    http.get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics.render(), MetricsRegistry::kContentType);
    });
    http.post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
      try {
        res.set_content(dump_json(tokenize_response(req.body, model, scheduler.context_length())), "application/json");
      } catch (const ApiError& e) {
        log_refusal(req, e);
        send_error(res, e);
      }
    });
    http.post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
      try {
        res.set_content(dump_json(detokenize_response(req.body, model)), "application/json");
      } catch (const ApiError& e) {
        log_refusal(req, e);
        send_error(res, e);
      }
    });

    http.get("/props", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(dump_json(props_json()), "application/json");
    });
    http.post("/inspect", [this](const httplib::Request& req, httplib::Response& res) { inspect(req, res); });
    if (options.webui) {
      auto page = [this](const httplib::Request& req, httplib::Response& res) {
        std::optional<WebPageFile> file;
        try {
          file = web_page_file(req.path, options.webui_dir);
        } catch (const Error& e) {
          return send_error(res, ApiError(500, e.what(), "server_error"));
        }
        if (!file) return send_error(res, not_found(str_cat("No web UI file at ", req.path)));
        for (const auto& [name, value] : web_page_headers()) res.set_header(name, value);
        res.set_content(std::move(file->bytes), file->content_type);
      };
      http.get("/", page);
      http.get(R"(/webui/[^/]+)", page);
    }

    http.set_exception_handler([this](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
      std::string what = "unknown exception";
      try {
        std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      const ApiError error(500, str_cat("internal error: ", what), "server_error");
      log_refusal(req, error);
      send_error(res, error);
    });
  }

  static ApiError unknown_response(const std::string& id) {
    return not_found(str_cat("No stored response has the id '", text_excerpt(id), "'"), "response_id");
  }

  // The stored response a route names; nullopt after answering 404.
  std::optional<ResponseStore::Stored> stored_response(const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1];
    auto stored = responses.get(id);
    if (!stored) send_error(res, unknown_response(id));
    return stored;
  }

  // GET /v1/responses/{id}/input_items as OpenAI pages it: `order` desc (the default, newest
  // first) or asc, `limit` 1..100 (default 20), `after` an item id to continue from.
  static OJson input_items_page(const OJson& items, const httplib::Request& req) {
    const std::string order = req.has_param("order") ? req.get_param_value("order") : "desc";
    if (order != "asc" && order != "desc") throw invalid_parameter("order", "'order' must be 'asc' or 'desc'");
    int64_t limit = 20;
    if (req.has_param("limit")) {
      const std::string text = req.get_param_value("limit");
      if (text.empty() || text.size() > 3 || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
          std::stoi(text) < 1 || std::stoi(text) > 100)
        throw invalid_parameter("limit", str_cat("'limit' must be an integer from 1 to 100, got '", text_excerpt(text), "'"));
      limit = std::stoi(text);
    }
    std::vector<const OJson*> ordered;
    for (const OJson& item : items) ordered.push_back(&item);
    if (order == "desc") std::reverse(ordered.begin(), ordered.end());
    size_t from = 0;
    if (req.has_param("after")) {
      const std::string after = req.get_param_value("after");
      while (from < ordered.size() && (*ordered[from])["id"] != after) ++from;
      if (from == ordered.size())
        throw invalid_parameter("after", str_cat("'after' is '", text_excerpt(after), "', which is not an item of this response"));
      ++from;
    }
    OJson data = OJson::array();
    for (size_t i = from; i < ordered.size() && static_cast<int64_t>(data.size()) < limit; ++i) data.push_back(*ordered[i]);
    const bool more = from + data.size() < ordered.size();
    OJson page = {{"object", "list"}, {"data", data}, {"first_id", nullptr}, {"last_id", nullptr}, {"has_more", more}};
    if (!data.empty()) {
      page["first_id"] = data.front()["id"];
      page["last_id"] = data.back()["id"];
    }
    return page;
  }

  // The prompt's ids, or ApiError 400.
  std::vector<int32_t> prompt_ids(const CompletionRequest& r) const {
    const char* param = r.endpoint == Endpoint::chat_completions ? "messages" : "prompt";
    std::vector<int32_t> ids;
    if (r.endpoint == Endpoint::chat_completions) {
      if (model.chat_template == nullptr)
        throw invalid_parameter("messages", "this checkpoint has no chat template; use /v1/completions");
      try {
        ids = encode_chat(*model.chat_template, *model.tokenizer, r.messages, r.tools, true,
                          merge_template_vars(model.chat_template_kwargs, r.chat_template_kwargs))
                  .ids;
      } catch (const Error& e) {
        throw invalid_parameter("messages", str_cat("the chat template refused the messages: ", e.what()));
      }
    } else if (r.prompt_text) {
      ids = model.tokenizer->encode(*r.prompt_text);
    } else {
      ids = r.prompt_ids;
      const auto vocab = static_cast<int64_t>(model.tokenizer->vocab_size());
      for (int32_t id : ids)
        if (id >= vocab) throw invalid_parameter("prompt", str_cat("token id ", id, " is outside the vocabulary of ", vocab));
    }
    if (ids.empty()) throw invalid_parameter(param, str_cat("'", param, "' is empty: there is nothing to continue"));
    const int64_t context = scheduler.context_length();
    if (static_cast<int64_t>(ids.size()) >= context)
      throw invalid_parameter(param,
                              str_cat("This model's maximum context length is ", context, " tokens; the ", param, " take ",
                                      ids.size(), " tokens, which leaves no room for a completion"),
                              "context_length_exceeded");
    return ids;
  }

  // A request's prompt, handed to the scheduler.
  struct Submitted {
    std::shared_ptr<CompletionRequest> request;
    std::vector<int32_t> prompt;
    std::vector<std::shared_ptr<GenerationStream>> streams;  // one per choice generated
  };

  // Checks the model, tokenizes the prompt, compiles the constraints and submits every
  // choice. Throws ApiError.
  Submitted submit(std::shared_ptr<CompletionRequest> request) {
    if (request->model && *request->model != model.id)
      throw not_found(str_cat("The model '", *request->model, "' does not exist; this server serves '", model.id, "'"),
                      "model", "model_not_found");
    Submitted s;
    s.request = request;
    s.prompt = prompt_ids(*request);
    SchedulerRequest sr;
    sr.generation.prompt = s.prompt;
    sr.generation.params = resolve_sampling(model.defaults, *request);
    check_logit_bias_vocab(sr.generation.params, static_cast<int64_t>(model.tokenizer->vocab_size()));
    if (request->forced_tools) {
      try {
        request->grammar = tool_call_gbnf(tool_call_format, request->tools, ToolCallGrammar::forced,
                                          *request->forced_tools, request->parallel_tool_calls);
      } catch (const Error& e) {
        const std::string message = e.what();
        throw invalid_parameter(message.starts_with("tools[") ? message.substr(0, message.find(':')) : "tool_choice",
                                message);
      }
      request->grammar_param = "tool_choice";
    }
    if (!request->grammar.empty()) {
      try {
        sr.generation.grammar = grammars.get(request->grammar);
      } catch (const grammar::GrammarError& e) {
        throw invalid_parameter(request->grammar_param, e.what());
      }
    } else if (request->parse_tool_calls && tool_call_format != ToolCallFormat::none) {
      // tool_choice "auto": free text, but a call, once begun, is valid (so it can
      // stream as it is generated). With a response_format the reply is that JSON.
      try {
        sr.generation.grammar = grammars.get(tool_call_gbnf(tool_call_format, request->tools, ToolCallGrammar::triggered));
      } catch (const Error& e) {
        throw invalid_parameter("tools", e.what());
      }
      sr.generation.grammar_trigger = tool_call_trigger(tool_call_format);
      // A call written while thinking is not made.
      if (const auto tags = find_think_tokens(*model.tokenizer))
        sr.generation.grammar_quiet = GenerationRequest::QuietSpan{tags->open, tags->close, ends_in_open_think(s.prompt, *tags)};
    }
    // best_of ranks choices by their tokens' log probabilities: compute them.
    sr.logprobs = request->logprobs || request->best_of > request->n;
    sr.top_logprobs = request->top_logprobs;
    sr.n = request->best_of;
    // Every choice runs at once, each a running sequence.
    if (const size_t slots = scheduler.stats().max_running; sr.n > slots) {
      const char* param = request->best_of > request->n ? "best_of" : "n";
      throw invalid_parameter(param, str_cat("'", param, "' is ", sr.n, ", more choices than this server runs at once (",
                                             slots, ", --parallel)"));
    }
    try {
      s.streams = scheduler.submit_choices(std::move(sr));
    } catch (const Unavailable& e) {
      throw ApiError(503, e.what(), "server_error", std::nullopt, "server_busy");
    } catch (const Error& e) {
      throw ApiError(400, e.what(), "invalid_request_error");
    }
    return s;
  }

  std::shared_ptr<ResponseBuilder> builder_of(const Submitted& s, const std::string& id, int64_t created, size_t choice) {
    return std::make_shared<ResponseBuilder>(*s.request, *model.tokenizer, id, created, model.id, s.prompt,
                                             static_cast<int>(choice), tool_call_format, &ids);
  }

  // POST /v1/chat/completions and /v1/completions.
  void complete(const httplib::Request& req, httplib::Response& res, Endpoint endpoint) {
    const RequestClock clock{std::chrono::steady_clock::now(), std::nullopt, std::nullopt};
    const std::string id = ids.next(endpoint);
    Submitted s;
    try {
      s = submit(std::make_shared<CompletionRequest>(parse_completion_request(req.body, endpoint)));
    } catch (const ApiError& e) {
      log_refusal(req, e, id, seconds_since(clock.arrival));
      return send_error(res, e);
    }
    std::vector<std::shared_ptr<ResponseBuilder>> builders;
    const int64_t created = std::time(nullptr);
    for (size_t i = 0; i < s.streams.size(); ++i) builders.push_back(builder_of(s, id, created, i));
    auto format = std::make_shared<ChatFormat>(s.request, std::move(builders));
    deliver(req, res, id, clock, std::move(s), std::move(format));
  }

  // POST /v1/responses.
  void respond(const httplib::Request& req, httplib::Response& res) {
    const RequestClock clock{std::chrono::steady_clock::now(), std::nullopt, std::nullopt};
    const std::string id = ids.next_named("resp_");
    Submitted s;
    ResponsesRequest r;
    try {
      ResponsesLookup lookup;
      lookup.conversation = [this](const std::string& previous) -> std::optional<OJson> {
        if (auto stored = responses.get(previous)) return stored->conversation();
        return std::nullopt;
      };
      lookup.item = [this](const std::string& item) { return responses.item(item); };
      r = parse_responses_request(req.body, lookup, [this](const std::string& type) { return item_id(type); });
      s = submit(std::make_shared<CompletionRequest>(std::move(r.completion)));
    } catch (const ApiError& chat_error) {
      const ApiError e = in_responses_terms(chat_error);
      log_refusal(req, e, id, seconds_since(clock.arrival));
      return send_error(res, e);
    }
    const int64_t created = std::time(nullptr);
    OJson response = {{"id", id}, {"object", "response"}, {"created_at", created}, {"status", "in_progress"},
                      {"background", false}, {"error", nullptr}, {"incomplete_details", nullptr}};
    for (const auto& [key, value] : r.echo.items()) response[key] = value;
    response["model"] = model.id;
    ResponseEvents events(std::move(response), [this](const std::string& type) { return item_id(type); },
                          s.request->logprobs);
    auto format = std::make_shared<ResponsesFormat>(s.request, builder_of(s, id, created, 0), std::move(events),
                                                    r.store ? &responses : nullptr, std::move(r.items));
    deliver(req, res, id, clock, std::move(s), std::move(format));
  }

  // An item's id as OpenAI makes them: "msg_…", "fc_…", "rs_…", "fco_…".
  std::string item_id(const std::string& type) {
    const char* prefix = type == "message" ? "msg_" : type == "function_call" ? "fc_" : type == "reasoning" ? "rs_" : "fco_";
    return ids.next_named(prefix);
  }

  // Writes what the choices generate, whole or streamed, in `format`, and the request's
  // log line at the end.
  void deliver(const httplib::Request& req, httplib::Response& res, const std::string& id, const RequestClock& clock,
               Submitted s, std::shared_ptr<OutputFormat> format) {
    const auto& streams = s.streams;
    // The log line of this request, completed at its end.
    RequestLogEntry entry;
    entry.method = req.method;
    entry.path = req.path;
    entry.request_id = id;
    entry.stream = s.request->stream;
    entry.prompt_tokens = s.prompt.size();
    // Each choice its own clock (inter-token gaps are within a choice); the prompt is
    // counted once.
    std::vector<RequestClock> clocks(streams.size(), clock);
    const size_t prompt_size = s.prompt.size();
    const auto prompt_count = [prompt_size](size_t choice) { return choice == 0 ? prompt_size : size_t{0}; };
    const auto cancel_all = [this](const std::vector<std::shared_ptr<GenerationStream>>& all) {
      for (const auto& stream : all) scheduler.cancel(*stream);
    };

    if (!s.request->stream) {
      // Nothing is written before the end, so no write fails when the client goes:
      // look at its connection after every token (and every kClientCheck), and cancel.
      Connection* connection = current_connection();
      std::vector<GenerationStream::Update> all(streams.size());
      size_t generated = 0;
      for (size_t i = 0; i < streams.size(); ++i) {
        while (!all[i].ended()) {
          const size_t seen = all[i].tokens.size();
          streams[i]->next(all[i], kClientCheck);
          metrics.tokens_arrived(clocks[i], std::span(all[i].tokens).subspan(seen), prompt_count(i));
          if (!all[i].ended() && connection != nullptr && connection->client_gone()) {
            cancel_all(streams);
            connection->close_after_response();
            metrics.aborted();
            end_entry(entry, clocks[0], 499, generated + all[i].tokens.size(), "", std::string(kClientDisconnected));
            return send_error(res, ApiError(499, "the client disconnected", "invalid_request_error", std::nullopt, "client_closed_request"));
          }
        }
        generated += all[i].tokens.size();
        if (all[i].error) {
          cancel_all(streams);
          end_entry(entry, clocks[0], 500, generated, "", *all[i].error);
          return send_error(res, ApiError(500, *all[i].error, "server_error"));
        }
        metrics.finished(clocks[i], all[i].finished->finish);
      }
      size_t logged = 0;
      res.set_content(dump_json(format->whole(all, logged)), "application/json");
      int64_t completion_tokens = 0;
      for (const auto& u : all) completion_tokens += u.finished->completion_tokens;
      end_entry(entry, clocks[0], 200, static_cast<size_t>(completion_tokens), std::string(all[logged].finished->finish.name()), "");
      return;
    }

    struct StreamState {
      bool started = false;
      bool ended = false;
      size_t tokens = 0;
      int64_t completion_tokens = 0;  // of the choices that finished
      std::vector<RequestClock> clocks;
      std::vector<bool> choice_ended;
      std::string finish_reason;  // glass's name, once finished (the first choice's)
      std::string error = std::string(kClientDisconnected);
    };
    auto state = std::make_shared<StreamState>();
    state->clocks = clocks;
    state->choice_ended.assign(streams.size(), false);
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, state, streams, format, n = prompt_size](size_t, httplib::DataSink& sink) {
          std::string out;
          if (!state->started) {
            out += format->stream_start();
            state->started = true;
          }
          // The choices advance in the same forward passes: wait on the first still
          // running, then take what the others have.
          bool waited = false;
          bool got_any = false;
          bool failed = false;
          for (size_t i = 0; i < streams.size() && !failed; ++i) {
            if (state->choice_ended[i]) continue;
            GenerationStream::Update u;
            const auto timeout = waited || !out.empty() ? std::chrono::milliseconds(0) : kHeartbeat;
            waited = true;
            got_any = streams[i]->next(u, timeout) || got_any;
            metrics.tokens_arrived(state->clocks[i], u.tokens, i == 0 ? n : 0);
            state->tokens += u.tokens.size();
            out += format->stream_tokens(i, u.tokens);
            if (u.error) {
              out += format->stream_failed(*u.error);
              state->error = *u.error;
              failed = true;
            } else if (u.finished) {
              out += format->stream_finished(i, *u.finished);
              state->completion_tokens += u.finished->completion_tokens;
              state->choice_ended[i] = true;
              if (state->finish_reason.empty()) state->finish_reason = std::string(u.finished->finish.name());
              metrics.finished(state->clocks[i], u.finished->finish);
            }
          }
          const bool all_ended = std::all_of(state->choice_ended.begin(), state->choice_ended.end(), [](bool e) { return e; });
          if (failed || all_ended) {
            if (!failed) {
              out += format->stream_end();
              state->tokens = static_cast<size_t>(state->completion_tokens);
              state->error.clear();
            }
            state->ended = true;
          }
          if (out.empty()) {
            // A second of silence (queued, or a long prefill) gets a comment, which finds
            // a client that left; a token held back (no text yet) gets nothing, since an
            // empty write would end the chunked body.
            if (got_any) return true;
            out = ": keep-alive\n\n";
          }
          // A failed write means the client is gone; returning false ends the response
          // and the releaser below cancels the generation.
          if (!sink.write(out.data(), out.size())) return false;
          if (state->ended) sink.done();
          return true;
        },
        [this, state, streams, entry, cancel_all](bool) mutable {
          if (!state->ended || !state->error.empty()) {
            cancel_all(streams);
            if (!state->ended) metrics.aborted();
          }
          if (!state->ended) state->finish_reason.clear();
          end_entry(entry, state->clocks[0], 200, state->tokens, state->finish_reason, state->error);
        });
  }

  void end_entry(RequestLogEntry& entry, const RequestClock& clock, int status, size_t completion_tokens,
                 std::string finish_reason, std::string error) const {
    entry.status = status;
    entry.completion_tokens = completion_tokens;
    entry.finish_reason = std::move(finish_reason);
    entry.error = std::move(error);
    entry.first_token_seconds = clock.first_token_seconds();
    entry.seconds = seconds_since(clock.arrival);
    request_log.write(entry);
  }
};

OpenAIServer::OpenAIServer(Scheduler& scheduler, ServedModel model, ServerOptions options)
    : impl_(std::make_unique<Impl>(scheduler, std::move(model), std::move(options))) {}

OpenAIServer::~OpenAIServer() = default;

int OpenAIServer::bind() { return impl_->http.bind_and_listen(impl_->options.host, impl_->options.port); }

void OpenAIServer::listen() { impl_->http.listen_after_bind(); }

void OpenAIServer::stop() {
  impl_->scheduler.stop();
  impl_->http.stop();
}

}  // namespace glass::server
