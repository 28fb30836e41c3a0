#include "chat/jinja_budget.h"

#include "base/error.h"
#include "chat/jinja_value.h"

namespace glass::jinja {

namespace {

// What a string costs beyond its bytes: the shared holder and the std::string itself.
constexpr uint64_t kStringOverhead = 64;
// What a dict entry costs beyond its key and value: its hash and its slot in the index.
constexpr uint64_t kDictEntryOverhead = 32;

}  // namespace

void RenderBudget::charge_allocation(uint64_t bytes) {
  if (bytes > limits_.max_allocated_bytes - allocated_)
    fail("the template allocated more than its allocation budget of ", format_count(limits_.max_allocated_bytes),
         " bytes (strings and lists, all together)");
  allocated_ += bytes;
}

void RenderBudget::work_exceeded() const {
  fail("the template did more than its work budget of ", format_count(limits_.max_work),
       " steps (statements, expressions, loop iterations, items visited)");
}

void RenderBudget::check_string_size(uint64_t total) const {
  if (total > limits_.max_string_bytes)
    fail("a string of ", format_count(total), " bytes is over the string budget of ",
         format_count(limits_.max_string_bytes), " bytes");
}

void RenderBudget::charge_string(uint64_t bytes) {
  check_string_size(bytes);
  charge_allocation(bytes + kStringOverhead);
}

void RenderBudget::charge_append(uint64_t total, uint64_t added) {
  check_string_size(total);
  charge_allocation(added);
}

void RenderBudget::check_list_size(uint64_t items) const {
  if (items > limits_.max_items)
    fail("a list of ", format_count(items), " items is over the list budget of ", format_count(limits_.max_items),
         " items");
}

void RenderBudget::charge_list(uint64_t items) {
  check_list_size(items);
  charge_allocation(items * sizeof(Value));
  charge_work(items);
}

void RenderBudget::charge_dict(uint64_t entries) {
  if (entries > limits_.max_items)
    fail("a dict of ", format_count(entries), " entries is over the list budget of ",
         format_count(limits_.max_items), " items");
  charge_allocation(entries * (2 * sizeof(Value) + kDictEntryOverhead));
  charge_work(entries);
}

void RenderBudget::charge_object() { charge_allocation(sizeof(ObjectData) + kStringOverhead); }

void RenderBudget::check_output(uint64_t total) const {
  if (total > limits_.max_output_bytes)
    fail("the output exceeds the output budget of ", format_count(limits_.max_output_bytes), " bytes");
}

RecursionGuard::RecursionGuard(int& depth, int max_depth) : depth_(depth) {
  if (++depth_ > max_depth) {
    --depth_;
    fail("the template nests evaluations more than ", max_depth, " levels deep (the recursion budget)");
  }
}

}  // namespace glass::jinja
