#include "cluster/cluster_state.h"

#include <algorithm>
#include <atomic>
#include <functional>
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
  cordoned_.push_back(0);
  gpu_free_.insert(gpu_free_.end(), static_cast<size_t>(spec.gpu_count), kMilliPerGpu);
  // A node added once devices are in MIG mode: its devices are not.
  if (!mig_index_.empty()) mig_index_.resize(gpu_free_.size(), -1);
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
    // Its free capacity reads 0, so the checks below would refuse most
    // placements anyway; this one also refuses what takes nothing from the
    // pool (idle MIG instances, empty requests) and says why.
    if (cordoned(a.node)) {
      return MakeError(ErrorCode::kUnschedulable,
                       "node '{}' is cordoned (drained); it takes no new work until it is uncordoned", names_[a.node]);
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
  for (const auto& a : placement.assignments)
    if (!a.mig.empty()) TIDAL_RETURN_IF_ERROR(CanBindMig(a));
  return Ok();
}

void ClusterState::TakeDevice(NodeId n, int32_t dev, int32_t take) {
  int32_t& free = gpu_free_[static_cast<size_t>(gpu_offset_[n] + dev)];
  const bool was_whole = free == kMilliPerGpu;
  free -= take;
  const bool is_whole = free == kMilliPerGpu;
  const int32_t delta = static_cast<int32_t>(is_whole) - static_cast<int32_t>(was_whole);
  free_whole_[n] += delta;
  gpu_milli_free_[n] -= take;
  total_gpu_milli_free_ -= take;
  if (delta != 0 && topo_) {
    for (topo::DomainId d = gpu_domain(n, dev); d != topo::kNoDomain; d = topo_->parent(d)) dom_free_gpus_[static_cast<size_t>(d)] += delta;
  }
}

void ClusterState::Apply(const NodeAssignment& a, int sign) {
  const NodeId n = a.node;
  if (sign < 0 && cordoned(n)) {
    // A drained node's released capacity stays out of the pool: into the
    // hold, which Uncordon returns. (Nothing binds on a cordoned node, so
    // sign > 0 never gets here.)
    CordonHold& h = holds_.at(n);
    h.cpu_milli += a.cpu_milli;
    h.memory_mib += a.memory_mib;
    for (size_t i = 0; i < a.gpus.size(); ++i) {
      h.gpu_milli[static_cast<size_t>(a.gpus[i])] += a.gpu_milli[i];
      cordoned_gpu_milli_ += a.gpu_milli[i];
    }
    ++version_[n];
    return;
  }
  const int32_t old_whole = free_whole_[n];
  cpu_free_[n] -= sign * a.cpu_milli;
  mem_free_[n] -= sign * a.memory_mib;
  for (size_t i = 0; i < a.gpus.size(); ++i) TakeDevice(n, a.gpus[i], sign * a.gpu_milli[i]);
  if (topo_ && free_whole_[n] != old_whole) UpdateHostAggregates(n, old_whole);
  ++version_[n];
}

void ClusterState::UpdateHostAggregates(NodeId n, int32_t old_whole) {
  const topo::Topology& t = *topo_;
  const topo::DomainId host = t.host(host_of(n));
  const int32_t now = free_whole_[n];
  const bool was_free = gpu_count_[n] > 0 && old_whole == gpu_count_[n];
  const bool is_free = gpu_count_[n] > 0 && now == gpu_count_[n];
  if (was_free != is_free) {
    const int32_t delta = is_free ? 1 : -1;
    for (topo::DomainId d = host; d != topo::kNoDomain; d = t.parent(d)) dom_free_hosts_[static_cast<size_t>(d)] += delta;
  }
  {
    const size_t from = static_cast<size_t>(std::min(old_whole, kFreeHistogram - 1));
    const size_t to = static_cast<size_t>(std::min(now, kFreeHistogram - 1));
    const int32_t cls = host_class_[static_cast<size_t>(host_of(n))];
    if (from != to && cls >= 0) {
      for (topo::DomainId d = host; d != topo::kNoDomain; d = t.parent(d)) {
        int32_t* h = Hist(d, cls);
        --h[from];
        ++h[to];
      }
    }
  }
  dom_max_host_free_[static_cast<size_t>(host)] = now;
  // Upwards while the maximum moves: a rise only needs a comparison, a fall
  // a recount over the children.
  for (topo::DomainId d = t.parent(host); d != topo::kNoDomain; d = t.parent(d)) {
    int32_t& m = dom_max_host_free_[static_cast<size_t>(d)];
    int32_t next = 0;
    if (now > old_whole) {
      next = std::max(m, now);
    } else {
      for (topo::DomainId k : t.children(d)) next = std::max(next, dom_max_host_free_[static_cast<size_t>(k)]);
    }
    if (next == m) break;
    m = next;
  }
}

