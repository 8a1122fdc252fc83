// Loading a replay's inputs by trace format: Philly (Pollux job list + the
// machine list) or openb (pod list with creation/deletion times + node
// list), and a node list taken from a topology whose hosts have GPU counts
// (the Lingjun fabric has no separate node list). Shared by `sim queue` and
// `sim compare`.
#pragma once

#include <string>
#include <vector>

#include "cluster/cluster_state.h"
#include "common/result.h"
#include "topology/topology.h"
#include "workload/job.h"

namespace tidal::sim {

struct Workload {
  std::vector<NodeSpec> nodes;
  std::vector<Job> jobs;
  std::string format;  // "philly" or "openb"
};

// format: "philly", "openb" or "auto" (from the job file's header).
Result<std::string> DetectJobFormat(const std::string& jobs_path);
// nodes_path may be empty when `topology` is given and knows every host's
// GPUs: its hosts become the nodes (no CPU or memory, which trace jobs
// without such requests do not need).
Result<Workload> LoadWorkload(const std::string& nodes_path, const std::string& jobs_path, std::string format,
                              const topo::Topology* topology = nullptr);
Result<std::vector<NodeSpec>> NodesFromTopology(const topo::Topology& t);

// Arrival compression. Offered load = GPU-seconds asked / (GPUs x arrival
// span); `load` > 0 divides the inter-arrival times by load / native load,
// `time_scale` > 0 by itself (give one of them; 0 = as recorded). `jobs`
// must be in arrival order.
struct ArrivalScale {
  double native_load = 0;
  double factor = 1;
  double offered_load = 0;
};
Result<ArrivalScale> ScaleArrivals(std::vector<Job>& jobs, int64_t total_gpus, double load, double time_scale);

}  // namespace tidal::sim
