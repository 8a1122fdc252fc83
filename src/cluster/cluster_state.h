// ClusterState: the capacity of every node and what is allocated on it.
//
// Invariants (checked by Bind/Unbind and by property tests):
//  * 0 <= free <= capacity for CPU (milli-cores), memory (MiB) and each GPU
//    (milli-GPU, capacity 1000 per device); all quantities are integers.
//  * Every allocation is keyed by its job id and recorded exactly once; the sum
//    of allocations on a node plus its free capacity equals its capacity.
//  * Per-node aggregates (free whole GPUs, free milli-GPU) always equal what the
//    per-device values imply; cluster totals equal the sum over nodes.
//  * Each node carries a version that increases on every change, so plugins can
//    cache per-node results and know when they are stale.
//  * With a topology attached (AttachTopology), every domain's free-capacity
//    aggregates — free whole GPUs, fully free hosts, the largest free-GPU count
//    on one host — equal a recount from the per-device values; they are kept
//    incrementally, O(depth) per device change (plus the children of the
//    ancestors whose largest-free-host value moves).
//  * A cordoned (drained) node takes no new binding. Its free CPU, memory and
//    per-device milli-GPU are held by the cordon, not free: they read 0 in
//    every aggregate above, so placers stop seeing the node, and what its
//    jobs release goes into the hold too. Per node and device,
//    free + held by the cordon + allocated = capacity.
//
// Storage is struct-of-arrays indexed by NodeId, with the GPUs of all nodes in
// one flat array (node n's devices are gpu_offset_[n] .. +gpu_count(n)).
// The scheduler is the only writer; everything else reads through const&.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "mig/geometry.h"
#include "topology/topology.h"

namespace tidal {

using NodeId = int32_t;
using GpuModelId = int16_t;
using JobId = int64_t;

inline constexpr int32_t kMilliPerGpu = 1000;
inline constexpr GpuModelId kNoGpuModel = -1;
inline constexpr GpuModelId kMixedGpuModels = -2;

// Interns GPU model names ("T4", "V100M32", "H100") to small integer ids, so
// type constraints compare integers on the hot path.
class GpuModelRegistry {
 public:
  GpuModelId Intern(std::string_view name);
  GpuModelId Find(std::string_view name) const;  // kNoGpuModel if unknown
  const std::string& Name(GpuModelId id) const { return names_[static_cast<size_t>(id)]; }
  size_t size() const { return names_.size(); }

 private:
  std::vector<std::string> names_;
  std::unordered_map<std::string, GpuModelId> ids_;
};

struct NodeSpec {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t gpu_count = 0;
  std::string gpu_model;  // empty for a CPU-only node
};

// One MIG instance a job holds: device `gpu` (local to the node), which is
// in MIG mode, instance `profile` (index into the device's mig::Geometry)
// starting at memory slice `start`.
struct MigSlice {
  int32_t gpu = 0;
  int32_t profile = 0;
  int32_t start = 0;
  friend bool operator==(const MigSlice&, const MigSlice&) = default;
};

// What one job holds on one node. gpu_milli[i] is taken from device gpus[i];
// `mig` lists MIG instances (a MIG job holds instances, never milli-GPU).
struct NodeAssignment {
  NodeId node = -1;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  std::vector<int32_t> gpus;       // device indices local to the node
  std::vector<int32_t> gpu_milli;  // milli-GPU taken from each of those devices
  std::vector<MigSlice> mig;       // MIG instances taken (MIG jobs only)
};

// A device in MIG mode: its layout and who holds each instance. The whole
// device is then out of the milli-GPU pool (its free milli is 0, so no
// MIG-unaware job can land on it); its instances are the schedulable units.
struct MigDevice {
  const mig::Geometry* geometry = nullptr;
  mig::Layout layout;          // normalized (by start slice)
  std::vector<JobId> owner;    // per instance of layout; kNoOwner = free
  static constexpr JobId kNoOwner = -1;
  int busy = 0;                // compute slices held by jobs (kept by ClusterState)
  int FindInstance(int32_t profile, int32_t start) const;
  int BusyCompute() const { return busy; }
  int CountBusyCompute() const;  // the same, counted from owner (invariant checks)
};

// Counters of MIG reconfigurations (mode changes need the GPU idle; instance
// creations and destructions leave the other instances running).
struct MigCounters {
  int64_t mode_changes = 0;
  int64_t instances_created = 0;
  int64_t instances_destroyed = 0;
};

// A whole job's placement: one assignment per node it spans (gangs span many).
struct Placement {
  std::vector<NodeAssignment> assignments;
  int64_t TotalGpuMilli() const;
};

// Identifies one ClusterState object for caches keyed by node version: a copy
// (e.g. a what-if for preemption) gets a fresh id, so versions of the copy and
// of the original are never confused. A move keeps the id.
class StateInstanceId {
 public:
  StateInstanceId() : value_(Next()) {}
  StateInstanceId(const StateInstanceId&) : value_(Next()) {}
  StateInstanceId& operator=(const StateInstanceId&) {
    value_ = Next();
    return *this;
  }
  StateInstanceId(StateInstanceId&&) noexcept = default;
  StateInstanceId& operator=(StateInstanceId&&) noexcept = default;
  uint64_t value() const { return value_; }