Status ClusterState::AttachTopology(std::shared_ptr<const topo::Topology> topology) {
  if (!topology) return MakeError(ErrorCode::kInvalidArgument, "no topology given");
  if (!allocations_.empty()) {
    return MakeError(ErrorCode::kFailedPrecondition, "a topology can only be attached to an empty cluster ({} jobs hold capacity)",
                     allocations_.size());
  }
  const topo::Topology& t = *topology;
  std::vector<std::string> missing, extra;
  std::vector<int32_t> node_host(static_cast<size_t>(num_nodes()), -1), host_node(static_cast<size_t>(t.num_hosts()), -1);
  for (NodeId n = 0; n < num_nodes(); ++n) {
    auto h = t.FindHost(names_[n]);
    if (!h) {
      missing.push_back(names_[n]);
      continue;
    }
    if (t.host_gpus(*h) != gpu_count_[n]) {
      return MakeError(ErrorCode::kInvalidArgument, "{}: host '{}' has {} GPUs in the topology but {} in the node list",
                       t.source(), names_[n], t.host_gpus(*h), gpu_count_[n]);
    }
    node_host[static_cast<size_t>(n)] = *h;
    host_node[static_cast<size_t>(*h)] = n;
  }
  for (int32_t h = 0; h < t.num_hosts(); ++h)
    if (host_node[static_cast<size_t>(h)] < 0) extra.push_back(t.domain(t.host(h)).name);
  if (!missing.empty() || !extra.empty()) {
    auto first = [](const std::vector<std::string>& v) {
      std::string s;
      for (size_t i = 0; i < v.size() && i < 5; ++i) s += (i ? ", " : "") + v[i];
      if (v.size() > 5) s += fmt::format(" and {} more", v.size() - 5);
      return s;
    };
    std::string msg = fmt::format("{}: the topology's hosts and the node list differ", t.source());
    if (!missing.empty()) msg += fmt::format("; {} node(s) not in the topology: {}", missing.size(), first(missing));
    if (!extra.empty()) msg += fmt::format("; {} topology host(s) not in the node list: {}", extra.size(), first(extra));
    msg += "; node names must match exactly";
    return std::unexpected(Error{ErrorCode::kInvalidArgument, std::move(msg)});
  }
  topo_ = std::move(topology);
  node_host_ = std::move(node_host);
  host_node_ = std::move(host_node);
  const size_t nd = static_cast<size_t>(t.num_domains());
  dom_free_gpus_.assign(nd, 0);
  dom_free_hosts_.assign(nd, 0);
  dom_max_host_free_.assign(nd, 0);
  dom_model_.assign(nd, kNoGpuModel);
  dom_hist_slot_.assign(nd, -1);
  int32_t slots = 0;
  for (size_t d = 0; d < nd; ++d)
    if (topo::LevelIndex(t.level(static_cast<topo::DomainId>(d))) >= topo::LevelIndex(topo::Level::kNode)) dom_hist_slot_[d] = slots++;
  host_sizes_.clear();
  for (NodeId n = 0; n < num_nodes(); ++n) host_sizes_.push_back(gpu_count_[n]);
  std::sort(host_sizes_.begin(), host_sizes_.end(), std::greater<>());
  host_sizes_.erase(std::unique(host_sizes_.begin(), host_sizes_.end()), host_sizes_.end());
  host_class_.assign(static_cast<size_t>(t.num_hosts()), -1);
  for (int32_t h = 0; h < t.num_hosts(); ++h) {
    const int32_t g = gpu_count_[host_node_[static_cast<size_t>(h)]];
    host_class_[static_cast<size_t>(h)] = static_cast<int32_t>(std::find(host_sizes_.begin(), host_sizes_.end(), g) - host_sizes_.begin());
  }
  const size_t classes = host_sizes_.size();
  dom_free_hist_.assign(static_cast<size_t>(slots) * classes * kFreeHistogram, 0);
  for (size_t d = nd; d-- > 0;) {
    const auto id = static_cast<topo::DomainId>(d);
    if (t.level(id) == topo::Level::kGpu) {
      const NodeId n = host_node_[static_cast<size_t>(t.host_of(id))];
      dom_free_gpus_[d] = gpu_free_[static_cast<size_t>(gpu_offset_[n] + t.domain(id).local_index)] == kMilliPerGpu;
    }
    if (t.level(id) == topo::Level::kNode) {
      const NodeId n = host_node_[static_cast<size_t>(t.host_index(id))];
      dom_free_hosts_[d] = gpu_count_[n] > 0 && free_whole_[n] == gpu_count_[n];
      dom_max_host_free_[d] = free_whole_[n];
      dom_model_[d] = gpu_model_[n];
      if (const int32_t cls = host_class_[static_cast<size_t>(t.host_index(id))]; cls >= 0)
        ++Hist(id, cls)[std::min(free_whole_[n], kFreeHistogram - 1)];
    }
    const topo::DomainId p = t.parent(id);
    if (p == topo::kNoDomain) continue;
    const auto pi = static_cast<size_t>(p);
    dom_free_gpus_[pi] += dom_free_gpus_[d];
    if (t.level(id) != topo::Level::kGpu && topo::LevelIndex(t.level(id)) >= topo::LevelIndex(topo::Level::kNode)) {
      dom_free_hosts_[pi] += dom_free_hosts_[d];
      dom_max_host_free_[pi] = std::max(dom_max_host_free_[pi], dom_max_host_free_[d]);
      for (size_t cls = 0; cls < classes; ++cls)
        for (int32_t k = 0; k < kFreeHistogram; ++k) Hist(p, static_cast<int32_t>(cls))[k] += Hist(id, static_cast<int32_t>(cls))[k];
      const GpuModelId m = dom_model_[d];
      if (m != kNoGpuModel) {
        GpuModelId& pm = dom_model_[pi];
        pm = pm == kNoGpuModel ? m : (pm == m ? pm : kMixedGpuModels);
      }
    }
  }
  return Ok();
}

