// PLACEHOLDER (helper b) — removed when the real readers land (never committed).
#include "topology/readers/ibnetdiscover.h"
#include "topology/readers/k8s_labels.h"
#include "topology/readers/lingjun.h"
#include "topology/readers/nvidia_smi.h"
#include "topology/readers/slurm.h"
#include "topology/writers/k8s.h"
#include "topology/writers/slurm.h"
namespace tidal::topo {
#define PENDING(what) return MakeError(ErrorCode::kFailedPrecondition, "{}: not yet", what)
Result<Topology> ReadSlurmTopologyConf(std::string_view, const std::string& s) { PENDING(s); }
Result<Topology> ReadSlurmTopologyYaml(std::string_view, const std::string& s, const std::string&) { PENDING(s); }
Result<std::string> WriteSlurmTopologyConf(const Topology&) { PENDING("slurm"); }
Result<std::string> WriteSlurmTopologyYaml(const Topology&) { PENDING("slurm"); }
}
