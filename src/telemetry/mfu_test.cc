#include "telemetry/mfu.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

namespace tidal::telemetry {
namespace {

const std::string kFix = std::string(TIDAL_SHARED_DIR) + "/fixtures/";

#define SKIP_WITHOUT_FIXTURES() \
  if (!std::filesystem::exists(kFix)) GTEST_SKIP() << "no " << kFix << " (shared fixtures not mounted)"

bool Starts(const std::optional<Figure>& f, std::string_view prefix) { return f && f->method.starts_with(prefix); }

planner::Strategy Layout(int tp, int pp, int dp, int ga) {
  planner::Strategy s;
  s.tp = tp;
  s.pp = pp;
  s.dp = dp;
  s.grad_accum = ga;
  s.sequence_parallel = tp > 1;
  return s;
}

TEST(MfuTest, ModelFlopsFromLogArgumentsMatchWhatMegatronPrinted) {
  SKIP_WITHOUT_FIXTURES();
  auto log = ReadMegatronLog(kFix + "megatron-logs/megatron-lm-rocm-mi300x-tp4pp2-28b-2025-11.log");
  ASSERT_TRUE(log);
  MfuInputs in;
  in.log = &*log;
  auto r = EstimateMfu(in);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(Starts(r->tflops_per_gpu, "model FLOPs"));
  ASSERT_TRUE(r->logged_tflops_per_gpu);
  // Our Megatron formula, the log's own arguments and its median step time
  // reproduce the throughput Megatron printed.
  EXPECT_NEAR(r->tflops_per_gpu->value / r->logged_tflops_per_gpu->value, 1.0, 0.02);
  EXPECT_FALSE(r->mfu);  // MI300X is not a preset: no peak, so no MFU, and a note says why
  ASSERT_FALSE(r->notes.empty());
  EXPECT_NE(r->notes[0].find("--gpu"), std::string::npos);
}

TEST(MfuTest, MixtralH100LogGivesMfuAndModelledCommShare) {
  SKIP_WITHOUT_FIXTURES();
  auto log = ReadMegatronLog(kFix + "megatron-logs/issue-megatron-lm-756-mixtral-h100-2024-04-iterations.part4.log");
  ASSERT_TRUE(log);
  MfuInputs in;
  in.log = &*log;
  in.model = *planner::FindModelPreset("mixtral-8x7b");
  in.model->seq_len = 2048;
  in.gpu = *planner::FindGpu("h100");
  in.gpus = 16;
  // Issue #756 layout: TP 4, EP 8 inside DP 4, GBS 128.
  planner::Strategy s = Layout(4, 1, 4, 32);
  in.strategy = s;
  auto r = EstimateMfu(in);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(r->mfu);
  EXPECT_GT(r->mfu->value, 0.15);
  EXPECT_LT(r->mfu->value, 0.35);
  EXPECT_TRUE(Starts(r->comm_share, "fallback step 1")) << (r->comm_share ? r->comm_share->method : "none");
  EXPECT_GE(r->comm_share->value, 0);
  EXPECT_LT(r->comm_share->value, 1);
}

TEST(MfuTest, FallbackChainOrder) {
  SKIP_WITHOUT_FIXTURES();
  // Measured communication timers win.
  auto jz = ReadMegatronLog(kFix + "megatron-logs/megatron-lm-2021-jeanzay-v100-tp4pp16-30b.log");
  ASSERT_TRUE(jz);
  MfuInputs a;
  a.log = &*jz;
  auto ra = EstimateMfu(a);
  ASSERT_TRUE(ra);
  EXPECT_TRUE(Starts(ra->comm_share, "log timers"));
  EXPECT_GT(ra->comm_share->value, 0.5);  // 811 ms embedding all-reduce of a 1439 ms step
  // Only compute timers: step 1 from the log.
  auto bert = ReadMegatronLog(kFix + "megatron-logs/issue-megatron-lm-5-bert-2019.log");
  ASSERT_TRUE(bert);
  MfuInputs b;
  b.log = &*bert;
  auto rb = EstimateMfu(b);
  ASSERT_TRUE(rb);
  EXPECT_TRUE(Starts(rb->comm_share, "fallback step 1"));
  // DCGM only, model and layout known: step 2 (the collective model).
  auto dcgm = ReadDcgmFile(kFix + "dcgm-exporter/cloud-native-docs-a100-mig-sample.prom");
  ASSERT_TRUE(dcgm);
  MfuInputs c;
  c.dcgm = *dcgm;
  c.model = *planner::FindModelPreset("llama3-8b");
  c.gpu = *planner::FindGpu("a100");
  c.gpus = 64;
  c.strategy = Layout(2, 1, 32, 32);
  auto rc = EstimateMfu(c);
  ASSERT_TRUE(rc) << rc.error().message;
  EXPECT_TRUE(Starts(rc->comm_share, "fallback step 2"));
  EXPECT_TRUE(Starts(rc->tflops_per_gpu, "DCGM PIPE_TENSOR_ACTIVE"));
  EXPECT_NEAR(rc->tflops_per_gpu->value, 0.9298465 * 312, 0.01);
  // Nothing but a GPU count: step 3, the decay coefficient.
  MfuInputs d;
  d.dcgm = *dcgm;
  d.gpus = 512;
  auto rd = EstimateMfu(d);
  ASSERT_TRUE(rd);
  EXPECT_TRUE(Starts(rd->comm_share, "fallback step 3"));
  EXPECT_NEAR(rd->comm_share->value, 1 - 0.9 * 0.9 * 0.9, 1e-12);
  d.decay = 0.8;
  EXPECT_FALSE(EstimateMfu(d));
  MfuInputs none;
  EXPECT_FALSE(EstimateMfu(none));
}

TEST(MfuTest, BloomLogThroughputIsNarayananEq3) {
  SKIP_WITHOUT_FIXTURES();
  // BLOOM-176B on 384 A100s printed ~147 TFLOPs per GPU; BigScience counted
  // FLOPs as Narayanan eq. 3 (activation checkpointing on). Our formula, the
  // published architecture and the logged step time must give the same.
  auto log = ReadMegatronLog(kFix + "megatron-logs/deepspeed-megatron-deepspeed-bloom-176b-2022-04.log");
  ASSERT_TRUE(log);
  const auto m = *planner::FindModelPreset("bloom-176b");
  for (const auto& it : log->iterations) {
    ASSERT_TRUE(it.elapsed_s && it.tflops_per_gpu && it.global_batch);
    const double ours = planner::FlopsPerToken(m, m.seq_len, planner::FlopsConvention::kNarayananEq3) *
                        static_cast<double>(*it.global_batch) * m.seq_len / *it.elapsed_s / 384 / 1e12;
    EXPECT_NEAR(ours / *it.tflops_per_gpu, 1.0, 0.02) << "iteration " << it.iteration;
  }
}

TEST(MfuTest, GpuFromDcgmModelName) {
  SKIP_WITHOUT_FIXTURES();
  auto dcgm = ReadDcgmFile(kFix + "dcgm-exporter/issue-dcgm-149-dgx-a100-nvlink-tx.prom");
  ASSERT_TRUE(dcgm);
  MfuInputs in;
  in.dcgm = *dcgm;
  in.gpus = 4;
  auto r = EstimateMfu(in);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->gpu_name, "a100");
  ASSERT_TRUE(r->nvlink_bytes_per_s);
  EXPECT_EQ(r->nvlink_bytes_per_s->value, 0);
  // 4 GPUs of one DGX A100: the counters are complete (and idle here).
  EXPECT_TRUE(Starts(r->comm_share, "DCGM counters")) << (r->comm_share ? r->comm_share->method : "none");
  EXPECT_EQ(r->comm_share->value, 0);
  in.gpus = 64;  // across nodes: NVLink counters miss the network, so the chain is used
  auto wide = EstimateMfu(in);
  ASSERT_TRUE(wide);
  EXPECT_TRUE(Starts(wide->comm_share, "fallback step 3"));
}

// The log's FP8/FP4 arguments name the recipe the run used: its peak and its
// quantisation cost differ (docs/planner.md).
TEST(MfuTest, PrecisionRecipeFromLogArguments) {
  MegatronLog log;
  log.arguments = {{"tensor_model_parallel_size", "1"}, {"pipeline_model_parallel_size", "1"},
                   {"global_batch_size", "8"},          {"micro_batch_size", "1"}};
  struct Row {
    std::map<std::string, std::string> args;
    planner::Precision want;
  } rows[] = {
      {{}, planner::Precision::kBf16},
      {{{"fp16", "True"}}, planner::Precision::kFp16},
      {{{"fp8", "hybrid"}}, planner::Precision::kFp8},  // --fp8-recipe defaults to delayed
      {{{"fp8", "hybrid"}, {"fp8_recipe", "delayed"}}, planner::Precision::kFp8},
      {{{"fp8", "hybrid"}, {"fp8_recipe", "tensorwise"}}, planner::Precision::kFp8Current},
      {{{"fp8", "e4m3"}, {"fp8_recipe", "mxfp8"}}, planner::Precision::kMxfp8},
      {{{"fp8", "None"}, {"fp4", "e2m1"}, {"fp4_recipe", "nvfp4"}}, planner::Precision::kNvfp4},
  };
  for (const auto& r : rows) {
    MegatronLog l = log;
    for (const auto& [k, v] : r.args) l.arguments[k] = v;
    auto s = StrategyFromLog(l, 8);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->precision, r.want) << planner::PrecisionName(r.want);
  }
}

