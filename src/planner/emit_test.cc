#include "planner/emit.h"

#include <filesystem>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "common/csv.h"
#include "planner/search.h"

namespace tidal::planner {
namespace {

const std::string kShared = TIDAL_SHARED_DIR;

// flag -> type column of megatron_arguments.csv
std::map<std::string, std::string> MegatronFlags() {
  auto t = CsvTable::ReadFile(kShared + "/fixtures/megatron-args/megatron_arguments.csv");
  EXPECT_TRUE(t) << t.error().message;
  std::map<std::string, std::string> flags;
  if (!t) return flags;
  const size_t flag = *t->RequireColumn("flag"), type = *t->RequireColumn("type");
  for (const auto& r : t->rows()) flags[r.field(flag)] = r.field(type);
  return flags;
}

std::set<std::string> DeepSpeedKeys() {
  auto t = CsvTable::ReadFile(kShared + "/fixtures/deepspeed-config/deepspeed_config_keys.csv");
  EXPECT_TRUE(t) << t.error().message;
  std::set<std::string> keys;
  if (!t) return keys;
  const size_t key = *t->RequireColumn("key");
  for (const auto& r : t->rows()) keys.insert(r.field(key));
  return keys;
}

// A spread of plans touching every emitter branch: dense/MoE/GQA, uneven
// pipelines, virtual stages, each recompute mode, ZeRO stage and precision.
std::vector<std::pair<ModelSpec, Strategy>> Plans() {
  std::vector<std::pair<ModelSpec, Strategy>> out;
  const GpuSpec h100 = *FindGpu("h100");
  for (auto [model, gpus] : {std::pair{"llama3-70b", 512}, {"llama3-405b", 16384}, {"mixtral-8x22b", 128},
                             {"deepseek-v3", 2048}, {"gpt3-175b", 1024}}) {
    const ModelSpec m = *FindModelPreset(model);
    for (Precision p : {Precision::kBf16, Precision::kFp8}) {
      SearchOptions opt;
      opt.top = 3;
      opt.precision = p;
      auto r = SearchPlans(m, h100, DefaultPlacement(h100, gpus), opt, DefaultCalibration());
      EXPECT_TRUE(r) << model << ": " << r.error().message;
      if (!r) continue;
      for (const auto& plan : r->plans) out.emplace_back(m, plan.strategy);
    }
  }
  // Blackwell recipes, and an MoE whose EP group outgrows an NVL72 rack (the
  // flex dispatcher) next to one that stays inside it.
  const GpuSpec gb200 = *FindGpu("gb200");
  for (auto [model, gpus] : {std::pair{"deepseek-v3", 1152}, {"qwen3-30b-a3b", 64}, {"llama3-405b", 256}}) {
    const ModelSpec m = *FindModelPreset(model);
    for (Precision p : {Precision::kFp8Current, Precision::kMxfp8, Precision::kNvfp4}) {
      SearchOptions opt;
      opt.top = 3;
      opt.precision = p;
      auto r = SearchPlans(m, gb200, DefaultPlacement(gb200, gpus), opt, DefaultCalibration());
      EXPECT_TRUE(r) << model << ": " << r.error().message;
      if (!r) continue;
      for (const auto& plan : r->plans) out.emplace_back(m, plan.strategy);
    }
    // Megatron-Bridge 26.06's recipe knobs, and partial graphs.
    for (CudaGraphs g : {CudaGraphs::kFull, CudaGraphs::kPartial}) {
      SearchOptions opt;
      opt.top = 1;
      opt.precision = Precision::kMxfp8;
      opt.cuda_graphs = g;
      opt.fp8_attention = true;
      opt.fused_expert_mlp = true;
      auto r = SearchPlans(m, gb200, DefaultPlacement(gb200, gpus), opt, DefaultCalibration());
      EXPECT_TRUE(r) << model << ": " << r.error().message;
      if (r) out.emplace_back(m, r->plans.front().strategy);
    }
  }
  {
    // Llama 3.1 405B as Megatron-Bridge runs it on GB200: an uneven split
    // (7 + 14 x 8 + 7 layers) with 8 virtual stages.
    Strategy s;
    s.tp = 4;
    s.pp = 16;
    s.vpp = 8;
    s.dp = 4;
    s.grad_accum = 384;
    s.first_stage_layers = 7;
    s.last_stage_layers = 7;
    s.precision = Precision::kNvfp4;
    out.emplace_back(*FindModelPreset("llama3-405b"), s);
  }
  const ModelSpec m = *FindModelPreset("llama3-70b");
  for (int z = 0; z <= 3; ++z) {
    for (Recompute rc : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
      Strategy s;
      s.tp = 8;
      s.pp = z == 3 ? 1 : 4;
      s.vpp = z == 3 ? 1 : 2;
      s.dp = 4;
      s.grad_accum = 8;
      s.zero_stage = z;
      s.recompute = rc;
      s.sequence_parallel = true;
      s.overlap_tp_comm = true;
      s.precision = z == 0 ? Precision::kFp16 : Precision::kBf16;
      out.emplace_back(m, s);
    }
  }
  return out;
}

TEST(EmitTest, EveryMegatronFlagExistsWithAValidValue) {
  if (!std::filesystem::exists(kShared + "/fixtures/megatron-args")) GTEST_SKIP() << "shared fixtures not mounted";
  const auto flags = MegatronFlags();
  ASSERT_GT(flags.size(), 800u);
  std::set<std::string> seen;
  for (const auto& [m, s] : Plans()) {
    const auto args = MegatronArgs(m, s);
    for (size_t i = 0; i < args.size(); ++i) {
      ASSERT_TRUE(args[i].starts_with("--")) << "stray value '" << args[i] << "'";
      auto it = flags.find(args[i]);
      ASSERT_NE(it, flags.end()) << args[i] << " is not a Megatron-LM flag";
      seen.insert(args[i]);
      const std::string& type = it->second;
      if (type.starts_with("bool(")) continue;  // a switch takes no value
      ASSERT_LT(i + 1, args.size()) << args[i] << " needs a value";
      const std::string& v = args[++i];
      if (type == "int") {
        EXPECT_NO_THROW((void)std::stoi(v)) << args[i - 1] << " " << v;
        EXPECT_GT(std::stoi(v), 0) << args[i - 1];
      }
      const size_t brace = type.find('{');
      if (brace != std::string::npos) {
        EXPECT_NE(type.find(v), std::string::npos) << args[i - 1] << " " << v << " not in " << type;
      }
    }
  }
  for (const char* must : {"--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--context-parallel-size",
                           "--expert-model-parallel-size", "--num-layers-per-virtual-pipeline-stage",
                           "--micro-batch-size", "--global-batch-size", "--recompute-granularity",
                           "--sequence-parallel", "--use-distributed-optimizer", "--fp8-recipe", "--fp4-recipe",
                           "--moe-token-dispatcher-type", "--moe-flex-dispatcher-backend",
                           "--overlap-moe-expert-parallel-comm", "--mtp-num-layers",
                           "--num-virtual-stages-per-pipeline-rank", "--cuda-graph-impl",
                           "--use-transformer-engine-op-fuser"}) {
    EXPECT_TRUE(seen.contains(must)) << must << " never emitted";
  }
}

TEST(EmitTest, EveryDeepSpeedKeyExists) {
  if (!std::filesystem::exists(kShared + "/fixtures/deepspeed-config")) GTEST_SKIP() << "shared fixtures not mounted";
  const auto keys = DeepSpeedKeys();
  ASSERT_GT(keys.size(), 100u);
  for (const auto& [m, s] : Plans()) {
    const auto cfg = DeepSpeedConfig(m, s);
    for (const auto& k : JsonKeyPaths(cfg)) EXPECT_TRUE(keys.contains(k)) << k << " is not a DeepSpeed config key";
    EXPECT_EQ(cfg["train_batch_size"].get<int>(),
              cfg["train_micro_batch_size_per_gpu"].get<int>() * cfg["gradient_accumulation_steps"].get<int>() * s.dp);
    EXPECT_EQ(cfg["zero_optimization"]["stage"].get<int>(), s.zero_stage);
  }
}

TEST(EmitTest, VirtualStagesAndUnevenSplitsAreSpelledAsLayerCounts) {
  const ModelSpec m = *FindModelPreset("llama3-405b");
  Strategy s;
  s.tp = 8;
  s.pp = 16;
  s.dp = 8;
  s.grad_accum = 32;
  s.first_stage_layers = 7;
  s.last_stage_layers = 7;
  const std::string line = MegatronArgsLine(m, s);
  EXPECT_NE(line.find("--decoder-first-pipeline-num-layers 7"), std::string::npos) << line;
  EXPECT_NE(line.find("--decoder-last-pipeline-num-layers 7"), std::string::npos);
  s = Strategy{};
  s.tp = 8;
  s.pp = 9;
  s.vpp = 7;
  s.grad_accum = 9;
  EXPECT_NE(MegatronArgsLine(m, s).find("--num-layers-per-virtual-pipeline-stage 2"), std::string::npos);
}

}  // namespace
}  // namespace tidal::planner

