#include "planner/cost_model.h"

#include <cmath>
#include <cstdio>

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

// --- Found by mutation testing (issue 11): each term below is worked out
// by hand or from the other outputs, never from the value under test. ---

// A small model whose activation memory is worked out by hand: h 1024, 8
// heads of 128 (q 1024), 2 KV heads (kv 256), SwiGLU ffn 4096, 4 layers of
// which the last 2 are MoE (8 experts, top-2, expert ffn 1024), vocab
// 32,000, sequence 1024.
ModelSpec Tiny() {
  ModelSpec m;
  m.name = "tiny";
  m.layers = 4;
  m.hidden = 1024;
  m.heads = 8;
  m.kv_heads = 2;
  m.ffn = 4096;
  m.gated_mlp = true;
  m.vocab = 32000;
  m.seq_len = 1024;
  m.global_batch = 8;
  m.experts = 8;
  m.top_k = 2;
  m.expert_ffn = 1024;
  m.first_dense_layers = 2;
  return m;
}

// Bytes per token and layer (Korthikanti et al., generalised as in
// cost_model.cc): 10h unsharded + 4q + 4kv + MLP, the MLP mixing dense
// (6 ffn, gated) and MoE ((top_k + shared)(2h + 6 expert_ffn)) layers by
// their share (here 1/2 each):
//   dense MLP 6 x 4096 = 24,576; MoE MLP 2 x (2048 + 6144) = 16,384;
//   mixed 20,480; per token-layer 10,240 + 4,096 + 1,024 + 20,480 = 35,840.
// Activations = tokens x that x layers x in-flight micro-batches (min(pp,
// m) = 1) + fp32 logits and gradient (tokens x vocab / tp x 6 bytes).
TEST(CostModelTest, ActivationMemoryByHand) {
  const ModelSpec m = Tiny();
  const GpuSpec g = H100();
  const double gib = 1024.0 * 1024 * 1024;
  const double logits = 1024.0 * 32000 * 6;
  Strategy s = Make(1, 1, 1, 1, 8);
  auto p = Predict(m, g, DefaultPlacement(g, 1), s, DefaultCalibration());
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_NEAR(p->memory.activations_gib * gib, 1024.0 * 35840 * 4 + logits, 1);
  // Selective recompute drops the MLP's two ffn-wide tensors: 2 x (2048 +
  // 1024 mixed) = 6144 fewer bytes: 29,696.
  s.recompute = Recompute::kSelective;
  p = Predict(m, g, DefaultPlacement(g, 1), s, DefaultCalibration());
  ASSERT_TRUE(p);
  EXPECT_NEAR(p->memory.activations_gib * gib, 1024.0 * 29696 * 4 + logits, 1);
  // FP8 keeps 1-byte casts of the GEMM inputs: 10h - 2h unsharded, and q
  // plus the FC2 input (2048 dense, 1024 MoE mixed: 3072) less sharded:
  // 8192 + 25,600 - 1024 - 3072 = 29,696.
  s.recompute = Recompute::kNone;
  s.precision = Precision::kFp8;
  p = Predict(m, g, DefaultPlacement(g, 1), s, DefaultCalibration());
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_NEAR(p->memory.activations_gib * gib, 1024.0 * 29696 * 4 + logits, 1);
  // TP 2 with sequence parallelism shards everything: 35,840 / 2, logits / 2.
  Strategy t = Make(2, 1, 1, 1, 8);
  p = Predict(m, g, DefaultPlacement(g, 2), t, DefaultCalibration());
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_NEAR(p->memory.activations_gib * gib, 1024.0 * 17920 * 4 + logits / 2, 1);
  // Full recompute keeps only the 2h layer inputs (sharded by SP), plus one
  // layer re-materialised in full.
  t.recompute = Recompute::kFull;
  p = Predict(m, g, DefaultPlacement(g, 2), t, DefaultCalibration());
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_NEAR(p->memory.activations_gib * gib, 1024.0 * (2 * 1024 / 2) * 4 + 1024.0 * 17920 + logits / 2, 1);
}

// Hardware FLOPs add what recomputation runs again: for full recompute the
// whole forward of the layers (linear + expert + 2 x attention, the latter
// counted twice as in model FLOPs), for selective only the attention core.
TEST(CostModelTest, HardwareFlopsAddTheRecomputedForward) {
  for (const ModelSpec& m : {Llama70(), Tiny()}) {
    SCOPED_TRACE(m.name);
    const GpuSpec g = H100();
    const ForwardFlops ff = ForwardFlopsPerToken(m, m.seq_len);
    const int tp = m.name == "tiny" ? 1 : 8;
    Strategy s = Make(tp, 1, 1, 1, 8);
    const double tokens = 8.0 * m.seq_len;
    for (Recompute rc : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
      s.recompute = rc;
      auto p = Predict(m, g, DefaultPlacement(g, tp), s, DefaultCalibration());
      ASSERT_TRUE(p) << p.error().message;
      const double extra = rc == Recompute::kFull        ? ff.linear + ff.expert + 2 * ff.attention
                           : rc == Recompute::kSelective ? 2 * ff.attention
                                                         : 0;
      EXPECT_NEAR(p->hardware_flops_per_step - p->model_flops_per_step, extra * tokens,
                  1e-9 * p->hardware_flops_per_step);
      EXPECT_NEAR(p->hfu / p->mfu, p->hardware_flops_per_step / p->model_flops_per_step, 1e-9);
    }
  }
}

