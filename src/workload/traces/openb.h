// Readers for the Alibaba cluster-trace-gpu-v2023 ("openb") files used by the
// FGD paper (Weng et al., ATC'23):
//   node list: sn,cpu_milli,memory_mib,gpu,model
//   pod list:  name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,qos,
//              pod_phase,creation_time,deletion_time,scheduled_time]
// (the multigpu* variants carry only the first five columns).
// Every row is either read or reported: errors name file:line, column, value.
#pragma once

#include <string>
#include <vector>

#include "cluster/cluster_state.h"
#include "common/result.h"
#include "workload/job.h"

namespace tidal::traces {

struct OpenbNodeOptions {
  bool gpu_nodes_only = false;  // drop CPU-only nodes (as the FGD experiment does)
};

Result<std::vector<NodeSpec>> ReadOpenbNodes(const std::string& path, OpenbNodeOptions options = {});
Result<std::vector<Job>> ReadOpenbPods(const std::string& path);

}  // namespace tidal::traces
