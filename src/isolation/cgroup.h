// cgroup v2 settings for co-located containers: from a container's tier, its
// kind (training or inference) and the node's layout (which CPUs and NUMA
// nodes are nearest each GPU, from `nvidia-smi topo -m`), the exact values
// of the interface files cpu.max, cpu.weight, cpuset.cpus, cpuset.mems,
// memory.min, memory.high, memory.max and io.max. tidal is the brain, not
// the hands: it plans these values and the writers (cgroup_writers.h) hand
// them to the manager as files, a systemd drop-in or Kubernetes resources.
//
// Formats and ranges follow the kernel's Documentation/admin-guide/
// cgroup-v2.rst and kernel/sched/core.c (docs/isolation.md cites them):
//   cpu.max      "$MAX $PERIOD" in µs, $MAX "max" for no limit; the kernel
//                takes a period of 1000..1000000 µs and a quota >= 1000 µs
//   cpu.weight   1..10000 (default 100)
//   cpuset.*     comma-separated numbers and ranges ("0-55,112-167")
//   memory.*     bytes or "max"; kept MiB multiples, so page-aligned on 4K,
//                16K and 64K pages and read back unchanged
//   io.max       "MAJ:MIN rbps=max wbps=N riops=max wiops=max"
//
// Invariants of a planned CgroupSettings: 1000 <= quota (when set), period
// in range, weight in range, memory.min <= memory.high <= memory.max, a
// non-empty cpuset.cpus inside the node and outside the inference reserve
// unless the class may use it. Same inputs, same settings: no clock, no RNG,
// every choice ordered by number.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "tenancy/tenant_tree.h"
#include "topology/readers/nvidia_smi_affinity.h"

namespace tidal::isolation {

using tenancy::Tier;

// What a container runs; tiers come from tenancy, the kind is separate so an
// inference service of any tier is told apart from training of that tier.
enum class WorkloadKind { kTraining, kInference };
Result<WorkloadKind> ParseWorkloadKind(std::string_view name);
const char* WorkloadKindName(WorkloadKind k);

struct ContainerRequest {
  std::string name;  // a DNS-1123 label: also the cgroup directory and the Kubernetes container name
  Tier tier = Tier::kStandard;
  WorkloadKind kind = WorkloadKind::kTraining;
  double cpus = 0;          // CPUs, to 1/1000
  int64_t memory_mib = 0;   // MiB
  std::vector<int> gpus;    // node-local GPU indices
  int64_t checkpoint_write_mbps = 0;  // checkpoint writes in MB/s (10^6 bytes/s); 0 = no io.max
  bool borrowed = false;    // standard tier running on borrowed quota (reclaimable, like spot)
  bool colocated_with_inference = false;  // inference containers share the node
};

struct BlockDevice {
  int major = 0;
  int minor = 0;
  std::string path;  // for systemd's IOWriteBandwidthMax=; "" takes /dev/block/MAJ:MIN
};

struct NodeLayout {
  struct Gpu {
    std::vector<int> cpus;        // nearest CPUs, sorted, unique, non-empty
    std::vector<int> numa_nodes;  // nearest NUMA node(s); empty: unknown
  };
  std::string name;   // for messages
  int cpus_total = 0;  // CPUs 0..cpus_total-1
  std::vector<Gpu> gpus;                       // by local index
  std::map<int, std::vector<int>> numa_cpus;   // NUMA node -> its CPUs
  std::map<int, int64_t> numa_memory_mib;      // NUMA node -> memory, where known
  std::vector<int> inference_reserved_cpus;    // CPUs kept for inference; the policy says who may use them
  std::optional<BlockDevice> checkpoint_device;
  std::vector<std::string> notes;
};

struct NodeLayoutOptions {
  int cpus_total = 0;  // 0: one past the highest CPU an affinity list names
  std::map<int, int64_t> numa_memory_mib;
  std::string inference_reserved_cpus;  // a cpu list, "" for none
  std::optional<BlockDevice> checkpoint_device;
};

// NUMA node -> CPUs is the union of the CPU lists of the GPUs that name that
// one node; a GPU with CPU Affinity N/A is taken as near every CPU (a note).
Result<NodeLayout> NodeLayoutFromAffinity(const topo::NodeAffinity& a, const NodeLayoutOptions& o);
Status ValidateNodeLayout(const NodeLayout& n);

// One (kind, tier) class. Quantities are per mille, so the policy is exact.
struct ClassPolicy {
  int cpu_weight = 100;             // cpu.weight, 1..10000
  int cpu_limit_permille = 1000;    // cpu.max quota, of the CPU request; 0: "max" (no limit)
  int memory_min_permille = 0;      // memory.min, of the memory request
  int memory_high_permille = 1000;  // memory.high, of memory.max; 1000: "max" (only the hard limit)
  int memory_max_permille = 1000;   // memory.max, of the memory request
  bool may_use_reserved_cpus = false;  // may run on NodeLayout::inference_reserved_cpus
};

struct IsolationPolicy {
  int64_t cpu_period_us = 100000;
  std::array<std::array<ClassPolicy, 3>, 2> classes{};  // [kind][tier]
  // cpu.max of spot or borrowed training beside inference, of its class's quota.
  int colocated_reclaimable_training_cpu_permille = 500;

  const ClassPolicy& For(WorkloadKind k, Tier t) const { return classes[static_cast<size_t>(k)][static_cast<size_t>(t)]; }
  ClassPolicy& For(WorkloadKind k, Tier t) { return classes[static_cast<size_t>(k)][static_cast<size_t>(t)]; }
};

// The numbers of docs/isolation.md ("Policy").
IsolationPolicy DefaultIsolationPolicy();
Status ValidatePolicy(const IsolationPolicy& p);

struct IoMax {
  int major = 0;
  int minor = 0;
  int64_t wbps = 0;  // bytes/s; rbps, riops and wiops stay "max"
  std::string path;  // the device node for systemd's IOWriteBandwidthMax= (BlockDevice::path or /dev/block/MAJ:MIN)
};

struct CgroupSettings {
  ContainerRequest request;              // what was planned
  std::optional<int64_t> cpu_quota_us;   // cpu.max $MAX; none: "max"
  int64_t cpu_period_us = 100000;        // cpu.max $PERIOD
  int cpu_weight = 100;
  std::vector<int> cpuset_cpus;          // never empty once planned
  std::vector<int> cpuset_mems;          // empty: not written (the parent's nodes)
  int64_t memory_min_bytes = 0;
  std::optional<int64_t> memory_high_bytes;  // none: "max"
  int64_t memory_max_bytes = 0;
  std::optional<IoMax> io_max;
  std::vector<std::string> notes;        // what the plan decided and why
};

Result<CgroupSettings> PlanCgroup(const ContainerRequest& c, const NodeLayout& n, const IsolationPolicy& p);

// A step of the co-location ladder: when inference spikes, lower the cpu.max
// quota, memory.high and io.max wbps of co-located training to the given
// fractions (0..1) of the values in `s`. Floors: the kernel's 1000 µs quota,
// memory.min (never throttle below the protection) and 1 MB/s. Inference is
// never throttled (returned unchanged, with a note). A non-finite fraction
// counts as 1 and fractions are clamped to 0..1, so any input is safe.
CgroupSettings Throttle(const CgroupSettings& s, double cpu_fraction, double memory_fraction, double io_fraction);

}  // namespace tidal::isolation
