// Strategy search: enumerate every (TP, PP, DP, CP, EP, micro-batch, virtual
// stages, ZeRO stage, recomputation) a model admits on a GPU count, prune by
// divisibility and memory, rank by predicted step time.
//
// Sequence parallelism is searched on and off with TP > 1 (when on, TP
// collectives also overlap with GEMMs). Ranking is total: step time, then
// memory, then the smaller (tp, pp, cp, ep, vpp, micro-batch, zero,
// recompute, no-SP) tuple, so equal inputs give the same table.
#pragma once

#include <optional>
#include <vector>

#include "planner/cost_model.h"

namespace tidal::planner {

struct SearchOptions {
  int top = 5;
  int global_batch = 0;  // 0: the model's own
  Precision precision = Precision::kBf16;
  std::vector<int> micro_batches = {1, 2, 4, 8};
  int max_vpp = 8;
  // Fix a knob instead of searching it (0 / nullopt = search).
  int tp = 0, pp = 0, cp = 0, ep = 0;
  std::optional<int> zero_stage;
  std::optional<Recompute> recompute;
  // What the framework's recipe does, the same for every strategy (not
  // searched; recipe_rules.h reads them for published runs).
  CudaGraphs cuda_graphs = CudaGraphs::kNone;
  bool fp8_attention = false;     // needs FP8 tensor cores
  bool fused_expert_mlp = false;  // MoE models only; ignored for dense ones
};

struct Plan {
  Strategy strategy;
  Prediction prediction;
};

struct SearchResult {
  std::vector<Plan> plans;   // best first, at most options.top, no two with the same predicted step and memory
  long evaluated = 0;        // strategies predicted
  long pruned_memory = 0;    // predicted but over HBM
};

Result<SearchResult> SearchPlans(const ModelSpec& m, const GpuSpec& gpu, const Placement& pl,
                                 const SearchOptions& opt, const Calibration& cal);

// Gradient accumulation from all-reduce bandwidth saturation: with the
// measured all-reduce bus bandwidth as a fraction of link peak, the smallest
// number of micro-batches per step whose exposed data-parallel communication
// is at most `target_share` of the step. The global batch grows with it.
struct GradAccumChoice {
  int grad_accum = 1;
  int global_batch = 0;
  double dp_share = 0;  // exposed DP communication / step time at grad_accum
  bool met = false;     // false: even max_grad_accum misses the target
  std::vector<std::pair<int, double>> curve;  // (grad_accum, dp share) tried
};
Result<GradAccumChoice> ChooseGradAccum(const ModelSpec& m, const GpuSpec& gpu, const Placement& pl,
                                        const Strategy& base, const Calibration& cal, double allreduce_saturation,
                                        double target_share, int max_grad_accum = 1024);

}  // namespace tidal::planner
