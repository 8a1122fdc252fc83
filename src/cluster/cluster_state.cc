#include "cluster/cluster_state.h"

#include <atomic>
#include <limits>

namespace tidal {

uint64_t StateInstanceId::Next() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

GpuModelId GpuModelRegistry::Intern(std::string_view name) {
  if (auto it = ids_.find(std::string(name)); it != ids_.end()) return it->second;
  auto id = static_cast<GpuModelId>(names_.size());
  names_.emplace_back(name);
  ids_.emplace(std::string(name), id);
  return id;
}

GpuModelId GpuModelRegistry::Find(std::string_view name) const {
  auto it = ids_.find(std::string(name));
  return it == ids_.end() ? kNoGpuModel : it->second;
}

int64_t Placement::TotalGpuMilli() const {
  int64_t total = 0;
  for (const auto& a : assignments)
    for (int32_t m : a.gpu_milli) total += m;
  return total;
}

Status ClusterState::AddNode(const NodeSpec& spec) {
  if (spec.name.empty()) {
    return MakeError(ErrorCode::kInvalidArgument, "node #{}: empty name; every node needs a unique name",
                     names_.size());
  }
  if (ids_.contains(spec.name)) {
    return MakeError(ErrorCode::kInvalidArgument, "node '{}': duplicate name; node names must be unique",
                     spec.name);
  }
  if (spec.cpu_milli < 0 || spec.memory_mib < 0 || spec.gpu_count < 0) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "node '{}': negative capacity (cpu_milli={}, memory_mib={}, gpus={})", spec.name,
                     spec.cpu_milli, spec.memory_mib, spec.gpu_count);
  }
  if (spec.gpu_count > 0 && spec.gpu_model.empty()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "node '{}': has {} GPUs but no GPU model; give the model name", spec.name,
                     spec.gpu_count);
  }
  const auto id = static_cast<NodeId>(names_.size());
  names_.push_back(spec.name);
  ids_.emplace(spec.name, id);
  gpu_model_.push_back(spec.gpu_count > 0 ? models_.Intern(spec.gpu_model) : kNoGpuModel);
  cpu_cap_.push_back(spec.cpu_milli);
  cpu_free_.push_back(spec.cpu_milli);
  mem_cap_.push_back(spec.memory_mib);
  mem_free_.push_back(spec.memory_mib);
  gpu_count_.push_back(spec.gpu_count);
  gpu_offset_.push_back(static_cast<int32_t>(gpu_free_.size()));
  free_whole_.push_back(spec.gpu_count);
  gpu_milli_free_.push_back(int64_t{spec.gpu_count} * kMilliPerGpu);
  version_.push_back(0);
  gpu_free_.insert(gpu_free_.end(), static_cast<size_t>(spec.gpu_count), kMilliPerGpu);
  total_gpus_ += spec.gpu_count;
  total_cpu_ += spec.cpu_milli;
  total_gpu_milli_free_ += int64_t{spec.gpu_count} * kMilliPerGpu;
  return Ok();
}

Result<ClusterState> ClusterState::Build(const std::vector<NodeSpec>& nodes) {
  ClusterState state;
  for (const auto& n : nodes) TIDAL_RETURN_IF_ERROR(state.AddNode(n));
  return state;
}

std::optional<NodeId> ClusterState::FindNode(std::string_view name) const {
  auto it = ids_.find(std::string(name));
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

const Placement* ClusterState::FindAllocation(JobId job) const {
  auto it = allocations_.find(job);
  return it == allocations_.end() ? nullptr : &it->second;
}

Status ClusterState::CanBind(const Placement& placement) const {
  // Sum what the placement takes per node and per device first, so a
  // placement that names the same device twice is judged on its total.
  std::unordered_map<NodeId, std::pair<int64_t, int64_t>> node_take;
  std::unordered_map<int64_t, int64_t> gpu_take;  // flat device index -> milli
  for (const auto& a : placement.assignments) {
    if (a.node < 0 || a.node >= num_nodes()) {
      return MakeError(ErrorCode::kInvalidArgument, "placement names node #{}, which does not exist",
                       a.node);
    }
    if (a.cpu_milli < 0 || a.memory_mib < 0) {
      return MakeError(ErrorCode::kInvalidArgument, "placement on node '{}' takes a negative amount",
                       names_[a.node]);
    }
    if (a.gpus.size() != a.gpu_milli.size()) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "placement on node '{}': {} devices but {} milli-GPU amounts", names_[a.node],
                       a.gpus.size(), a.gpu_milli.size());
    }
    auto& t = node_take[a.node];
    t.first += a.cpu_milli;
    t.second += a.memory_mib;
    for (size_t i = 0; i < a.gpus.size(); ++i) {
      const int32_t dev = a.gpus[i];
      if (dev < 0 || dev >= gpu_count_[a.node]) {
        return MakeError(ErrorCode::kInvalidArgument, "placement names GPU {} on node '{}', which has {}",
                         dev, names_[a.node], gpu_count_[a.node]);
      }
      if (a.gpu_milli[i] <= 0 || a.gpu_milli[i] > kMilliPerGpu) {
        return MakeError(ErrorCode::kInvalidArgument,
                         "placement takes {} milli-GPU from GPU {} on node '{}'; must be in (0, {}]",
                         a.gpu_milli[i], dev, names_[a.node], kMilliPerGpu);
      }
      gpu_take[int64_t{gpu_offset_[a.node]} + dev] += a.gpu_milli[i];
    }
  }
  for (const auto& [node, take] : node_take) {
    if (take.first > cpu_free_[node]) {
      return MakeError(ErrorCode::kUnschedulable, "node '{}': needs {} milli-CPU, {} free", names_[node],
                       take.first, cpu_free_[node]);
    }
    if (take.second > mem_free_[node]) {
      return MakeError(ErrorCode::kUnschedulable, "node '{}': needs {} MiB memory, {} free", names_[node],
                       take.second, mem_free_[node]);
    }
  }
  for (const auto& [flat, milli] : gpu_take) {
    if (milli > gpu_free_[static_cast<size_t>(flat)]) {
      return MakeError(ErrorCode::kUnschedulable, "GPU slot {} needs {} milli-GPU, {} free", flat, milli,
                       gpu_free_[static_cast<size_t>(flat)]);
    }
  }
  return Ok();
}

