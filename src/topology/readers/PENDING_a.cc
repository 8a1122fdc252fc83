// PLACEHOLDER (helper a) — removed when the real readers land (never committed).
#include "topology/readers/ibnetdiscover.h"
#include "topology/readers/k8s_labels.h"
#include "topology/readers/lingjun.h"
#include "topology/readers/nvidia_smi.h"
#include "topology/readers/slurm.h"
#include "topology/writers/k8s.h"
#include "topology/writers/slurm.h"
namespace tidal::topo {
#define PENDING(what) return MakeError(ErrorCode::kFailedPrecondition, "{}: not yet", what)
Result<Topology> ReadIbnetdiscover(std::string_view, const std::string& s) { PENDING(s); }
}
