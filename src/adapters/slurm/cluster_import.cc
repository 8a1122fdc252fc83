#include "adapters/slurm/cluster_import.h"

#include <algorithm>
#include <cctype>
#include <set>

#include <fmt/format.h>

#include "topology/builder.h"
#include "topology/readers/slurm.h"

namespace tidal::slurm {

Result<ImportedCluster> ImportCluster(const std::vector<SlurmNode>& nodes, const std::string& partition,
                                      const std::string& default_model, std::string_view topology_conf,
                                      const std::string& topology_source) {
  ImportedCluster out;
  std::set<std::string> seen;
  std::vector<topo::NodeGpus> gpus;
  for (const SlurmNode& n : nodes) {
    if (!partition.empty() && std::find(n.partitions.begin(), n.partitions.end(), partition) == n.partitions.end()) continue;
    if (!seen.insert(n.name).second) continue;  // sinfo lists a node once per partition
    std::string model = n.gpu_type;
    for (char& c : model) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (n.gpus > 0 && model.empty()) model = default_model;
    if (n.gpus > 0 && model.empty()) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "node '{}' has {} GPUs of no GRES type; give the GPU model (a typed GRES, gpu:h100:8, or a default model)", n.name,
                       n.gpus);
    }
    out.nodes.push_back({.name = n.name, .cpu_milli = n.cpus * 1000, .memory_mib = n.real_memory_mib, .gpu_count = n.gpus,
                         .gpu_model = n.gpus > 0 ? model : ""});
    gpus.push_back({.name = n.name, .gpus = n.gpus, .gpu_model = n.gpus > 0 ? model : ""});
    if (OutOfService(n)) out.drained.push_back(n.name);
  }
  if (out.nodes.empty()) {
    return MakeError(ErrorCode::kNotFound, "Slurm lists no node{}; check the partition name and `sinfo`",
                     partition.empty() ? "" : fmt::format(" in partition '{}'", partition));
  }
  if (!topology_conf.empty()) {
    TIDAL_ASSIGN_OR_RETURN(topo::Topology t, topo::ReadSlurmTopologyConf(topology_conf, topology_source));
    TIDAL_ASSIGN_OR_RETURN(topo::Topology m, topo::Materialize(t, gpus));
    out.topology = std::make_shared<const topo::Topology>(std::move(m));
  }
  return out;
}

}  // namespace tidal::slurm