 private:
  static uint64_t Next();
  uint64_t value_;
};

class ClusterState {
 public:
  ClusterState() = default;

  // Adds nodes; fails on duplicate names, negative sizes or an unknown layout.
  Status AddNode(const NodeSpec& spec);
  static Result<ClusterState> Build(const std::vector<NodeSpec>& nodes);

  // --- read access -------------------------------------------------------
  int32_t num_nodes() const { return static_cast<int32_t>(names_.size()); }
  const std::string& node_name(NodeId n) const { return names_[n]; }
  std::optional<NodeId> FindNode(std::string_view name) const;
  GpuModelId gpu_model(NodeId n) const { return gpu_model_[n]; }
  const GpuModelRegistry& models() const { return models_; }
  GpuModelRegistry& mutable_models() { return models_; }

  int64_t cpu_capacity(NodeId n) const { return cpu_cap_[n]; }
  int64_t cpu_free(NodeId n) const { return cpu_free_[n]; }
  int64_t memory_capacity(NodeId n) const { return mem_cap_[n]; }
  int64_t memory_free(NodeId n) const { return mem_free_[n]; }
  int32_t gpu_count(NodeId n) const { return gpu_count_[n]; }
  // Free milli-GPU of each device of node n, in device-index order.
  std::span<const int32_t> gpu_free(NodeId n) const {
    return {gpu_free_.data() + gpu_offset_[n], static_cast<size_t>(gpu_count_[n])};
  }
  int32_t free_whole_gpus(NodeId n) const { return free_whole_[n]; }
  int64_t gpu_milli_free(NodeId n) const { return gpu_milli_free_[n]; }
  uint64_t version(NodeId n) const { return version_[n]; }
  // Which object this is; with version(n), a cache key that survives copies.
  uint64_t instance_id() const { return instance_.value(); }

  int64_t total_gpus() const { return total_gpus_; }
  int64_t total_gpu_milli() const { return total_gpus_ * kMilliPerGpu; }
  int64_t total_gpu_milli_free() const { return total_gpu_milli_free_; }
  // Milli-GPU not free for scheduling: held by jobs, by devices in MIG mode
  // (mig_idle_compute) and by cordons (cordoned_gpu_milli); gpus_in_use
  // counts only what jobs hold.
  int64_t total_gpu_milli_allocated() const { return total_gpu_milli() - total_gpu_milli_free_; }
  int64_t total_cpu_milli() const { return total_cpu_; }

  bool HasAllocation(JobId job) const { return allocations_.contains(job); }
  const Placement* FindAllocation(JobId job) const;
  size_t num_allocations() const { return allocations_.size(); }
  // Every allocation by job id (unordered: for order-free uses such as
  // telling a fresh profile's reserve plugins what is bound).
  const std::unordered_map<JobId, Placement>& allocations() const { return allocations_; }

  // Checks that `placement` fits on the current free capacity, without changing
  // anything. The error names the node, the resource and the shortfall (or
  // that the node is cordoned).
  Status CanBind(const Placement& placement) const;

  // --- cordon (drain): no new work on a node, running jobs keep running ---
  bool cordoned(NodeId n) const { return cordoned_[static_cast<size_t>(n)] != 0; }
  int32_t num_cordoned() const { return num_cordoned_; }
  // Idle milli-GPU the cordons hold out of the pool (devices in MIG mode
  // hold none: their milli are out of the pool already).
  int64_t cordoned_gpu_milli() const { return cordoned_gpu_milli_; }
  // The same for node n alone (0 when it is not cordoned).
  int64_t cordon_gpu_milli(NodeId n) const;

  // --- writes (the scheduler is the only caller) --------------------------
  // All-or-nothing: either every assignment is applied or none is.
  Status Bind(JobId job, Placement placement);
  // Returns the job's capacity; fails if the job holds nothing. On a
  // cordoned node the capacity goes into the cordon's hold, not the pool.
  Status Unbind(JobId job);
  // Cordons node n: its free capacity goes into a hold, so nothing new binds
  // there; jobs running there keep their allocations. kInvalidArgument for an
  // unknown node, kFailedPrecondition if it is already cordoned.
  Status Cordon(NodeId n);
  // Returns the hold to the pool. kFailedPrecondition if n is not cordoned.
  Status Uncordon(NodeId n);

