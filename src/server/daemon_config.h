// What `tidal serve` runs: the embedded simulated cluster (a topology whose
// hosts are the nodes, a replayed trace feeding jobs at `speed` x the wall
// clock) and the scheduler's settings — the same placers, queues and tenant
// trees as the simulator. Read from a YAML file (data/serve/default.yaml is
// the embedded default); its digest is kept in the store, and a restart
// with another config is refused (a replay of the store's inputs under
// other rules would not reproduce what clients saw).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cluster/cluster_state.h"
#include "common/result.h"
#include "market/market_config.h"
#include "scheduler/queue.h"
#include "tenancy/tenant_tree.h"
#include "topology/topology.h"
#include "workload/job.h"

namespace tidal::server {

// Trace jobs get ids from here on (API jobs count up from 1 below it).
inline constexpr JobId kTraceIdBase = JobId{1} << 40;

// A real Slurm instead of the embedded simulated cluster (docs/slurm.md):
// the nodes and switch tree are imported from it, each started job is a
// held Slurm batch job placed on tidal's nodes, and its end is Slurm's.
struct SlurmBinderConfig {
  std::string slurm_conf;        // SLURM_CONF for the commands
  std::string partition = "tidal";
  std::string gpu_model;         // for untyped GRES ("" = GRES types required)
  // The batch script of an API job; "{runtime_s}" is replaced by the job's
  // runtime_s (its estimate when not given), "{id}" by its id.
  std::string script = "sleep {runtime_s}";
  std::string output = "/dev/null";  // sbatch --output
  std::string workdir = "/tmp";      // sbatch --chdir
  double poll_s = 2;                 // wall seconds between squeue reads
};

struct DaemonConfig {
  std::string source;  // the file it was read from
  std::string digest;  // SHA-256 of the parsed config (not its comments) and every file it names
  std::string name;
  std::shared_ptr<const topo::Topology> topology;
  std::vector<NodeSpec> nodes;
  // The trace, in arrival order; submit times are seconds after the
  // daemon's epoch (the first arrival at 0), ids from kTraceIdBase.
  std::vector<Job> trace;
  std::string trace_source;
  double speed = 60;  // daemon seconds per wall second
  std::string placer = "topo";
  QueuePolicy queue = QueuePolicy::kTidal;
  std::shared_ptr<const tenancy::TenantTree> tenants;
  uint64_t seed = 1;
  int start_estimate_samples = 8;
  int64_t checkpoint_interval_s = 1800;
  int64_t restart_penalty_s = 60;
  std::optional<market::MarketConfig> market;
  std::string reports_dir;  // simulation reports served under /reports ("" = none)
  std::optional<SlurmBinderConfig> slurm;  // set: the cluster is a real Slurm, not simulated
  std::vector<std::string> slurm_drained;  // nodes Slurm had drained or down when the config was read
};

Result<DaemonConfig> ReadDaemonConfig(const std::string& path);

// The embedded default's path: $TIDAL_DATA_DIR/serve/default.yaml, else
// the repository's data/serve/default.yaml next to the binary's source tree.
std::string DefaultDaemonConfigPath();

}  // namespace tidal::server
