#include "trace/expert_routing.h"

#include <algorithm>

namespace glass {

bool RoutingCollector::wants(std::string_view stage, int layer) const {
  return stage == "expert_weights" && (!layers_ || layers_->count(layer) > 0);
}

void RoutingCollector::record(const StageTensor& t) {
  const int64_t n = t.axes[0].size, experts = t.axes.back().size;
  routing_.experts = experts;
  const bool first_layer = routing_.layers.empty();
  ExpertRoutingLayer& out = routing_.layers.emplace_back();
  out.layer = t.layer;
  for (int64_t p = 0; p < n; ++p) {
    if (positions_ && positions_->count(t.positions[p]) == 0) continue;
    if (first_layer) routing_.positions.push_back(t.positions[p]);
    std::vector<ExpertChoice> chosen;
    for (int64_t e = 0; e < experts; ++e)
      if (const float w = t.data[p * experts + e]; w != 0) chosen.push_back({static_cast<int32_t>(e), w});
    std::stable_sort(chosen.begin(), chosen.end(), [](const ExpertChoice& a, const ExpertChoice& b) { return a.weight > b.weight; });
    out.chosen.push_back(std::move(chosen));
  }
}

}  // namespace glass
