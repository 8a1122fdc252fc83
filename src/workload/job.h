// Jobs as the scheduler sees them: what a job asks for, when it arrives and for
// how long it runs. A job is one pod (single node) or a gang of GPUs that may
// span nodes. Quantities are integers: milli-CPU, MiB, milli-GPU, seconds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cluster/cluster_state.h"
#include "topology/level.h"

namespace tidal {

// Kubernetes QoS classes plus Alibaba's LS/BE labels as they appear in traces.
enum class Qos { kUnspecified, kLatencySensitive, kBestEffort, kBurstable, kGuaranteed };

const char* QosName(Qos q);

struct Job {
  JobId id = 0;
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t num_gpu = 0;     // devices requested
  int32_t gpu_milli = 0;   // per device; < 1000 only for a 1-GPU sharing job
  std::vector<std::string> gpu_spec;  // allowed GPU models; empty = any
  Qos qos = Qos::kUnspecified;
  bool single_node = true;  // a pod; false = gang that may span nodes
  std::string group;        // tenant / virtual cluster, "" if unknown
  int32_t priority = 0;     // priority class within its tenant (higher first)

  std::optional<int64_t> submit_time_s;     // creation / submission
  std::optional<int64_t> end_time_s;        // deletion time as recorded
  std::optional<int64_t> scheduled_time_s;  // start time as recorded
  std::optional<int64_t> duration_s;        // run time once started
  // The run time the scheduler is told (a user's estimate or time limit,
  // >= duration_s); queues plan backfill with it. None: the exact run time.
  std::optional<int64_t> estimate_s;

  // Where the job was read from, for error messages: "file:line".
  std::string source;

  // Topology constraints, as users write them (Slurm --switches, Kueue's
  // podset-required/preferred-topology): the gang must fit in one domain of
  // `topo_required`, or should (falling back upwards) for `topo_preferred`.
  // Honoured by the placers whose peers have them (topo, kueue-tas); the
  // baselines first-fit, slurm-tree, hived and random place as their peers
  // do without such a request.
  std::optional<topo::Level> topo_required;
  std::optional<topo::Level> topo_preferred;
  // Wait up to this long (from submission) for a placement at most
  // `topo_slowdown_ok` times slower than a compact one before taking a worse
  // one (like Slurm's --switches=N@time). 0: take the best available now;
  // negative: wait as long as it takes (topology placers with a cost model).
  int64_t topo_max_wait_s = 0;
  double topo_slowdown_ok = 1.0;
  // GPUs per tensor-parallel group, kept inside one NVLink domain (0: unknown).
  int32_t tp_group = 0;
  // One MIG instance of this profile ("3g.40gb"), placed by the profile's
  // MIG placer on a GPU in MIG mode (or an idle GPU put into MIG mode).
  // Such a job has num_gpu 1 and gpu_milli = the profile's compute share
  // (MigMilli), which quotas and fair share count; it never holds milli-GPU.
  std::string mig_profile;

  // What a queue plans with: the estimate, else the exact run time.
  int64_t PlannedDuration() const { return estimate_s ? *estimate_s : duration_s.value_or(0); }
  // A run of `run_s` seconds (the exact run time on its placement) as the
  // queue plans it: scaled by estimate / duration.
  int64_t PlannedRun(int64_t run_s) const {
    if (!estimate_s || !duration_s || *duration_s <= 0) return run_s;
    return static_cast<int64_t>(static_cast<double>(run_s) * static_cast<double>(*estimate_s) / static_cast<double>(*duration_s) + 0.5);
  }
  int64_t TotalGpuMilli() const { return int64_t{num_gpu} * gpu_milli; }
  bool IsGpuSharing() const { return num_gpu == 1 && gpu_milli < kMilliPerGpu && mig_profile.empty(); }
  bool IsMig() const { return !mig_profile.empty(); }
  bool IsCpuOnly() const { return num_gpu == 0; }
};

// A MIG profile's share of a GPU in milli-GPU: compute slices x 1000 / 7,
// rounded up (1g 143, 2g 286, 3g 429, 4g 572, 7g 1000).
inline int32_t MigMilli(int compute_slices) { return (compute_slices * kMilliPerGpu + mig::kComputeSlices - 1) / mig::kComputeSlices; }

// A job's request with models resolved against a cluster's registry; what
// plugins compare on the hot path.
struct ResolvedGpuSpec {
  std::vector<GpuModelId> allowed;  // empty = any model
  bool Allows(GpuModelId m) const {
    if (allowed.empty()) return true;
    for (GpuModelId a : allowed)
      if (a == m) return true;
    return false;
  }
};

}  // namespace tidal