// A hand-made log: the step time is the median of the elapsed times after
// iteration 1 (warm-up); with an even count the mean of the two middle ones.
// The data are chosen so that mean, lower and upper middle all differ.
MegatronLog Iterations(const std::vector<double>& elapsed, const std::vector<double>& tflops) {
  MegatronLog log;
  log.source = "hand-made";
  for (size_t i = 0; i < std::max(elapsed.size(), tflops.size()); ++i) {
    IterationRecord it;
    it.iteration = static_cast<long>(i) + 1;
    if (i < elapsed.size()) it.elapsed_s = elapsed[i];
    if (i < tflops.size()) it.tflops_per_gpu = tflops[i];
    log.iterations.push_back(it);
  }
  return log;
}

TEST(MfuTest, StepTimeIsTheMedianOfTheIterationsAfterTheFirst) {
  // After dropping iteration 1 (100 s): {10, 1, 4, 2} -> sorted 1 2 4 10,
  // median (2 + 4) / 2 = 3 (upper middle 4, lower 2, mean 4.25).
  MegatronLog even = Iterations({100, 10, 1, 4, 2}, {});
  MfuInputs in;
  in.log = &even;
  auto r = EstimateMfu(in);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(r->step_time_s);
  EXPECT_DOUBLE_EQ(r->step_time_s->value, 3.0);
  EXPECT_NE(r->step_time_s->method.find("over 4 iterations"), std::string::npos) << r->step_time_s->method;
  // Odd count: {9, 1, 2} -> 2 (mean 4).
  MegatronLog odd = Iterations({100, 9, 1, 2}, {});
  in.log = &odd;
  r = EstimateMfu(in);
  ASSERT_TRUE(r && r->step_time_s);
  EXPECT_DOUBLE_EQ(r->step_time_s->value, 2.0);
  // Two iterations after the first: the mean of both.
  MegatronLog two = Iterations({100, 5, 1}, {});
  in.log = &two;
  r = EstimateMfu(in);
  ASSERT_TRUE(r && r->step_time_s);
  EXPECT_DOUBLE_EQ(r->step_time_s->value, 3.0);
  // A log that starts later keeps its first iteration: {7, 1, 3, 5} -> 4.
  MegatronLog later = Iterations({7, 1, 3, 5}, {});
  for (auto& it : later.iterations) it.iteration += 10;
  in.log = &later;
  r = EstimateMfu(in);
  ASSERT_TRUE(r && r->step_time_s);
  EXPECT_DOUBLE_EQ(r->step_time_s->value, 4.0);
  // The printed throughput is a median over every iteration (none dropped):
  // {100, 10, 1, 4} -> (4 + 10) / 2 = 7; and it is what TFLOP/s falls back to.
  MegatronLog tf = Iterations({}, {100, 10, 1, 4});
  in.log = &tf;
  r = EstimateMfu(in);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(r->logged_tflops_per_gpu);
  EXPECT_DOUBLE_EQ(r->logged_tflops_per_gpu->value, 7.0);
  ASSERT_TRUE(r->tflops_per_gpu);
  EXPECT_DOUBLE_EQ(r->tflops_per_gpu->value, 7.0);
  EXPECT_FALSE(r->step_time_s);
}

