#include "planner/cost_model.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>

#include <yaml-cpp/yaml.h>

namespace tidal::planner {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// Memory-bound kernels (norms, activations, optimizer) reach about this share
// of HBM bandwidth; a datasheet-level constant, not fitted.
constexpr double kHbmEfficiency = 0.7;
// GEMM dimension at which efficiency is halved by tile/wave quantisation
// (a 128-wide tile is the unit tensor-core kernels schedule).
constexpr double kShapeHalf = 128.0;
// CUDA context, NCCL and allocator reserve per GPU.
constexpr double kFixedBufferGib = 2.5;

double Shape(double n) { return n / (n + kShapeHalf); }

// Alpha-beta collective costs; bytes are the full buffer, bw in GB/s per GPU.
double RingAllReduce(double bytes, int g, Link l, double eff) {
  if (g <= 1) return 0;
  return 2.0 * (g - 1) / g * bytes / (l.gbps * 1e9 * eff) + 2.0 * std::log2(g) * l.latency_us * 1e-6;
}
double RingGatherOrScatter(double bytes, int g, Link l, double eff) {
  if (g <= 1) return 0;
  return 1.0 * (g - 1) / g * bytes / (l.gbps * 1e9 * eff) + std::log2(g) * l.latency_us * 1e-6;
}

int CeilDiv(int a, int b) { return (a + b - 1) / b; }

// Elements per token and layer that a low-precision recipe quantises on one
// TP rank: the inputs of the linear GEMMs forward (QKV, projection, FC1, FC2)
// and the gradients arriving at their outputs backward. Expert GEMMs see
// every routed copy of a token; a fused expert MLP quantises its
// intermediate (FC2's input, FC1's output gradient) inside the kernel.
double QuantizedElementsPerToken(const ModelSpec& m, int tp, bool sp, double moe_frac, double fused_copies) {
  const double h = m.hidden, q = m.QDim(), kv = m.KvDim();
  const double hs = h / (sp ? tp : 1);
  const double gate = m.gated_mlp ? 2.0 : 1.0;
  const double attn = hs + q / tp + (q + 2 * kv) / tp + hs;
  const double dense_mlp = hs + m.ffn / tp + gate * m.ffn / tp + hs;
  const double copies = m.top_k + m.shared_experts;
  const double moe_mlp = copies * 2 * h + (copies - fused_copies) * (1 + gate) * m.expert_ffn / tp;
  return attn + (1 - moe_frac) * dense_mlp + moe_frac * moe_mlp;
}

// HBM bytes moved per quantised element (read BF16, write the low-precision
// copies and scales). Per-tensor delayed scaling: one fused cast-and-amax
// pass plus the transposed copy the weight-gradient GEMM needs (2 + 1 + 1).
// Current scaling adds an amax pass before the cast (+2). MXFP8 writes a
// rowwise and a columnwise copy with an E8M0 scale per 32 elements
// (2 + 2 x (1 + 1/32)). NVFP4 writes two 4-bit copies with an FP8 scale per
// 16 elements and applies a random Hadamard transform to the weight-gradient
// inputs (a further read and write of a BF16 tensor: 2 + 2 x (0.5 + 1/16) + 4).
double QuantBytesPerElement(Precision p) {
  switch (p) {
    case Precision::kFp8: return 4.0;
    case Precision::kFp8Current: return 6.0;
    case Precision::kMxfp8: return 2.0 + 2.0 * (1.0 + 1.0 / 32);
    case Precision::kNvfp4: return 2.0 + 2.0 * (0.5 + 1.0 / 16) + 4.0;
    default: return 0.0;
  }
}

}  // namespace

std::string_view RecomputeName(Recompute r) {
  switch (r) {
    case Recompute::kNone: return "none";
    case Recompute::kSelective: return "selective";
    case Recompute::kFull: return "full";
  }
  return "?";
}

std::string_view CudaGraphsName(CudaGraphs g) {
  switch (g) {
    case CudaGraphs::kNone: return "none";
    case CudaGraphs::kPartial: return "partial";
    case CudaGraphs::kFull: return "full";
  }
  return "?";
}

Result<CudaGraphs> ParseCudaGraphs(std::string_view s) {
  if (s == "none") return CudaGraphs::kNone;
  if (s == "partial") return CudaGraphs::kPartial;
  if (s == "full") return CudaGraphs::kFull;
  return MakeError(ErrorCode::kInvalidArgument, "unknown CUDA graphs '{}': use none, partial or full", s);
}

