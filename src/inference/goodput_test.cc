// The goodput table: shapes and their GPU cost, the roofline against values
// worked by hand, the shipped table (every derived row recomputed, the
// calibration points), Lookup's errors, and a bad-input table for the reader.
#include "inference/goodput.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

namespace tidal::inference {
namespace {

using ::testing::HasSubstr;

const std::string kTable = std::string(TIDAL_SOURCE_DIR) + "/data/inference/goodput.yaml";

TEST(Shape, GpuCostIsComputeSlicesOverSevenOrTheGpuCount) {
  EXPECT_DOUBLE_EQ(*ShapeGpuCost("1g.10gb", 80), 1.0 / 7);
  EXPECT_DOUBLE_EQ(*ShapeGpuCost("1g.20gb", 80), 1.0 / 7);
  EXPECT_DOUBLE_EQ(*ShapeGpuCost("2g.20gb", 80), 2.0 / 7);
  EXPECT_DOUBLE_EQ(*ShapeGpuCost("3g.40gb", 80), 3.0 / 7);
  EXPECT_DOUBLE_EQ(*ShapeGpuCost("4g.40gb", 80), 4.0 / 7);
  EXPECT_DOUBLE_EQ(*ShapeGpuCost("7g.80gb", 80), 1);
  EXPECT_DOUBLE_EQ(*ShapeGpuCost("gpu", 80), 1);
  EXPECT_DOUBLE_EQ(*ShapeGpuCost("tp2", 80), 2);
  EXPECT_DOUBLE_EQ(*ShapeGpuCost("tp4", 80), 4);
  EXPECT_DOUBLE_EQ(*ShapeGpuCost("tp8", 80), 8);
  auto s = ParseShape("3g.40gb", 80);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->memory_gb, 40);
  EXPECT_DOUBLE_EQ(s->BandwidthFraction(), 0.5);  // 4 of 8 memory slices
  EXPECT_EQ(ParseShape("tp4", 80)->memory_gb, 320);
}

TEST(Shape, UnknownOnesNameTheKnown) {
  for (const char* bad : {"5g.50gb", "tp3", "GPU", "", "2g"}) {
    auto r = ParseShape(bad, 80);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_THAT(r.error().message, HasSubstr("unknown replica shape"));
    EXPECT_THAT(r.error().message, HasSubstr("1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb, gpu, tp2"));
  }
  auto a100 = ParseShape("1g.5gb", 80);
  ASSERT_FALSE(a100.has_value());
  EXPECT_THAT(a100.error().message, HasSubstr("belongs to a 40 GB GPU"));
  EXPECT_TRUE(ParseShape("3g.20gb", 40).has_value());
}

const ModelSpec k8b{.name = "8b", .params_b = 8.03, .bytes_per_param = 1, .kv_bytes_per_token = 65536};

TEST(Roofline, WholeGpuByHand) {
  // BW = 3.35e12 x 0.7 = 2.345e12 B/s; FL = 1979e12 x 0.5 = 989.5e12 FLOP/s; W = 8.03e9 B
  // KV room = 0.9 x 80e9 - 8.03e9 = 63.97e9: 567.5 sequences of 1720 tokens
  // TPOT bound (0.1 x 2.345e12 - 8.03e9) / (65536 x 1660) = 2081.7; cap 256 -> B = 256
  // step = (8.03e9 + 256 x 65536 x 1660) / 2.345e12 = 15.3007 ms
  // prefill = 2 x 8.03e9 x 1600 / 989.5e12 = 25.9687 ms
  // rps = 1 / (25.9687 ms + 120 x 15.3007 ms / 256) = 1 / 33.1409 ms = 30.174
  auto e = Roofline(k8b, *ParseShape("gpu", 80), 1600, 120, Hardware{}, RooflineParams{});
  ASSERT_TRUE(e.has_value()) << e.error().message;
  EXPECT_EQ(e->batch, 256);
  EXPECT_NEAR(e->step_s, 0.0153007, 1e-7);
  EXPECT_NEAR(e->prefill_s, 0.0259687, 1e-7);
  EXPECT_NEAR(e->rps, 30.174, 1e-3);
  EXPECT_NEAR(e->output_tokens_per_s, 30.174 * 120, 0.12);
}

TEST(Roofline, MigSliceByHand) {
  // 1g.10gb: BW = 3.35e12 / 8 x 0.7 = 0.293125e12; FL = 1979e12 / 7 x 0.5 = 141.357e12
  // KV room = 9e9 - 8.03e9 = 0.97e9 -> B = 0.97e9 / (65536 x 1720) = 8.6053 (KV-bound)
  // step = (8.03e9 + 8.6053 x 65536 x 1660) / 0.293125e12 = 30.588 ms; prefill = 181.78 ms
  // rps = 1 / (0.18178 + 120 x 0.030588 / 8.6053) = 1.6439
  auto e = Roofline(k8b, *ParseShape("1g.10gb", 80), 1600, 120, Hardware{}, RooflineParams{});
  ASSERT_TRUE(e.has_value()) << e.error().message;
  EXPECT_NEAR(e->batch, 8.6053, 1e-4);
  EXPECT_NEAR(e->step_s, 0.030588, 1e-6);
  EXPECT_NEAR(e->prefill_s, 0.18178, 1e-5);
  EXPECT_NEAR(e->rps, 1.6439, 1e-4);
}

TEST(Roofline, TensorParallelPaysPerDoubling) {
  // tp4: 4 GPUs x 0.9^2 = 3.24 GPUs' worth of bandwidth and FLOP/s.
  auto one = Roofline(k8b, *ParseShape("gpu", 80), 1600, 120, Hardware{}, RooflineParams{});
  auto four = Roofline(k8b, *ParseShape("tp4", 80), 1600, 120, Hardware{}, RooflineParams{});
  ASSERT_TRUE(one && four);
  EXPECT_NEAR(four->prefill_s, one->prefill_s / 3.24, 1e-12);
  EXPECT_EQ(four->batch, 256);
  EXPECT_NEAR(four->step_s, one->step_s / 3.24, 1e-12);
}

TEST(Roofline, RefusesWhatCannotRun) {
  const ModelSpec big{.name = "70b", .params_b = 70.6, .bytes_per_param = 1, .kv_bytes_per_token = 163840};
  auto r = Roofline(big, *ParseShape("3g.40gb", 80), 1600, 120, Hardware{}, RooflineParams{});
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message, HasSubstr("does not fit in shape '3g.40gb'"));
  RooflineParams tight;
  tight.tpot_s = 0.001;  // 1 ms cannot even read the weights once
  auto t = Roofline(k8b, *ParseShape("gpu", 80), 1600, 120, Hardware{}, tight);
  ASSERT_FALSE(t.has_value());
  EXPECT_THAT(t.error().message, HasSubstr("meets a 0.001 s decode step"));
}