// --- Found by mutation testing (issue 11) -----------------------------------

// A log's `arguments` block, by hand: a 4-layer GPT-2-vocabulary model on TP
// 2 x PP 2, micro-batch 2, global batch 64.
MegatronLog ArgsLog() {
  MegatronLog log = Iterations({100, 2.0, 2.0, 2.0}, {});
  log.arguments = {{"num_layers", "4"},
                   {"hidden_size", "1024"},
                   {"num_attention_heads", "8"},
                   {"seq_length", "2048"},
                   {"tokenizer_type", "GPT2BPETokenizer"},
                   {"make_vocab_size_divisible_by", "128"},
                   {"tensor_model_parallel_size", "2"},
                   {"pipeline_model_parallel_size", "2"},
                   {"micro_batch_size", "2"},
                   {"global_batch_size", "64"},
                   {"use_distributed_optimizer", "False"}};
  return log;
}

TEST(MfuTest, ModelAndLayoutFromTheLogsArguments) {
  MegatronLog log = ArgsLog();
  auto m = ModelFromLog(log);
  ASSERT_TRUE(m);
  // GPT-2 BPE's 50,257 tokens padded to a multiple of 128 x TP 2 = 256:
  // 197 x 256 = 50,432.
  EXPECT_EQ(m->vocab, 50432);
  EXPECT_EQ(m->ffn, 4096);
  EXPECT_EQ(m->global_batch, 64);
  // 16 GPUs / (TP 2 x PP 2) = DP 4; 64 / (2 x 4) = 8 micro-batches.
  auto s = StrategyFromLog(log, 16);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->tp, 2);
  EXPECT_EQ(s->pp, 2);
  EXPECT_EQ(s->dp, 4);
  EXPECT_EQ(s->cp, 1);
  EXPECT_EQ(s->micro_batch, 2);
  EXPECT_EQ(s->grad_accum, 8);
  EXPECT_EQ(s->zero_stage, 0);
  EXPECT_EQ(s->vpp, 1);
  log.arguments["use_distributed_optimizer"] = "True";
  log.arguments["num_layers_per_virtual_pipeline_stage"] = "1";
  s = StrategyFromLog(log, 16);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->zero_stage, 1);
  EXPECT_EQ(s->vpp, 2);  // 4 layers / PP 2 / 1 per virtual stage
  // No layout when the GPUs do not divide, the batch does not divide, or TP,
  // PP or the GPU count is unknown.
  EXPECT_FALSE(StrategyFromLog(log, 0));
  EXPECT_FALSE(StrategyFromLog(log, 6));
  EXPECT_FALSE(StrategyFromLog(log, 12));  // DP 3: 64 / (2 x 3) is no integer
  MegatronLog no_tp = ArgsLog();
  no_tp.arguments.erase("tensor_model_parallel_size");
  EXPECT_FALSE(StrategyFromLog(no_tp, 16));
  MegatronLog no_pp = ArgsLog();
  no_pp.arguments.erase("pipeline_model_parallel_size");
  EXPECT_FALSE(StrategyFromLog(no_pp, 16));
  MegatronLog tp0 = ArgsLog();
  tp0.arguments["tensor_model_parallel_size"] = "0";
  EXPECT_FALSE(StrategyFromLog(tp0, 16));
}

