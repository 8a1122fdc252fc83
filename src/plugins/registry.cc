#include "plugins/registry.h"

#include <algorithm>

#include "plugins/best_fit/best_fit_score.h"
#include "plugins/first_fit/first_fit.h"
#include "plugins/device_select/device_select.h"
#include "plugins/dot_product/dot_product_score.h"
#include "plugins/fgd/fgd_score.h"
#include "plugins/gang_pack/gang_pack.h"
#include "plugins/gpu_clustering/gpu_clustering_score.h"
#include "plugins/gpu_packing/gpu_packing_score.h"
#include "plugins/hived/hived.h"
#include "plugins/kueue_tas/kueue_tas.h"
#include "plugins/mig/mig_pack.h"
#include "plugins/random/random_score.h"
#include "plugins/random_gang/random_gang.h"
#include "plugins/resource_fit/resource_fit.h"
#include "plugins/slurm_tree/slurm_tree.h"
#include "plugins/topo/topo_place.h"

namespace tidal::plugins {

namespace {
constexpr int64_t kPaperWeight = 1000;
const std::vector<std::pair<std::string, std::string>>& Table() {
  static const std::vector<std::pair<std::string, std::string>> t = {
      {"random", "01-Random"},         {"dotprod", "02-DotProd"},     {"gpuclustering", "03-GpuClustering"},
      {"gpupacking", "04-GpuPacking"}, {"bestfit", "05-BestFit"},     {"fgd", "06-FGD"}};
  return t;
}
}  // namespace

const std::vector<std::string>& PolicyNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& [n, l] : Table()) v.push_back(n);
    return v;
  }();
  return names;
}

const std::vector<std::string>& PlacerNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v = PolicyNames();
    for (const char* t : {"topo", "first-fit", "slurm-tree", "kueue-tas", "hived"}) v.push_back(t);
    return v;
  }();
  return names;
}

bool IsTopologyPlacer(std::string_view name) {
  const auto& all = PlacerNames();
  return std::find(all.begin() + static_cast<std::ptrdiff_t>(PolicyNames().size()), all.end(), name) != all.end();
}

Result<std::string> PolicyLabel(std::string_view policy) {
  for (const auto& [n, l] : Table())
    if (n == policy) return l;
  return MakeError(ErrorCode::kInvalidArgument,
                   "unknown policy '{}'; choose one of random, dotprod, gpuclustering, gpupacking, "
                   "bestfit, fgd (or 'all')",
                   policy);
}

Status CheckMigPlacer(std::string_view mig_placer) {
  if (mig_placer == "pack" || mig_placer == "first-fit") return Ok();
  return MakeError(ErrorCode::kInvalidArgument, "unknown MIG placer '{}'; choose pack (tidal) or first-fit (greedy)", mig_placer);
}

namespace {

void AddMigPlacer(Profile& p, std::string_view mig_placer) {
  auto* m = p.Own<MigPack>(mig_placer == "first-fit" ? MigPackPolicy::kFirstFit : MigPackPolicy::kFragAware);
  p.mig = m;
  p.reserves.push_back(m);
}

Result<Profile> MakePlacerProfile(std::string_view policy, std::shared_ptr<FragmentationModel> frag);

}  // namespace

Result<Profile> MakePolicyProfile(std::string_view policy, std::shared_ptr<FragmentationModel> frag, std::string_view mig_placer) {
  TIDAL_RETURN_IF_ERROR(CheckMigPlacer(mig_placer));
  TIDAL_ASSIGN_OR_RETURN(Profile p, MakePlacerProfile(policy, std::move(frag)));
  AddMigPlacer(p, mig_placer);
  return p;
}

namespace {

Result<Profile> MakePlacerProfile(std::string_view policy, std::shared_ptr<FragmentationModel> frag) {
  if (IsTopologyPlacer(policy)) {
    // Whole-GPU jobs go to the topology placer; sharing and CPU-only pods
    // take the node path with best-fit scoring.
    Profile p;
    p.name = std::string(policy);
    p.filters.push_back(p.Own<ResourceFitFilter>());
    p.filters.push_back(p.Own<GpuFitFilter>());
    p.scores.push_back({p.Own<BestFitScore>(), kPaperWeight});
    p.device_select = p.Own<BestFitDeviceSelect>();
    // One registration line per placer.
    if (policy == "topo") p.gang = p.Own<TopoPlace>();
    if (policy == "first-fit") p.gang = p.Own<FirstFitPlace>();
    if (policy == "slurm-tree") p.gang = p.Own<SlurmTreePlace>();
    if (policy == "kueue-tas") p.gang = p.Own<KueueTasPlace>();
    if (policy == "hived") p.gang = p.Own<HivedPlace>();
    if (p.gang == nullptr) {
      return MakeError(ErrorCode::kInvalidArgument, "placer '{}' is not available in this build", policy);
    }
    return p;
  }
  if (std::find(PolicyNames().begin(), PolicyNames().end(), policy) == PolicyNames().end()) {
    std::string all;
    for (const auto& n : PlacerNames()) all += (all.empty() ? "" : ", ") + n;
    return MakeError(ErrorCode::kInvalidArgument, "unknown placer '{}'; choose one of {}", policy, all);
  }
  Profile p;
  p.name = std::string(policy);
  p.filters.push_back(p.Own<ResourceFitFilter>());
  p.filters.push_back(p.Own<GpuFitFilter>());
  p.gang = policy == "random" ? static_cast<GangPlacePlugin*>(p.Own<RandomGangPlace>()) : p.Own<GangPackPlace>();
  auto* best_device = p.Own<BestFitDeviceSelect>();
  p.device_select = best_device;
  if (policy == "random") {
    p.scores.push_back({p.Own<RandomScore>(), kPaperWeight});
    p.device_select = p.Own<RandomDeviceSelect>();
  } else if (policy == "dotprod") {
    p.scores.push_back({p.Own<DotProductScore>(), kPaperWeight});
  } else if (policy == "gpuclustering") {
    auto* s = p.Own<GpuClusteringScore>();
    p.scores.push_back({s, kPaperWeight});
    p.reserves.push_back(s);
  } else if (policy == "gpupacking") {
    p.scores.push_back({p.Own<GpuPackingScore>(), kPaperWeight});
  } else if (policy == "bestfit") {
    p.scores.push_back({p.Own<BestFitScore>(), kPaperWeight});
  } else if (policy == "fgd") {
    if (!frag) {
      return MakeError(ErrorCode::kInvalidArgument, "policy fgd needs typical pods (a fragmentation model)");
    }
    auto* s = p.Own<FgdScore>(std::move(frag));
    p.scores.push_back({s, kPaperWeight});
    p.device_select = s;
  }
  return p;
}

}  // namespace

}  // namespace tidal::plugins
