#include "plugins/gpu_clustering/gpu_clustering_score.h"

#include "framework/devices.h"

namespace tidal::plugins {

namespace {
constexpr int64_t kMaxSpecGpu = devices::kRefMaxNodeGpuMilli;
}

void GpuClusteringScore::Adjust(NodeId n, int tag, int delta) {
  if (tag < 0) return;
  if (nodes_.size() <= static_cast<size_t>(n)) nodes_.resize(static_cast<size_t>(n) + 1);
  auto& s = nodes_[static_cast<size_t>(n)];
  if (s.count.size() <= static_cast<size_t>(tag)) s.count.resize(static_cast<size_t>(tag) + 1, 0);
  int32_t& c = s.count[static_cast<size_t>(tag)];
  const bool was = c > 0;
  c += delta;
  s.distinct += static_cast<int32_t>(c > 0) - static_cast<int32_t>(was);
}

void GpuClusteringScore::Reserve(const ClusterState&, const Job& job, const Placement& p) {
  for (const auto& a : p.assignments) Adjust(a.node, Tag(job), +1);
}

void GpuClusteringScore::Unreserve(const ClusterState&, const Job& job, const Placement& p) {
  for (const auto& a : p.assignments) Adjust(a.node, Tag(job), -1);
}

int64_t GpuClusteringScore::Score(const CycleContext& ctx, const PodRequest& pod, NodeId n) {
  const int tag = Tag(*pod.job);
  if (tag < 0) return kMinNodeScore;
  const int64_t fill = kMaxNodeScore / 4 * (kMaxSpecGpu - ctx.cluster.gpu_milli_free(n)) / kMaxSpecGpu;
  const NodeShapes* s = static_cast<size_t>(n) < nodes_.size() ? &nodes_[static_cast<size_t>(n)] : nullptr;
  const int32_t distinct = s ? s->distinct : 0;
  const bool has_same = s && static_cast<size_t>(tag) < s->count.size() && s->count[static_cast<size_t>(tag)] > 0;
  if (has_same) return fill + (distinct == 1 ? kMaxNodeScore * 3 / 4 : kMaxNodeScore * 2 / 4);
  return fill + (distinct == 0 ? kMaxNodeScore / 4 : 0);
}

}  // namespace tidal::plugins