void ClusterState::Apply(const NodeAssignment& a, int sign) {
  const NodeId n = a.node;
  cpu_free_[n] -= sign * a.cpu_milli;
  mem_free_[n] -= sign * a.memory_mib;
  for (size_t i = 0; i < a.gpus.size(); ++i) {
    int32_t& free = gpu_free_[static_cast<size_t>(gpu_offset_[n] + a.gpus[i])];
    const bool was_whole = free == kMilliPerGpu;
    free -= sign * a.gpu_milli[i];
    const bool is_whole = free == kMilliPerGpu;
    free_whole_[n] += static_cast<int32_t>(is_whole) - static_cast<int32_t>(was_whole);
    gpu_milli_free_[n] -= sign * a.gpu_milli[i];
    total_gpu_milli_free_ -= sign * a.gpu_milli[i];
  }
  ++version_[n];
}

Status ClusterState::Bind(JobId job, Placement placement) {
  if (allocations_.contains(job)) {
    return MakeError(ErrorCode::kFailedPrecondition,
                     "job {} is already bound; unbind it before binding it again", job);
  }
  TIDAL_RETURN_IF_ERROR(CanBind(placement));
  for (const auto& a : placement.assignments) Apply(a, +1);
  allocations_.emplace(job, std::move(placement));
  return Ok();
}

Status ClusterState::Unbind(JobId job) {
  auto it = allocations_.find(job);
  if (it == allocations_.end()) {
    return MakeError(ErrorCode::kNotFound, "job {} holds no allocation", job);
  }
  for (const auto& a : it->second.assignments) Apply(a, -1);
  allocations_.erase(it);
  return Ok();
}

Status ClusterState::CheckInvariants() const {
  int64_t total_free = 0;
  std::vector<int64_t> cpu(cpu_cap_), mem(mem_cap_);
  std::vector<int32_t> gpu(gpu_free_.size(), kMilliPerGpu);
  for (const auto& [job, p] : allocations_) {
    for (const auto& a : p.assignments) {
      cpu[a.node] -= a.cpu_milli;
      mem[a.node] -= a.memory_mib;
      for (size_t i = 0; i < a.gpus.size(); ++i) gpu[gpu_offset_[a.node] + a.gpus[i]] -= a.gpu_milli[i];
    }
  }
  for (NodeId n = 0; n < num_nodes(); ++n) {
    if (cpu[n] != cpu_free_[n] || mem[n] != mem_free_[n]) {
      return MakeError(ErrorCode::kInternal, "node '{}': free CPU/memory drifted from allocations",
                       names_[n]);
    }
    if (cpu_free_[n] < 0 || cpu_free_[n] > cpu_cap_[n] || mem_free_[n] < 0 || mem_free_[n] > mem_cap_[n]) {
      return MakeError(ErrorCode::kInternal, "node '{}': CPU/memory outside [0, capacity]", names_[n]);
    }
    int32_t whole = 0;
    int64_t milli = 0;
    for (int32_t d = 0; d < gpu_count_[n]; ++d) {
      const int32_t f = gpu_free_[gpu_offset_[n] + d];
      if (f != gpu[gpu_offset_[n] + d]) {
        return MakeError(ErrorCode::kInternal, "node '{}' GPU {}: free milli drifted", names_[n], d);
      }
      if (f < 0 || f > kMilliPerGpu) {
        return MakeError(ErrorCode::kInternal, "node '{}' GPU {}: over-allocated ({} free)", names_[n], d, f);
      }
      whole += f == kMilliPerGpu;
      milli += f;
    }
    if (whole != free_whole_[n] || milli != gpu_milli_free_[n]) {
      return MakeError(ErrorCode::kInternal, "node '{}': GPU aggregates drifted", names_[n]);
    }
    total_free += milli;
  }
  if (total_free != total_gpu_milli_free_) {
    return MakeError(ErrorCode::kInternal, "cluster free milli-GPU total drifted");
  }
  return Ok();
}

}  // namespace tidal