// Expert-parallel all-to-all, by hand: per micro-batch and MoE layer, 4
// transfers (dispatch + combine, forward + backward) of tokens / tp (SP) x
// top_k x h x 2 bytes x (ep - 1)/ep over the link the tp x cp x ep group
// spans, each with its latency.
TEST(CostModelTest, ExpertAllToAllByHand) {
  const ModelSpec m = *FindModelPreset("mixtral-8x22b");
  const GpuSpec g = H100();
  Strategy s = Make(4, 1, 8, 1, 4);
  s.ep = 8;
  const Placement pl = DefaultPlacement(g, s.Gpus());
  auto p = Predict(m, g, pl, s, DefaultCalibration());
  ASSERT_TRUE(p) << p.error().message;
  const Link l = LinkFor(pl, 4 * 8);
  const double beta = DefaultCalibration().collective_efficiency;
  const double bytes = m.seq_len / 4.0 * m.top_k * m.hidden * 2 * 7.0 / 8;
  const double per_layer = 4 * (bytes / (l.gbps * 1e9 * beta) + l.latency_us * 1e-6);
  const double moe_frac = static_cast<double>(m.MoeLayers()) / m.layers;
  EXPECT_NEAR(p->time.ep_comm_s, 4 * per_layer * m.layers * moe_frac, 1e-12);
  // Full recompute runs the forward all-to-alls again: x 1.5.
  s.recompute = Recompute::kFull;
  p = Predict(m, g, pl, s, DefaultCalibration());
  ASSERT_TRUE(p);
  EXPECT_NEAR(p->time.ep_comm_s, 1.5 * 4 * per_layer * m.layers * moe_frac, 1e-12);
}

// The same on a model with dense and MoE layers (half each): only the MoE
// layers' all-to-alls count. Tiny on DP 8 x EP 8, TP 1 (no SP), NVLink.
TEST(CostModelTest, ExpertAllToAllCountsOnlyTheMoeLayers) {
  const ModelSpec m = Tiny();
  const GpuSpec g = H100();
  Strategy s = Make(1, 1, 8, 1, 2);
  s.ep = 8;
  const Placement pl = DefaultPlacement(g, 8);
  const Link l = LinkFor(pl, 8);
  const double beta = DefaultCalibration().collective_efficiency;
  const double bytes = 1024.0 * 2 * 1024 * 2 * 7 / 8;
  const double per_layer = 4 * (bytes / (l.gbps * 1e9 * beta) + l.latency_us * 1e-6);
  for (Recompute rc : {Recompute::kNone, Recompute::kFull}) {
    s.recompute = rc;
    auto p = Predict(m, g, pl, s, DefaultCalibration());
    ASSERT_TRUE(p) << p.error().message;
    EXPECT_NEAR(p->time.ep_comm_s, 2 * per_layer * 2 * (rc == Recompute::kFull ? 1.5 : 1.0), 1e-12);  // 2 MoE layers
  }
}

// Memory-bound kernels move 3 x 2 bytes x tokens x (14 h + 3 x the FFN
// activations) per layer (forward and twice backward), at 70% of the HBM
// bandwidth. On Tiny with one shared expert (no SP, TP 1) the FFN
// activations mix dense (2 x 4096, gated) and MoE ((top-2 + 1 shared) x 2 x
// 1024) layers: 4096 + 3072 = 7168; per micro-batch 6 x 1024 x (14,336 +
// 21,504) x 4 layers = 880,803,840 bytes. The two MoE layers add the token
// permutation and its inverse, forward and backward: 4 x (1 + top-2) x 1024
// x 2 bytes x 1024 tokens x 2 layers = 50,331,648 bytes. Doubling the HBM
// bandwidth changes nothing else in the compute time.
TEST(CostModelTest, ElementwiseTrafficByHand) {
  ModelSpec m = Tiny();
  m.shared_experts = 1;
  const GpuSpec g = H100();
  GpuSpec fast = g;
  fast.hbm_tbps *= 2;
  const Strategy s = Make(1, 1, 1, 1, 8);
  auto a = Predict(m, g, DefaultPlacement(g, 1), s, DefaultCalibration());
  auto b = Predict(m, fast, DefaultPlacement(fast, 1), s, DefaultCalibration());
  ASSERT_TRUE(a && b);
  const double bytes = (880803840.0 + 50331648.0) * 8;  // 8 micro-batches
  const double hbm = g.hbm_tbps * 1e12 * 0.7;
  EXPECT_NEAR(a->time.compute_s - b->time.compute_s, bytes / hbm - bytes / (2 * hbm), 1e-12);
}

// Pipeline point-to-point, by hand: 2 x v x m transfers of one micro-batch's
// activations (tokens x h x 2 bytes, / tp with SP) over the link the whole
// job spans between stages (2 x tp x cp x dp GPUs).
TEST(CostModelTest, PipelineSendRecvByHand) {
  const ModelSpec m = Llama70();
  const GpuSpec g = H100();
  Strategy s = Make(8, 4, 2, 1, 8);
  const Placement pl = DefaultPlacement(g, s.Gpus());
  const Link l = LinkFor(pl, 2 * 8 * 2);
  const double beta = DefaultCalibration().collective_efficiency;
  const double bytes = static_cast<double>(m.seq_len) * m.hidden * 2 / 8;
  const double one = bytes / (l.gbps * 1e9 * beta) + l.latency_us * 1e-6;
  for (int v : {1, 2}) {
    s.vpp = v;
    auto p = Predict(m, g, pl, s, DefaultCalibration());
    ASSERT_TRUE(p) << p.error().message;
    EXPECT_NEAR(p->time.pp_comm_s, 2.0 * v * 8 * one, 1e-12) << v;
  }
}

// Context parallelism's ring runs over the link the tp x cp group spans:
// TP 8 x CP 2 = 16 GPUs crosses the 8-GPU NVLink domain, so the network's
// bandwidth sets the exposed ring time. Halving the network's speed adds
// exactly layers x 3 (cp - 1) x chunk / bandwidth per micro-batch (the ring
// is far too slow at 1-2 GB/s for attention to hide any of it).
TEST(CostModelTest, ContextParallelRingUsesTheLinkItSpans) {
  const ModelSpec m = Llama70();
  const GpuSpec g = H100();
  Strategy s = Make(8, 1, 1, 1, 4);
  s.cp = 2;
  Placement fast = DefaultPlacement(g, 16), slow = fast;
  for (auto& l : fast.levels) l.gbps = 2;
  for (auto& l : slow.levels) l.gbps = 1;
  auto pf = Predict(m, g, fast, s, DefaultCalibration());
  auto ps = Predict(m, g, slow, s, DefaultCalibration());
  ASSERT_TRUE(pf && ps);
  const double beta = DefaultCalibration().collective_efficiency;
  const double chunk = m.seq_len / 2.0 * 2 * m.KvDim() / 8 * 2;
  const double per_mb = m.layers * 3.0 * (2 - 1) * chunk / (1e9 * beta) * (1.0 / 1 - 1.0 / 2);
  EXPECT_NEAR(ps->time.cp_comm_s - pf->time.cp_comm_s, 4 * per_mb, 1e-9);
  EXPECT_GT(pf->time.cp_comm_s, 0);
}