Status ClusterState::Bind(JobId job, Placement placement) {
  if (allocations_.contains(job)) {
    return MakeError(ErrorCode::kFailedPrecondition,
                     "job {} is already bound; unbind it before binding it again", job);
  }
  TIDAL_RETURN_IF_ERROR(CanBind(placement));
  if (placement.assignments.size() > 1) {
    for (const auto& a : placement.assignments)
      if (!a.mig.empty())
        return MakeError(ErrorCode::kInvalidArgument, "job {}: a MIG job holds instances on one node only", job);
  }
  for (const auto& a : placement.assignments) {
    Apply(a, +1);
    if (!a.mig.empty()) ApplyMig(a, job, +1);
  }
  allocations_.emplace(job, std::move(placement));
  return Ok();
}

Status ClusterState::Unbind(JobId job) {
  auto it = allocations_.find(job);
  if (it == allocations_.end()) {
    return MakeError(ErrorCode::kNotFound, "job {} holds no allocation", job);
  }
  for (const auto& a : it->second.assignments) {
    Apply(a, -1);
    if (!a.mig.empty()) ApplyMig(a, job, -1);
  }
  allocations_.erase(it);
  return Ok();
}

int64_t ClusterState::cordon_gpu_milli(NodeId n) const {
  if (!cordoned(n)) return 0;
  int64_t sum = 0;
  for (int32_t m : holds_.at(n).gpu_milli) sum += m;
  return sum;
}

