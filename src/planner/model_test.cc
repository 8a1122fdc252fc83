#include "planner/model.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "common/test_files.h"
#include "planner/gpu.h"

namespace tidal::planner {
namespace {

using test::WriteTemp;

TEST(ModelPresetTest, IssueModelsAllPresent) {
  for (const char* n : {"gpt3-175b", "llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b", "llama3-405b",
                        "mixtral-8x7b", "mixtral-8x22b", "deepseek-v3", "qwen3-30b-a3b", "qwen3-235b-a22b",
                        "gpt-oss-20b", "gpt-oss-120b", "nemotron-4-15b", "nemotron-4-340b"}) {
    auto m = FindModelPreset(n);
    ASSERT_TRUE(m) << n << ": " << m.error().message;
    EXPECT_TRUE(ValidateModel(*m)) << n;
  }
}

TEST(ModelPresetTest, MatchesPublishedTableSpellings) {
  // Spellings from the model column of shared/planner/calibration.csv.
  const std::pair<const char*, const char*> names[] = {
      {"LLAMA3-70B", "llama3-70b"},         {"Llama3 70B", "llama3-70b"},       {"GPT3-175B", "gpt3-175b"},
      {"GPT 175B (GPT-3)", "gpt3-175b"},    {"GPT-3 175B", "gpt3-175b"},        {"LLAMA2-13B", "llama2-13b"},
      {"Nemotron-340B", "nemotron-4-340b"}, {"DeepSeek V3 671B", "deepseek-v3"}, {"Qwen3 MoE 30B", "qwen3-30b-a3b"},
      {"GPT-OSS 120B", "gpt-oss-120b"},     {"GPT 530B (MT-NLG)", "mt-nlg-530b"}, {"Kimi K2", "kimi-k2"}};
  for (auto [table, preset] : names) {
    auto m = FindModelPreset(table);
    ASSERT_TRUE(m) << table;
    EXPECT_EQ(m->name, preset) << table;
  }
  auto missing = FindModelPreset("Nemotron V3 Nano 30B");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("presets:"), std::string::npos);
}

TEST(ModelPresetTest, ParameterCountsMatchPublishedSizes) {
  struct Want {
    const char* name;
    double total_b, active_b;
  };
  // Published totals / active parameters (billions); 6% covers norms, biases
  // and the MLA approximation of DeepSeek-V3.
  for (const Want& w : {Want{"gpt3-175b", 175, 175}, Want{"llama2-70b", 69, 69}, Want{"llama3-8b", 8.0, 8.0},
                        Want{"llama3-70b", 70.6, 70.6}, Want{"llama3-405b", 405, 405},
                        Want{"mixtral-8x7b", 46.7, 12.9}, Want{"mixtral-8x22b", 141, 39},
                        Want{"qwen3-30b-a3b", 30.5, 3.3}, Want{"qwen3-235b-a22b", 235, 22},
                        Want{"gpt-oss-120b", 117, 5.1}, Want{"gpt-oss-20b", 21, 3.6},
                        Want{"nemotron-4-340b", 341, 341}, Want{"nemotron-4-15b", 15.7, 15.7},
                        Want{"deepseek-v3", 671, 37}, Want{"kimi-k2", 1040, 32.6}}) {
    auto m = FindModelPreset(w.name);
    ASSERT_TRUE(m);
    EXPECT_NEAR(m->TotalParams() / 1e9, w.total_b, 0.06 * w.total_b) << w.name;
    EXPECT_NEAR(m->ActiveParams() / 1e9, w.active_b, 0.12 * w.active_b) << w.name;
  }
}

TEST(FlopsTest, MegatronFormulaReproducesNemoTokensPerSecond) {
  // NeMo 24.07 table: TFLOP/s per GPU / tokens per s per GPU = FLOPs per token.
  const struct {
    const char* model;
    double tflops, tokens_per_s;
  } rows[] = {{"LLAMA3-70B", 734, 1524}, {"LLAMA2-70B", 768, 1728}, {"GPT3-175B", 771, 716},
              {"LLAMA2-7B", 780, 16934}, {"Nemotron-340B", 686, 326}};
  for (const auto& r : rows) {
    auto m = FindModelPreset(r.model);
    ASSERT_TRUE(m);
    const double implied = r.tflops * 1e12 / r.tokens_per_s;
    EXPECT_NEAR(FlopsPerToken(*m, m->seq_len, FlopsConvention::kMegatron) / implied, 1.0, 0.01) << r.model;
  }
  // NeMo AutoModel counts causal attention: Llama3 70B, 389 TFLOP/s at 866.77 tokens/s.
  auto l70 = FindModelPreset("llama3-70b");
  EXPECT_NEAR(FlopsPerToken(*l70, 8192, FlopsConvention::kMegatronCausal) / (389e12 / 866.77), 1.0, 0.01);
  // ... and DeepSeek-V3 with multi-latent attention, trained there without
  // its multi-token-prediction module: 216 TFLOP/s at 865 tokens/s.
  auto ds = FindModelPreset("deepseek-v3");
  ASSERT_TRUE(ds);
  EXPECT_EQ(ds->mtp_layers, 1);
  ModelSpec no_mtp = *ds;
  no_mtp.mtp_layers = 0;
  EXPECT_NEAR(FlopsPerToken(no_mtp, 4096, FlopsConvention::kMegatronCausal) / (216e12 / 865), 1.0, 0.02);
  // Megatron-Bridge 26.08 trains it with MTP and counts its FLOPs (one more
  // MoE layer, the 2h -> h projection, a second output layer): 1635 TFLOP/s
  // at 6288 tokens/s on GB300, vocabulary 128000 as the row gives it.
  ModelSpec bridge = *ds;
  bridge.vocab = 128000;
  EXPECT_NEAR(FlopsPerToken(bridge, 4096, FlopsConvention::kMegatronCausal) / (1635e12 / 6288), 1.0, 0.01);
  bridge.mtp_layers = 0;  // without the MTP module the count is 3.5% short
  EXPECT_LT(FlopsPerToken(bridge, 4096, FlopsConvention::kMegatronCausal) / (1635e12 / 6288), 0.97);
}

TEST(FlopsTest, NarayananEq3ForGpt) {
  ModelSpec m;
  m.name = "gpt";
  m.layers = 96;
  m.hidden = 12288;
  m.heads = 96;
  m.kv_heads = 96;
  m.ffn = 4 * 12288;
  m.vocab = 51200;
  m.seq_len = 2048;
  m.global_batch = 1;
  const double l = m.layers, h = m.hidden, s = m.seq_len, v = m.vocab;
  const double eq3 = 96 * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h)) / s;
  EXPECT_NEAR(FlopsPerToken(m, 2048, FlopsConvention::kNarayananEq3) / eq3, 1.0, 1e-9);
  const double eq7 = 72 * s * l * h * h * (1 + s / (6 * h) + v / (12 * h * l)) / s;
  EXPECT_NEAR(FlopsPerToken(m, 2048, FlopsConvention::kMegatron) / eq7, 1.0, 1e-9);
}