// TFLOP/s per GPU from model FLOPs divides by the GPUs given, which win over
// the log's world size; one GPU and a global batch of one are valid.
TEST(MfuTest, ModelFlopsUseTheGivenGpuCount) {
  MegatronLog log = ArgsLog();
  log.world_size = 32;
  const auto m = *ModelFromLog(log);
  const double flops = planner::FlopsPerToken(m, m.seq_len, planner::FlopsConvention::kMegatron) * 64 * m.seq_len;
  MfuInputs in;
  in.log = &log;
  in.gpus = 16;
  auto r = EstimateMfu(in);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(r->tflops_per_gpu);
  EXPECT_NEAR(r->tflops_per_gpu->value, flops / 2.0 / 16 / 1e12, 1e-9);
  in.gpus = 0;  // then the log's world size
  r = EstimateMfu(in);
  ASSERT_TRUE(r && r->tflops_per_gpu);
  EXPECT_NEAR(r->tflops_per_gpu->value, flops / 2.0 / 32 / 1e12, 1e-9);
  MegatronLog one = ArgsLog();
  one.arguments["global_batch_size"] = "1";
  in.log = &one;
  in.gpus = 1;
  r = EstimateMfu(in);
  ASSERT_TRUE(r && r->tflops_per_gpu);
  EXPECT_TRUE(Starts(r->tflops_per_gpu, "model FLOPs")) << r->tflops_per_gpu->method;
  EXPECT_NEAR(r->tflops_per_gpu->value, flops / 64 / 2.0 / 1e12, 1e-9);
}