Status ClusterState::Cordon(NodeId n) {
  if (n < 0 || n >= num_nodes()) {
    return MakeError(ErrorCode::kInvalidArgument, "cordon: node #{} does not exist (the cluster has {} nodes)", n, num_nodes());
  }
  if (cordoned(n)) return MakeError(ErrorCode::kFailedPrecondition, "node '{}' is already cordoned", names_[n]);
  // Everything free goes into the hold. A device in MIG mode has 0 free
  // milli (it left the pool on entering MIG mode), so it holds 0 here.
  CordonHold h{cpu_free_[n], mem_free_[n], std::vector<int32_t>(static_cast<size_t>(gpu_count_[n]), 0)};
  cpu_free_[n] = 0;
  mem_free_[n] = 0;
  const int32_t old_whole = free_whole_[n];
  for (int32_t d = 0; d < gpu_count_[n]; ++d) {
    const int32_t free = gpu_free_[static_cast<size_t>(gpu_offset_[n] + d)];
    h.gpu_milli[static_cast<size_t>(d)] = free;
    cordoned_gpu_milli_ += free;
    TakeDevice(n, d, free);
  }
  if (topo_ && free_whole_[n] != old_whole) UpdateHostAggregates(n, old_whole);
  holds_.emplace(n, std::move(h));
  cordoned_[static_cast<size_t>(n)] = 1;
  ++num_cordoned_;
  ++version_[n];
  return Ok();
}

