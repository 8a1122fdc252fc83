#include "planner/search.h"

#include <chrono>

#include <gtest/gtest.h>

namespace tidal::planner {
namespace {

TEST(SearchTest, Llama70bOn512H100) {
  const ModelSpec m = *FindModelPreset("llama3-70b");
  const GpuSpec g = *FindGpu("h100");
  SearchOptions opt;
  auto r = SearchPlans(m, g, DefaultPlacement(g, 512), opt, DefaultCalibration());
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->plans.size(), 5u);
  EXPECT_GT(r->pruned_memory, 0);
  for (size_t i = 0; i < r->plans.size(); ++i) {
    const auto& p = r->plans[i];
    EXPECT_TRUE(p.prediction.fits);
    EXPECT_LE(p.prediction.memory_gib, g.hbm_gib);
    EXPECT_EQ(p.strategy.Gpus(), 512);
    EXPECT_EQ(p.strategy.GlobalBatch(), m.global_batch);
    if (i > 0) {
      EXPECT_LE(r->plans[i - 1].prediction.step_time_s, p.prediction.step_time_s);
    }
  }
  // Published Llama-3-70B-class BF16 runs on H100 reach 35-60% MFU.
  EXPECT_GT(r->plans[0].prediction.mfu, 0.35);
  EXPECT_LT(r->plans[0].prediction.mfu, 0.65);
  // Deterministic: the same inputs give the same table.
  auto again = SearchPlans(m, g, DefaultPlacement(g, 512), opt, DefaultCalibration());
  ASSERT_TRUE(again);
  for (size_t i = 0; i < r->plans.size(); ++i) {
    EXPECT_EQ(again->plans[i].strategy.tp, r->plans[i].strategy.tp);
    EXPECT_EQ(again->plans[i].strategy.pp, r->plans[i].strategy.pp);
    EXPECT_EQ(again->plans[i].prediction.step_time_s, r->plans[i].prediction.step_time_s);
  }
}

TEST(SearchTest, Llama405bOn16kH100UsesUnevenPipelineAndIsFast) {
  const ModelSpec m = *FindModelPreset("llama3-405b");
  const GpuSpec g = *FindGpu("h100");
  const auto t0 = std::chrono::steady_clock::now();
  auto r = SearchPlans(m, g, DefaultPlacement(g, 16384), SearchOptions{}, DefaultCalibration());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_LT(secs, 1.0);
  const Strategy& s = r->plans[0].strategy;
  EXPECT_GT(s.pp, 1);
  EXPECT_LE(r->plans[0].prediction.memory_gib, g.hbm_gib);
  if (m.layers % s.pp != 0) {
    EXPECT_EQ(s.first_stage_layers + s.last_stage_layers + (s.pp - 2) * ((m.layers + s.pp - 1) / s.pp), m.layers);
  }
}

// TP runs over 1, 2, 4, 8 on an 8-GPU NVLink domain: the bound is
// inclusive. Fixing TP 8 must find plans (all with TP 8), and the full
// search evaluates exactly what the four fixed-TP searches evaluate together.
TEST(SearchTest, TensorParallelEightIsTried) {
  const ModelSpec m = *FindModelPreset("llama3-70b");  // 64 heads, 8 KV heads
  const GpuSpec g = *FindGpu("h100");
  const Placement pl = DefaultPlacement(g, 64);
  ASSERT_EQ(pl.gpus_per_domain, 8);
  SearchOptions opt;
  opt.pp = 1;  // keep it small
  long sum = 0;
  for (int tp : {1, 2, 4, 8}) {
    SearchOptions o = opt;
    o.tp = tp;
    auto r = SearchPlans(m, g, pl, o, DefaultCalibration());
    ASSERT_TRUE(r) << "tp " << tp << ": " << r.error().message;
    EXPECT_GT(r->evaluated, 0) << tp;
    for (const auto& p : r->plans) EXPECT_EQ(p.strategy.tp, tp);
    sum += r->evaluated;
  }
  auto all = SearchPlans(m, g, pl, opt, DefaultCalibration());
  ASSERT_TRUE(all) << all.error().message;
  EXPECT_EQ(all->evaluated, sum);
  // TP 16 would span two NVLink domains: never tried.
  SearchOptions o16 = opt;
  o16.tp = 16;
  auto r16 = SearchPlans(m, g, pl, o16, DefaultCalibration());
  ASSERT_FALSE(r16);
  EXPECT_EQ(r16.error().code, ErrorCode::kUnresolvable);
}

// Without context parallelism the sequence length needs no divisibility:
// an odd length still has plans (all with CP 1); CP 2 needs it divisible by 4.
TEST(SearchTest, AnOddSequenceLengthSearchesWithoutContextParallelism) {
  ModelSpec m = *FindModelPreset("llama3-8b");
  m.seq_len = 4095;
  const GpuSpec g = *FindGpu("h100");
  auto r = SearchPlans(m, g, DefaultPlacement(g, 8), SearchOptions{}, DefaultCalibration());
  ASSERT_TRUE(r) << r.error().message;
  for (const auto& p : r->plans) EXPECT_EQ(p.strategy.cp, 1);
  SearchOptions cp2;
  cp2.cp = 2;
  m.seq_len = 4098;
  EXPECT_FALSE(SearchPlans(m, g, DefaultPlacement(g, 8), cp2, DefaultCalibration()));
  m.seq_len = 4100;
  auto ok = SearchPlans(m, g, DefaultPlacement(g, 8), cp2, DefaultCalibration());
  ASSERT_TRUE(ok) << ok.error().message;
  for (const auto& p : ok->plans) EXPECT_EQ(p.strategy.cp, 2);
}

TEST(SearchTest, MoeSearchUsesExpertParallelism) {
  const ModelSpec m = *FindModelPreset("mixtral-8x22b");
  const GpuSpec g = *FindGpu("h100");
  auto r = SearchPlans(m, g, DefaultPlacement(g, 128), SearchOptions{}, DefaultCalibration());
  ASSERT_TRUE(r) << r.error().message;
  bool any_ep = false;
  for (const auto& p : r->plans) any_ep |= p.strategy.ep > 1;
  EXPECT_TRUE(any_ep);
}

// The recipe's knobs hold for every strategy searched; FP8 attention needs
// FP8 tensor cores, and a dense model has no expert MLP to fuse.
TEST(SearchTest, RecipeKnobsApplyToEveryPlan) {
  const ModelSpec moe = *FindModelPreset("qwen3-30b-a3b");
  const GpuSpec gb200 = *FindGpu("gb200");
  SearchOptions opt;
  opt.precision = Precision::kMxfp8;
  auto plain = SearchPlans(moe, gb200, DefaultPlacement(gb200, 64), opt, DefaultCalibration());
  ASSERT_TRUE(plain) << plain.error().message;
  opt.cuda_graphs = CudaGraphs::kFull;
  opt.fp8_attention = true;
  opt.fused_expert_mlp = true;
  auto tuned = SearchPlans(moe, gb200, DefaultPlacement(gb200, 64), opt, DefaultCalibration());
  ASSERT_TRUE(tuned) << tuned.error().message;
  for (const auto& p : tuned->plans) {
    EXPECT_EQ(p.strategy.cuda_graphs, CudaGraphs::kFull);
    EXPECT_TRUE(p.strategy.fp8_attention);
    EXPECT_TRUE(p.strategy.fused_expert_mlp);
  }
  // FP8 attention and the fused MLP only take time away.
  EXPECT_LT(tuned->plans.front().prediction.step_time_s, plain->plans.front().prediction.step_time_s);
  const ModelSpec dense = *FindModelPreset("llama3-70b");
  auto d = SearchPlans(dense, gb200, DefaultPlacement(gb200, 64), opt, DefaultCalibration());
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_FALSE(d->plans.front().strategy.fused_expert_mlp);
  const GpuSpec a100 = *FindGpu("a100");
  opt.precision = Precision::kBf16;
  auto bad = SearchPlans(dense, a100, DefaultPlacement(a100, 64), opt, DefaultCalibration());
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("no FP8 tensor cores for FP8 attention"), std::string::npos) << bad.error().message;
}