  // --- MIG (see MigDevice) -------------------------------------------------
  // The device's MIG state, or nullptr when it is not in MIG mode.
  const MigDevice* mig_device(NodeId n, int32_t gpu) const {
    const int32_t i = mig_index_.empty() ? -1 : mig_index_[static_cast<size_t>(gpu_offset_[n] + gpu)];
    return i < 0 ? nullptr : &mig_[static_cast<size_t>(i)];
  }
  // Devices in MIG mode, and the compute slices of theirs no job holds.
  int64_t mig_gpus() const { return mig_gpus_; }
  // Bumped by every change of a device's MIG layout (SetMigLayout,
  // DisableMig, a Bind that creates or merges instances; not by jobs taking
  // or leaving existing ones): while it holds still, so do the instances of
  // every device, and a record of them stays true.
  uint64_t mig_layout_version() const { return mig_layout_version_; }
  // Devices of node n in MIG mode (a placer skips the others' scan).
  int32_t mig_gpus(NodeId n) const { 
    return static_cast<size_t>(n) < node_mig_gpus_.size() ? node_mig_gpus_[static_cast<size_t>(n)] : 0;
  }
  int64_t mig_idle_compute() const { return mig_idle_compute_; }
  // The same on node n: no GPU there has more free compute slices.
  int32_t mig_idle_compute(NodeId n) const {
    return static_cast<size_t>(n) < node_mig_idle_compute_.size() ? node_mig_idle_compute_[static_cast<size_t>(n)] : 0;
  }
  // GPUs in MIG mode that hold no job (their instances all free).
  int64_t idle_mig_gpus() const { return idle_mig_gpus_; }
  // GPU capacity jobs hold, in GPUs: milli-GPU allocations plus held MIG
  // instances at compute-slices / 7 (a MIG-mode device's idle instances are
  // not in use, though its milli are out of the pool; nor is what a cordon
  // holds).
  double gpus_in_use() const {
    return static_cast<double>(total_gpu_milli_allocated() - cordoned_gpu_milli_) / kMilliPerGpu -
           static_cast<double>(mig_idle_compute_) / mig::kComputeSlices;
  }
  const MigCounters& mig_counters() const { return mig_counters_; }
  // Puts a fully free device whose model has a MIG geometry into MIG mode
  // with `layout` (may be empty), or changes the layout of a device in MIG
  // mode: instances held by jobs must stay as they are; free ones may go.
  // A device of a cordoned node does not enter MIG mode (that readies it for
  // new work, which a drained node takes none of).
  Status SetMigLayout(NodeId n, int32_t gpu, const mig::Layout& layout);
  // Leaves MIG mode; no instance may be held. On a cordoned node the
  // device's milli go into the cordon's hold.
  Status DisableMig(NodeId n, int32_t gpu);

  // Recomputes every aggregate from the per-device values and compares; used
  // by tests to prove the incremental bookkeeping never drifts.
  Status CheckInvariants() const;

  // --- topology ------------------------------------------------------------
  // Attaches a topology whose hosts are exactly this cluster's nodes (same
  // names, same GPU counts; see topo::Materialize). Allowed only while
  // nothing is allocated. The error lists the first mismatching names.
  Status AttachTopology(std::shared_ptr<const topo::Topology> topology);
  bool has_topology() const { return topo_ != nullptr; }
  const topo::Topology& topology() const { return *topo_; }
  const std::shared_ptr<const topo::Topology>& topology_ptr() const { return topo_; }
  int32_t host_of(NodeId n) const { return node_host_[static_cast<size_t>(n)]; }
  NodeId node_of_host(int32_t h) const { return host_node_[static_cast<size_t>(h)]; }
  // Aggregates of domain d (any level; for sub-node domains only free GPUs).
  int32_t domain_free_gpus(topo::DomainId d) const { return dom_free_gpus_[static_cast<size_t>(d)]; }
  int32_t domain_free_hosts(topo::DomainId d) const { return dom_free_hosts_[static_cast<size_t>(d)]; }
  int32_t domain_max_host_free(topo::DomainId d) const { return dom_max_host_free_[static_cast<size_t>(d)]; }
  // Hosts under d (a host or a domain above hosts) with exactly k free whole
  // GPUs, k in [0, kFreeHistogram); hosts with more count in the last bucket.
  // Kept per host size (the distinct GPU counts of hosts, largest first), so
  // a placer finds the tightest host of a given size without a scan.
  static constexpr int32_t kFreeHistogram = 65;
  int32_t num_host_sizes() const { return static_cast<int32_t>(host_sizes_.size()); }
  int32_t host_size(int32_t size_class) const { return host_sizes_[static_cast<size_t>(size_class)]; }
  int32_t domain_hosts_with_free(topo::DomainId d, int32_t size_class, int32_t k) const {
    const int32_t slot = dom_hist_slot_[static_cast<size_t>(d)];
    if (slot < 0) return 0;  // below a host
    return dom_free_hist_[(static_cast<size_t>(slot) * host_sizes_.size() + static_cast<size_t>(size_class)) * kFreeHistogram +
                          static_cast<size_t>(std::min(k, kFreeHistogram - 1))];
  }
  int32_t domain_hosts_with_free(topo::DomainId d, int32_t k) const {
    int32_t sum = 0;
    for (int32_t c = 0; c < num_host_sizes(); ++c) sum += domain_hosts_with_free(d, c, k);
    return sum;
  }
  // The GPU model of every host under d, or kNoGpuModel if none / kMixedGpuModels.
  GpuModelId domain_model(topo::DomainId d) const { return dom_model_[static_cast<size_t>(d)]; }
  // The topology domain of device `gpu` of node n.
  topo::DomainId gpu_domain(NodeId n, int32_t gpu) const { return topo_->host_gpu(host_of(n), gpu); }

