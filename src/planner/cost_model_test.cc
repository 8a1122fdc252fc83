#include "planner/cost_model.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "planner/predict.h"

namespace tidal::planner {
namespace {

ModelSpec Llama70() { return *FindModelPreset("llama3-70b"); }
GpuSpec H100() { return *FindGpu("h100"); }

Strategy Make(int tp, int pp, int dp, int mb, int ga) {
  Strategy s;
  s.tp = tp;
  s.pp = pp;
  s.dp = dp;
  s.micro_batch = mb;
  s.grad_accum = ga;
  s.sequence_parallel = tp > 1;
  return s;
}

// The bubble against the pipeline's own work, hand-computed: a micro-batch
// takes t_mb = (compute + TP + CP + EP time) / m on every stage, and the
// bubble is (p-1)/(m v) of the m micro-batches' time. The expectation comes
// from the other terms of the breakdown, never from bubble_s itself.
double BubbleShare(const Prediction& p) {
  const double work = p.time.compute_s + p.time.tp_comm_s + p.time.cp_comm_s + p.time.ep_comm_s;
  return p.time.bubble_s / work;
}

TEST(CostModelTest, PipelineBubbleIsPMinusOneOverMV) {
  const ModelSpec m = Llama70();
  const GpuSpec g = H100();
  Strategy s = Make(8, 4, 2, 1, 8);  // p = 4, m = 8
  const Placement pl = DefaultPlacement(g, s.Gpus());
  auto p1 = Predict(m, g, pl, s, DefaultCalibration());
  ASSERT_TRUE(p1) << p1.error().message;
  EXPECT_GT(p1->time.bubble_s, 0);
  EXPECT_NEAR(BubbleShare(*p1), 3.0 / 8, 1e-9);  // (4-1)/(8*1), not 4/8
  s.vpp = 2;                                      // v = 2: 20 layers per stage, 10 per chunk
  auto p2 = Predict(m, g, pl, s, DefaultCalibration());
  ASSERT_TRUE(p2) << p2.error().message;
  EXPECT_NEAR(BubbleShare(*p2), 3.0 / 16, 1e-9);  // (4-1)/(8*2), not 4/16
  // p = 2, m = 4, v = 1: 1/4 (p/(m v) would be 1/2).
  Strategy t = Make(8, 2, 4, 1, 4);
  auto p3 = Predict(m, g, DefaultPlacement(g, t.Gpus()), t, DefaultCalibration());
  ASSERT_TRUE(p3) << p3.error().message;
  EXPECT_NEAR(BubbleShare(*p3), 1.0 / 4, 1e-9);
  // No pipeline, no bubble.
  Strategy u = Make(8, 1, 8, 1, 8);
  auto p4 = Predict(m, g, DefaultPlacement(g, u.Gpus()), u, DefaultCalibration());
  ASSERT_TRUE(p4) << p4.error().message;
  EXPECT_EQ(p4->time.bubble_s, 0);
  // The step is the sum of its parts (the bubble included once).
  for (const auto& p : {*p1, *p2, *p3, *p4}) {
    const auto& b = p.time;
    EXPECT_NEAR(p.step_time_s,
                b.compute_s + b.tp_comm_s + b.cp_comm_s + b.ep_comm_s + b.bubble_s + b.pp_comm_s + b.dp_comm_s +
                    b.optimizer_s,
                1e-9 * p.step_time_s);
  }
}

TEST(CostModelTest, MemoryAgreesWithMegatronTheoreticalFootprint) {
  // shared/fixtures/megatron-logs/megatron-lm-rocm-mi300x-tp4pp2-28b-2025-11.log:
  // TP4 PP2 DP1, 56 layers, h 6144, ffn 21504, 96 heads / 24 groups, kv 64,
  // seq 8192, MBS 1, GBS 512, swiglu, distributed optimizer, SP, selective.
  // Megatron prints "weight and optimizer=60307.48 MB, activation=21528.03 MB".
  ModelSpec m;
  m.name = "mi300x-28b";
  m.layers = 56;
  m.hidden = 6144;
  m.heads = 96;
  m.kv_heads = 24;
  m.head_dim = 64;
  m.ffn = 21504;
  m.gated_mlp = true;
  m.vocab = 50688;  // GPT-2 BPE 50257 padded to a multiple of 128 x TP
  m.seq_len = 8192;
  m.global_batch = 512;
  Strategy s = Make(4, 2, 1, 1, 512);
  s.zero_stage = 1;
  s.recompute = Recompute::kSelective;
  GpuSpec g = H100();
  g.hbm_gib = 192;  // MI300X capacity; the footprint itself does not depend on the GPU
  auto p = Predict(m, g, DefaultPlacement(g, 8), s, DefaultCalibration());
  ASSERT_TRUE(p) << p.error().message;
  const double mib = 1.0 / 1024;
  const double states = (p->memory.weights_gib + p->memory.gradients_gib + p->memory.optimizer_gib) / mib;
  EXPECT_NEAR(states, 60307.48, 0.08 * 60307.48);
  EXPECT_NEAR(p->memory.activations_gib / mib, 21528.03, 0.30 * 21528.03);
}

TEST(CostModelTest, ZeroStagesAndRecomputeReduceMemory) {
  const ModelSpec m = Llama70();
  const GpuSpec g = H100();
  const Placement pl = DefaultPlacement(g, 64);
  double last = 1e30;
  for (int z = 0; z <= 3; ++z) {
    Strategy s = Make(8, 1, 8, 1, 16);
    s.zero_stage = z;
    auto p = Predict(m, g, pl, s, DefaultCalibration());
    ASSERT_TRUE(p);
    EXPECT_LT(p->memory_gib, last) << "zero " << z;
    last = p->memory_gib;
  }
  Strategy s = Make(8, 1, 8, 1, 16);
  double act = 1e30, time = 0;
  for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    s.recompute = r;
    auto p = Predict(m, g, pl, s, DefaultCalibration());
    ASSERT_TRUE(p);
    EXPECT_LT(p->memory.activations_gib, act) << RecomputeName(r);
    EXPECT_GT(p->step_time_s, time) << RecomputeName(r);
    act = p->memory.activations_gib;
    time = p->step_time_s;
  }
}

TEST(CostModelTest, InvalidStrategiesAreErrorsNotCrashes) {
  const ModelSpec m = Llama70();
  const GpuSpec g = H100();
  auto bad_tp = Predict(m, g, DefaultPlacement(g, 48), Make(3, 1, 16, 1, 1), DefaultCalibration());
  ASSERT_FALSE(bad_tp);
  EXPECT_NE(bad_tp.error().message.find("tp must divide"), std::string::npos);
  Strategy fp8 = Make(8, 1, 1, 1, 1024);
  fp8.precision = Precision::kFp8;
  auto a100 = *FindGpu("a100");
  auto no_fp8 = Predict(m, a100, DefaultPlacement(a100, 8), fp8, DefaultCalibration());
  ASSERT_FALSE(no_fp8);
  EXPECT_NE(no_fp8.error().message.find("no fp8"), std::string::npos);
}

TEST(CostModelTest, ClusterSpecParsing) {
  const GpuSpec g = H100();
  auto pl = ParseClusterSpec("domain=72,nvlink=900,net=100,latency=2", g, 144);
  ASSERT_TRUE(pl) << pl.error().message;
  EXPECT_EQ(pl->gpus_per_domain, 72);
  EXPECT_EQ(LinkFor(*pl, 64).gbps, 900);
  EXPECT_EQ(LinkFor(*pl, 144).gbps, 100);
  auto bad = ParseClusterSpec("domian=8", g, 8);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("domian"), std::string::npos);
  EXPECT_FALSE(ParseClusterSpec("nvlink=abc", g, 8));
}

