#include "server/response_store.h"

namespace glass::server {

nlohmann::ordered_json ResponseStore::Stored::conversation() const {
  nlohmann::ordered_json items = input_items;
  for (const auto& item : response["output"]) items.push_back(item);
  return items;
}

size_t ResponseStore::size() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

void ResponseStore::put(const std::string& id, Stored stored) {
  if (capacity_ == 0) return;
  const std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = entries_.find(id); it != entries_.end()) {
    order_.erase(it->second.place);
    entries_.erase(it);
  }
  order_.push_front(id);
  entries_.emplace(id, Entry{std::move(stored), order_.begin()});
  while (entries_.size() > capacity_) {
    entries_.erase(order_.back());
    order_.pop_back();
  }
}

std::optional<ResponseStore::Stored> ResponseStore::get(const std::string& id) {
  const std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return std::nullopt;
  order_.splice(order_.begin(), order_, it->second.place);
  return it->second.stored;
}

bool ResponseStore::erase(const std::string& id) {
  const std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return false;
  order_.erase(it->second.place);
  entries_.erase(it);
  return true;
}

std::optional<nlohmann::ordered_json> ResponseStore::item(const std::string& item_id) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  for (const std::string& id : order_) {
    const Stored& stored = entries_.at(id).stored;
    for (const auto* items : {&stored.input_items, &stored.response["output"]})
      for (const auto& item : *items)
        if (item.value("id", "") == item_id) return item;
  }
  return std::nullopt;
}

}  // namespace glass::server