 private:
  void Apply(const NodeAssignment& a, int sign);
  // Changes device `dev` of node n's free milli by -take, keeping the
  // node, cluster and topology aggregates (not the node version).
  void TakeDevice(NodeId n, int32_t dev, int32_t take);
  Status CanBindMig(const NodeAssignment& a) const;
  void ApplyMig(const NodeAssignment& a, JobId job, int sign);
  Status CheckMigInvariants() const;
  void UpdateHostAggregates(NodeId n, int32_t old_whole);

  GpuModelRegistry models_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, NodeId> ids_;
  std::vector<GpuModelId> gpu_model_;
  std::vector<int64_t> cpu_cap_, cpu_free_, mem_cap_, mem_free_;
  std::vector<int32_t> gpu_count_, gpu_offset_, free_whole_;
  std::vector<int64_t> gpu_milli_free_;
  std::vector<uint64_t> version_;
  std::vector<int32_t> gpu_free_;
  int64_t total_gpus_ = 0;
  int64_t total_cpu_ = 0;
  int64_t total_gpu_milli_free_ = 0;
  std::unordered_map<JobId, Placement> allocations_;
  StateInstanceId instance_;

  // Per flat device: index into mig_, -1 when not in MIG mode (empty until
  // the first device enters MIG mode).
  std::vector<int32_t> mig_index_;
  std::vector<MigDevice> mig_;
  std::vector<int32_t> mig_free_slots_;  // indices of mig_ no device uses
  int64_t mig_gpus_ = 0;
  uint64_t mig_layout_version_ = 0;
  std::vector<int32_t> node_mig_gpus_;  // per node (grown when a device enters MIG mode)
  int64_t mig_idle_compute_ = 0;
  int64_t idle_mig_gpus_ = 0;
  std::vector<int32_t> node_mig_idle_compute_;  // by node, sized with node_mig_gpus_
  MigCounters mig_counters_;

  // What a cordon holds out of node n's free capacity: CPU, memory and
  // per-device milli-GPU (in device order). Only cordoned nodes have one.
  struct CordonHold {
    int64_t cpu_milli = 0;
    int64_t memory_mib = 0;
    std::vector<int32_t> gpu_milli;
  };
  std::vector<uint8_t> cordoned_;  // per node
  std::unordered_map<NodeId, CordonHold> holds_;
  int32_t num_cordoned_ = 0;
  int64_t cordoned_gpu_milli_ = 0;

  std::shared_ptr<const topo::Topology> topo_;
  std::vector<int32_t> node_host_, host_node_;
  std::vector<int32_t> dom_free_gpus_, dom_free_hosts_, dom_max_host_free_;
  // kFreeHistogram buckets per host size per host and per domain above hosts
  // (slot -1 below hosts: GPU and sub-node domains would make it ~10x larger
  // for nothing). CPU-only hosts are the size-0 class.
  std::vector<int32_t> dom_hist_slot_, dom_free_hist_;
  std::vector<int32_t> host_sizes_;   // distinct GPU counts, descending
  std::vector<int32_t> host_class_;   // per host index
  int32_t* Hist(topo::DomainId d, int32_t cls) {
    return dom_free_hist_.data() +
           (static_cast<size_t>(dom_hist_slot_[static_cast<size_t>(d)]) * host_sizes_.size() + static_cast<size_t>(cls)) * kFreeHistogram;
  }
  std::vector<GpuModelId> dom_model_;
};

}  // namespace tidal
