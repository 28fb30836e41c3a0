// What one render of a template may spend. Chat templates are programs that checkpoints
// ship, and the server runs them on request content (messages, tools), so no template on
// any input may exhaust memory, CPU or the stack: every operation whose cost grows with
// its operands charges the render's RenderBudget before it does the work (or as it goes,
// where the cost shows only on the way). Exceeding a budget is a glass::Error that names
// the budget and its value; the interpreter adds the template line and column.
//
// A budget is plain per-render state: the interpreter owns one, and hands it to every
// built-in, filter and operator it calls. The limits are far above what real chat
// templates use; docs/reliability.md ("Chat template budgets") says why each is its size.
#pragma once

#include <cstddef>
#include <cstdint>

namespace glass::jinja {

struct RenderLimits {
  // The rendered text: 4x the longest prompt any supported model takes (1M tokens).
  size_t max_output_bytes = size_t{16} << 20;
  // Any one string: a value, or the output of a macro or a block being captured.
  size_t max_string_bytes = size_t{16} << 20;
  // Any one list, tuple or dict, and the arguments of one call.
  size_t max_items = size_t{1} << 20;
  // All the strings, lists and dicts the render creates, together, freed or not.
  // Everything a render holds at once was created by it (or given to it), so this bounds
  // its memory, and the time it spends copying.
  uint64_t max_allocated_bytes = uint64_t{256} << 20;
  // Steps of work: a statement run, an expression evaluated, a loop iteration, a macro
  // call, an item that a built-in or a comparison visits, 64 bytes scanned.
  uint64_t max_work = 10'000'000;
  // Macros calling macros (and recursive loops).
  int max_call_depth = 64;
  // Statements and expressions being evaluated inside one another, across macro calls:
  // what bounds the interpreter's stack.
  int max_recursion_depth = 1000;
};

// What a render spent, against each budget (the peaks, for sizes and depths).
struct RenderUsage {
  uint64_t output_bytes = 0;
  uint64_t largest_string_bytes = 0;
  uint64_t largest_list_items = 0;
  uint64_t allocated_bytes = 0;
  uint64_t work = 0;
  int call_depth = 0;
  int recursion_depth = 0;
};

class RenderBudget {
 public:
  explicit RenderBudget(const RenderLimits& limits) : limits_(limits) {}
  RenderBudget(const RenderBudget&) = delete;
  RenderBudget& operator=(const RenderBudget&) = delete;

  const RenderLimits& limits() const { return limits_; }
  const RenderUsage& usage() const { return usage_; }

  // `steps` steps of work.
  void charge_work(uint64_t steps) {
    if (steps > limits_.max_work - usage_.work) work_exceeded();
    usage_.work += steps;
  }
  // Reading `bytes` bytes (a search, a comparison, a count): a step per 64 bytes.
  void charge_scan(uint64_t bytes) { charge_work(1 + bytes / 64); }
  // A string of `bytes` bytes, about to be built.
  void charge_string(uint64_t bytes);
  // A string grown by `added` bytes to `total`.
  void charge_append(uint64_t total, uint64_t added);
  // Whether a string may be `total` bytes long; fails if not.
  void check_string_size(uint64_t total);
  // A list, tuple or argument list of `items` items, about to be built.
  void charge_list(uint64_t items);
  // Whether a list may hold `items` items; fails if not (for lists built item by item).
  void check_list_size(uint64_t items);
  // A dict of `entries` entries, about to be built.
  void charge_dict(uint64_t entries);
  // A mutable object (a namespace, a loop): kept by the render until it ends.
  void charge_object();
  // A buffer of `bytes` bytes that is not a value (a table of offsets, a copy to sort).
  void charge_memory(uint64_t bytes);
  // The output grew to `total` bytes.
  void check_output(uint64_t total);
  // Macro calls (and recursive loops) now `depth` deep, checked by the caller.
  void note_call_depth(int depth) {
    if (depth > usage_.call_depth) usage_.call_depth = depth;
  }

 private:
  friend class RecursionGuard;
  [[noreturn]] void work_exceeded() const;

  const RenderLimits limits_;
  RenderUsage usage_;
  int recursion_depth_ = 0;
};

// One level of the interpreter's recursion (a statement or an expression being
// evaluated), for its lifetime; past the recursion budget, its error.
class RecursionGuard {
 public:
  explicit RecursionGuard(RenderBudget& budget);
  ~RecursionGuard() { --budget_.recursion_depth_; }
  RecursionGuard(const RecursionGuard&) = delete;
  RecursionGuard& operator=(const RecursionGuard&) = delete;

 private:
  RenderBudget& budget_;
};

}  // namespace glass::jinja
