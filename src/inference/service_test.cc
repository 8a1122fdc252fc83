// Services: ReplicasNeeded at its boundaries (exact multiples, fp noise, the
// floor, bad goodput), the services file read end to end on the real traces
// and table, and a bad-input table.
#include "inference/service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

namespace tidal::inference {
namespace {

using ::testing::HasSubstr;

TEST(ReplicasNeeded, ExactMultiplesAreNotRoundedUp) {
  EXPECT_EQ(ReplicasNeeded(100, 10, 0.1), 11);   // 110 / 10, though 100 x 1.1 = 110.00000000000001
  EXPECT_EQ(ReplicasNeeded(30, 10, 0), 3);
  EXPECT_EQ(ReplicasNeeded(0.3, 0.1, 0), 3);     // 0.3 / 0.1 = 2.9999999999999996
  EXPECT_EQ(ReplicasNeeded(0.7, 0.1, 0), 7);     // 6.999999999999999
  EXPECT_EQ(ReplicasNeeded(50, 6, 0.2), 10);     // 60 / 6
}

TEST(ReplicasNeeded, JustAboveAMultipleNeedsOneMore) {
  EXPECT_EQ(ReplicasNeeded(100.0001, 10, 0.1), 12);  // 11.000011
  EXPECT_EQ(ReplicasNeeded(30.001, 10, 0), 4);
  EXPECT_EQ(ReplicasNeeded(99.99, 10, 0.1), 11);     // 10.9989
  EXPECT_EQ(ReplicasNeeded(0.001, 10, 0.1), 1);
}

TEST(ReplicasNeeded, FloorAndDegenerateInputs) {
  EXPECT_EQ(ReplicasNeeded(0, 10, 0.1, 2), 2);
  EXPECT_EQ(ReplicasNeeded(5, 10, 0, 3), 3);
  EXPECT_EQ(ReplicasNeeded(0, 10, 0.1), 0);
  EXPECT_EQ(ReplicasNeeded(-4, 10, 0.1, 1), 1);
  EXPECT_EQ(ReplicasNeeded(std::nan(""), 10, 0.1, 1), 1);
  EXPECT_EQ(ReplicasNeeded(10, 0, 0.1), INT_MAX);
  EXPECT_EQ(ReplicasNeeded(10, -1, 0.1), INT_MAX);
  EXPECT_EQ(ReplicasNeeded(1e300, 1, 0), INT_MAX);
  Service s{.goodput_rps = 4, .headroom = 0.25, .min_replicas = 2};
  EXPECT_EQ(ReplicasNeeded(s, 16), 5);  // 20 / 4
  EXPECT_EQ(ReplicasNeeded(s, 1), 2);
}

const std::string kGoodput = std::string(TIDAL_SOURCE_DIR) + "/data/inference/goodput.yaml";
const std::string kShared = TIDAL_SHARED_DIR;

std::string Head() { return "version: 1\ngoodput: " + kGoodput + "\nservices:\n"; }

const std::string kCode =
    "  - name: code\n"
    "    model: qwen2.5-coder-7b\n"
    "    shape: gpu\n"
    "    trace: {format: azure2024, path: traces/inference/azure-llm-2024-week/azure2024_code_1week_per_minute.csv, "
    "scale_to_peak_rps: 120}\n"
    "    headroom: 0.2\n"
    "    min_replicas: 2\n"
    "    slo: \"p90 TTFT 2 s, p90 TPOT 100 ms\"\n";

TEST(ServicesFile, ThreeServicesOnTheRealTracesAndTable) {
  const std::string text =
      Head() + kCode +
      "  - {name: chat, model: llama-3.1-70b, shape: tp4, slo: s, trace: {format: azure2024, path: "
      "traces/inference/azure-llm-2024-week/azure2024_conv_1week_per_minute.csv}}\n"
      "  - {name: api, model: llama-3.1-8b, shape: 3g.40gb, slo: s, goodput_rps: 12.5, trace: {format: servegen, "
      "path: traces/inference/alibaba-servegen/servegen_m-large_10min.csv, scale_to_peak_rps: 60}}\n";
  auto r = ParseServicesYaml(text, "svc.yaml", kShared);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->size(), 3u);
  const Service& code = (*r)[0];
  EXPECT_EQ(code.name, "code");
  EXPECT_EQ(code.goodput_rps, 25.21);  // the table's row
  EXPECT_THAT(code.goodput_source, HasSubstr("goodput.yaml:"));
  EXPECT_EQ(code.gpus_per_replica, 1);
  EXPECT_EQ(code.headroom, 0.2);
  EXPECT_EQ(code.min_replicas, 2);
  EXPECT_EQ(code.slo, "p90 TTFT 2 s, p90 TPOT 100 ms");
  ASSERT_EQ(code.demand.rate.size(), 10080u);
  EXPECT_EQ(*std::max_element(code.demand.rate.begin(), code.demand.rate.end()), 120);
  const Service& chat = (*r)[1];
  EXPECT_EQ(chat.gpus_per_replica, 4);
  EXPECT_EQ(chat.headroom, 0.1);  // default
  EXPECT_EQ(chat.min_replicas, 1);
  EXPECT_DOUBLE_EQ(chat.demand.rate[0], 1553.0 / 60);  // not scaled
  const Service& api = (*r)[2];
  EXPECT_EQ(api.goodput_rps, 12.5);
  EXPECT_THAT(api.goodput_source, HasSubstr("svc.yaml:12"));
  EXPECT_DOUBLE_EQ(api.gpus_per_replica, 3.0 / 7);
  EXPECT_EQ(api.demand.step_s, 600);
}

struct BadRow {
  std::string what, text;
  std::vector<std::string> must_contain;
};
void PrintTo(const BadRow& r, std::ostream* os) { *os << r.what; }

std::string One(const std::string& fields) {
  return Head() + "  - {name: a, model: llama-3.1-8b, slo: s, " + fields + "}\n";
}
const std::string kTrace =
    "trace: {format: servegen, path: traces/inference/alibaba-servegen/servegen_deepseek-r1_10min.csv}";

class ServicesBad : public ::testing::TestWithParam<BadRow> {};
TEST_P(ServicesBad, SaysWhatAndWhere) {
  auto r = ParseServicesYaml(GetParam().text, "svc.yaml", kShared);
  ASSERT_FALSE(r.has_value());
  for (const std::string& part : GetParam().must_contain) EXPECT_THAT(r.error().message, HasSubstr(part));
}
INSTANTIATE_TEST_SUITE_P(
    Table, ServicesBad,
    ::testing::Values(
        BadRow{"no such shape row", One("shape: tp8, " + kTrace),
               {"svc.yaml:4", "service 'a': goodput", "no goodput row for model 'llama-3.1-8b' on shape 'tp8'",
                "1g.10gb, 2g.20gb, 3g.40gb, 7g.80gb, gpu, tp2"}},
        BadRow{"unknown shape", One("shape: 9g.90gb, " + kTrace), {"svc.yaml:4", "unknown replica shape '9g.90gb'"}},
        BadRow{"unknown key", One("shape: gpu, replicas: 3, " + kTrace), {"svc.yaml:4", "unknown key 'replicas'"}},
        BadRow{"no trace", One("shape: gpu"), {"svc.yaml:4", "has no 'trace:'"}},
        BadRow{"unknown format", One("shape: gpu, trace: {format: csv, path: x.csv}"),
               {"svc.yaml:4", "unknown trace format 'csv'"}},
        BadRow{"missing trace file", One("shape: gpu, trace: {format: servegen, path: nope.csv}"),
               {"svc.yaml:4", "service 'a': trace", "nope.csv", "cannot open"}},
        BadRow{"fractional min_replicas", One("shape: gpu, min_replicas: 1.5, " + kTrace),
               {"svc.yaml:4", "write a whole number"}},
        BadRow{"negative headroom", One("shape: gpu, headroom: -0.1, " + kTrace), {"svc.yaml:4", "'headroom'"}},
        BadRow{"bad peak", One("shape: gpu, trace: {format: servegen, path: x, scale_to_peak_rps: 0}"),
               {"svc.yaml:4", "scale_to_peak_rps"}},
        BadRow{"duplicate name", One("shape: gpu, " + kTrace) + "  - {name: a, model: llama-3.1-8b, shape: gpu, "
                                 "slo: s, " + kTrace + "}\n",
               {"svc.yaml:5", "service 'a' is listed twice"}},
        BadRow{"no services", Head(), {"svc.yaml", "'services:' must list"}},
        BadRow{"missing goodput file", "version: 1\ngoodput: none.yaml\nservices: []\n",
               {"svc.yaml:2", "goodput table", "none.yaml", "cannot open"}},
        BadRow{"no name", Head() + "  - {model: m, shape: gpu}\n", {"svc.yaml:4", "has no 'name:'"}}));

}  // namespace
}  // namespace tidal::inference