// The flex dispatcher exactly when the EP group (with TP and CP) leaves the
// NVLink domain; a GPU count out of range is an error.
TEST(SearchTest, TheFlexDispatcherOnlyBeyondTheDomainAndGpuBounds) {
  const ModelSpec moe = *FindModelPreset("qwen3-30b-a3b");
  const GpuSpec h100 = *FindGpu("h100");
  SearchOptions opt;
  opt.top = 50;
  auto r = SearchPlans(moe, h100, DefaultPlacement(h100, 64), opt, DefaultCalibration());
  ASSERT_TRUE(r) << r.error().message;
  for (const auto& p : r->plans) {
    const Strategy& s = p.strategy;
    EXPECT_EQ(s.ep_dedup, s.ep > 1 && s.tp * s.cp * s.ep > 8) << s.tp << " " << s.cp << " " << s.ep;
  }
  for (int gpus : {0, 10'000'001}) {
    auto bad = SearchPlans(moe, h100, DefaultPlacement(h100, gpus), opt, DefaultCalibration());
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("outside 1..10,000,000"), std::string::npos) << bad.error().message;
  }
  // One GPU is in range: the error, if any, is about the model, not the count.
  auto one = SearchPlans(moe, h100, DefaultPlacement(h100, 1), opt, DefaultCalibration());
  if (!one) {
    EXPECT_EQ(one.error().message.find("outside 1..10,000,000"), std::string::npos) << one.error().message;
  }
}