namespace tidal::planner {
namespace {

// "--flag value" pairs and switches as one string, for presence checks.
std::string Joined(const ModelSpec& m, const Strategy& s) {
  std::string out = " ";
  for (const auto& a : MegatronArgs(m, s)) out += a + " ";
  return out;
}

// Each knob's flags appear exactly when the strategy has it.
TEST(EmitTest, FlagsFollowTheStrategy) {
  ModelSpec moe = *FindModelPreset("qwen3-30b-a3b");
  const ModelSpec dense = *FindModelPreset("llama3-8b");
  Strategy s;
  s.dp = 8;
  EXPECT_EQ(Joined(dense, s).find("--recompute-granularity"), std::string::npos);
  s.recompute = Recompute::kSelective;
  EXPECT_NE(Joined(dense, s).find(" --recompute-granularity selective "), std::string::npos);
  EXPECT_EQ(Joined(dense, s).find("--recompute-method"), std::string::npos);
  s.recompute = Recompute::kFull;
  EXPECT_NE(Joined(dense, s).find(" --recompute-granularity full --recompute-method uniform "), std::string::npos);
  s.recompute = Recompute::kNone;
  // MoE: no dispatcher and no EP overlap without EP; all-to-all inside the domain.
  s.overlap_ep_comm = true;
  EXPECT_EQ(Joined(moe, s).find("--moe-token-dispatcher-type"), std::string::npos);
  EXPECT_EQ(Joined(moe, s).find("--overlap-moe-expert-parallel-comm"), std::string::npos);
  s.ep = 2;
  EXPECT_NE(Joined(moe, s).find(" --moe-token-dispatcher-type alltoall "), std::string::npos);
  EXPECT_NE(Joined(moe, s).find(" --overlap-moe-expert-parallel-comm --delay-wgrad-compute "), std::string::npos);
  s.overlap_ep_comm = false;
  EXPECT_EQ(Joined(moe, s).find("--overlap-moe-expert-parallel-comm"), std::string::npos);
  // One leading dense layer is spelled in the layer pattern.
  EXPECT_EQ(Joined(moe, s).find("--moe-layer-freq"), std::string::npos);
  moe.first_dense_layers = 1;
  EXPECT_NE(Joined(moe, s).find(" --moe-layer-freq ([0]*1+[1]*47) "), std::string::npos) << Joined(moe, s);
  // The recipe's knobs.
  EXPECT_EQ(Joined(moe, s).find("--cuda-graph-impl"), std::string::npos);
  EXPECT_EQ(Joined(moe, s).find("--use-transformer-engine-op-fuser"), std::string::npos);
  s.cuda_graphs = CudaGraphs::kPartial;
  EXPECT_NE(Joined(moe, s).find(" --cuda-graph-impl transformer_engine "), std::string::npos);
  s.cuda_graphs = CudaGraphs::kFull;
  EXPECT_NE(Joined(moe, s).find(" --cuda-graph-impl full_iteration "), std::string::npos);
  s.fused_expert_mlp = true;
  EXPECT_NE(Joined(moe, s).find(" --use-transformer-engine-op-fuser "), std::string::npos);
  Strategy d;
  d.dp = 8;
  d.fused_expert_mlp = true;  // nothing to fuse in a dense model
  EXPECT_EQ(Joined(dense, d).find("--use-transformer-engine-op-fuser"), std::string::npos);
  // Sequence parallelism and TP overlap need TP > 1.
  d.sequence_parallel = true;
  d.overlap_tp_comm = true;
  EXPECT_EQ(Joined(dense, d).find("--sequence-parallel"), std::string::npos);
  EXPECT_EQ(Joined(dense, d).find("--tp-comm-overlap"), std::string::npos);
  d.tp = 2;
  d.dp = 4;
  EXPECT_NE(Joined(dense, d).find(" --sequence-parallel "), std::string::npos);
  EXPECT_NE(Joined(dense, d).find(" --tp-comm-overlap "), std::string::npos);
  d.sequence_parallel = false;
  d.overlap_tp_comm = false;
  EXPECT_EQ(Joined(dense, d).find("--sequence-parallel"), std::string::npos);
  EXPECT_EQ(Joined(dense, d).find("--tp-comm-overlap"), std::string::npos);
  // Untied output weights are said; tied ones are Megatron's default.
  ModelSpec tied = dense;
  tied.tied_embeddings = false;
  EXPECT_NE(Joined(tied, d).find(" --untie-embeddings-and-output-weights "), std::string::npos);
  tied.tied_embeddings = true;
  EXPECT_EQ(Joined(tied, d).find("--untie-embeddings-and-output-weights"), std::string::npos);
}

}  // namespace
}  // namespace tidal::planner