TEST(CostModelTest, LinkForTakesTheSmallestLevelThatHoldsTheGroup) {
  Placement pl;
  pl.gpus_per_domain = 8;
  pl.nvlink_gbps = 450;
  pl.nvlink_latency_us = 3;
  pl.levels = {{"leaf", 64, 50, 5, 1}, {"spine", 128, 25, 2, 3}};
  EXPECT_EQ(LinkFor(pl, 8).gbps, 450);  // exactly the domain: NVLink
  EXPECT_EQ(LinkFor(pl, 8).hops, 1);
  EXPECT_EQ(LinkFor(pl, 9).gbps, 50);
  EXPECT_EQ(LinkFor(pl, 64).gbps, 50);  // exactly the leaf
  EXPECT_EQ(LinkFor(pl, 65).gbps, 25);
  EXPECT_EQ(LinkFor(pl, 65).latency_us, 6);  // 3 hops x 2 us
  EXPECT_EQ(LinkFor(pl, 65).hops, 3);
  EXPECT_EQ(LinkFor(pl, 128).gbps, 25);
  // Past every bounded level: the top one.
  EXPECT_EQ(LinkFor(pl, 1000).gbps, 25);
  EXPECT_EQ(LinkFor(pl, 1000).latency_us, 6);
}

TEST(CostModelTest, SplitLayersAndStrategyValidationBoundaries) {
  int first = -1, last = -1;
  // 6 layers on 4 stages: 2 + 2 in the middle, 1 + 1 at the ends.
  ASSERT_TRUE(SplitLayers(6, 4, first, last));
  EXPECT_EQ(first, 1);
  EXPECT_EQ(last, 1);
  EXPECT_FALSE(SplitLayers(5, 4, first, last));  // 1 layer left for two end stages
  ASSERT_TRUE(SplitLayers(126, 16, first, last));  // Llama 3 405B: 7 + 14 x 8 + 7
  EXPECT_EQ(first, 7);
  EXPECT_EQ(last, 7);
  ASSERT_TRUE(SplitLayers(7, 2, first, last));  // two stages: the odd layer goes last
  EXPECT_EQ(first, 3);
  EXPECT_EQ(last, 4);
  EXPECT_FALSE(SplitLayers(1, 2, first, last));
  // Every size must be at least 1, each on its own.
  ModelSpec m = Llama70();
  const Strategy ok = Make(8, 1, 1, 1, 1);
  EXPECT_TRUE(ValidateStrategy(m, ok, 8));
  for (int field = 0; field < 8; ++field) {
    Strategy s = ok;
    int* f[] = {&s.tp, &s.pp, &s.dp, &s.cp, &s.ep, &s.vpp, &s.micro_batch, &s.grad_accum};
    *f[field] = 0;
    auto st = ValidateStrategy(m, s, s.Gpus());
    ASSERT_FALSE(st) << field;
    EXPECT_NE(st.error().message.find("at least 1"), std::string::npos) << st.error().message;
  }
  // CP needs the sequence divisible by 2 cp; without CP any length goes.
  m.seq_len = 8191;
  EXPECT_TRUE(ValidateStrategy(m, ok, 8));
  m.seq_len = 8194;  // divisible by 2, not by 4
  Strategy cp2 = ok;
  cp2.cp = 2;
  EXPECT_FALSE(ValidateStrategy(m, cp2, 16));
  m.seq_len = 8196;
  EXPECT_TRUE(ValidateStrategy(m, cp2, 16));
}

TEST(CostModelTest, ClusterSpecFileNeedsPositiveBandwidths) {
  const GpuSpec g = H100();
  const std::string path = ::testing::TempDir() + "/cluster_spec_test.yaml";
  auto with = [&](const std::string& text) {
    FILE* f = std::fopen(path.c_str(), "w");
    std::fputs(text.c_str(), f);
    std::fclose(f);
    return ParseClusterSpec(path, g, 16);
  };
  const std::string levels = "levels:\n  - {name: leaf, span_gpus: 64, gbps: 50}\n";
  auto good = with("gpus_per_domain: 8\nnvlink_gbps: 450\n" + levels);
  ASSERT_TRUE(good) << good.error().message;
  EXPECT_EQ(good->nvlink_gbps, 450);
  EXPECT_FALSE(with("gpus_per_domain: 8\nnvlink_gbps: 0\n" + levels));
  EXPECT_FALSE(with("gpus_per_domain: 8\nnvlink_gbps: 2e9\n" + levels));
  EXPECT_FALSE(with("gpus_per_domain: 0\nnvlink_gbps: 450\n" + levels));
  EXPECT_FALSE(with("gpus_per_domain: 8\nnvlink_gbps: 450\nlevels:\n  - {name: leaf, span_gpus: 64, gbps: 0}\n"));
  std::remove(path.c_str());
}

