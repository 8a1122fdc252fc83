#include "telemetry/mfu.h"

#include <algorithm>
#include <cmath>

namespace tidal::telemetry {
namespace {

using planner::FlopsConvention;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool IsCommTimer(const std::string& name) {
  for (const char* k : {"all-reduce", "allreduce", "allgather", "all-gather", "reduce-scatter", "-send", "-recv",
                        "send-", "recv-"}) {
    if (name.find(k) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

std::optional<planner::ModelSpec> ModelFromLog(const MegatronLog& log) {
  auto layers = log.ArgInt("num_layers"), hidden = log.ArgInt("hidden_size"),
       heads = log.ArgInt("num_attention_heads"), seq = log.ArgInt("seq_length");
  if (!layers || !hidden || !heads || !seq) return std::nullopt;
  planner::ModelSpec m;
  m.name = "from log arguments";
  m.layers = static_cast<int>(*layers);
  m.hidden = static_cast<int>(*hidden);
  m.heads = static_cast<int>(*heads);
  m.kv_heads = m.heads;
  if (log.ArgBool("group_query_attention").value_or(false)) {
    if (auto g = log.ArgInt("num_query_groups")) m.kv_heads = static_cast<int>(*g);
  }
  if (auto kvc = log.ArgInt("kv_channels")) m.head_dim = static_cast<int>(*kvc);
  m.ffn = static_cast<int>(log.ArgInt("ffn_hidden_size").value_or(4 * *hidden));
  m.gated_mlp = log.ArgBool("swiglu").value_or(false);
  m.seq_len = static_cast<int>(*seq);
  m.global_batch = static_cast<int>(log.ArgInt("global_batch_size").value_or(0));
  m.vocab = static_cast<int>(log.ArgInt("padded_vocab_size").value_or(log.ArgInt("vocab_size").value_or(0)));
  if (m.vocab == 0 && log.arguments.count("tokenizer_type") && log.arguments.at("tokenizer_type") == "GPT2BPETokenizer") {
    // GPT-2 BPE has 50257 tokens; Megatron pads the embedding to a multiple
    // of make_vocab_size_divisible_by x TP.
    const long tp = log.tensor_parallel.value_or(static_cast<int>(log.ArgInt("tensor_model_parallel_size").value_or(1)));
    const long mult = log.ArgInt("make_vocab_size_divisible_by").value_or(128) * std::max(1L, tp);
    m.vocab = static_cast<int>((50257 + mult - 1) / mult * mult);
  }
  if (auto e = log.ArgInt("num_experts"); e && *e > 0) {
    m.experts = static_cast<int>(*e);
    m.top_k = static_cast<int>(log.ArgInt("moe_router_topk").value_or(2));
    m.expert_ffn = static_cast<int>(log.ArgInt("moe_ffn_hidden_size").value_or(m.ffn));
  }
  return m;
}

std::optional<planner::Strategy> StrategyFromLog(const MegatronLog& log, int gpus) {
  planner::Strategy s;
  s.tp = log.tensor_parallel.value_or(static_cast<int>(log.ArgInt("tensor_model_parallel_size").value_or(0)));
  s.pp = log.pipeline_parallel.value_or(static_cast<int>(log.ArgInt("pipeline_model_parallel_size").value_or(0)));
  if (s.tp <= 0 || s.pp <= 0 || gpus <= 0) return std::nullopt;
  s.cp = log.context_parallel.value_or(static_cast<int>(log.ArgInt("context_parallel_size").value_or(1)));
  if (gpus % (s.tp * s.pp * s.cp) != 0) return std::nullopt;
  s.dp = gpus / (s.tp * s.pp * s.cp);
  s.ep = static_cast<int>(log.ArgInt("expert_model_parallel_size").value_or(1));
  s.micro_batch = static_cast<int>(log.ArgInt("micro_batch_size").value_or(1));
  const long gbs = log.ArgInt("global_batch_size").value_or(0);
  if (gbs <= 0 || gbs % (s.micro_batch * s.dp) != 0) return std::nullopt;
  s.grad_accum = static_cast<int>(gbs / (s.micro_batch * s.dp));
  if (auto l = log.ArgInt("num_layers_per_virtual_pipeline_stage"); l && *l > 0) {
    if (auto layers = log.ArgInt("num_layers")) s.vpp = static_cast<int>(*layers / s.pp / *l);
  }
  auto rg = log.arguments.find("recompute_granularity");
  if (rg != log.arguments.end()) {
    if (rg->second == "full") s.recompute = planner::Recompute::kFull;
    if (rg->second == "selective") s.recompute = planner::Recompute::kSelective;
  }
  s.sequence_parallel = log.ArgBool("sequence_parallel").value_or(false);
  s.zero_stage = log.ArgBool("use_distributed_optimizer").value_or(false) ? 1 : 0;
  s.overlap_grad_reduce = log.ArgBool("overlap_grad_reduce").value_or(false);
  s.overlap_tp_comm = log.ArgBool("tp_comm_overlap").value_or(false);
  auto arg = [&](const char* name) -> std::string {
    auto it = log.arguments.find(name);
    return it == log.arguments.end() ? std::string("None") : it->second;
  };
  if (arg("fp4") != "None") {
    s.precision = planner::Precision::kNvfp4;
  } else if (arg("fp8") != "None") {
    // Megatron's --fp8-recipe: delayed (the default), tensorwise, mxfp8, ...
    const std::string recipe = arg("fp8_recipe");
    s.precision = recipe == "tensorwise" ? planner::Precision::kFp8Current
                  : recipe == "mxfp8"    ? planner::Precision::kMxfp8
                                         : planner::Precision::kFp8;
  } else if (log.ArgBool("fp16").value_or(false)) {
    s.precision = planner::Precision::kFp16;
  }
  return s;
}

Result<MfuReport> EstimateMfu(const MfuInputs& in) {
  if (in.decay < 0.85 || in.decay > 1.0) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "parallel-efficiency decay coefficient {} is outside [0.85, 1]: below 0.85 per level no "
                     "production job would be run that way; measure instead",
                     in.decay);
  }
  if (!in.log && in.dcgm.empty()) {
    return MakeError(ErrorCode::kInvalidArgument, "nothing to measure: give a training log and/or DCGM scrapes");
  }
  MfuReport r;
  const MegatronLog* log = in.log;

  // GPU: given, else the DCGM modelName label.
  std::optional<planner::GpuSpec> gpu = in.gpu;
  if (!gpu) {
    for (const auto& s : in.dcgm) {
      if (auto it = s.labels.find("modelName"); it != s.labels.end()) {
        if (auto g = planner::FindGpu(it->second)) {
          gpu = *g;
          break;
        }
      }
    }
  }
  if (gpu) r.gpu_name = gpu->name;

  int gpus = in.gpus;
  if (gpus <= 0 && log && log->world_size) gpus = *log->world_size;

  std::optional<planner::ModelSpec> model = in.model;
  if (!model && log) model = ModelFromLog(*log);
  std::optional<planner::Strategy> strategy = in.strategy;
  if (!strategy && log) strategy = StrategyFromLog(*log, gpus);
  planner::Precision precision =
      in.precision.value_or(strategy ? strategy->precision : planner::Precision::kBf16);
  if (strategy) strategy->precision = precision;

  // Step time and global batch from the log.
  long global_batch = model ? model->global_batch : 0;
  std::vector<double> logged_tflops;
  if (log) {
    std::vector<double> elapsed;
    for (size_t i = 0; i < log->iterations.size(); ++i) {
      const auto& it = log->iterations[i];
      if (it.global_batch) global_batch = *it.global_batch;
      if (it.tflops_per_gpu) logged_tflops.push_back(*it.tflops_per_gpu);
      if (it.elapsed_s) elapsed.push_back(*it.elapsed_s);
    }
    if (elapsed.size() > 1 && log->iterations.front().iteration <= 1) elapsed.erase(elapsed.begin());
    if (!elapsed.empty()) {
      r.step_time_s = Figure{Median(elapsed), fmt::format("log: median elapsed time per iteration over {} "
                                                          "iterations{}",
                                                          elapsed.size(),
                                                          log->iterations.front().iteration <= 1 ? " (iteration 1 "
                                                          "dropped as warm-up)" : "")};
    } else {
      r.notes.push_back("the log has no elapsed-time-per-iteration field");
    }
    if (!logged_tflops.empty()) {
      r.logged_tflops_per_gpu =
          Figure{Median(logged_tflops), "log: throughput per GPU as printed (the framework's own FLOPs count)"};
    }
  }
  if (model) {
    r.model_name = model->name;
    if (global_batch > 0) model->global_batch = static_cast<int>(global_batch);
  }

  // Peak for MFU.
  std::optional<double> peak;
  if (gpu) {
    if (auto p = gpu->PeakFlops(precision)) peak = *p;
  } else {
    r.notes.push_back("GPU unknown (give --gpu a100|h100|h200|b200|gb200): MFU needs its dense peak");
  }

  // TFLOP/s per GPU.
  const bool have_model_flops = model && model->vocab > 0 && global_batch > 0 && gpus > 0;
  if (r.step_time_s && have_model_flops) {
    const double flops = planner::FlopsPerToken(*model, model->seq_len, FlopsConvention::kMegatron) *
                         static_cast<double>(global_batch) * model->seq_len;
    r.tflops_per_gpu = Figure{flops / r.step_time_s->value / gpus / 1e12,
                              "model FLOPs (Megatron formula, no recompute) x global batch / step time / GPUs"};
  } else if (r.logged_tflops_per_gpu) {
    r.tflops_per_gpu = Figure{r.logged_tflops_per_gpu->value, r.logged_tflops_per_gpu->method};
    if (!have_model_flops) r.notes.push_back("model, vocabulary, batch or GPU count unknown: using the log's own TFLOP/s");
  }

  // DCGM counters.
  if (!in.dcgm.empty()) {
    auto summarize = [&](const char* metric, std::optional<Figure>& slot, const char* what) {
      if (auto s = Summarize(in.dcgm, metric)) {
        slot = Figure{s->mean, fmt::format("DCGM {}: mean over {} device samples{}", what, s->devices,
                                           s->missing ? fmt::format(", {} blank", s->missing) : "")};
      }
    };
    summarize("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", r.tensor_active, "PIPE_TENSOR_ACTIVE");
    summarize("DCGM_FI_PROF_SM_ACTIVE", r.sm_active, "SM_ACTIVE");
    std::optional<Figure> tx, rx, ptx, prx;
    summarize("DCGM_FI_PROF_NVLINK_TX_BYTES", tx, "NVLINK_TX_BYTES");
    summarize("DCGM_FI_PROF_NVLINK_RX_BYTES", rx, "NVLINK_RX_BYTES");
    summarize("DCGM_FI_PROF_PCIE_TX_BYTES", ptx, "PCIE_TX_BYTES");
    summarize("DCGM_FI_PROF_PCIE_RX_BYTES", prx, "PCIE_RX_BYTES");
    if (tx || rx) {
      r.nvlink_bytes_per_s = Figure{(tx ? tx->value : 0) + (rx ? rx->value : 0), "DCGM NVLINK_TX_BYTES + RX_BYTES"};
    }
    if (ptx || prx) {
      r.pcie_bytes_per_s = Figure{(ptx ? ptx->value : 0) + (prx ? prx->value : 0), "DCGM PCIE_TX_BYTES + RX_BYTES"};
    }
    if (!r.tensor_active) r.notes.push_back("DCGM scrape has no PIPE_TENSOR_ACTIVE values");
    if (!r.tflops_per_gpu && r.tensor_active && peak) {
      r.tflops_per_gpu = Figure{r.tensor_active->value * *peak / 1e12,
                                "DCGM PIPE_TENSOR_ACTIVE x dense peak (upper bound: counts recompute and padding)"};
    }
  }
  if (r.tflops_per_gpu && peak) {
    const bool from_dcgm = r.tflops_per_gpu->method.starts_with("DCGM");
    r.mfu = Figure{r.tflops_per_gpu->value * 1e12 / *peak,
                   fmt::format("TFLOP/s per GPU / {} dense {} peak {:.0f} TFLOP/s{}", gpu->name,
                               planner::PrecisionName(precision), *peak / 1e12,
                               from_dcgm ? " (TFLOP/s from DCGM tensor activity: an upper bound, closer to HFU)" : "")};
  }

  // Communication share: measured timers, then the fallback chain.
  if (log && r.step_time_s) {
    double comm_ms = 0, compute_ms = 0;
    int n = 0;
    for (const auto& t : log->timers) {
      double c = 0, k = 0;
      for (const auto& [name, ms] : t.ms) {
        if (IsCommTimer(name) && name.find("microstep") == std::string::npos) c += ms;
        if (name == "forward-compute" || name == "backward-compute" || name == "forward" || name == "backward" ||
            name == "fwd" || name == "bwd_inner")
          k += ms;
      }
      if (c > 0 || k > 0) {
        comm_ms += c;
        compute_ms += k;
        ++n;
      }
    }
    if (n > 0 && comm_ms > 0) {
      const double per_step = comm_ms / n / 1000.0;
      r.comm_share = Figure{std::min(1.0, per_step / r.step_time_s->value),
                            fmt::format("log timers: communication timers (all-reduce/all-gather/send/recv) averaged "
                                        "over {} timer lines / step time", n)};
    } else if (n > 0 && compute_ms > 0) {
      const double per_step = compute_ms / n / 1000.0;
      r.comm_share = Figure{std::max(0.0, 1.0 - per_step / r.step_time_s->value),
                            "fallback step 1: (step time - forward/backward compute timers) / step time"};
    }
  }
  // DCGM counters: inside one NVLink domain every collective rides NVLink,
  // so TX bytes/s over the link bandwidth is the share of time spent
  // communicating. Across domains the network traffic is not in DCGM, so the
  // counters are incomplete and the chain below is used instead.
  if (!r.comm_share && gpu && r.nvlink_bytes_per_s && gpus > 1) {
    const int domain = in.placement ? in.placement->gpus_per_domain : gpu->nvlink_domain;
    const double link = (in.placement ? in.placement->nvlink_gbps : gpu->nvlink_gbps) * 1e9;
    if (gpus <= domain) {
      if (auto t = Summarize(in.dcgm, "DCGM_FI_PROF_NVLINK_TX_BYTES")) {
        r.comm_share = Figure{std::min(1.0, t->mean / link),
                              fmt::format("DCGM counters: NVLINK_TX_BYTES {:.3g} B/s / NVLink {:.0f} GB/s per direction "
                                          "(job inside one NVLink domain)",
                                          t->mean, link / 1e9)};
      }
    } else {
      r.notes.push_back("DCGM NVLink counters do not see inter-node traffic; communication share from the fallback chain");
    }
  }
  std::optional<planner::Prediction> predicted;
  std::optional<planner::Placement> placement = in.placement;
  if (gpu && gpus > 0 && !placement) placement = planner::DefaultPlacement(*gpu, gpus);
  if (model && strategy && gpu && placement && model->vocab > 0 && model->global_batch > 0) {
    auto p = planner::Predict(*model, *gpu, *placement, *strategy, in.calibration);
    if (p) {
      predicted = *p;
    } else {
      r.notes.push_back("planner model not applicable: " + p.error().message);
    }
  }
  if (!r.comm_share && r.step_time_s && predicted) {
    // Step 1: pure compute (plus pipeline bubble and optimizer, which are not
    // communication) from the calibrated model; the rest of the measured step
    // is communication that computation did not hide.
    const auto& t = predicted->time;
    const double busy = t.compute_s + t.bubble_s + t.optimizer_s;
    r.comm_share = Figure{std::clamp(1.0 - busy / r.step_time_s->value, 0.0, 1.0),
                          "fallback step 1: (measured step time - modelled compute, bubble and optimizer time) / "
                          "step time"};
  }
  if (!r.comm_share && predicted) {
    const planner::Link widest = planner::LinkFor(*placement, gpus);
    r.comm_share = Figure{predicted->comm_share,
                          fmt::format("fallback step 2: per collective, network hops x per-hop latency + bytes / "
                                      "bandwidth (planner model of the layout; the widest group crosses {} hop{}, "
                                      "{:.1f} us) / modelled step time",
                                      widest.hops, widest.hops == 1 ? "" : "s", widest.latency_us)};
  }
  if (!r.comm_share && gpus > 1) {
    const planner::Placement pl = placement ? *placement
                                            : planner::Placement{gpus, 8, 0, 450, 3, {{"leaf", 256, 50, 5, 1}, {"spine", 0, 50, 2.7, 3}}};
    int levels = 1;  // the NVLink domain itself
    if (gpus > pl.gpus_per_domain) ++levels;
    if (!pl.levels.empty() && pl.levels.front().span_gpus > 0 && gpus > pl.levels.front().span_gpus) ++levels;
    r.comm_share = Figure{1.0 - std::pow(in.decay, levels),
                          fmt::format("fallback step 3: parallel-efficiency decay, 1 - {}^{} (interconnect levels "
                                      "spanned)",
                                      in.decay, levels)};
  }
  if (!r.comm_share) r.notes.push_back("single-GPU job or GPU count unknown: no communication share");
  return r;
}

}  // namespace tidal::telemetry