// Communication share from the log's timers, by hand: the comm timers
// averaged over the timer lines that have any comm or compute timer, over
// the step time (2 s here).
TEST(MfuTest, CommShareFromTimersByHand) {
  MegatronLog log = Iterations({100, 2.0, 2.0}, {});
  log.timers = {{1, {{"grads-all-reduce", 1.0}}},
                {2, {{"grads-all-reduce", 399.0}, {"forward-compute", 100.0}}},
                {3, {{"optimizer", 50.0}}}};  // neither kind: not counted
  MfuInputs in;
  in.log = &log;
  auto r = EstimateMfu(in);
  ASSERT_TRUE(r && r->comm_share);
  EXPECT_TRUE(Starts(r->comm_share, "log timers")) << r->comm_share->method;
  EXPECT_NEAR(r->comm_share->value, (400.0 / 2 / 1000) / 2.0, 1e-12);  // 0.1
  // Only compute timers: step 1, 1 - compute / step = 1 - 1.6 / 2.
  log.timers = {{1, {{"forward-compute", 600.0}, {"backward-compute", 1000.0}}}};
  r = EstimateMfu(in);
  ASSERT_TRUE(r && r->comm_share);
  EXPECT_TRUE(Starts(r->comm_share, "fallback step 1")) << r->comm_share->method;
  EXPECT_NEAR(r->comm_share->value, 0.2, 1e-12);
}

// Fallback step 3 counts the interconnect levels a job spans: its NVLink
// domain (8), then the leaf (256 GPUs), then the spine.
TEST(MfuTest, DecayCountsTheLevelsSpanned) {
  MegatronLog log = Iterations({100, 2.0}, {});
  MfuInputs in;
  in.log = &log;
  for (const auto& [gpus, levels] : std::vector<std::pair<int, int>>{{2, 1}, {8, 1}, {9, 2}, {256, 2}, {257, 3}}) {
    in.gpus = gpus;
    auto r = EstimateMfu(in);
    ASSERT_TRUE(r && r->comm_share) << gpus;
    EXPECT_TRUE(Starts(r->comm_share, "fallback step 3")) << r->comm_share->method;
    EXPECT_NEAR(r->comm_share->value, 1 - std::pow(0.9, levels), 1e-12) << gpus;
  }
  in.gpus = 1;
  auto r = EstimateMfu(in);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->comm_share);
}

