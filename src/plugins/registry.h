// Named placement policies, each a Profile of plugins. The six FGD-paper
// policies are configured as in the paper's experiment scripts: score weight
// 1000, device selection "best" (tightest fit) except Random (random device)
// and FGD (its own fragmentation-gradient choice), DotProd with dimension
// extension "merge" and normalisation "max".
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "framework/fragmentation.h"
#include "framework/framework.h"

namespace tidal::plugins {

// The FGD paper's six policies, in the paper's order (what `sim fill` runs).
const std::vector<std::string>& PolicyNames();
// Every placer `sim queue` accepts: the six above, then the topology placers
// — topo (tidal's), first-fit, slurm-tree, kueue-tas, hived.
const std::vector<std::string>& PlacerNames();
bool IsTopologyPlacer(std::string_view name);
// "01-Random" ... "06-FGD": the sc_policy labels of the published results.
Result<std::string> PolicyLabel(std::string_view policy);

// Which MIG placer a profile gets (plugins/mig/mig_pack.h): "pack" (tidal's
// fragmentation-aware one, the default) or "first-fit" (the greedy baseline).
Status CheckMigPlacer(std::string_view mig_placer);

// `frag` is required for "fgd" (the typical pods it scores against). Every
// profile places MIG jobs with `mig_placer`.
Result<Profile> MakePolicyProfile(std::string_view policy, std::shared_ptr<FragmentationModel> frag, std::string_view mig_placer = "pack");

}  // namespace tidal::plugins