Status ClusterState::Uncordon(NodeId n) {
  if (n < 0 || n >= num_nodes()) {
    return MakeError(ErrorCode::kInvalidArgument, "uncordon: node #{} does not exist (the cluster has {} nodes)", n, num_nodes());
  }
  if (!cordoned(n)) return MakeError(ErrorCode::kFailedPrecondition, "node '{}' is not cordoned", names_[n]);
  auto it = holds_.find(n);
  const CordonHold& h = it->second;
  cpu_free_[n] += h.cpu_milli;
  mem_free_[n] += h.memory_mib;
  const int32_t old_whole = free_whole_[n];
  for (int32_t d = 0; d < gpu_count_[n]; ++d) {
    const int32_t held = h.gpu_milli[static_cast<size_t>(d)];
    cordoned_gpu_milli_ -= held;
    TakeDevice(n, d, -held);
  }
  if (topo_ && free_whole_[n] != old_whole) UpdateHostAggregates(n, old_whole);
  holds_.erase(it);
  cordoned_[static_cast<size_t>(n)] = 0;
  --num_cordoned_;
  ++version_[n];
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
  for (size_t f = 0; f < mig_index_.size(); ++f)
    if (mig_index_[f] >= 0) gpu[f] -= kMilliPerGpu;  // a MIG-mode device is out of the milli pool
  // A cordoned node's hold is what would be free without the cordon; what
  // is free there is then 0.
  int32_t cordoned_nodes = 0;
  int64_t held_milli = 0;
  for (NodeId n = 0; n < num_nodes(); ++n) {
    auto it = holds_.find(n);
    if (!cordoned(n)) {
      if (it != holds_.end()) return MakeError(ErrorCode::kInternal, "node '{}': a cordon hold but not cordoned", names_[n]);
      continue;
    }
    ++cordoned_nodes;
    if (it == holds_.end()) return MakeError(ErrorCode::kInternal, "node '{}': cordoned without a hold", names_[n]);
    const CordonHold& h = it->second;
    if (h.cpu_milli != cpu[n] || h.memory_mib != mem[n]) {
      return MakeError(ErrorCode::kInternal, "node '{}': cordon holds {} milli-CPU and {} MiB, the recount {} and {}", names_[n],
                       h.cpu_milli, h.memory_mib, cpu[n], mem[n]);
    }
    cpu[n] = 0;
    mem[n] = 0;
    for (int32_t d = 0; d < gpu_count_[n]; ++d) {
      int32_t& g = gpu[static_cast<size_t>(gpu_offset_[n] + d)];
      if (h.gpu_milli[static_cast<size_t>(d)] != g) {
        return MakeError(ErrorCode::kInternal, "node '{}' GPU {}: cordon holds {} milli, the recount {}", names_[n], d,
                         h.gpu_milli[static_cast<size_t>(d)], g);
      }
      held_milli += g;
      g = 0;
    }
  }
  if (cordoned_nodes != num_cordoned_ || held_milli != cordoned_gpu_milli_) {
    return MakeError(ErrorCode::kInternal, "cordon totals drifted (nodes {} vs {}, held milli-GPU {} vs {})", num_cordoned_,
                     cordoned_nodes, cordoned_gpu_milli_, held_milli);
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
  TIDAL_RETURN_IF_ERROR(CheckMigInvariants());
  if (!topo_) return Ok();
  const topo::Topology& t = *topo_;
  const size_t nd = static_cast<size_t>(t.num_domains());
  const size_t classes = host_sizes_.size();
  const size_t row = classes * kFreeHistogram;
  std::vector<int32_t> gpus(nd, 0), hosts(nd, 0), maxh(nd, 0), hist(nd * row, 0);
  for (size_t d = nd; d-- > 0;) {
    const auto id = static_cast<topo::DomainId>(d);
    if (t.level(id) == topo::Level::kGpu) {
      const NodeId n = host_node_[static_cast<size_t>(t.host_of(id))];
      gpus[d] = gpu_free_[static_cast<size_t>(gpu_offset_[n] + t.domain(id).local_index)] == kMilliPerGpu;
    }
    if (t.level(id) == topo::Level::kNode) {
      const NodeId n = host_node_[static_cast<size_t>(t.host_index(id))];
      hosts[d] = gpu_count_[n] > 0 && free_whole_[n] == gpu_count_[n];
      maxh[d] = free_whole_[n];
      const int32_t cls = static_cast<int32_t>(std::find(host_sizes_.begin(), host_sizes_.end(), gpu_count_[n]) - host_sizes_.begin());
      if (cls >= 0) ++hist[d * row + static_cast<size_t>(cls) * kFreeHistogram + static_cast<size_t>(std::min(free_whole_[n], kFreeHistogram - 1))];
    }
    if (topo::LevelIndex(t.level(id)) >= topo::LevelIndex(topo::Level::kNode) &&
        !std::equal(hist.begin() + static_cast<std::ptrdiff_t>(d * row), hist.begin() + static_cast<std::ptrdiff_t>((d + 1) * row),
                    dom_free_hist_.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(dom_hist_slot_[d]) * row))) {
      return MakeError(ErrorCode::kInternal, "topology domain '{}': free-host histogram drifted", t.DomainName(id));
    }
    if (gpus[d] != dom_free_gpus_[d] || (topo::LevelIndex(t.level(id)) >= topo::LevelIndex(topo::Level::kNode) &&
                                         (hosts[d] != dom_free_hosts_[d] || maxh[d] != dom_max_host_free_[d]))) {
      return MakeError(ErrorCode::kInternal, "topology domain '{}': free aggregates drifted (gpus {} vs {}, hosts {} vs {}, max {} vs {})",
                       t.DomainName(id), dom_free_gpus_[d], gpus[d], dom_free_hosts_[d], hosts[d], dom_max_host_free_[d], maxh[d]);
    }
    const topo::DomainId p = t.parent(id);
    if (p == topo::kNoDomain) continue;
    gpus[static_cast<size_t>(p)] += gpus[d];
    if (t.level(id) != topo::Level::kGpu && topo::LevelIndex(t.level(id)) >= topo::LevelIndex(topo::Level::kNode)) {
      hosts[static_cast<size_t>(p)] += hosts[d];
      maxh[static_cast<size_t>(p)] = std::max(maxh[static_cast<size_t>(p)], maxh[d]);
      for (size_t k = 0; k < row; ++k) hist[static_cast<size_t>(p) * row + k] += hist[d * row + k];
    }
  }
  return Ok();
}

}  // namespace tidal