Result<Recompute> ParseRecompute(std::string_view s) {
  if (s == "none" || s.empty()) return Recompute::kNone;
  if (s == "selective") return Recompute::kSelective;
  if (s == "full") return Recompute::kFull;
  return MakeError(ErrorCode::kInvalidArgument, "unknown recompute '{}': use none, selective or full", s);
}

std::string_view GemmFormat(Precision p) {
  switch (p) {
    case Precision::kFp8:
    case Precision::kFp8Current: return "fp8";
    case Precision::kMxfp8: return "mxfp8";
    case Precision::kNvfp4: return "nvfp4";
    default: return "16-bit";
  }
}

double Calibration::GemmFraction(std::string_view generation, std::string_view format) const {
  auto find = [&](std::string_view gen, std::string_view f) -> const Entry* {
    for (const auto& e : entries) {
      if ((gen.empty() || e.generation == gen) && e.format == f) return &e;
    }
    return nullptr;
  };
  static constexpr std::string_view wider[] = {"nvfp4", "mxfp8", "fp8", "16-bit"};
  const auto* from = std::find(std::begin(wider), std::end(wider), format);
  for (const auto* it = from; it != std::end(wider); ++it) {
    if (const Entry* e = find(generation, *it)) return e->gemm_fraction;
  }
  if (const Entry* e = find("hopper", format)) return e->gemm_fraction;
  if (const Entry* e = find("", format)) return e->gemm_fraction;
  return 0.6;
}

void Calibration::SetGemmFraction(std::string_view generation, std::string_view format, double v) {
  for (auto& e : entries) {
    if (e.generation == generation && e.format == format) {
      e.gemm_fraction = v;
      return;
    }
  }
  entries.push_back({std::string(generation), std::string(format), v});
}

Placement DefaultPlacement(const GpuSpec& gpu, int gpus) {
  Placement pl;
  pl.gpus = gpus;
  pl.gpus_per_domain = gpu.nvlink_domain;
  pl.nodes = CeilDiv(gpus, std::min(gpu.nvlink_domain, 8));
  pl.nvlink_gbps = gpu.nvlink_gbps;
  pl.nvlink_latency_us = 3;
  pl.levels = {{"leaf", 32 * gpu.nvlink_domain, gpu.nic_gbps, 5, 1}, {"spine", 0, gpu.nic_gbps, 2.7, 3}};
  return pl;
}

