#include "planner/search.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace tidal::planner {
namespace {

auto Key(const Plan& p) {
  const Strategy& s = p.strategy;
  return std::make_tuple(p.prediction.step_time_s, p.prediction.memory_gib, s.tp, s.pp, s.cp, s.ep, s.vpp,
                         s.micro_batch, s.zero_stage, static_cast<int>(s.recompute), !s.sequence_parallel);
}

}  // namespace

Result<SearchResult> SearchPlans(const ModelSpec& m0, const GpuSpec& gpu, const Placement& pl,
                                 const SearchOptions& opt, const Calibration& cal) {
  ModelSpec m = m0;
  if (opt.global_batch > 0) m.global_batch = opt.global_batch;
  TIDAL_RETURN_IF_ERROR(ValidateModel(m));
  TIDAL_RETURN_IF_ERROR(gpu.PeakFlops(opt.precision));
  if (opt.fp8_attention && gpu.fp8_tflops <= 0) {
    return MakeError(ErrorCode::kInvalidArgument, "GPU {} has no FP8 tensor cores for FP8 attention; drop it",
                     gpu.name);
  }
  const int gpus = pl.gpus;
  if (gpus <= 0 || gpus > 10'000'000) {
    return MakeError(ErrorCode::kInvalidArgument, "GPU count {} is outside 1..10,000,000", gpus);
  }
  if (opt.top <= 0 || opt.top > 1000) return MakeError(ErrorCode::kInvalidArgument, "--top must be in 1..1000");

  SearchResult res;
  // Kept sorted. Layouts that only trade DP for CP or micro-batch often
  // predict the very same step and memory; extra room lets the table show
  // distinct outcomes instead (see the filter at the end).
  std::vector<Plan> best;
  const int keep = opt.top * 8;
  auto offer = [&](const Strategy& s) {
    ++res.evaluated;
    Prediction p = PredictUnchecked(m, gpu, pl, s, cal);
    if (!p.fits) {
      ++res.pruned_memory;
      return;
    }
    Plan plan{s, p};
    if (static_cast<int>(best.size()) == keep && !(Key(plan) < Key(best.back()))) return;
    best.insert(std::upper_bound(best.begin(), best.end(), plan, [](const Plan& a, const Plan& b) { return Key(a) < Key(b); }),
                plan);
    if (static_cast<int>(best.size()) > keep) best.pop_back();
  };

  const int max_tp = std::min(pl.gpus_per_domain, 64);
  for (int tp = 1; tp <= max_tp; tp *= 2) {
    if (opt.tp && tp != opt.tp) continue;
    if (m.heads % tp || m.kv_heads % tp || gpus % tp) continue;
    for (int cp = 1; cp <= 64; cp *= 2) {
      if (opt.cp && cp != opt.cp) continue;
      if (cp > 1 && m.seq_len % (2 * cp)) continue;
      if (gpus % (tp * cp)) continue;
      for (int pp = 1; pp <= std::min(m.layers, 128); ++pp) {
        if (opt.pp && pp != opt.pp) continue;
        if (gpus % (tp * cp * pp)) continue;
        int first = 0, last = 0;
        if (!SplitLayers(m.layers, pp, first, last)) continue;
        const int dp = gpus / (tp * cp * pp);
        for (int ep = 1; ep <= (m.IsMoe() ? m.experts : 1); ep *= 2) {
          if (opt.ep && ep != opt.ep) continue;
          if (m.IsMoe() && (m.experts % ep || (dp * cp) % ep)) continue;
          for (int mb : opt.micro_batches) {
            if (m.global_batch % (mb * dp)) continue;
            const int ga = m.global_batch / (mb * dp);
            for (int vpp = 1; vpp <= opt.max_vpp; ++vpp) {
              if (vpp > 1 && (pp < 2 || first || (m.layers / pp) % vpp || ga % pp)) continue;
              for (int zero = 0; zero <= 3; ++zero) {
                if (opt.zero_stage && zero != *opt.zero_stage) continue;
                if (zero == 3 && pp > 1) continue;  // neither Megatron nor DeepSpeed pipelines ZeRO-3
                if (dp * cp == 1 && zero > 0) continue;  // nothing to shard over
                for (Recompute rc : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
                  if (opt.recompute && rc != *opt.recompute) continue;
                  for (bool sp : {true, false}) {
                  if (!sp && tp == 1) continue;
                  Strategy s;
                  s.tp = tp;
                  s.pp = pp;
                  s.dp = dp;
                  s.cp = cp;
                  s.ep = ep;
                  s.vpp = vpp;
                  s.micro_batch = mb;
                  s.grad_accum = ga;
                  s.zero_stage = zero;
                  s.recompute = rc;
                  s.sequence_parallel = sp && tp > 1;
                  s.precision = opt.precision;
                  s.overlap_grad_reduce = true;
                  s.overlap_tp_comm = s.sequence_parallel;  // userbuffer overlap needs SP
                  s.overlap_ep_comm = s.ep > 1;
                  s.ep_dedup = s.ep > 1 && s.tp * s.cp * s.ep > pl.gpus_per_domain;
                  s.first_stage_layers = first;
                  s.last_stage_layers = last;
                  s.cuda_graphs = opt.cuda_graphs;
                  s.fp8_attention = opt.fp8_attention;
                  s.fused_expert_mlp = opt.fused_expert_mlp && m.IsMoe();
                  offer(s);
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  for (const Plan& p : best) {
    if (static_cast<int>(res.plans.size()) == opt.top) break;
    const bool same_outcome = std::any_of(res.plans.begin(), res.plans.end(), [&](const Plan& q) {
      return std::abs(q.prediction.step_time_s - p.prediction.step_time_s) <= 1e-9 * p.prediction.step_time_s &&
             std::abs(q.prediction.memory_gib - p.prediction.memory_gib) <= 1e-9 * p.prediction.memory_gib;
    });
    if (!same_outcome) res.plans.push_back(p);
  }
  if (res.plans.empty()) {
    return MakeError(ErrorCode::kUnresolvable,
                     "no strategy for {} on {} x {} fits: {} strategies evaluated, {} over the {:.0f} GiB of HBM; "
                     "add GPUs, lower the global batch ({}) or the sequence length ({})",
                     m.name, gpus, gpu.name, res.evaluated, res.pruned_memory, gpu.hbm_gib, m.global_batch,
                     m.seq_len);
  }
  return res;
}

Result<GradAccumChoice> ChooseGradAccum(const ModelSpec& m, const GpuSpec& gpu, const Placement& pl,
                                        const Strategy& base, const Calibration& cal, double allreduce_saturation,
                                        double target_share, int max_grad_accum) {
  if (!(allreduce_saturation > 0 && allreduce_saturation <= 1)) {
    return MakeError(ErrorCode::kInvalidArgument, "all-reduce saturation must be in (0, 1], got {}",
                     allreduce_saturation);
  }
  if (!(target_share > 0 && target_share < 1)) {
    return MakeError(ErrorCode::kInvalidArgument, "target communication share must be in (0, 1), got {}", target_share);
  }
  Calibration measured = cal;
  measured.collective_efficiency = allreduce_saturation;
  GradAccumChoice out;
  for (int ga = 1; ga <= max_grad_accum; ++ga) {
    Strategy s = base;
    s.grad_accum = ga;
    if (s.vpp > 1 && ga % s.pp) continue;
    ModelSpec mm = m;
    mm.global_batch = s.GlobalBatch();
    if (!ValidateStrategy(mm, s, s.Gpus())) continue;
    const Prediction p = PredictUnchecked(mm, gpu, pl, s, measured);
    const double share = p.time.dp_comm_s / p.step_time_s;
    out.curve.emplace_back(ga, share);
    if (share <= target_share) {
      out.grad_accum = ga;
      out.global_batch = s.GlobalBatch();
      out.dp_share = share;
      out.met = true;
      return out;
    }
  }
  if (out.curve.empty()) return MakeError(ErrorCode::kInvalidArgument, "no valid gradient accumulation for the plan");
  out.grad_accum = out.curve.back().first;
  out.dp_share = out.curve.back().second;
  Strategy s = base;
  s.grad_accum = out.grad_accum;
  out.global_batch = s.GlobalBatch();
  return out;
}

}  // namespace tidal::planner
