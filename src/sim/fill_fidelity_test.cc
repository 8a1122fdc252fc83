// Fidelity of the fill experiment against the FGD paper's published results:
// for each workload and policy, the mean over seeds 42-51 of the GPU
// allocation rate at 100% and 130% arrived demand must be within 1.0
// percentage point of the published mean (analysis_allo_discrete.csv).
// Slow (about ten seconds per workload in a Release build): labelled "slow".
#include <gtest/gtest.h>

#include <filesystem>

#include "plugins/registry.h"
#include "sim/fill.h"
#include "sim/fill_report.h"
#include "workload/traces/openb.h"

namespace tidal::sim {
namespace {

namespace fs = std::filesystem;
const fs::path kOpenb = fs::path(TIDAL_SHARED_DIR) / "traces/alibaba-gpu-v2023-openb";
constexpr double kBoundPp = 1.0;

struct Case {
  const char* workload;            // our pod list
  const char* published_workload;  // rows compared against
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.workload << " vs " << c.published_workload; }

class FillFidelityTest : public ::testing::TestWithParam<Case> {};

TEST_P(FillFidelityTest, MeanAllocationWithinOnePointOfPublished) {
  if (!fs::exists(kOpenb)) GTEST_SKIP() << "shared traces not present";
  const Case c = GetParam();
  auto nodes = traces::ReadOpenbNodes((kOpenb / "node_list/openb_node_list_gpu_node.csv").string(), {.gpu_nodes_only = true});
  ASSERT_TRUE(nodes.has_value()) << nodes.error().ToString();
  auto pods = traces::ReadOpenbPods((kOpenb / "pod_list" / (std::string(c.workload) + ".csv")).string());
  ASSERT_TRUE(pods.has_value()) << pods.error().ToString();
  auto published = ReadPublishedCurves((kOpenb / "fgd_expected_results").string(), c.published_workload);
  ASSERT_TRUE(published.has_value()) << published.error().ToString();
  for (const std::string& policy : plugins::PolicyNames()) {
    std::vector<FillResult> runs;
    for (uint64_t seed = 42; seed <= 51; ++seed) {
      auto r = RunFill(*nodes, *pods, {policy, 1.3, seed});
      ASSERT_TRUE(r.has_value()) << r.error().ToString();
      runs.push_back(std::move(*r));
    }
    std::vector<const FillResult*> ptrs;
    for (auto& r : runs) ptrs.push_back(&r);
    const Curve ours = MeanCurve(ptrs, &FillResult::alloc_pct);
    const std::string label = runs.front().label;
    ASSERT_TRUE(published->alloc_pct.contains(label)) << label;
    ASSERT_EQ(published->seeds.at(label), 10) << label;
    const Curve& pub = published->alloc_pct.at(label);
    for (int k : {100, 130}) {
      ASSERT_TRUE(ours[k].has_value() && pub[k].has_value());
      EXPECT_NEAR(*ours[k], *pub[k], kBoundPp)
          << c.workload << " " << label << " at " << k << "% arrived: ours " << *ours[k] << ", published " << *pub[k];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Openb, FillFidelityTest,
    ::testing::Values(Case{"openb_pod_list_default", "openb_pod_list_default"},
                      Case{"openb_pod_list_gpushare40", "openb_pod_list_gpushare40"},
                      Case{"openb_pod_list_gpushare80", "openb_pod_list_gpushare80"},
                      Case{"openb_pod_list_gpushare100", "openb_pod_list_gpushare100"},
                      Case{"openb_pod_list_multigpu20", "openb_pod_list_multigpu20"},
                      Case{"openb_pod_list_multigpu50", "openb_pod_list_multigpu50"},
                      Case{"openb_pod_list_cpu050", "openb_pod_list_cpu050"},
                      Case{"openb_pod_list_cpu100", "openb_pod_list_cpu100"},
                      // The artifact publishes no gpuspec05 results (only gpuspec10/20/25/33,
                      // whose pod lists are not shipped); gpuspec10 is the nearest published
                      // workload and serves as a proxy for it.
                      Case{"openb_pod_list_gpuspec05", "openb_pod_list_gpuspec10"}),
    [](const auto& info) { return std::string(info.param.workload).substr(15); });

}  // namespace
}  // namespace tidal::sim