Result<Placement> ParseClusterSpec(std::string_view spec, const GpuSpec& gpu, int gpus) {
  Placement pl = DefaultPlacement(gpu, gpus);
  const std::string path(spec);
  if (std::filesystem::exists(path)) {
    // YAML form: gpus_per_domain, nvlink_gbps, nvlink_latency_us, nodes,
    // levels: [{name, span_gpus, gbps, latency_us (per hop), hops}, ...]
    try {
      YAML::Node n = YAML::LoadFile(path);
      if (n["gpus_per_domain"]) pl.gpus_per_domain = n["gpus_per_domain"].as<int>();
      if (n["nvlink_gbps"]) pl.nvlink_gbps = n["nvlink_gbps"].as<double>();
      if (n["nvlink_latency_us"]) pl.nvlink_latency_us = n["nvlink_latency_us"].as<double>();
      if (n["nodes"]) pl.nodes = n["nodes"].as<int>();
      if (n["levels"]) {
        pl.levels.clear();
        for (const auto& l : n["levels"]) {
          pl.levels.push_back({l["name"].as<std::string>("level"), l["span_gpus"].as<int>(0),
                               l["gbps"].as<double>(), l["latency_us"].as<double>(5), l["hops"].as<int>(1)});
        }
      }
    } catch (const YAML::Exception& e) {
      return MakeError(ErrorCode::kParse, "{}:{}: cluster spec: {}", path, e.mark.line + 1, e.msg);
    }
  } else {
    // key=value[,key=value...]
    size_t pos = 0;
    while (pos < spec.size()) {
      size_t end = spec.find(',', pos);
      if (end == std::string_view::npos) end = spec.size();
      std::string_view item = spec.substr(pos, end - pos);
      pos = end + 1;
      if (item.empty()) continue;
      const size_t eq = item.find('=');
      if (eq == std::string_view::npos) {
        return MakeError(ErrorCode::kInvalidArgument,
                         "--cluster '{}': item '{}' is not key=value (keys: domain, nvlink, net, latency, leaf, "
                         "spine_latency, spine_hops, nodes) nor an existing YAML file",
                         spec, item);
      }
      const std::string_view key = item.substr(0, eq);
      const std::string_view val = item.substr(eq + 1);
      double v = 0;
      auto [p, ec] = std::from_chars(val.data(), val.data() + val.size(), v);
      if (ec != std::errc() || p != val.data() + val.size() || !(v > 0) || v > 1e7) {
        return MakeError(ErrorCode::kInvalidArgument, "--cluster: '{}' needs a number in (0, 1e7], got '{}'", key, val);
      }
      if (key == "domain") {
        pl.gpus_per_domain = static_cast<int>(v);
      } else if (key == "nvlink") {
        pl.nvlink_gbps = v;
      } else if (key == "net") {
        for (auto& l : pl.levels) l.gbps = v;
      } else if (key == "latency") {
        pl.levels.front().latency_us = v;
      } else if (key == "spine_latency") {
        pl.levels.back().latency_us = v;
      } else if (key == "spine_hops") {
        pl.levels.back().hops = static_cast<int>(v);
      } else if (key == "leaf") {
        pl.levels.front().span_gpus = static_cast<int>(v);
      } else if (key == "nodes") {
        pl.nodes = static_cast<int>(v);
      } else {
        return MakeError(ErrorCode::kInvalidArgument,
                         "--cluster: unknown key '{}' (keys: domain, nvlink, net, latency, leaf, spine_latency, "
                         "spine_hops, nodes)",
                         key);
      }
    }
  }
  bool levels_ok = !pl.levels.empty();
  for (const auto& l : pl.levels) levels_ok = levels_ok && l.gbps > 0 && l.gbps < 1e9 && l.latency_us >= 0 && l.hops >= 0 && l.span_gpus >= 0;
  if (pl.gpus_per_domain <= 0 || pl.gpus_per_domain > 10'000'000 || !(pl.nvlink_gbps > 0 && pl.nvlink_gbps < 1e9) || !levels_ok) {
    return MakeError(ErrorCode::kInvalidArgument, "cluster spec '{}': a domain size, NVLink bandwidth and at least one "
                     "network level with positive bandwidth are required", spec);
  }
  return pl;
}

Link LinkFor(const Placement& pl, int span) {
  if (span <= pl.gpus_per_domain || pl.levels.empty()) return {pl.nvlink_gbps, pl.nvlink_latency_us, 1};
  for (const auto& l : pl.levels) {
    if (l.span_gpus == 0 || span <= l.span_gpus) return {l.gbps, l.hops * l.latency_us, l.hops};
  }
  const auto& top = pl.levels.back();
  return {top.gbps, top.hops * top.latency_us, top.hops};
}

Calibration DefaultCalibration() {
  Calibration c;
  c.entries = {{"ampere", "16-bit", 0.732},  {"hopper", "16-bit", 0.722},   {"hopper", "fp8", 0.674},
               {"blackwell", "fp8", 0.835}, {"blackwell", "mxfp8", 0.646}, {"blackwell", "nvfp4", 0.656}};
  c.collective_efficiency = 1.000;
  c.moe_layer_overhead_us = 3949;
  c.moe_host_overhead_us = 0;
  return c;
}

bool SplitLayers(int layers, int pp, int& first, int& last) {
  first = last = 0;
  if (layers % pp == 0) return true;
  if (pp == 2) {  // the last stage takes the odd layer
    first = layers / 2;
    last = layers - first;
    return first > 0;
  }
  if (pp < 3) return false;
  const int base = (layers + pp - 1) / pp;
  const int rest = layers - (pp - 2) * base;
  if (rest < 2 || rest > 2 * base) return false;
  first = rest / 2;
  last = rest - first;
  return true;
}