TEST(ShippedTable, EveryDerivedRowIsItsRoofline) {
  auto t = GoodputTable::ReadFile(kTable);
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ(t->hardware().memory_gb, 80);
  int derived = 0;
  for (const GoodputRow& r : t->rows()) {
    SCOPED_TRACE(r.model + " " + r.shape);
    EXPECT_FALSE(r.source.empty());
    if (!r.derived) continue;
    ++derived;
    auto e = Roofline(*t->Model(r.model), *ParseShape(r.shape, 80), r.input_tokens, r.output_tokens, t->hardware(),
                      t->roofline());
    ASSERT_TRUE(e.has_value()) << e.error().message;
    EXPECT_NEAR(r.rps / e->rps, 1, 1e-3);
    EXPECT_NEAR(r.output_tokens_per_s / e->output_tokens_per_s, 1, 1e-3);
  }
  EXPECT_GE(derived, 10);
}

TEST(ShippedTable, RooflineWithinTenPercentOfEachMeasurement) {
  auto t = GoodputTable::ReadFile(kTable);
  ASSERT_TRUE(t.has_value()) << t.error().message;
  ASSERT_FALSE(t->calibration().empty());
  for (const Calibration& c : t->calibration()) {
    RooflineParams p = t->roofline();
    p.tpot_s = c.tpot_s;
    auto e = Roofline(*t->Model(c.model), *ParseShape(c.shape, 80), c.input_tokens, c.output_tokens, t->hardware(), p);
    ASSERT_TRUE(e.has_value()) << e.error().message;
    std::printf("calibration %s %s: roofline %.1f vs measured %.1f output tok/s\n", c.model.c_str(), c.shape.c_str(),
                e->output_tokens_per_s, c.measured_output_tokens_per_s);
    EXPECT_NEAR(e->output_tokens_per_s / c.measured_output_tokens_per_s, 1, 0.10) << c.source;
  }
}