TEST(CalibrationTest, SetGemmFractionChangesOnlyItsOwnEntry) {
  Calibration c = DefaultCalibration();
  const double hopper16 = c.GemmFraction("hopper", "16-bit");
  c.SetGemmFraction("hopper", "fp8", 0.5);
  EXPECT_EQ(c.GemmFraction("hopper", "fp8"), 0.5);
  EXPECT_EQ(c.GemmFraction("hopper", "16-bit"), hopper16);
  EXPECT_EQ(c.GemmFraction("ampere", "16-bit"), 0.732);
  c.SetGemmFraction("ampere", "16-bit", 0.7);
  EXPECT_EQ(c.GemmFraction("ampere", "16-bit"), 0.7);
  EXPECT_EQ(c.GemmFraction("hopper", "16-bit"), hopper16);
  const size_t n = c.entries.size();
  c.SetGemmFraction("blackwell", "16-bit", 0.8);
  EXPECT_EQ(c.entries.size(), n + 1);
  EXPECT_EQ(c.GemmFraction("blackwell", "16-bit"), 0.8);
  EXPECT_EQ(c.GemmFraction("hopper", "16-bit"), hopper16);
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

namespace tidal::planner {
namespace {

// A small MoE every figure of which is easy to compute by hand.
ModelSpec TinyMoe() {
  ModelSpec m;
  m.name = "tiny-moe";
  m.layers = 4;
  m.hidden = 1024;
  m.heads = 8;
  m.kv_heads = 8;
  m.ffn = 4096;
  m.gated_mlp = true;
  m.vocab = 32000;
  m.seq_len = 2048;
  m.global_batch = 64;
  m.experts = 32;
  m.top_k = 4;
  m.expert_ffn = 512;
  return m;
}

// One flat NVLink domain of 8 and a 10 GB/s network, no latencies.
Placement Flat(int gpus) {
  Placement pl;
  pl.gpus = gpus;
  pl.gpus_per_domain = 8;
  pl.nvlink_gbps = 100;
  pl.nvlink_latency_us = 0;
  pl.levels = {{"net", 0, 10, 0, 1}};
  return pl;
}

// EP 32 over four NVLink domains of eight, two micro-batches.
Strategy Ep32() {
  Strategy s;
  s.ep = 32;
  s.dp = 32;
  s.grad_accum = 2;
  return s;
}

Calibration NoOverheads() {
  Calibration c = DefaultCalibration();
  c.collective_efficiency = 1.0;
  c.moe_layer_overhead_us = 0;
  return c;
}

TEST(CostModelMoeTest, AllToAllVolumeInsideTheDomain) {
  // EP 4 inside one NVLink domain: each of the 4 all-to-alls per layer
  // (dispatch + combine, forward + backward) moves tokens x top_k x h x 2 B
  // x (ep-1)/ep at 100 GB/s: 2048 x 4 x 1024 x 2 x 3/4 = 12.58 MB -> 125.8 us.
  const ModelSpec m = TinyMoe();
  Strategy s;
  s.ep = 4;
  s.dp = 4;
  s.grad_accum = 16;
  const Prediction p = PredictUnchecked(m, *FindGpu("h100"), Flat(4), s, NoOverheads());
  const double per_a2a = 2048.0 * 4 * 1024 * 2 * 3 / 4 / 100e9;
  EXPECT_NEAR(p.time.ep_comm_s, 16 * 4 /*layers*/ * 4 /*a2a*/ * per_a2a, 1e-9);
}

TEST(CostModelMoeTest, DedupDispatcherCrossesTheNetworkOncePerRemoteNode) {
  // EP 32 over 4 domains of 8. The all-to-all dispatcher sends every routed
  // copy over the 10 GB/s network: 2048 x 4 x 1024 x 2 x 31/32 B. The flex
  // dispatcher sends a token once per distinct remote node: top_k = 4 experts
  // uniform over n = 4 nodes touch 4 (1 - (3/4)^4) = 2.734 nodes, 3/4 of them
  // remote; the NVLink fan-out (2048 x 4 x 1024 x 2 B at 100 GB/s) is shorter.
  const ModelSpec m = TinyMoe();
  Strategy s = Ep32();
  const GpuSpec g = *FindGpu("h100");
  const Prediction plain = PredictUnchecked(m, g, Flat(32), s, NoOverheads());
  EXPECT_NEAR(plain.time.ep_comm_s, 2 * 4 * 4 * (2048.0 * 4 * 1024 * 2 * 31 / 32 / 10e9), 1e-9);
  s.ep_dedup = true;
  const Prediction dedup = PredictUnchecked(m, g, Flat(32), s, NoOverheads());
  const double remote = 4 * (1 - std::pow(0.75, 4)) * 0.75;
  EXPECT_NEAR(remote, 2.0508, 1e-4);
  EXPECT_NEAR(dedup.time.ep_comm_s, 2 * 4 * 4 * (2048.0 * remote * 1024 * 2 / 10e9), 1e-9);
}

TEST(CostModelMoeTest, OverlappedAllToAllHidesBehindTheOtherMicroBatch) {
  const ModelSpec m = TinyMoe();
  Strategy s = Ep32();
  const GpuSpec g = *FindGpu("h100");
  const Prediction exposed = PredictUnchecked(m, g, Flat(32), s, NoOverheads());
  s.overlap_ep_comm = true;
  const Prediction hidden = PredictUnchecked(m, g, Flat(32), s, NoOverheads());
  EXPECT_LT(hidden.time.ep_comm_s, exposed.time.ep_comm_s);
  EXPECT_GT(hidden.time.ep_comm_s, 0);  // 10 GB/s is slower than the GEMMs
  s.grad_accum = 1;  // one micro-batch: nothing to overlap with
  const Prediction alone = PredictUnchecked(m, g, Flat(32), s, NoOverheads());
  EXPECT_NEAR(alone.time.ep_comm_s / 1, exposed.time.ep_comm_s / 2, 1e-12);
}

// The two fixed costs per MoE layer and micro-batch: the device's always,
// the host's unless a full-iteration CUDA graph replays the step.
TEST(CostModelMoeTest, FullCudaGraphsRemoveOnlyTheHostsFixedCost) {
  ModelSpec m = TinyMoe();
  m.first_dense_layers = 1;  // three MoE layers of four pay the fixed costs
  Strategy s;
  s.ep = 4;
  s.dp = 4;
  s.grad_accum = 16;
  Calibration cal = NoOverheads();
  cal.moe_layer_overhead_us = 100;
  cal.moe_host_overhead_us = 400;
  const GpuSpec g = *FindGpu("h100");
  const Prediction none = PredictUnchecked(m, g, Flat(4), s, cal);
  s.cuda_graphs = CudaGraphs::kPartial;  // modules graphed; dropless still waits on the host
  const Prediction partial = PredictUnchecked(m, g, Flat(4), s, cal);
  s.cuda_graphs = CudaGraphs::kFull;
  const Prediction full = PredictUnchecked(m, g, Flat(4), s, cal);
  EXPECT_DOUBLE_EQ(partial.time.compute_s, none.time.compute_s);
  EXPECT_NEAR(none.time.compute_s - full.time.compute_s, 16 * 3 * 400e-6, 1e-12);
  cal.moe_host_overhead_us = 0;
  cal.moe_layer_overhead_us = 0;
  EXPECT_NEAR(full.time.compute_s - PredictUnchecked(m, g, Flat(4), s, cal).time.compute_s, 16 * 3 * 100e-6, 1e-12);
}

// Grouped GEMMs run narrow when each expert sees few tokens: the same routed
// FLOPs over 16 x more experts take longer.
TEST(CostModelMoeTest, FewTokensPerExpertSlowTheGroupedGemm) {
  const ModelSpec m = TinyMoe();
  ModelSpec many = m;
  many.experts = 16 * m.experts;
  Strategy s;
  s.ep = 4;
  s.dp = 4;
  s.grad_accum = 16;
  const GpuSpec g = *FindGpu("h100");
  EXPECT_GT(PredictUnchecked(many, g, Flat(4), s, NoOverheads()).time.compute_s,
            PredictUnchecked(m, g, Flat(4), s, NoOverheads()).time.compute_s);
}

// The routed experts' GEMM time, pinned through the load factor (the busiest
// rank's share scales it): FLOPs / TP at the peak x the GEMM fraction x the
// shape of the expert width on one TP rank x the shape of the tokens per
// expert.
TEST(CostModelMoeTest, ExpertGemmTimeFollowsWidthTokensAndTp) {
  ModelSpec m = TinyMoe();
  Strategy s;
  s.tp = 2;
  s.ep = 2;
  s.dp = 2;
  s.grad_accum = 32;
  const GpuSpec g = *FindGpu("h100");
  const Calibration cal = NoOverheads();
  const double even = PredictUnchecked(m, g, Flat(4), s, cal).time.compute_s;
  m.moe_imbalance = 2;
  const double skewed = PredictUnchecked(m, g, Flat(4), s, cal).time.compute_s;
  const double tokens = 2048;
  const double per_expert = tokens * 4 /*top_k*/ * 2 /*ep*/ / 32 /*experts*/;  // 512
  const double width = 512.0 / 2;                                              // expert_ffn / tp
  const double rate = g.bf16_tflops * 1e12 * cal.GemmFraction("hopper", "16-bit") * (width / (width + 128)) *
                      (per_expert / (per_expert + 128));
  const double exp_fwd = tokens * ForwardFlopsPerToken(m, m.seq_len).expert / 2 /*tp*/ / rate;
  EXPECT_NEAR(skewed - even, 32 * 3 * exp_fwd, 1e-9 * skewed);
}

// FSDP2 under PP gathers the weights once per round of micro-batches and
// reduce-scatters once, instead of gathering twice and reduce-scattering
// every micro-batch: 2 x 2 transfers against 3 x 8 here, the same bytes each.
TEST(CostModelMoeTest, Fsdp2WithPipelineGathersOncePerRound) {
  const ModelSpec m = TinyMoe();
  Strategy s;
  s.pp = 2;
  s.ep = 2;
  s.dp = 4;  // experts sharded over 2, the rest over 4
  s.grad_accum = 8;
  s.zero_stage = 3;
  const GpuSpec g = *FindGpu("h100");
  const Prediction every = PredictUnchecked(m, g, Flat(8), s, NoOverheads());
  s.zero3_rounds = 2;
  const Prediction rounds = PredictUnchecked(m, g, Flat(8), s, NoOverheads());
  EXPECT_GT(every.time.dp_comm_total_s, 0);
  EXPECT_NEAR(rounds.time.dp_comm_total_s, every.time.dp_comm_total_s * 4 / 24, 1e-12);
  // Each round hides its gather behind the first micro-batch's forward (a
  // third of its compute) and its reduce-scatter behind the last one's
  // backward (two thirds).
  const double each = rounds.time.dp_comm_total_s / 4, c = rounds.time.compute_s / 8;
  EXPECT_NEAR(rounds.time.dp_comm_s, 2 * (std::max(0.0, each - c / 3) + std::max(0.0, each - 2 * c / 3)), 1e-12);
  EXPECT_GT(rounds.time.dp_comm_s, 0);  // the 10 GB/s network is slower than that
  s.overlap_grad_reduce = false;  // nothing hidden: all of it exposed
  const Prediction exposed = PredictUnchecked(m, g, Flat(8), s, NoOverheads());
  EXPECT_NEAR(exposed.time.dp_comm_s, exposed.time.dp_comm_total_s, 1e-12);
  EXPECT_NEAR(exposed.time.dp_comm_total_s, rounds.time.dp_comm_total_s, 1e-12);
  s.zero3_rounds = 100;  // never more rounds than micro-batches
  EXPECT_NEAR(PredictUnchecked(m, g, Flat(8), s, NoOverheads()).time.dp_comm_total_s,
              every.time.dp_comm_total_s * 16 / 24, 1e-12);
  // The expert weights count, over their own (smaller) group.
  ModelSpec one_expert = m;
  one_expert.experts = 2;  // fewer expert weights per rank
  s.overlap_grad_reduce = true;
  s.zero3_rounds = 2;
  EXPECT_LT(PredictUnchecked(one_expert, g, Flat(8), s, NoOverheads()).time.dp_comm_total_s,
            rounds.time.dp_comm_total_s);
}

// FP8 attention runs the attention core at the FP8 peak; a GPU without FP8
// tensor cores runs it as before.
TEST(CostModelMoeTest, Fp8AttentionRunsAtTheFp8PeakWhereThereIsOne) {
  const ModelSpec m = TinyMoe();
  Strategy s;
  s.ep = 4;
  s.dp = 4;
  s.grad_accum = 16;
  s.precision = Precision::kMxfp8;
  const GpuSpec b200 = *FindGpu("b200");
  const Prediction bf16_attn = PredictUnchecked(m, b200, Flat(4), s, NoOverheads());
  s.fp8_attention = true;
  const Prediction fp8_attn = PredictUnchecked(m, b200, Flat(4), s, NoOverheads());
  EXPECT_LT(fp8_attn.time.compute_s, bf16_attn.time.compute_s);
  // Attention is 3.5 forward passes of the core; at twice the peak it takes
  // half: the saving is below half the compute and depends on the sequence.
  EXPECT_LT(bf16_attn.time.compute_s - fp8_attn.time.compute_s, 0.5 * bf16_attn.time.compute_s);
  ModelSpec longer = m;
  longer.seq_len = 2 * m.seq_len;
  longer.global_batch = m.global_batch / 2;  // the same tokens
  s.fp8_attention = false;
  const double long_bf16 = PredictUnchecked(longer, b200, Flat(4), s, NoOverheads()).time.compute_s;
  s.fp8_attention = true;
  const double long_fp8 = PredictUnchecked(longer, b200, Flat(4), s, NoOverheads()).time.compute_s;
  EXPECT_GT(long_bf16 - long_fp8, bf16_attn.time.compute_s - fp8_attn.time.compute_s);  // attention grows with s
  s.precision = Precision::kBf16;
  const GpuSpec a100 = *FindGpu("a100");
  s.fp8_attention = false;
  const double a100_plain = PredictUnchecked(m, a100, Flat(4), s, NoOverheads()).time.compute_s;
  s.fp8_attention = true;
  EXPECT_DOUBLE_EQ(PredictUnchecked(m, a100, Flat(4), s, NoOverheads()).time.compute_s, a100_plain);
}

// A fused expert MLP never writes the routed copies' FC1 output or its
// activation: 3 passes forward and 6 backward of top_k x gated expert_ffn
// BF16 elements per token, and, in FP8, the quantisation of FC2's input and
// FC1's output gradient.
TEST(CostModelMoeTest, AFusedExpertMlpSkipsTheIntermediateTraffic) {
  const ModelSpec m = TinyMoe();
  Strategy s;
  s.tp = 2;  // the expert FFN is split over TP
  s.ep = 2;
  s.dp = 2;
  s.grad_accum = 16;
  s.precision = Precision::kMxfp8;
  const GpuSpec g = *FindGpu("b200");
  const Prediction plain = PredictUnchecked(m, g, Flat(4), s, NoOverheads());
  s.fused_expert_mlp = true;
  const Prediction fused = PredictUnchecked(m, g, Flat(4), s, NoOverheads());
  const double tokens = 2048, layers = 4, top_k = 4, ffn = 512 / 2;
  const double bf16_bytes = 3.0 * 2.0 * tokens * 3.0 * top_k * ffn * 2 * layers;
  const double fp8_bytes = top_k * 3 * ffn * (2.0 + 2.0 * (1.0 + 1.0 / 32)) * tokens * layers;
  const double hbm = g.hbm_tbps * 1e12 * 0.7;
  EXPECT_NEAR(plain.time.compute_s - fused.time.compute_s, 16 * (bf16_bytes + fp8_bytes) / hbm, 1e-12);
  // Without a gate FC1's output is one expert_ffn wide, not two.
  ModelSpec plain_mlp = m;
  plain_mlp.gated_mlp = false;
  const double unfused = PredictUnchecked(plain_mlp, g, Flat(4), s, NoOverheads()).time.compute_s;
  s.fused_expert_mlp = false;
  const double ungated_plain = PredictUnchecked(plain_mlp, g, Flat(4), s, NoOverheads()).time.compute_s;
  s.fused_expert_mlp = true;
  const double ungated_bytes = 3.0 * 2.0 * tokens * 3.0 * top_k * ffn * layers +
                               top_k * 2 * ffn * (2.0 + 2.0 * (1.0 + 1.0 / 32)) * tokens * layers;
  EXPECT_NEAR(ungated_plain - unfused, 16 * ungated_bytes / hbm, 1e-12);
  // A dense model has no expert MLP to fuse.
  ModelSpec dense = m;
  dense.experts = 0;
  dense.top_k = 0;
  dense.expert_ffn = 0;
  Strategy d;
  d.dp = 4;
  d.grad_accum = 16;
  d.precision = Precision::kMxfp8;
  const double dense_plain = PredictUnchecked(dense, g, Flat(4), d, NoOverheads()).time.compute_s;
  d.fused_expert_mlp = true;
  EXPECT_DOUBLE_EQ(PredictUnchecked(dense, g, Flat(4), d, NoOverheads()).time.compute_s, dense_plain);
}

TEST(CostModelMoeTest, TheBusiestExpertSetsThePaceUnlessTokensAreDropped) {
  ModelSpec m = TinyMoe();
  Strategy s;
  s.ep = 4;
  s.dp = 4;
  s.grad_accum = 16;
  const GpuSpec g = *FindGpu("h100");
  const Prediction even = PredictUnchecked(m, g, Flat(4), s, NoOverheads());
  m.moe_imbalance = 1.5;
  const Prediction skewed = PredictUnchecked(m, g, Flat(4), s, NoOverheads());
  EXPECT_NEAR(skewed.time.ep_comm_s, 1.5 * even.time.ep_comm_s, 1e-12);
  EXPECT_GT(skewed.time.compute_s, even.time.compute_s);
  m.moe_capacity_factor = 1.25;  // token-drop: at most 1.25 x the mean
  const Prediction capped = PredictUnchecked(m, g, Flat(4), s, NoOverheads());
  EXPECT_NEAR(capped.time.ep_comm_s, 1.25 * even.time.ep_comm_s, 1e-12);
  EXPECT_LT(capped.time.compute_s, skewed.time.compute_s);
  EXPECT_GT(capped.time.compute_s, even.time.compute_s);
}

TEST(CostModelMoeTest, ExpertWeightsAreShardedByEp) {
  // 4 layers x 32 experts x 3 x 1024 x 512 = 201.3M expert weights (2 B each)
  // next to 4 x (4 x 1024^2 + 2 x 1024 + 32 x 1024 router) + 2 x 32000 x 1024
  // other weights. EP 8 keeps 4 of the 32 experts per GPU.
  const ModelSpec m = TinyMoe();
  const GpuSpec g = *FindGpu("h100");
  Strategy s;
  s.dp = 8;
  s.grad_accum = 8;
  const Prediction ep1 = PredictUnchecked(m, g, Flat(8), s, NoOverheads());
  s.ep = 8;
  const Prediction ep8 = PredictUnchecked(m, g, Flat(8), s, NoOverheads());
  const double expert = 4.0 * 32 * 3 * 1024 * 512;
  const double other = 4.0 * (4.0 * 1024 * 1024 + 2 * 1024 + 32 * 1024) + 2.0 * 32000 * 1024;
  const double gib = 1024.0 * 1024 * 1024;
  EXPECT_NEAR(ep1.memory.weights_gib, (expert + other) * 2 / gib, 1e-9);
  EXPECT_NEAR(ep8.memory.weights_gib, (expert / 8 + other) * 2 / gib, 1e-9);
}

TEST(CostModelMoeTest, Nvl72KeepsTensorParallelGroupsOfSixteenOnNvlink) {
  const GpuSpec gb200 = *FindGpu("gb200");
  const GpuSpec h100 = *FindGpu("h100");
  EXPECT_EQ(gb200.nvlink_domain, 72);
  const Placement rack = DefaultPlacement(gb200, 144);
  const Link tp16 = LinkFor(rack, 16);
  EXPECT_DOUBLE_EQ(tp16.gbps, 900);  // NVLink 5, per GPU per direction
  EXPECT_DOUBLE_EQ(LinkFor(rack, 72).gbps, 900);
  EXPECT_DOUBLE_EQ(LinkFor(rack, 144).gbps, 50);  // two racks: the NIC
  EXPECT_DOUBLE_EQ(LinkFor(DefaultPlacement(h100, 144), 16).gbps, 50);
}

TEST(CostModelPrecisionTest, QuantisationCostIsTheBytesOfEachRecipe) {
  // Dense, TP 1: per token and layer the recipe quantises the GEMM inputs
  // forward (h + q + h + ffn) and the gradients at their outputs backward
  // (q + 2kv + h + 2 ffn + h). Current scaling reads each element once more
  // than delayed scaling (2 B), so the two differ by
  // tokens x layers x elements x 2 B / (0.7 x HBM bandwidth).
  ModelSpec m = TinyMoe();
  m.experts = m.top_k = m.expert_ffn = 0;
  const GpuSpec g = *FindGpu("b200");
  Strategy s;
  s.dp = 1;
  s.grad_accum = 1;
  s.precision = Precision::kFp8;
  const Prediction delayed = PredictUnchecked(m, g, Flat(1), s, NoOverheads());
  s.precision = Precision::kFp8Current;
  const Prediction current = PredictUnchecked(m, g, Flat(1), s, NoOverheads());
  const double h = 1024, q = 1024, kv = 1024, f = 4096;
  const double elements = (h + q + (q + 2 * kv) + h) + (h + f + 2 * f + h);
  EXPECT_NEAR(current.time.compute_s - delayed.time.compute_s, 2048 * 4 * elements * 2 / (8e12 * 0.7), 1e-12);
  // MXFP8 writes two 1-byte copies with a scale per 32: 4.0625 B against
  // delayed scaling's 4 B, but runs at its own calibrated fraction of peak.
  s.precision = Precision::kMxfp8;
  EXPECT_TRUE(Predict(m, g, Flat(1), s, NoOverheads()));
  EXPECT_FALSE(Predict(m, *FindGpu("h100"), Flat(1), s, NoOverheads()));  // no MX tensor cores on Hopper
}

TEST(CostModelPrecisionTest, FractionsFallBackToTheNearestCalibratedFormat) {
  Calibration c;
  c.entries = {{"hopper", "16-bit", 0.7}, {"hopper", "fp8", 0.6}, {"blackwell", "mxfp8", 0.5}};
  EXPECT_DOUBLE_EQ(c.GemmFraction("blackwell", "mxfp8"), 0.5);
  EXPECT_DOUBLE_EQ(c.GemmFraction("blackwell", "nvfp4"), 0.5);   // the next wider format of its generation
  EXPECT_DOUBLE_EQ(c.GemmFraction("blackwell", "fp8"), 0.6);     // none wider there: Hopper's
  EXPECT_DOUBLE_EQ(c.GemmFraction("blackwell", "16-bit"), 0.7);
  EXPECT_DOUBLE_EQ(c.GemmFraction("ampere", "fp8"), 0.6);
  EXPECT_DOUBLE_EQ(c.GemmFraction("hopper", "nvfp4"), 0.6);
  c.SetGemmFraction("blackwell", "nvfp4", 0.4);
  EXPECT_DOUBLE_EQ(c.GemmFraction("blackwell", "nvfp4"), 0.4);
  EXPECT_EQ(GemmFormat(Precision::kFp8Current), "fp8");
  EXPECT_EQ(GemmFormat(Precision::kFp16), "16-bit");
}

TEST(CostModelPrecisionTest, PeaksPerRecipe) {
  const GpuSpec b200 = *FindGpu("NVIDIA B200");
  EXPECT_DOUBLE_EQ(*b200.PeakFlops(Precision::kBf16), 2250e12);
  EXPECT_DOUBLE_EQ(*b200.PeakFlops(Precision::kMxfp8), 4500e12);
  EXPECT_DOUBLE_EQ(*b200.PeakFlops(Precision::kNvfp4), 9000e12);
  const GpuSpec gb300 = *FindGpu("GB300");
  EXPECT_EQ(gb300.name, "gb300");
  EXPECT_EQ(gb300.nvlink_domain, 72);
  EXPECT_DOUBLE_EQ(*gb300.PeakFlops(Precision::kNvfp4), 15000e12);
  EXPECT_EQ(FindGpu("B300")->name, "b300");
  EXPECT_FALSE(FindGpu("h100")->PeakFlops(Precision::kNvfp4));
  for (const char* s : {"FP8-CS", "fp8_cs", "FP8-MX", "MXFP8", "NVFP4", "fp8-ds"}) EXPECT_TRUE(ParsePrecision(s)) << s;
  EXPECT_EQ(*ParsePrecision("FP8-MX"), Precision::kMxfp8);
  EXPECT_EQ(*ParsePrecision("FP8-CS"), Precision::kFp8Current);
  EXPECT_FALSE(ParsePrecision("int8"));
}

TEST(CostModelTest, TwoStagesSplitAnOddLayerCountWithTheOddLayerLast) {
  int first = 0, last = 0;
  EXPECT_TRUE(SplitLayers(61, 2, first, last));
  EXPECT_EQ(first, 30);
  EXPECT_EQ(last, 31);
  EXPECT_TRUE(SplitLayers(126, 16, first, last));
  EXPECT_EQ(first + last, 126 - 14 * 8);
}

}  // namespace
}  // namespace tidal::planner

namespace tidal::planner {
namespace {

// Survivors of the 2026-12-03 mutation run over cost_model.cc (seed 3), each
// checked by hand to fail on its mutant.
TEST(CostModelMutantsTest, RecomputeNamesParseToTheirOwnMode) {
  EXPECT_EQ(*ParseRecompute("none"), Recompute::kNone);
  EXPECT_EQ(*ParseRecompute("selective"), Recompute::kSelective);
  EXPECT_EQ(*ParseRecompute("full"), Recompute::kFull);
  EXPECT_FALSE(ParseRecompute("some"));
}

TEST(CostModelMutantsTest, ExpertGradientsReduceOverDpOverEpRanks) {
  // Tiny MoE, DP 8, ZeRO 0, no latency: expert gradients all-reduce over
  // dp/ep ranks. EP 8 leaves one rank per expert (nothing to reduce); EP 2
  // reduces 16 experts x 3 x 1024 x 512 x 4 layers in fp32 over 4 ranks, a
  // ring of 2 x 3/4 x bytes over NVLink at 100 GB/s (8 GPUs: one domain).
  const ModelSpec m = TinyMoe();
  const GpuSpec g = *FindGpu("h100");
  Strategy s;
  s.dp = 8;
  s.grad_accum = 1;
  s.overlap_grad_reduce = false;
  s.ep = 8;
  const Prediction ep8 = PredictUnchecked(m, g, Flat(8), s, NoOverheads());
  s.ep = 2;
  const Prediction ep2 = PredictUnchecked(m, g, Flat(8), s, NoOverheads());
  const double expert_bytes = 4.0 * 16 * 3 * 1024 * 512 * 4;
  EXPECT_NEAR(ep2.time.dp_comm_total_s - ep8.time.dp_comm_total_s, 2.0 * 3 / 4 * expert_bytes / 100e9, 1e-12);
}

TEST(CostModelMutantsTest, OnePipelineStageSendsNothing) {
  const ModelSpec m = TinyMoe();
  Strategy s;
  s.dp = 4;
  s.grad_accum = 4;
  const Prediction p = PredictUnchecked(m, *FindGpu("h100"), Flat(4), s, NoOverheads());
  EXPECT_EQ(p.time.pp_comm_s, 0.0);
  EXPECT_EQ(p.time.bubble_s, 0.0);
}

TEST(CostModelMutantsTest, APlacementWithoutNvlinkIsRefused) {
  const ModelSpec m = TinyMoe();
  Strategy s;
  s.dp = 4;
  s.grad_accum = 4;
  Placement pl = Flat(4);
  ASSERT_TRUE(Predict(m, *FindGpu("h100"), pl, s, NoOverheads()));
  pl.nvlink_gbps = 0;
  EXPECT_FALSE(Predict(m, *FindGpu("h100"), pl, s, NoOverheads()));
  pl = Flat(4);
  pl.gpus_per_domain = 0;
  EXPECT_FALSE(Predict(m, *FindGpu("h100"), pl, s, NoOverheads()));
}

TEST(CostModelMutantsTest, DenseGatedActivationsByHand) {
  // Dense, gated, TP 1, no recompute, one micro-batch in flight: per token and
  // layer 10h + 4q + 4kv + 6 ffn bytes = 10,240 + 4,096 + 4,096 + 24,576, x 2048
  // tokens x 4 layers, plus fp32 logits and their gradient (6 x 32,000 bytes
  // a token).
  ModelSpec m = TinyMoe();
  m.experts = m.top_k = m.expert_ffn = 0;
  Strategy s;
  s.dp = 1;
  s.grad_accum = 1;
  const Prediction p = PredictUnchecked(m, *FindGpu("h100"), Flat(1), s, NoOverheads());
  const double per_token_layer = 10.0 * 1024 + 4 * 1024 + 4 * 1024 + 6 * 4096;
  const double bytes = 2048 * per_token_layer * 4 + 2048 * 32000.0 * 6;
  EXPECT_NEAR(p.memory.activations_gib, bytes / (1024.0 * 1024 * 1024), 1e-9);
}

TEST(CostModelMutantsTest, DefaultPlacementCountsEightGpuNodes) {
  EXPECT_EQ(DefaultPlacement(*FindGpu("h100"), 64).nodes, 8);
  EXPECT_EQ(DefaultPlacement(*FindGpu("gb200"), 144).nodes, 18);  // 8 per node, not one per 72-GPU domain
}

}  // namespace
}  // namespace tidal::planner