Status ValidateStrategy(const ModelSpec& m, const Strategy& s, int gpus) {
  auto bad = [&](std::string_view what) {
    return MakeError(ErrorCode::kInvalidArgument, "strategy tp={} pp={} dp={} cp={} ep={}: {}", s.tp, s.pp, s.dp,
                     s.cp, s.ep, what);
  };
  if (s.tp < 1 || s.pp < 1 || s.dp < 1 || s.cp < 1 || s.ep < 1 || s.vpp < 1 || s.micro_batch < 1 ||
      s.grad_accum < 1)
    return bad("every size must be at least 1");
  if (s.Gpus() != gpus) return bad(fmt::format("tp*pp*dp*cp = {} but the job has {} GPUs", s.Gpus(), gpus));
  if (m.heads % s.tp != 0 || m.kv_heads % s.tp != 0) return bad("tp must divide the attention heads and KV heads");
  if (s.pp > m.layers) return bad("more pipeline stages than layers");
  if (s.first_stage_layers > 0 || s.last_stage_layers > 0) {
    if (s.pp < 2) return bad("uneven pipeline split needs pp >= 2");
    const int middle = m.layers - s.first_stage_layers - s.last_stage_layers;
    if (s.first_stage_layers <= 0 || s.last_stage_layers <= 0) return bad("uneven split needs layers on both ends");
    if (s.pp == 2 ? middle != 0 : (middle <= 0 || middle % (s.pp - 2) != 0))
      return bad("uneven split does not add up to the layer count");
    // Virtual stages are modelled on the heaviest stage: they must divide
    // the middle stages' layers, and with two stages fit in either.
    if (s.pp > 2 && s.vpp > 1 && (middle / (s.pp - 2)) % s.vpp != 0)
      return bad("vpp must divide the layers per middle stage");
    if (s.pp == 2 && s.vpp > std::min(s.first_stage_layers, s.last_stage_layers))
      return bad("more virtual pipeline stages than layers on the first or last stage");
  } else if (m.layers % s.pp != 0) {
    return bad("pp must divide the layer count (or give an uneven first/last stage split)");
  }
  if (s.vpp > 1) {
    if (s.pp < 2) return bad("virtual pipeline stages need pp > 1");
    if (s.first_stage_layers == 0 && (m.layers / s.pp) % s.vpp != 0)
      return bad("vpp must divide the layers per pipeline stage");
    if (s.grad_accum % s.pp != 0) return bad("the interleaved schedule needs micro-batches divisible by pp");
  }
  if (s.cp > 1 && m.seq_len % (2 * s.cp) != 0) return bad("sequence length must be divisible by 2*cp");
  if (!m.IsMoe() && s.ep != 1) return bad("expert parallelism needs an MoE model");
  if (m.IsMoe() && (m.experts % s.ep != 0 || (s.dp * s.cp) % s.ep != 0))
    return bad("ep must divide the experts and dp*cp");
  if (s.zero_stage < 0 || s.zero_stage > 3) return bad("zero stage must be 0..3");
  return Ok();
}

