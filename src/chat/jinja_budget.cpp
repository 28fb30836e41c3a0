#include "chat/jinja_budget.h"

#include <algorithm>

#include "base/error.h"
#include "chat/jinja_value.h"

namespace glass::jinja {

namespace {

// What a string costs beyond its bytes: the shared holder and the std::string itself.
constexpr uint64_t kStringOverhead = 64;
// What a dict entry costs beyond its key and value: its hash and its slot in the index.
constexpr uint64_t kDictEntryOverhead = 32;

}  // namespace

void RenderBudget::charge_memory(uint64_t bytes) {
  if (bytes > limits_.max_allocated_bytes - usage_.allocated_bytes)
    fail("the template allocated more than its allocation budget of ", format_count(limits_.max_allocated_bytes),
         " bytes (strings and lists, all together)");
  usage_.allocated_bytes += bytes;
}

void RenderBudget::work_exceeded() const {
  fail("the template did more than its work budget of ", format_count(limits_.max_work),
       " steps (statements, expressions, loop iterations, items visited)");
}

void RenderBudget::check_string_size(uint64_t total) {
  if (total > limits_.max_string_bytes)
    fail("a string of ", format_count(total), " bytes is over the string budget of ",
         format_count(limits_.max_string_bytes), " bytes");
  usage_.largest_string_bytes = std::max(usage_.largest_string_bytes, total);
}

void RenderBudget::charge_string(uint64_t bytes) {
  check_string_size(bytes);
  charge_memory(bytes + kStringOverhead);
}

void RenderBudget::charge_append(uint64_t total, uint64_t added) {
  check_string_size(total);
  charge_memory(added);
}

void RenderBudget::check_list_size(uint64_t items) {
  if (items > limits_.max_items)
    fail("a list of ", format_count(items), " items is over the list budget of ", format_count(limits_.max_items),
         " items");
  usage_.largest_list_items = std::max(usage_.largest_list_items, items);
}

void RenderBudget::charge_list(uint64_t items) {
  check_list_size(items);
  charge_memory(items * sizeof(Value));
  charge_work(items);
}

void RenderBudget::charge_dict(uint64_t entries) {
  if (entries > limits_.max_items)
    fail("a dict of ", format_count(entries), " entries is over the list budget of ",
         format_count(limits_.max_items), " items");
  usage_.largest_list_items = std::max(usage_.largest_list_items, entries);
  charge_memory(entries * (2 * sizeof(Value) + kDictEntryOverhead));
  charge_work(entries);
}

void RenderBudget::charge_object() { charge_memory(sizeof(ObjectData) + kStringOverhead); }

void RenderBudget::check_output(uint64_t total) {
  if (total > limits_.max_output_bytes)
    fail("the output exceeds the output budget of ", format_count(limits_.max_output_bytes), " bytes");
  usage_.output_bytes = std::max(usage_.output_bytes, total);
}

RecursionGuard::RecursionGuard(RenderBudget& budget) : budget_(budget) {
  const int max_depth = budget.limits_.max_recursion_depth;
  if (budget.recursion_depth_ >= max_depth)
    fail("the template nests evaluations more than ", max_depth, " levels deep (the recursion budget)");
  budget.usage_.recursion_depth = std::max(budget.usage_.recursion_depth, ++budget.recursion_depth_);
}

}  // namespace glass::jinja