TEST(ShippedTable, LookupAndItsErrors) {
  auto t = GoodputTable::ReadFile(kTable);
  ASSERT_TRUE(t.has_value()) << t.error().message;
  auto row = t->Lookup("llama-3.1-70b", "tp4");
  ASSERT_TRUE(row.has_value()) << row.error().message;
  EXPECT_GT(row->rps, 0);
  EXPECT_GT(row->line, 1);
  auto miss = t->Lookup("llama-3.1-70b", "1g.10gb");
  ASSERT_FALSE(miss.has_value());
  EXPECT_THAT(miss.error().message, HasSubstr(kTable));
  EXPECT_THAT(miss.error().message, HasSubstr("model 'llama-3.1-70b' on shape '1g.10gb'"));
  EXPECT_THAT(miss.error().message, HasSubstr("gpu, tp2, tp4, tp8"));
  auto none = t->Lookup("gpt-5", "gpu");
  ASSERT_FALSE(none.has_value());
  EXPECT_THAT(none.error().message, HasSubstr("no goodput rows for model 'gpt-5'"));
  EXPECT_THAT(none.error().message, HasSubstr("llama-3.1-8b"));
}

struct BadRow {
  std::string what, text;
  std::vector<std::string> must_contain;
};
void PrintTo(const BadRow& r, std::ostream* os) { *os << r.what; }

// Lines 1-6; the first row starts at line 7.
const std::string kHead =
    "version: 1\n"
    "models:\n"
    "  - {name: m8, params_b: 8, bytes_per_param: 1, kv_bytes_per_token: 65536, source: cfg}\n"
    "  - {name: m70, params_b: 70, bytes_per_param: 1, kv_bytes_per_token: 163840, source: cfg}\n"
    "rows:\n"
    "  - {model: m8, shape: gpu, rps: 30, output_tokens_per_s: 3600, input_tokens: 1600, output_tokens: 120, "
    "slo: s, source: x}\n";
std::string Row(const std::string& fields) {
  return "  - {" + fields + ", output_tokens_per_s: 1, input_tokens: 1, output_tokens: 1, slo: s, source: x}\n";
}

class GoodputBad : public ::testing::TestWithParam<BadRow> {};
TEST_P(GoodputBad, SaysWhatAndWhere) {
  auto r = GoodputTable::Parse(GetParam().text, "g.yaml");
  ASSERT_FALSE(r.has_value());
  for (const std::string& part : GetParam().must_contain) EXPECT_THAT(r.error().message, HasSubstr(part));
}
INSTANTIATE_TEST_SUITE_P(
    Table, GoodputBad,
    ::testing::Values(
        BadRow{"duplicate row", kHead + Row("model: m8, shape: gpu, rps: 2"),
               {"g.yaml:7", "duplicate row for model 'm8' on shape 'gpu'", "first at line 6"}},
        BadRow{"zero goodput", kHead + Row("model: m8, shape: tp2, rps: 0"), {"g.yaml:7", "'rps'", "must be positive"}},
        BadRow{"negative goodput", kHead + Row("model: m8, shape: tp2, rps: -3"), {"g.yaml:7", "is -3"}},
        BadRow{"unknown shape", kHead + Row("model: m8, shape: 5g.50gb, rps: 2"),
               {"g.yaml:7", "unknown replica shape '5g.50gb'", "tp8"}},
        BadRow{"does not fit", kHead + Row("model: m70, shape: 3g.40gb, rps: 2"),
               {"g.yaml:7", "'m70' (70.0 GB of weights) does not fit in shape '3g.40gb' (40 GB"}},
        BadRow{"unknown model", kHead + Row("model: m9, shape: gpu, rps: 2"), {"g.yaml:7", "model 'm9' is not under"}},
        BadRow{"not a number", kHead + Row("model: m8, shape: tp2, rps: fast"), {"g.yaml:7", "'fast', not a number"}},
        BadRow{"infinite", kHead + Row("model: m8, shape: tp2, rps: .inf"), {"g.yaml:7", "not a number"}},
        BadRow{"unknown key", kHead + "  - {model: m8, shape: tp2, rsp: 3}\n", {"g.yaml:7", "unknown key 'rsp'"}},
        BadRow{"missing rps", kHead + "  - {model: m8, shape: tp2, slo: s, source: x}\n",
               {"g.yaml:7", "has no 'rps:'"}},
        BadRow{"no version", "models: []\n", {"g.yaml:1", "version: 1"}},
        BadRow{"bad yaml", "version: 1\nrows: [\n", {"g.yaml:", "not valid YAML"}},
        BadRow{"no rows", "version: 1\nmodels:\n  - {name: m8, params_b: 8, bytes_per_param: 1, "
                          "kv_bytes_per_token: 1, source: c}\n", {"g.yaml", "'rows:' must list"}},
        BadRow{"duplicate model", kHead.substr(0, kHead.find("rows:")) +
                   "  - {name: m8, params_b: 8, bytes_per_param: 1, kv_bytes_per_token: 1, source: c}\n",
               {"g.yaml:5", "model 'm8' is listed twice"}}));

}  // namespace
}  // namespace tidal::inference
