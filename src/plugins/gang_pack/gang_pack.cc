#include "plugins/gang_pack/gang_pack.h"

#include <algorithm>

#include "framework/devices.h"

namespace tidal::plugins {

std::optional<Placement> GangPackPlace::PlaceGang(const CycleContext& ctx, const PodRequest& pod) {
  const ClusterState& c = ctx.cluster;
  if (pod.num_gpu() == 0 || pod.gpu_milli() != kMilliPerGpu) return std::nullopt;
  order_.clear();
  int64_t available = 0;
  for (NodeId n = 0; n < c.num_nodes(); ++n) {
    if (c.free_whole_gpus(n) == 0 || !pod.gpu_spec.Allows(c.gpu_model(n))) continue;
    order_.push_back(n);
    available += c.free_whole_gpus(n);
  }
  if (available < pod.num_gpu()) return std::nullopt;
  std::sort(order_.begin(), order_.end(), [&](NodeId a, NodeId b) {
    if (c.free_whole_gpus(a) != c.free_whole_gpus(b)) return c.free_whole_gpus(a) > c.free_whole_gpus(b);
    return a < b;
  });
  Placement p;
  int32_t need = pod.num_gpu();
  for (NodeId n : order_) {
    if (need == 0) break;
    const int32_t take = std::min(need, c.free_whole_gpus(n));
    auto devs = devices::FirstFreeWhole(c.gpu_free(n), take);
    NodeAssignment a = devices::MakeAssignment(n, pod, *devs);
    // CPU and memory are shared out in proportion to the GPUs on each node.
    a.cpu_milli = pod.cpu_milli() * take / pod.num_gpu();
    a.memory_mib = pod.memory_mib() * take / pod.num_gpu();
    if (a.cpu_milli > c.cpu_free(n) || a.memory_mib > c.memory_free(n)) continue;
    need -= take;
    p.assignments.push_back(std::move(a));
  }
  if (need != 0) return std::nullopt;
  // Give the rounding remainder to the first node (if it has room).
  int64_t cpu = 0, mem = 0;
  for (const auto& a : p.assignments) cpu += a.cpu_milli, mem += a.memory_mib;
  p.assignments.front().cpu_milli += pod.cpu_milli() - cpu;
  p.assignments.front().memory_mib += pod.memory_mib() - mem;
  return p;
}

}  // namespace tidal::plugins
