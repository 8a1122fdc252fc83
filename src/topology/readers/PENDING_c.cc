// PLACEHOLDER (helper c) — removed when the real readers land (never committed).
#include "topology/readers/ibnetdiscover.h"
#include "topology/readers/nvidia_smi.h"
#include "topology/readers/slurm.h"
#include "topology/writers/k8s.h"
#include "topology/writers/slurm.h"
namespace tidal::topo {
#define PENDING(what) return MakeError(ErrorCode::kFailedPrecondition, "{}: not yet", what)
Result<std::string> WriteKueueTopology(const Topology&) { PENDING("kueue"); }
Result<std::string> WriteKaiTopology(const Topology&) { PENDING("kai"); }
Result<std::string> WriteVolcanoHyperNodes(const Topology&) { PENDING("volcano"); }
}