// With a model, a layout and a GPU the planner's prediction gives step 1
// from the measured step time, also for a global batch of one.
TEST(MfuTest, PlannerFallbackWithAGlobalBatchOfOne) {
  MegatronLog log = Iterations({100, 2.0}, {});
  MfuInputs in;
  in.log = &log;
  in.model = *planner::FindModelPreset("llama3-8b");
  in.model->global_batch = 1;
  in.gpu = *planner::FindGpu("h100");
  in.gpus = 8;
  planner::Strategy s = Layout(8, 1, 1, 1);
  in.strategy = s;
  auto r = EstimateMfu(in);
  ASSERT_TRUE(r && r->comm_share) << (r ? "" : r.error().message);
  EXPECT_TRUE(Starts(r->comm_share, "fallback step 1")) << r->comm_share->method;
  in.model->vocab = 1;  // any positive vocabulary is a model
  r = EstimateMfu(in);
  ASSERT_TRUE(r && r->comm_share);
  EXPECT_TRUE(Starts(r->comm_share, "fallback step 1")) << r->comm_share->method;
  // A model from the log's arguments without a global batch takes the one
  // its iterations print, also when that is 1.
  MegatronLog args = ArgsLog();
  args.arguments.erase("global_batch_size");
  for (auto& it : args.iterations) it.global_batch = 1;
  MfuInputs from_log;
  from_log.log = &args;
  from_log.gpu = *planner::FindGpu("h100");
  from_log.gpus = 4;
  from_log.strategy = Layout(2, 2, 1, 1);
  r = EstimateMfu(from_log);
  ASSERT_TRUE(r && r->comm_share) << (r ? "" : r.error().message);
  EXPECT_TRUE(Starts(r->comm_share, "fallback step 1")) << r->comm_share->method;
}

// Model FLOPs need a model, a vocabulary, a global batch and a GPU count;
// short of any one the log's own TFLOP/s are used.
TEST(MfuTest, LoggedThroughputWhenModelFlopsLackAnInput) {
  const std::vector<double> tflops = {50, 50, 50};
  // No global batch anywhere.
  MegatronLog no_batch = ArgsLog();
  no_batch.arguments.erase("global_batch_size");
  for (size_t i = 0; i < no_batch.iterations.size(); ++i) no_batch.iterations[i].tflops_per_gpu = 50;
  // No GPU count (no world size, none given).
  MegatronLog no_gpus = ArgsLog();
  for (auto& it : no_gpus.iterations) it.tflops_per_gpu = 50;
  // No model: iterations only, with a global batch.
  MegatronLog no_model = Iterations({100, 2.0, 2.0}, tflops);
  for (auto& it : no_model.iterations) it.global_batch = 64;
  for (const auto& [log, gpus] : std::vector<std::pair<MegatronLog*, int>>{{&no_batch, 16}, {&no_gpus, 0}, {&no_model, 16}}) {
    MfuInputs in;
    in.log = log;
    in.gpus = gpus;
    auto r = EstimateMfu(in);
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_TRUE(r->tflops_per_gpu) << gpus;
    EXPECT_DOUBLE_EQ(r->tflops_per_gpu->value, 50) << r->tflops_per_gpu->method;
    EXPECT_TRUE(Starts(r->tflops_per_gpu, "log:")) << r->tflops_per_gpu->method;
  }
}

// DCGM tensor activity gives TFLOP/s only when nothing better exists: the
// log's own figure wins.
TEST(MfuTest, DcgmTensorActivityOnlyWithoutOtherThroughput) {
  MegatronLog log = Iterations({}, {100.0});
  std::vector<DcgmSample> dcgm;
  for (int gpu = 0; gpu < 2; ++gpu) {
    DcgmSample x;
    x.metric = "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE";
    x.labels = {{"gpu", std::to_string(gpu)}, {"Hostname", "n0"}};
    x.value = 0.4 + 0.2 * gpu;  // mean 0.5
    dcgm.push_back(x);
  }
  MfuInputs in;
  in.log = &log;
  in.dcgm = dcgm;
  in.gpu = *planner::FindGpu("h100");
  in.gpus = 2;
  auto r = EstimateMfu(in);
  ASSERT_TRUE(r && r->tflops_per_gpu);
  EXPECT_DOUBLE_EQ(r->tflops_per_gpu->value, 100.0);
  ASSERT_TRUE(r->tensor_active);
  EXPECT_DOUBLE_EQ(r->tensor_active->value, 0.5);
  in.log = nullptr;
  r = EstimateMfu(in);
  ASSERT_TRUE(r && r->tflops_per_gpu);
  EXPECT_NEAR(r->tflops_per_gpu->value, 0.5 * *in.gpu->PeakFlops(planner::Precision::kBf16) / 1e12, 1e-9);
}

}  // namespace
}  // namespace tidal::telemetry
