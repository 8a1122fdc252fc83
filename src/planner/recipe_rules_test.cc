#include "planner/recipe_rules.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "common/test_files.h"
#include "planner/calibration.h"

namespace tidal::planner {
namespace {

using test::WriteTemp;

const char* kHeader = "file,model,container,system,precision,cuda_graphs,fp8_attention,ep_overlap,dispatcher,"
                      "fused_grouped_mlp,source\n";

TEST(RecipeRulesTest, BadInputsSayWhereAndWhat) {
  const struct {
    const char* name;
    std::string text;
    std::string want;
  } rows[] = {
      {"no source column",
       "file,model,container,system,precision,cuda_graphs,fp8_attention,ep_overlap,dispatcher,fused_grouped_mlp\n"
       "x.csv,,,,,full,,,,\n",
       "source"},
      {"no dispatcher column",
       "file,model,container,system,precision,cuda_graphs,fp8_attention,ep_overlap,fused_grouped_mlp,source\n"
       "x.csv,,,,,full,,,,\n",
       "dispatcher"},
      {"unknown CUDA graphs", std::string(kHeader) + "x.csv,,,,,always,,,,,\n", "recipes.csv:2"},
      {"unknown CUDA graphs says what to use", std::string(kHeader) + "x.csv,,,,,always,,,,,\n", "none, partial or full"},
      {"a flag that is not a boolean", std::string(kHeader) + "x.csv,,,,,,yes,,,,\n", "fp8_attention"},
      {"a flag that is not a boolean, line", std::string(kHeader) + "x.csv,,,,,,,,,false,\nx.csv,,,,,,,1,,,\n",
       "recipes.csv:3"},
      {"unknown dispatcher", std::string(kHeader) + "x.csv,,,,,,,,deepep,,\n", "alltoall, flex"},
      {"rule matching everything", std::string(kHeader) + ",,,,,full,,,,,\n", "at least one of"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    auto rules = LoadRecipeRules(WriteTemp("recipes.csv", r.text));
    ASSERT_FALSE(rules);
    EXPECT_NE(rules.error().message.find(r.want), std::string::npos) << rules.error().message;
  }
  EXPECT_FALSE(LoadRecipeRules(::testing::TempDir() + "/no_such_recipes.csv"));
}

TEST(RecipeRulesTest, NoteFieldsAreReadWhole) {
  const std::string n = "container 26.06.01; pretraining; system dgx-gb200; precision mxfp8";
  EXPECT_EQ(NoteField(n, "container"), "26.06.01");
  EXPECT_EQ(NoteField(n, "system"), "dgx-gb200");
  EXPECT_EQ(NoteField(n, "precision"), "mxfp8");
  EXPECT_EQ(NoteField(n, "recipe"), "");
  // A key inside another word is not the key.
  EXPECT_EQ(NoteField("subsystem x; system y", "system"), "y");
  EXPECT_EQ(NoteField("system z", "system"), "z");
}

const char* kRunsHeader =
    "source,model,params_b,layers,hidden,heads,ffn,vocab,seq_len,global_batch,micro_batch,gpus,gpu_type,tp,pp,dp,"
    "cp,ep,vpp,recompute,zero_stage,achieved_tflops_per_gpu,mfu_percent,notes\n";

// Three Megatron-Bridge Qwen3-30B-A3B runs as blackwell-moe.csv gives them:
// GB200 in containers 26.04.01 and 26.06, H100 (EP 16 over two nodes) in 26.06.
const char* kSource = "github.com/NVIDIA-NeMo/Megatron-Bridge:docs/performance-summary.md@x,Qwen3_30B_a3B,,,,,,,4096,";
const char* kH100 = "1024,1,16,H100-SXM-80GB,1,1,,1,16,,,,203,,container 26.06; pretraining; system DGX-H100; "
                    "precision FP8; tokens/s/GPU=8826\n";
std::string Runs() {
  const std::string src = kSource;
  return std::string(kRunsHeader) + src +
         "512,4,8,GB200,1,1,,1,8,,,,599,,container 26.04.01; pretraining; system DGX-GB200; precision MXFP8; "
         "tokens/s/GPU=26112\n" +
         src + "512,4,8,GB200,1,1,,1,8,,,,936,,container 26.06; pretraining; system DGX-GB200; precision MXFP8; "
         "tokens/s/GPU=40706\n" + src + kH100;
}

TEST(RecipeRulesTest, TheFirstMatchingRuleSetsTheKnobsAndSaysSo) {
  auto rules = LoadRecipeRules(WriteTemp("recipes.csv", std::string(kHeader) +
                                                           // precision must equal the parsed recipe: no match
                                                           "runs.csv,qwen3_30b_a3b,26.06,dgx-gb200,fp8-cs,none,,,,,\n"
                                                           "runs.csv,qwen3_30b_a3b,26.06,dgx-gb200,mxfp8,full,true,true,"
                                                           "flex,true,v0.5.0:configs.py:388\n"
                                                           "runs.csv,qwen3_30b_a3b,26.06,,,partial,true,false,"
                                                           "alltoall,false,later rule\n"
                                                           "runs.csv,qwen3,26.04,,,full,true,true,flex,true,\n"));
  ASSERT_TRUE(rules) << rules.error().message;
  auto cases = LoadCalibrationCases(WriteTemp("runs.csv", Runs()), {}, *rules);
  ASSERT_TRUE(cases) << cases.error().message;
  ASSERT_EQ(cases->size(), 3u);
  for (const auto& c : *cases) ASSERT_TRUE(c.usable) << c.line << ": " << c.skip_reason;
  auto has = [](const CalibrationCase& c, std::string_view text) {
    for (const auto& a : c.assumptions) {
      if (a.find(text) != std::string::npos) return true;
    }
    return false;
  };
  // 26.04.01 is not 26.04: no rule; the framework defaults and their notes stay.
  const CalibrationCase& old = (*cases)[0];
  EXPECT_EQ(old.strategy.cuda_graphs, CudaGraphs::kNone);
  EXPECT_FALSE(old.strategy.fp8_attention);
  EXPECT_FALSE(old.strategy.fused_expert_mlp);
  EXPECT_TRUE(old.strategy.overlap_ep_comm);
  EXPECT_TRUE(has(old, "EP all-to-all overlapped with another micro-batch's compute (Megatron-Bridge"));
  EXPECT_FALSE(has(old, "recipe ("));
  // 26.06 on GB200: the second rule.
  const CalibrationCase& gb = (*cases)[1];
  EXPECT_EQ(gb.strategy.cuda_graphs, CudaGraphs::kFull);
  EXPECT_TRUE(gb.strategy.fp8_attention);
  EXPECT_TRUE(gb.strategy.fused_expert_mlp);
  EXPECT_TRUE(gb.strategy.overlap_ep_comm);
  EXPECT_FALSE(gb.strategy.ep_dedup);  // EP 8 stays inside the NVLink domain
  EXPECT_TRUE(has(gb, "recipe (recipes.csv:3, CUDA graphs full, FP8 attention, EP all-to-all overlapped, flex "
                      "dispatcher, fused expert MLP; v0.5.0:configs.py:388)"));
  EXPECT_FALSE(has(gb, "EP all-to-all overlapped with another micro-batch's compute (Megatron-Bridge"));
  // 26.06 on H100: the third rule; its "false" turns the default overlap off.
  const CalibrationCase& h = (*cases)[2];
  EXPECT_EQ(h.strategy.cuda_graphs, CudaGraphs::kPartial);
  EXPECT_TRUE(h.strategy.fp8_attention);
  EXPECT_FALSE(h.strategy.overlap_ep_comm);
  EXPECT_FALSE(h.strategy.fused_expert_mlp);
  EXPECT_TRUE(has(h, "recipes.csv:4, CUDA graphs partial, FP8 attention, EP all-to-all not overlapped, all-to-all "
                     "dispatcher, unfused expert MLP; later rule)"));
  // The knobs move the prediction: FP8 attention, the fused MLP and graphs
  // make the 26.06 run faster than the same layout with defaults.
  const Calibration cal = DefaultCalibration();
  EXPECT_GT(PredictCaseTflops(gb, cal), PredictCaseTflops(old, cal));
}

// A flex dispatcher deduplicates only across NVLink domains.
TEST(RecipeRulesTest, AFlexDispatcherDeduplicatesOnlyAcrossDomains) {
  auto rules = LoadRecipeRules(
      WriteTemp("recipes.csv", std::string(kHeader) + "runs16.csv,,,,,,,,flex,,\nruns8.csv,,,,,,,,alltoall,,\n"));
  ASSERT_TRUE(rules) << rules.error().message;
  const std::string row16 = std::string(kSource) + kH100;  // EP 16 over two H100 nodes
  auto c16 = LoadCalibrationCases(WriteTemp("runs16.csv", std::string(kRunsHeader) + row16), {}, *rules);
  ASSERT_TRUE(c16 && c16->size() == 1 && (*c16)[0].usable);
  EXPECT_TRUE((*c16)[0].strategy.ep_dedup);
  auto c8 = LoadCalibrationCases(WriteTemp("runs8.csv", std::string(kRunsHeader) + row16), {}, *rules);
  ASSERT_TRUE(c8 && c8->size() == 1 && (*c8)[0].usable);
  EXPECT_FALSE((*c8)[0].strategy.ep_dedup);  // all-to-all: every routed copy crosses
  // Without a rule the default (flex beyond the domain) stays.
  auto none = LoadCalibrationCases(WriteTemp("runs_none.csv", std::string(kRunsHeader) + row16), {}, *rules);
  ASSERT_TRUE(none && none->size() == 1);
  EXPECT_TRUE((*none)[0].strategy.ep_dedup);
}

// The shipped file reads, and every rule in it names where its values come
// from.
TEST(RecipeRulesTest, ShippedRulesCiteTheirSource) {
  auto rules = LoadRecipeRules(std::string(TIDAL_SOURCE_DIR) + "/" + kDefaultRecipeFile);
  ASSERT_TRUE(rules) << rules.error().message;
  EXPECT_GE(rules->size(), 90u);
  for (const auto& r : *rules) {
    EXPECT_FALSE(r.source.empty()) << "recipes.csv:" << r.line;
    EXPECT_FALSE(r.container.empty()) << "recipes.csv:" << r.line;
  }
}

}  // namespace
}  // namespace tidal::planner