TEST(ModelFileTest, ReadsYamlAndJson) {
  auto y = LoadModelFile(WriteTemp("tidal_model.yaml",
                                   "name: tiny\nlayers: 4\nhidden: 512\nheads: 8\nkv_heads: 2\nffn: 1536\n"
                                   "gated_mlp: true\nvocab: 32000\nseq_len: 2048\nglobal_batch: 64\n"));
  ASSERT_TRUE(y) << y.error().message;
  EXPECT_EQ(y->name, "tiny");
  EXPECT_EQ(y->kv_heads, 2);
  EXPECT_TRUE(y->gated_mlp);
  auto j = LoadModelFile(WriteTemp("tidal_model.json",
                                   R"({"name": "moe", "layers": 8, "hidden": 1024, "heads": 16, "ffn": 4096,
                                       "vocab": 50000, "seq_len": 4096, "global_batch": 128,
                                       "experts": 8, "top_k": 2, "expert_ffn": 2048})"));
  ASSERT_TRUE(j) << j.error().message;
  EXPECT_TRUE(j->IsMoe());
  EXPECT_EQ(j->kv_heads, 16);
}

TEST(ModelFileTest, ErrorsNameFileLineAndField) {
  auto typo = LoadModelFile(WriteTemp("tidal_typo.yaml", "name: x\nlayers: 4\nhiden: 512\n"));
  ASSERT_FALSE(typo);
  EXPECT_NE(typo.error().message.find("tidal_typo.yaml:3"), std::string::npos) << typo.error().message;
  EXPECT_NE(typo.error().message.find("hiden"), std::string::npos);
  auto bad = LoadModelFile(WriteTemp("tidal_bad.yaml", "name: x\nlayers: four\n"));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find(":2: field 'layers'"), std::string::npos) << bad.error().message;
  auto incomplete = LoadModelFile(WriteTemp("tidal_incomplete.yaml", "name: x\nlayers: 4\n"));
  ASSERT_FALSE(incomplete);
  EXPECT_NE(incomplete.error().message.find("hidden"), std::string::npos);
  EXPECT_FALSE(LoadModelFile("/nonexistent/model.yaml"));
  // The MoE routing fields take numbers in their ranges.
  const std::string moe =
      "name: m\nlayers: 4\nhidden: 512\nheads: 8\nffn: 1024\nvocab: 1000\nseq_len: 128\nglobal_batch: 8\n"
      "experts: 8\ntop_k: 2\nexpert_ffn: 256\n";
  const struct {
    std::string extra, want;
  } rows[] = {
      {"moe_imbalance: lots\n", ":12: field 'moe_imbalance': expected a number"},
      {"moe_imbalance: 0.5\n", "field 'moe_imbalance' must be in [1, 1000]"},
      {"moe_capacity_factor: 0.5\n", "field 'moe_capacity_factor' must be 0 (dropless) or in [1, 1000]"},
  };
  for (const auto& r : rows) {
    auto m = LoadModelFile(WriteTemp("tidal_moe_bad.yaml", moe + r.extra));
    ASSERT_FALSE(m) << r.extra;
    EXPECT_NE(m.error().message.find(r.want), std::string::npos) << m.error().message;
  }
  auto ok = LoadModelFile(WriteTemp("tidal_moe_ok.yaml", moe + "moe_imbalance: 1.5\nmoe_capacity_factor: 1.25\n"));
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_DOUBLE_EQ(ok->MoeLoadFactor(), 1.25);  // token-drop caps the busiest expert
  ok->moe_capacity_factor = 0;
  EXPECT_DOUBLE_EQ(ok->MoeLoadFactor(), 1.5);  // dropless takes it all
}

TEST(GpuTest, TableAndToolSpellings) {
  for (auto [s, want] : {std::pair{"H100-SXM-80GB", "h100"}, {"H100 (80GB)", "h100"}, {"A100-SXM-80GB", "a100"},
                         {"A100-80GB", "a100"}, {"NVIDIA H100 80GB HBM3", "h100"}, {"h200", "h200"},
                         {"B200", "b200"}, {"GB200", "gb200"}, {"NVIDIA A100-SXM4-40GB", "a100"}}) {
    auto g = FindGpu(s);
    ASSERT_TRUE(g) << s;
    EXPECT_EQ(g->name, want) << s;
  }
  EXPECT_FALSE(FindGpu("NVIDIA A100 80GB PCIe"));
  EXPECT_FALSE(FindGpu("MI300X"));
  auto a100 = FindGpu("a100");
  EXPECT_FALSE(a100->PeakFlops(Precision::kFp8));
  EXPECT_DOUBLE_EQ(*FindGpu("h100")->PeakFlops(Precision::kFp8), 1979e12);
  EXPECT_DOUBLE_EQ(*a100->PeakFlops(Precision::kFp16), 312e12);
}

}  // namespace
}  // namespace tidal::planner
