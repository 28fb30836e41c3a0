// glass serve: the OpenAI-compatible HTTP server with continuous batching (see
// server/scheduler.h for the admission policy and server/openai_server.h for the API).
#include <pthread.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/model_files.h"
#include "base/checked_math.h"
#include "base/error.h"
#include "cli/commands.h"
#include "cli/generation_options.h"
#include "cli/model_session.h"
#include "cli/model_source.h"
#include "cli/option_range.h"
#include "cli/runtime_options.h"
#include "server/api_key.h"
#include "server/cors_policy.h"
#include "server/host_policy.h"
#include "server/request_log.h"
#include "server/openai_server.h"
#include "server/scheduler.h"

namespace glass::cli {

namespace {

// The folder's last component: ".../Qwen2.5-0.5B-Instruct/" serves "Qwen2.5-0.5B-Instruct".
std::string folder_name(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const size_t slash = dir.rfind('/');
  return slash == std::string::npos ? dir : dir.substr(slash + 1);
}

}  // namespace

Command add_serve_command(CLI::App& app) {
  struct Options {
    std::string model, model_name, host = "127.0.0.1";
    int port = 8080;
    size_t parallel = 16, queue = 64;
    int64_t ctx_size = 0, kv_budget_mb = 0, prefill_chunk = Generator::kDefaultPrefillChunk, max_body_mb = 8;
    std::vector<std::string> allowed_hosts, cors_origins;
    std::string api_key, log_format = "text";
    std::string tool_call_parser;  // empty: the chat template's
    double header_timeout = 10, request_timeout = 60, keep_alive_timeout = 5;
    size_t max_connections = 512;
    size_t responses_store = 1000;
    bool quiet = false;
    bool no_prefix_cache = false;
    bool no_webui = false, no_inspect = false;
    std::string webui_dir;
    ChatTemplateOptions template_options;
    GenerationOptions generation;
    RuntimeOptions runtime;
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("serve", "OpenAI-compatible HTTP server (chat/completions, completions, models) with continuous batching");
  sub->add_option("-m,--model", o->model, "Checkpoint folder, GGUF file, or ORG/NAME[@REVISION] in the Hugging Face cache (default: the built-in demo model)");
  sub->add_option("--model-name", o->model_name, "The model id clients use and /v1/models lists (default: the folder's name; ORG/NAME for a model from the Hugging Face cache)");
  sub->add_option("--host", o->host, "Address to listen on")->capture_default_str();
  sub->add_option("--port", o->port, "Port (0: any free port; the chosen one is printed)")->capture_default_str();
  sub->add_option("--parallel", o->parallel, "Most sequences in one forward pass")->capture_default_str();
  sub->add_option("--queue", o->queue, "Most requests waiting for admission; more get 503")->capture_default_str();
  sub->add_option("-c,--ctx-size", o->ctx_size, "Context length per request (default: 4096, capped by the model's max_position_embeddings)");
  sub->add_option("--kv-budget-mb", o->kv_budget_mb, "KV-cache memory in MiB (default: --parallel full contexts)");
  sub->add_option("--prefill-chunk", o->prefill_chunk, "Most prompt tokens one forward pass takes")->capture_default_str();
  sub->add_option("--max-body-mb", o->max_body_mb, "Largest request body in MiB; larger ones get 413")->capture_default_str();
  sub->add_option("--allowed-hosts", o->allowed_hosts,
                  "Host names the Host and Origin headers may name besides localhost, 127.0.0.1 and [::1] (name, name:port, "
                  "*.domain, or * for any), comma-separated; others get 403. Default: only those when bound to a loopback "
                  "address, any otherwise")
      ->delimiter(',');
  sub->add_option("--api-key", o->api_key,
                  "Key every request but GET /health must send as 'Authorization: Bearer KEY' (others get 401); default: "
                  "the GLASS_API_KEY environment variable, which, unlike a flag, other users cannot see in the process list");
  sub->add_option("--cors-origin", o->cors_origins,
                  "Origin whose web pages may read the responses (CORS), e.g. http://localhost:3000, or * for any; "
                  "repeatable or comma-separated. It also passes the Origin check. Default: no CORS headers")
      ->delimiter(',');
  sub->add_option("--log-format", o->log_format, "The line per request on stderr: text, or json (one object a line)")
      ->capture_default_str();
  sub->add_option("--header-timeout", o->header_timeout, "Seconds a request's headers may take to arrive; then 408")
      ->capture_default_str();
  sub->add_option("--request-timeout", o->request_timeout, "Seconds a whole request (headers and body) may take to arrive; then 408")
      ->capture_default_str();
  sub->add_option("--keep-alive-timeout", o->keep_alive_timeout, "Seconds an idle connection stays open between requests")
      ->capture_default_str();
  sub->add_option("--max-connections", o->max_connections, "Most open connections (a thread each); the next gets 503")
      ->capture_default_str();
  sub->add_option("--responses-store", o->responses_store,
                  "Responses kept for /v1/responses' previous_response_id and GET /v1/responses/{id} (in memory; past "
                  "it the least recently used is dropped; 0: none)")
      ->capture_default_str();
  sub->add_option("--tool-call-parser", o->tool_call_parser,
                  "How tool calls are read out of replies to requests with tools: hermes (<tool_call> blocks, Qwen2.5 "
                  "and Qwen3) or none (the raw text). Default: hermes when the chat template prompts for <tool_call>");
  sub->add_flag("-q,--quiet", o->quiet, "No line per request on stderr, no progress bar while loading");
  sub->add_flag("--no-prefix-cache", o->no_prefix_cache,
                "Compute every prompt from its first token (by default, full KV blocks of earlier prompts and replies are "
                "kept and shared by prompts that start with them)");
  sub->add_flag("--no-webui", o->no_webui, "Do not serve the web UI (the chat page at /)");
  sub->add_flag("--no-inspect", o->no_inspect,
                "Turn off POST /inspect, which reruns a step with the trace for the web UI's token inspector (the page "
                "is then a plain chat)");
  sub->add_option("--webui-dir", o->webui_dir,
                  "Serve the web UI's files from this folder (src/webui) instead of the copies built in: for working on "
                  "the page without rebuilding");
  o->template_options.add_to(sub, false)[0]->description(
      "Chat template variables for every request, as a JSON object (a request's chat_template_kwargs go over them)");
  o->generation.add_to(sub);
  o->runtime.add_to(sub, /*quiet_flag=*/false);  // serve's own --quiet covers the progress bar

  return {sub, [o, sub] {
            // Ranges first: every size below is computed from these (before, the budget's
            // shift overflowed: "holds -1024 tokens").
            check_range("--parallel", o->parallel, 1, kMaxParallel);
            check_range("--queue", o->queue, 0, kMaxQueue);
            check_range("--ctx-size", o->ctx_size, 0, kMaxContextOption);
            check_range("--kv-budget-mb", o->kv_budget_mb, 0, kMaxKvBudgetMb);
            check_range("--prefill-chunk", o->prefill_chunk, 1, kMaxPrefillChunk);
            check_range("--max-body-mb", o->max_body_mb, 1, kMaxBodyMb);
            check_range("--port", o->port, 0, 65535);
            for (const auto& [name, seconds] : {std::pair{"--header-timeout", o->header_timeout},
                                                {"--request-timeout", o->request_timeout},
                                                {"--keep-alive-timeout", o->keep_alive_timeout}})
              if (!(seconds > 0) || seconds > 86400) fail(name, ": must be between 0 and 86400 seconds, got ", seconds);
            check_range("--max-connections", o->max_connections, 1, kMaxConnections);
            check_range("--responses-store", o->responses_store, 0, kMaxResponsesStore);
            if (!o->webui_dir.empty()) {
              if (o->no_webui) fail("--webui-dir: the web UI is off (--no-webui)");
              if (!std::ifstream(o->webui_dir + "/index.html"))
                fail("--webui-dir: ", o->webui_dir, " has no index.html (expected the web UI's folder, src/webui)");
            }
            // Checked before the model loads.
            const server::HostPolicy host_policy = server::HostPolicy::make(o->host, o->allowed_hosts);
            const server::CorsPolicy cors_policy = server::CorsPolicy::make(o->cors_origins);
            const server::LogFormat log_format = server::parse_log_format(o->log_format);
            std::optional<ToolCallFormat> tool_call_format;
            if (sub->count("--tool-call-parser") > 0)
              tool_call_format = parse_tool_call_format(o->tool_call_parser, "--tool-call-parser");
            std::optional<std::string> api_key;
            if (sub->count("--api-key") > 0) {
              server::ApiKey::make(o->api_key, "--api-key");
              api_key = o->api_key;
            } else if (const char* env = std::getenv("GLASS_API_KEY")) {
              // Set but empty is most likely a variable that did not expand: refused, not ignored.
              server::ApiKey::make(env, "GLASS_API_KEY");
              api_key = env;
            }
            const jinja::OrderedJson template_vars = o->template_options.resolve();
            // SIGINT / SIGTERM stop the server cleanly: they are blocked in every thread
            // (threads inherit the mask, so this comes before the kernels' pool starts)
            // and taken by one waiting thread.
            sigset_t stop_signals;
            sigemptyset(&stop_signals);
            sigaddset(&stop_signals, SIGINT);
            sigaddset(&stop_signals, SIGTERM);
            pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

            o->runtime.quiet = o->quiet;
            const ModelSession session(o->model, o->runtime,
                                       {.tokenizer = Need::kYes, .chat_template = Need::kIfPresent});
            const std::string& dir = session.path();
            const KVType kv = session.kv_type();
            const Tokenizer& tokenizer = session.tokenizer();
            if (!session.chat_template_error().empty())
              std::fprintf(stderr, "glass serve: no chat template (%s); /v1/chat/completions will refuse requests\n",
                           session.chat_template_error().c_str());
            const DecoderModel& model = session.model();
            const ModelConfig& c = model.config();
            const SamplingParams defaults = o->generation.resolve(dir, static_cast<int64_t>(tokenizer.vocab_size()));

            const int64_t context = std::min<int64_t>(o->ctx_size > 0 ? o->ctx_size : 4096, c.max_position_embeddings);
            const int64_t bytes_per_token = c.kv_bytes_per_token(kv_type_size(kv));
            const int64_t budget_bytes =
                o->kv_budget_mb > 0 ? o->kv_budget_mb << 20
                                    : checked_mul(checked_mul(static_cast<int64_t>(o->parallel), context, "--parallel x context"),
                                                  bytes_per_token, "the KV budget of --parallel full contexts (bytes)");
            const int64_t block = KVCache::kDefaultBlockSize;
            const int64_t capacity = budget_bytes / bytes_per_token / block * block;
            if (capacity < block)
              fail("--kv-budget-mb: ", o->kv_budget_mb, " MiB holds ", budget_bytes / bytes_per_token,
                   " tokens; one block needs ", block, " (", format_bytes(static_cast<double>(block * bytes_per_token)), ")");
            KVCache cache(c, kv, capacity, KVCacheOptions{.prefix_cache = !o->no_prefix_cache});

            server::SchedulerOptions sched;
            sched.max_running = o->parallel;
            sched.max_waiting = o->queue;
            sched.prefill_chunk = o->prefill_chunk;
            sched.grammar_end_tokens = defaults.eos_token_ids;
            server::Scheduler scheduler(model, session.kernels(), cache, tokenizer, context, sched);

            server::ServedModel served;
            // A model from the Hugging Face cache is served under its repo id, not its commit.
            const bool from_cache = !o->model.empty() && dir != o->model;
            served.id = !o->model_name.empty() ? o->model_name : from_cache ? o->model : folder_name(dir);
            served.tokenizer = &tokenizer;
            served.chat_template = session.chat_template_if_loaded();
            served.defaults = defaults;
            served.chat_template_kwargs = template_vars;
            served.tool_call_format = tool_call_format;
            server::ServerOptions http;
            http.host = o->host;
            http.port = o->port;
            http.max_body_bytes = static_cast<size_t>(o->max_body_mb) << 20;
            http.log_requests = !o->quiet;
            http.allowed_hosts = o->allowed_hosts;
            http.cors_origins = o->cors_origins;
            http.api_key = api_key;
            http.log_format = log_format;
            const auto ms = [](double seconds) { return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)); };
            http.header_timeout = ms(o->header_timeout);
            http.request_timeout = ms(o->request_timeout);
            http.keep_alive_timeout = ms(o->keep_alive_timeout);
            http.max_connections = o->max_connections;
            http.responses_store = o->responses_store;
            http.webui = !o->no_webui;
            if (!o->webui_dir.empty()) http.webui_dir = o->webui_dir;
            http.inspect = !o->no_inspect;

            server::OpenAIServer server(scheduler, served, http);
            const int port = server.bind();
            std::fprintf(stderr,
                         "glass serve: model \"%s\" (%s); context %lld tokens; KV cache %s (%lld tokens, %s, prefix "
                         "cache %s); parallel %zu, queue %zu; %s\n",
                         served.id.c_str(), dir.c_str(), static_cast<long long>(scheduler.context_length()),
                         format_bytes(static_cast<double>(capacity * bytes_per_token)).c_str(),
                         static_cast<long long>(capacity), kv_type_name(kv), o->no_prefix_cache ? "off" : "on",
                         o->parallel, o->queue,
                         session.summary().c_str());
            std::fprintf(stderr, "glass serve: listening on http://%s:%d (Host/Origin allowed: %s; CORS origins: %s; API key: %s)\n",
                         o->host.c_str(), port, host_policy.describe().c_str(), cors_policy.describe().c_str(),
                         api_key ? "required" : "none");
            if (http.webui)
              std::fprintf(stderr, "glass serve: web UI at http://%s:%d/%s\n", o->host.c_str(), port,
                           http.inspect ? "" : " (token inspector off: --no-inspect)");
            std::fflush(stderr);

            std::thread signal_waiter([&] {
              int signal = 0;
              sigwait(&stop_signals, &signal);
              server.stop();
            });
            server.listen();
            // listen() may also return on its own (the socket failed): wake the waiter.
            pthread_kill(signal_waiter.native_handle(), SIGTERM);
            signal_waiter.join();
            std::fprintf(stderr, "glass serve: stopped\n");
            return 0;
          }};
}

}  // namespace glass::cli