Prediction PredictUnchecked(const ModelSpec& m, const GpuSpec& gpu, const Placement& pl, const Strategy& s,
                            const Calibration& cal) {
  Prediction out;
  const bool low = IsLowPrecision(s.precision);
  const double peak16 = gpu.bf16_tflops * 1e12;
  // The caller has checked that the GPU has the recipe's tensor cores.
  const double peak_lin = (s.precision == Precision::kNvfp4 ? gpu.fp4_tflops
                           : IsFp8(s.precision)             ? gpu.fp8_tflops
                                                            : gpu.bf16_tflops) * 1e12;
  const double peak_run = peak_lin;
  const double a16 = cal.GemmFraction(gpu.generation, "16-bit");
  const double a_lin = low ? cal.GemmFraction(gpu.generation, GemmFormat(s.precision)) : a16;
  const double beta = cal.collective_efficiency;
  const double hbm = gpu.hbm_tbps * 1e12 * kHbmEfficiency;

  const double h = m.hidden;
  const double q = m.QDim();
  const double kv = m.KvDim();
  const int tp = s.tp;
  const bool sp = s.sequence_parallel && tp > 1;
  const double tokens = static_cast<double>(s.micro_batch) * m.seq_len / s.cp;  // per CP rank
  // Layers on the critical (heaviest) stage.
  int stage_layers = m.layers / s.pp;
  if (s.first_stage_layers > 0) {
    stage_layers = s.pp == 2 ? std::max(s.first_stage_layers, s.last_stage_layers)
                             : (m.layers - s.first_stage_layers - s.last_stage_layers) / (s.pp - 2);
  }
  const double moe_frac = static_cast<double>(m.MoeLayers()) / m.layers;
  const ForwardFlops ff = ForwardFlopsPerToken(m, m.seq_len);

  // --- compute per micro-batch on the critical (last) stage ---------------
  const double per_layer_linear = ff.linear / m.layers;
  const double per_layer_expert = ff.expert / m.layers;
  const double per_layer_attn = ff.attention / m.layers;
  const double n_dense = std::min({h, q / tp, m.ffn > 0 ? static_cast<double>(m.ffn) / tp : h});
  const double lin_rate = peak_lin * a_lin * Shape(n_dense);
  double exp_rate = lin_rate;
  if (m.IsMoe()) {
    const double tokens_per_expert = tokens * m.top_k * s.ep / m.experts;
    exp_rate = peak_lin * a_lin * Shape(std::min(h, static_cast<double>(m.expert_ffn) / tp)) * Shape(tokens_per_expert);
  }
  // FP8 attention runs the attention core at the FP8 peak, at the fraction
  // of peak the 16-bit kernel reaches of its own.
  const double peak_attn = s.fp8_attention && gpu.fp8_tflops > 0 ? gpu.fp8_tflops * 1e12 : peak16;
  const double attn_rate = peak_attn * a16 * Shape(m.HeadDim());
  const double logit_rate = peak16 * a16 * Shape(std::min(h, static_cast<double>(m.vocab) / tp));

  const double lin_fwd = tokens * per_layer_linear * stage_layers / tp / lin_rate;
  // The rank with the busiest experts sets the pace: routed expert work
  // scales by the load factor (shared experts see every token once).
  const double routed_share = m.IsMoe() ? static_cast<double>(m.top_k) / (m.top_k + m.shared_experts) : 0.0;
  const double load = 1.0 + routed_share * (m.MoeLoadFactor() - 1.0);
  const double exp_fwd = tokens * per_layer_expert * stage_layers / tp / exp_rate * load;
  const double attn_fwd = tokens * per_layer_attn * stage_layers / tp / attn_rate;
  const double logit_fwd = tokens * ff.logits / tp / logit_rate;
  // Memory-bound kernels: ~14 hidden-sized and 3 FFN-sized tensor passes per
  // layer forward, twice that backward; hidden-sized ones are sharded only
  // with sequence parallelism.
  // A fused expert MLP keeps the routed copies' intermediate on chip.
  const double fused_copies = m.IsMoe() && s.fused_expert_mlp ? m.top_k : 0.0;
  const double ffn_act = (1 - moe_frac) * m.ffn * (m.gated_mlp ? 2 : 1) +
                         moe_frac * (m.top_k + m.shared_experts - fused_copies) * m.expert_ffn * (m.gated_mlp ? 2 : 1);
  const double hs = h / (sp ? tp : 1);  // a hidden-sized tensor on one TP rank
  double ew_bytes = 3.0 * 2.0 * tokens * (14.0 * hs + 3.0 * ffn_act / tp) * stage_layers;
  if (m.IsMoe()) {
    // Token permutation for the grouped GEMM and its inverse, forward and
    // backward: each reads and writes the token and its top_k copies (BF16).
    const double routed = m.top_k;
    ew_bytes += 4.0 * (1 + routed) * hs * 2.0 * tokens * stage_layers * moe_frac;
  }
  if (low) {
    ew_bytes += QuantizedElementsPerToken(m, tp, sp, moe_frac, fused_copies) * QuantBytesPerElement(s.precision) *
                tokens * stage_layers;
  }
  const double ew = ew_bytes / hbm;
  // Fixed cost per MoE layer and micro-batch (forward + backward): on the
  // device, and on the host unless a full-iteration CUDA graph replays the
  // step without it.
  const double moe_fixed_us =
      cal.moe_layer_overhead_us + (s.cuda_graphs == CudaGraphs::kFull ? 0.0 : cal.moe_host_overhead_us);
  const double moe_fixed = m.IsMoe() ? moe_fixed_us * 1e-6 * stage_layers * moe_frac : 0.0;

  double layers_fwd = lin_fwd + exp_fwd + attn_fwd;
  // GEMMs: backward = 2 x forward. Flash attention's backward re-computes
  // QK^T and runs five matmuls to the forward's two: 2.5 x forward.
  double compute_mb = 3 * (lin_fwd + exp_fwd) + 3.5 * attn_fwd + 3 * logit_fwd + ew + moe_fixed;
  double recompute_mb = 0;
  if (s.recompute == Recompute::kFull) {
    recompute_mb = layers_fwd + ew / 3;
  } else if (s.recompute == Recompute::kSelective) {
    recompute_mb = attn_fwd + ew / 12;
  }
  compute_mb += recompute_mb;

  // --- TP collectives: 2 all-reduce (or AG+RS pairs) forward, 2 backward ---
  double tp_mb = 0;
  if (tp > 1) {
    const Link l = LinkFor(pl, tp);
    const double msg = tokens * h * 2;
    const double per_layer = 4 * RingAllReduce(msg, tp, l, beta);
    tp_mb = per_layer * stage_layers * (s.recompute == Recompute::kFull ? 1.5 : 1.0);
    if (s.overlap_tp_comm) tp_mb = std::max(0.2 * tp_mb, tp_mb - 3 * lin_fwd);
  }
  // --- CP ring attention: KV chunks around the ring, hidden behind attention
  double cp_mb = 0;
  if (s.cp > 1) {
    const Link l = LinkFor(pl, tp * s.cp);
    const double chunk = tokens * 2 * kv / tp * 2;
    const double per_layer =
        3.0 * (s.cp - 1) * (chunk / (l.gbps * 1e9 * beta) + l.latency_us * 1e-6);
    const double attn_layer = 3 * attn_fwd / stage_layers;
    cp_mb = std::max(0.0, per_layer - attn_layer) * stage_layers;
  }
  // --- EP all-to-all: dispatch + combine forward and backward -------------
  double ep_mb = 0;
  if (m.IsMoe() && s.ep > 1) {
    const int span = tp * s.cp * s.ep;
    const Link l = LinkFor(pl, span);
    const double tok = tokens / (sp ? tp : 1);
    double a2a = tok * m.top_k * h * 2 * (s.ep - 1) / s.ep / (l.gbps * 1e9 * beta) + l.latency_us * 1e-6;
    if (s.ep_dedup && span > pl.gpus_per_domain) {
      // Routing uniform over the experts: a token's top_k experts touch
      // n (1 - (1 - 1/n)^k) distinct nodes of the n the group spans; it
      // crosses the network once to each remote one, and the fan-out to the
      // experts inside a node runs over NVLink behind it.
      const double n = std::ceil(static_cast<double>(span) / pl.gpus_per_domain);
      const double remote = n * (1 - std::pow(1 - 1 / n, m.top_k)) * (n - 1) / n;
      const double net = tok * remote * h * 2 / (l.gbps * 1e9 * beta) + l.latency_us * 1e-6;
      const Link nv = LinkFor(pl, 1);
      const double fan = tok * m.top_k * h * 2 / (nv.gbps * 1e9 * beta);
      a2a = std::max(net, fan);
    }
    const double per_layer = 4 * a2a * m.MoeLoadFactor();  // the busiest rank receives the most
    ep_mb = per_layer * stage_layers * moe_frac * (s.recompute == Recompute::kFull ? 1.5 : 1.0);
    // Batch-level overlap: while one micro-batch dispatches or combines, the
    // other computes; only what its GEMMs cannot cover stays exposed. It
    // needs two micro-batches in flight.
    if (s.overlap_ep_comm && s.grad_accum > 1) ep_mb = std::max(0.0, ep_mb - 3 * (lin_fwd + exp_fwd));
  }
  const double t_mb = compute_mb + tp_mb + cp_mb + ep_mb;
  const int mbs = s.grad_accum;

  // --- pipeline ---------------------------------------------------------
  double bubble = 0, pp_comm = 0;
  if (s.pp > 1) {
    bubble = static_cast<double>(s.pp - 1) / s.vpp * t_mb;
    const Link l = LinkFor(pl, 2 * tp * s.cp * s.dp);
    const double bytes = tokens * h * 2 / (sp ? tp : 1);
    pp_comm = 2.0 * s.vpp * mbs * (bytes / (l.gbps * 1e9 * beta) + l.latency_us * 1e-6);
  }

  // --- data parallel ----------------------------------------------------
  const double attn_params = m.AttentionParamsPerLayer();
  double dense_params = stage_layers * (attn_params + (1 - moe_frac) * m.DenseMlpParams()) / tp;
  double expert_params = 0;
  if (m.IsMoe()) {
    dense_params += stage_layers * moe_frac * (m.shared_experts * m.ExpertParams() / tp + h * m.experts);
    expert_params = stage_layers * moe_frac * (static_cast<double>(m.experts) / s.ep) * m.ExpertParams() / tp;
  }
  dense_params += (s.pp == 1 ? m.EmbeddingParams() : static_cast<double>(m.vocab) * h) / tp;
  const int g_dense = s.dp * s.cp;
  const int g_exp = std::max(1, g_dense / s.ep);
  const Link dl = LinkFor(pl, tp * s.cp * s.dp);
  const double win_bwd = (2.0 / 3.0) * compute_mb;
  const double win_fwd = (1.0 / 3.0) * compute_mb;
  double dp_total = 0, dp_exposed = 0;
  if (s.zero_stage == 3 && s.zero3_rounds > 0) {
    // Once per round: the gather behind the round's first forward, the
    // reduce-scatter behind its last backward.
    const int rounds = std::min(s.zero3_rounds, mbs);
    const double gather =
        RingGatherOrScatter(dense_params * 2, g_dense, dl, beta) + RingGatherOrScatter(expert_params * 2, g_exp, dl, beta);
    const double scatter = gather;  // the same bytes back (BF16 gradients)
    dp_total = (gather + scatter) * rounds;
    dp_exposed = (s.overlap_grad_reduce ? std::max(0.0, gather - win_fwd) + std::max(0.0, scatter - win_bwd)
                                        : gather + scatter) *
                 rounds;
  } else if (s.zero_stage == 3) {
    // Weights gathered for forward and again for backward, gradients
    // reduce-scattered: every micro-batch, prefetched behind its compute.
    const double per_mb = 2 * RingGatherOrScatter(dense_params * 2, g_dense, dl, beta) +
                          RingGatherOrScatter(dense_params * 2, g_dense, dl, beta) +
                          3 * RingGatherOrScatter(expert_params * 2, g_exp, dl, beta);
    dp_total = per_mb * mbs;
    dp_exposed = (s.overlap_grad_reduce ? std::max(0.0, per_mb - compute_mb) : per_mb) * mbs;
  } else {
    double grad = 0, param = 0;
    if (s.zero_stage == 0) {
      grad = RingAllReduce(dense_params * 4, g_dense, dl, beta) + RingAllReduce(expert_params * 4, g_exp, dl, beta);
    } else {
      grad = RingGatherOrScatter(dense_params * 4, g_dense, dl, beta) +
             RingGatherOrScatter(expert_params * 4, g_exp, dl, beta);
      param = RingGatherOrScatter(dense_params * 2, g_dense, dl, beta) +
              RingGatherOrScatter(expert_params * 2, g_exp, dl, beta);
    }
    dp_total = grad + param;
    dp_exposed = s.overlap_grad_reduce ? std::max(0.0, grad - win_bwd) + std::max(0.0, param - win_fwd) : dp_total;
  }

  // --- optimizer: memory-bound Adam over the local shard --------------------
  const double opt_params = s.zero_stage >= 1 ? dense_params / g_dense + expert_params / g_exp
                                              : dense_params + expert_params;
  const double optimizer = opt_params * 32 / hbm;

  const double step = mbs * t_mb + bubble + pp_comm + dp_exposed + optimizer;

  // --- outputs ------------------------------------------------------------
  auto& t = out.time;
  t.compute_s = mbs * compute_mb;
  t.recompute_s = mbs * recompute_mb;
  t.bubble_s = bubble;
  t.tp_comm_s = mbs * tp_mb;
  t.cp_comm_s = mbs * cp_mb;
  t.ep_comm_s = mbs * ep_mb;
  t.pp_comm_s = pp_comm;
  t.dp_comm_s = dp_exposed;
  t.dp_comm_total_s = dp_total;
  t.optimizer_s = optimizer;
  out.step_time_s = step;
  const double step_tokens = static_cast<double>(s.GlobalBatch()) * m.seq_len;
  out.tokens_per_s = step_tokens / step;
  const int gpus = s.Gpus();
  out.model_flops_per_step = FlopsPerToken(m, m.seq_len, FlopsConvention::kMegatron) * step_tokens;
  double extra = 0;
  if (s.recompute == Recompute::kFull) extra = ff.linear + ff.expert + 2 * ff.attention;
  if (s.recompute == Recompute::kSelective) extra = 2 * ff.attention;
  out.hardware_flops_per_step = out.model_flops_per_step + extra * step_tokens;
  out.tflops_per_gpu = out.model_flops_per_step / step / gpus / 1e12;
  out.mfu = out.model_flops_per_step / (step * gpus * peak_run);
  out.hfu = out.hardware_flops_per_step / (step * gpus * peak_run);
  const double exposed_comm = t.tp_comm_s + t.cp_comm_s + t.ep_comm_s + t.pp_comm_s + t.dp_comm_s;
  out.comm_share = exposed_comm / step;

  // --- memory (first stage activations, last stage parameters: the worst case)
  auto& mem = out.memory;
  const double params = dense_params + expert_params;
  const double shard3 = s.zero_stage == 3;
  // BF16 weights also for FP8 runs: Transformer Engine casts them per GEMM
  // (published FP8 layouts such as NeMo's GPT3-20B on TP 2 only fit so).
  const double w_bytes = 2.0;
  mem.weights_gib = (shard3 ? dense_params / g_dense + expert_params / g_exp : params) * w_bytes / kGiB;
  mem.gradients_gib = (s.zero_stage >= 2 ? dense_params / g_dense + expert_params / g_exp : params) * 4 / kGiB;
  mem.optimizer_gib = opt_params * 12 / kGiB;
  // Activations per token per layer (bytes), Korthikanti et al. generalised:
  // 10h unsharded without SP (norm inputs, dropout masks, block inputs),
  // Q/K/V/context and MLP tensors sharded by TP.
  const double mlp_dense = m.gated_mlp ? 6.0 * m.ffn : 4.0 * m.ffn;
  const double mlp_moe = (m.top_k + m.shared_experts) * (2 * h + (m.gated_mlp ? 6.0 : 4.0) * m.expert_ffn);
  double mlp = (1 - moe_frac) * mlp_dense + moe_frac * mlp_moe;
  if (s.recompute == Recompute::kSelective) {
    mlp -= 2.0 * ((1 - moe_frac) * m.ffn + moe_frac * (m.top_k + m.shared_experts) * m.expert_ffn);
  }
  double unsharded = 10 * h, sharded = 4 * q + 4 * kv + mlp;
  if (low) {
    // Transformer Engine keeps the FP8 cast of each GEMM input for the weight
    // gradient: QKV and FC1 inputs (h each), the projection input (q) and
    // the FC2 input (the activation output) take 1 byte instead of 2.
    unsharded -= 2 * h;
    const double fc2_in = (1 - moe_frac) * m.ffn + moe_frac * (m.top_k + m.shared_experts) * m.expert_ffn;
    sharded -= q + (s.recompute == Recompute::kSelective ? 0.0 : fc2_in);
  }
  const double full_layer = unsharded / (sp ? tp : 1) + sharded / tp;
  const double per_layer_token = s.recompute == Recompute::kFull ? 2 * h / (sp ? tp : 1) : full_layer;
  const int first_layers = s.first_stage_layers > 0 ? s.first_stage_layers : stage_layers;
  double in_flight = std::min(s.pp, mbs);
  if (s.vpp > 1) in_flight *= 1.0 + static_cast<double>(s.pp - 1) / (s.pp * s.vpp);
  double act = tokens * per_layer_token * first_layers * in_flight;
  if (s.recompute == Recompute::kFull) act += tokens * full_layer;  // one layer re-materialised
  act += tokens * static_cast<double>(m.vocab) / tp * 6;             // fp32 logits and their gradient
  mem.activations_gib = act / kGiB;
  mem.buffers_gib = kFixedBufferGib;
  if (shard3) mem.buffers_gib += 2 * (attn_params + m.DenseMlpParams()) * 2 / tp / kGiB;  // prefetch
  out.memory_gib = mem.TotalGib();
  out.fits = out.memory_gib <= gpu.hbm_gib;
  return out;
}

Result<Prediction> Predict(const ModelSpec& m, const GpuSpec& gpu, const Placement& pl, const Strategy& s,
                           const Calibration& cal) {
  TIDAL_RETURN_IF_ERROR(ValidateModel(m));
  TIDAL_RETURN_IF_ERROR(ValidateStrategy(m, s, s.Gpus()));
  TIDAL_RETURN_IF_ERROR(gpu.PeakFlops(s.precision));
  if (pl.nvlink_gbps <= 0 || pl.gpus_per_domain <= 0) {
    return MakeError(ErrorCode::kInvalidArgument, "placement needs NVLink bandwidth and domain size");
  }
  return PredictUnchecked(m, gpu, pl, s, cal);
}

}  // namespace tidal::planner