TEST(PredictStepTimeTest, FixedStrategyAndSearch) {
  TrainingJob job{Llama70(), "H100-SXM-80GB", Precision::kBf16, Make(8, 2, 4, 1, 256)};  // global batch 1024
  const Placement pl = DefaultPlacement(H100(), 64);
  auto fixed = PredictStepTime(job, pl);
  ASSERT_TRUE(fixed) << fixed.error().message;
  EXPECT_GT(fixed->prediction.step_time_s, 0);
  job.strategy.reset();
  auto best = PredictStepTime(job, pl);
  ASSERT_TRUE(best) << best.error().message;
  EXPECT_LE(best->prediction.step_time_s, fixed->prediction.step_time_s * 1.0001);
  job.strategy = Make(8, 2, 8, 1, 16);  // 128 GPUs on a 64-GPU placement
  EXPECT_FALSE(PredictStepTime(job, pl));
  job.gpu = "tpu";
  EXPECT_FALSE(PredictStepTime(job, pl));
}

// Any valid strategy gives a finite, positive step, MFU at most the GEMM
// fraction of peak, and a communication share in [0, 1); more network
// bandwidth never makes it slower.
RC_GTEST_PROP(CostModelProperty, PredictionsAreSane, ()) {
  const ModelSpec m = Llama70();
  const GpuSpec g = H100();
  const int tp = *rc::gen::element(1, 2, 4, 8);
  const int pp = *rc::gen::element(1, 2, 4, 5, 8, 10);
  const int dp = *rc::gen::element(1, 2, 4, 16);
  const int mb = *rc::gen::element(1, 2, 4);
  const int ga = *rc::gen::element(1, 8, 16, 40);
  Strategy s = Make(tp, pp, dp, mb, ga);
  s.zero_stage = *rc::gen::inRange(0, 4);
  s.recompute = *rc::gen::element(Recompute::kNone, Recompute::kSelective, Recompute::kFull);
  s.overlap_grad_reduce = *rc::gen::arbitrary<bool>();
  s.precision = *rc::gen::element(Precision::kBf16, Precision::kFp8);
  ModelSpec mm = m;
  mm.global_batch = s.GlobalBatch();
  Placement pl = DefaultPlacement(g, s.Gpus());
  auto p = Predict(mm, g, pl, s, DefaultCalibration());
  RC_ASSERT(p.has_value());
  RC_ASSERT(p->step_time_s > 0);
  RC_ASSERT(std::isfinite(p->step_time_s));
  RC_ASSERT(p->comm_share >= 0);
  RC_ASSERT(p->comm_share < 1);
  RC_ASSERT(p->mfu > 0);
  RC_ASSERT(p->mfu <= 0.8);
  RC_ASSERT(p->memory_gib > 0);
  for (auto& l : pl.levels) l.gbps *= 2;
  pl.nvlink_gbps *= 2;
  auto faster = Predict(mm, g, pl, s, DefaultCalibration());
  RC_ASSERT(faster->step_time_s <= p->step_time_s * (1 + 1e-12));
}

}  // namespace
}  // namespace tidal::planner