TEST(SearchTest, ImpossibleJobIsUnresolvableWithAdvice) {
  const ModelSpec m = *FindModelPreset("llama3-405b");
  const GpuSpec g = *FindGpu("a100");
  auto r = SearchPlans(m, g, DefaultPlacement(g, 8), SearchOptions{}, DefaultCalibration());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kUnresolvable);
  EXPECT_NE(r.error().message.find("add GPUs"), std::string::npos);
  SearchOptions fp8;
  fp8.precision = Precision::kFp8;
  EXPECT_FALSE(SearchPlans(m, g, DefaultPlacement(g, 1024), fp8, DefaultCalibration()));
}

TEST(GradAccumTest, LowerAllReduceSaturationNeedsMoreAccumulation) {
  const ModelSpec m = *FindModelPreset("llama3-8b");
  const GpuSpec g = *FindGpu("h100");
  Strategy s;
  s.tp = 1;
  s.dp = 256;
  s.micro_batch = 1;
  s.zero_stage = 1;
  s.overlap_grad_reduce = false;  // worst case: nothing hides the reduction
  const Placement pl = DefaultPlacement(g, 256);
  auto fast = ChooseGradAccum(m, g, pl, s, DefaultCalibration(), 0.9, 0.05);
  auto slow = ChooseGradAccum(m, g, pl, s, DefaultCalibration(), 0.3, 0.05);
  ASSERT_TRUE(fast) << fast.error().message;
  ASSERT_TRUE(slow) << slow.error().message;
  EXPECT_TRUE(fast->met);
  EXPECT_TRUE(slow->met);
  EXPECT_LE(fast->dp_share, 0.05);
  EXPECT_GT(slow->grad_accum, fast->grad_accum);
  EXPECT_EQ(slow->global_batch, slow->grad_accum * 256);
  for (size_t i = 1; i < slow->curve.size(); ++i) EXPECT_LT(slow->curve[i].second, slow->curve[i - 1].second);
  EXPECT_FALSE(ChooseGradAccum(m, g, pl, s, DefaultCalibration(), 1.5, 0.05));
  EXPECT_FALSE(ChooseGradAccum(m, g, pl, s, DefaultCalibration(), 0.5, 0));
}

}  // namespace
}  // namespace tidal::planner
