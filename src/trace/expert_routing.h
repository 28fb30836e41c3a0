// Which experts each token chose, layer by layer, in a mixture-of-experts model: a trace
// consumer of the "expert_weights" stage (the chosen experts' weights, 0 elsewhere).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <vector>

#include "trace/trace_sink.h"

namespace glass {

struct ExpertChoice {
  int32_t expert = -1;
  float weight = 0;  // after renormalisation when the model renormalises
};

struct ExpertRoutingLayer {
  int layer = -1;
  std::vector<std::vector<ExpertChoice>> chosen;  // per position, heaviest first (ties: lower expert)
};

struct ExpertRouting {
  int64_t experts = 0;             // experts per layer
  std::vector<int32_t> positions;  // the positions routed
  std::vector<ExpertRoutingLayer> layers;  // the sparse layers traced, in order
};

class RoutingCollector : public TraceSink {
 public:
  RoutingCollector(std::optional<std::set<int>> layers, std::optional<std::set<int32_t>> positions)
      : layers_(std::move(layers)), positions_(std::move(positions)) {}
  bool wants(std::string_view stage, int layer) const override;
  void record(const StageTensor& t) override;
  // Empty (no layers) when the model has no sparse layer or none was traced.
  const ExpertRouting& routing() const { return routing_; }

 private:
  std::optional<std::set<int>> layers_;
  std::optional<std::set<int32_t>> positions_;
  ExpertRouting routing_;
};

}  // namespace glass
