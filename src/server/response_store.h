// The responses a server keeps for the Responses API (`store`, the default): each
// response object with its conversation (the input items it was given, previous ones
// included, then its output items), so that previous_response_id can continue it and GET
// /v1/responses/{id} can return it. At most `capacity` are kept; past that the least
// recently used (stored, read or continued) is dropped. Everything is in memory and ends
// with the server. Safe from any thread.
#pragma once

#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace glass::server {

class ResponseStore {
 public:
  struct Stored {
    nlohmann::ordered_json response;     // the response object as it was returned
    nlohmann::ordered_json input_items;  // the conversation it was given
    // The input items, then the response's output items: what previous_response_id continues.
    nlohmann::ordered_json conversation() const;
  };

  explicit ResponseStore(size_t capacity) : capacity_(capacity) {}

  size_t capacity() const { return capacity_; }
  size_t size() const;

  // Keeps `stored` under `id` (its response's id), dropping the least recently used
  // past the capacity. Nothing is kept with a capacity of 0.
  void put(const std::string& id, Stored stored);
  // The stored response, now the most recently used; nullopt when none has that id.
  std::optional<Stored> get(const std::string& id);
  // Whether there was one to delete.
  bool erase(const std::string& id);
  // An item of a stored conversation by its item id (item_reference), newest first.
  std::optional<nlohmann::ordered_json> item(const std::string& item_id) const;

 private:
  using Order = std::list<std::string>;  // ids, most recently used first
  struct Entry {
    Stored stored;
    Order::iterator place;
  };

  size_t capacity_;
  mutable std::mutex mutex_;
  Order order_;
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace glass::server
