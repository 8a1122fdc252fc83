#include "scheduler/reservation.h"

#include <algorithm>

namespace tidal {

void FreeCapacity::CopyFrom(const ClusterState& c) {
  const auto n = static_cast<size_t>(c.num_nodes());
  cpu_.resize(n);
  mem_.resize(n);
  model_.resize(n);
  count_.resize(n);
  offset_.resize(n);
  whole_.resize(n);
  cordoned_.resize(n);
  gpu_.clear();
  for (NodeId i = 0; i < c.num_nodes(); ++i) {
    const auto k = static_cast<size_t>(i);
    cpu_[k] = c.cpu_free(i);
    mem_[k] = c.memory_free(i);
    model_[k] = c.gpu_model(i);
    count_[k] = c.gpu_count(i);
    offset_[k] = static_cast<int32_t>(gpu_.size());
    whole_[k] = c.free_whole_gpus(i);
    cordoned_[k] = c.cordoned(i);
    const auto free = c.gpu_free(i);
    gpu_.insert(gpu_.end(), free.begin(), free.end());
  }
}

void FreeCapacity::Apply(const NodeAssignment& a, int sign) {
  const auto k = static_cast<size_t>(a.node);
  if (cordoned_[k]) return;  // a release there is not capacity the head can count on
  cpu_[k] += sign * a.cpu_milli;
  mem_[k] += sign * a.memory_mib;
  for (size_t i = 0; i < a.gpus.size(); ++i) {
    int32_t& g = gpu_[static_cast<size_t>(offset_[k] + a.gpus[i])];
    whole_[k] -= g == kMilliPerGpu;
    g += sign * a.gpu_milli[i];
    whole_[k] += g == kMilliPerGpu;
  }
}

bool FreeCapacity::Fits(const PodRequest& pod, NodeId n) const {
  const auto k = static_cast<size_t>(n);
  if (cordoned_[k]) return false;
  if (cpu_[k] < pod.cpu_milli() || mem_[k] < pod.memory_mib()) return false;
  if (pod.num_gpu() == 0) return true;
  if (count_[k] < pod.num_gpu() || !pod.gpu_spec.Allows(model_[k])) return false;
  if (pod.gpu_milli() == kMilliPerGpu) return whole_[k] >= pod.num_gpu();
  int32_t fitting = 0;
  for (int32_t d = 0; d < count_[k]; ++d) fitting += gpu_[static_cast<size_t>(offset_[k] + d)] >= pod.gpu_milli();
  return fitting >= pod.num_gpu();
}

bool BackfillReservation::HeadFits(const PodRequest& head) const {
  if (fitting_nodes_ > 0) return true;
  if (rules_.compact && head.num_gpu() <= rules_.largest_node_gpus) return false;
  // A gang may gather whole GPUs from several nodes (GangPack's rule).
  return !head.job->single_node && rules_.gangs_gather && head.gpu_milli() == kMilliPerGpu &&
         whole_allowed_ >= head.num_gpu();
}

// sign -1 removes node n's contribution to the counters, +1 adds it back.
void BackfillReservation::RecountNode(const PodRequest& head, NodeId n, int sign) {
  const auto k = static_cast<size_t>(n);
  if (sign > 0) fits_[k] = free_.Fits(head, n);
  fitting_nodes_ += sign * fits_[k];
  if (head.num_gpu() > 0 && free_.model(n) != kNoGpuModel && head.gpu_spec.Allows(free_.model(n))) {
    whole_allowed_ += sign * free_.whole_free(n);
  }
}

void BackfillReservation::Compute(const ClusterState& c, const std::set<std::pair<int64_t, JobId>>& running,
                                  const PodRequest& head, int64_t now, ReservationRules rules) {
  rules_ = rules;
  time_s_ = kNoReservation;
  free_.CopyFrom(c);
  const int32_t nodes = free_.num_nodes();
  fits_.assign(static_cast<size_t>(nodes), 0);
  fitting_nodes_ = 0;
  whole_allowed_ = 0;
  for (NodeId n = 0; n < nodes; ++n) RecountNode(head, n, +1);
  if (HeadFits(head)) {
    // The filters' view says it fits now, yet the placer found no placement
    // (e.g. a gang's CPU split): reserve "now" and retry at the next event.
    time_s_ = now;
    return;
  }
  for (auto it = running.begin(); it != running.end();) {
    const int64_t t = it->first;
    for (; it != running.end() && it->first == t; ++it) {
      const Placement* p = c.FindAllocation(it->second);
      if (p == nullptr) continue;
      for (const NodeAssignment& a : p->assignments) {
        RecountNode(head, a.node, -1);
        free_.Apply(a, +1);
        RecountNode(head, a.node, +1);
      }
    }
    if (HeadFits(head)) {
      time_s_ = std::max(t, now);
      return;
    }
  }
}

bool BackfillReservation::Take(const PodRequest& head, const Placement& placement) {
  auto apply = [&](int sign) {
    for (const NodeAssignment& a : placement.assignments) {
      RecountNode(head, a.node, -1);
      free_.Apply(a, sign);
      RecountNode(head, a.node, +1);
    }
  };
  apply(-1);
  if (HeadFits(head)) return true;
  apply(+1);
  return false;
}

}  // namespace tidal
