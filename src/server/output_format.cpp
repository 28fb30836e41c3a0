#include "server/output_format.h"

#include <algorithm>

#include "server/api_error.h"

namespace glass::server {

namespace {

std::string data(const OJson& j) { return "data: " + dump_json(j) + "\n\n"; }

}  // namespace

std::string ChatFormat::stream_start() {
  std::string out;
  for (const auto& builder : builders_) out += data(builder->first_chunk());
  return out;
}

std::string ChatFormat::stream_tokens(size_t choice, const std::vector<StreamedToken>& tokens) {
  std::string out;
  for (const StreamedToken& t : tokens)
    for (const OJson& c : builders_[choice]->token_chunks(t)) out += data(c);
  return out;
}

std::string ChatFormat::stream_finished(size_t choice, const FinishedGeneration& finished) {
  std::string out;
  for (const OJson& c : builders_[choice]->finish_chunks(finished)) out += data(c);
  usages_[choice] = builders_[choice]->usage_of(finished);
  return out;
}

std::string ChatFormat::stream_end() {
  std::string out;
  if (request_->include_usage) out += data(builders_.front()->usage_chunk_of(combined_usage(usages_)));
  return out + "data: [DONE]\n\n";
}

std::string ChatFormat::stream_failed(const std::string& error) {
  return data(ApiError(500, error, "server_error").body()) + "data: [DONE]\n\n";
}

OJson ChatFormat::whole(const std::vector<GenerationStream::Update>& all, size_t& logged) {
  std::vector<OJson> responses;
  for (size_t i = 0; i < all.size(); ++i) responses.push_back(builders_[i]->response(all[i].tokens, *all[i].finished));
  const std::vector<size_t> keep = best_choices(all, request_->n);
  logged = keep.front();
  return all.size() == 1 ? std::move(responses.front()) : combined_response(std::move(responses), keep);
}

std::vector<size_t> ChatFormat::best_choices(const std::vector<GenerationStream::Update>& all, size_t n) {
  std::vector<size_t> order(all.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (n >= all.size()) return order;
  std::vector<double> mean(all.size(), 0.0);
  for (size_t i = 0; i < all.size(); ++i) {
    double sum = 0;
    for (const StreamedToken& t : all[i].tokens) sum += t.logprob;
    mean[i] = all[i].tokens.empty() ? 0.0 : sum / static_cast<double>(all[i].tokens.size());
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return mean[a] > mean[b]; });
  order.resize(n);
  return order;
}

std::string ResponsesFormat::sse(const std::vector<OJson>& events) {
  std::string out;
  for (const OJson& e : events) out += "event: " + e["type"].get<std::string>() + "\n" + data(e);
  return out;
}

std::string ResponsesFormat::stream_start() { return sse(events_.start()); }

std::vector<OJson> ResponsesFormat::token_events(const std::vector<StreamedToken>& tokens) {
  std::vector<OJson> out;
  for (const StreamedToken& t : tokens)
    for (const OJson& c : builder_->token_chunks(t))
      for (OJson& e : events_.chunk(c)) out.push_back(std::move(e));
  return out;
}

std::string ResponsesFormat::stream_tokens(size_t, const std::vector<StreamedToken>& tokens) {
  return sse(token_events(tokens));
}

std::vector<OJson> ResponsesFormat::finish(const FinishedGeneration& finished) {
  std::vector<OJson> out;
  std::string reason;
  for (const OJson& c : builder_->finish_chunks(finished)) {
    for (OJson& e : events_.chunk(c)) out.push_back(std::move(e));
    if (const OJson& r = c["choices"][0]["finish_reason"]; r.is_string()) reason = r.get<std::string>();
  }
  for (OJson& e : events_.finish(reason, builder_->usage_of(finished))) out.push_back(std::move(e));
  if (store_ != nullptr) store_->put(events_.response()["id"].get<std::string>(), {events_.response(), input_items_});
  return out;
}

std::string ResponsesFormat::stream_finished(size_t, const FinishedGeneration& finished) { return sse(finish(finished)); }

std::string ResponsesFormat::stream_failed(const std::string& error) { return sse(events_.fail(error)); }

OJson ResponsesFormat::whole(const std::vector<GenerationStream::Update>& all, size_t& logged) {
  // The same events as a stream, so that both give the same response; only the last
  // state is sent, so none is serialized.
  logged = 0;
  events_.start();
  token_events(all.front().tokens);
  finish(*all.front().finished);
  return events_.response();
}

}  // namespace glass::server
