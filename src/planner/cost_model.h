// The performance and memory model: for a model, a GPU, a placement and a
// parallel strategy, predict step time (with its breakdown), throughput, MFU,
// HFU, memory per GPU and communication share.
//
// Physics first, few knobs: GEMM time is FLOPs over (peak x achievable
// fraction x a shape factor), memory-bound kernels run at HBM bandwidth, and
// every collective is an alpha-beta ring/tree cost over the link level its
// group spans. Only the achievable fraction of peak per GPU generation and
// GEMM format, one collective efficiency and one fixed cost per MoE layer
// are calibrated (see calibration.h); everything else is a datasheet number
// or a published formula:
//   - pipeline bubble (p-1)/(m v) (Narayanan et al. SC21),
//   - activation memory per recompute mode (Korthikanti et al. MLSys'23,
//     generalised to GQA and gated MLPs, flash attention assumed),
//   - ZeRO stages shard optimizer state / gradients / weights over DP.
//
// Rank order (Megatron-LM default "tp-cp-ep-dp-pp"): TP is innermost, so a
// group of size g whose members are `stride` ranks apart spans g * stride GPUs.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "planner/gpu.h"
#include "planner/model.h"

namespace tidal::planner {

enum class Recompute { kNone, kSelective, kFull };
std::string_view RecomputeName(Recompute r);
Result<Recompute> ParseRecompute(std::string_view s);

// CUDA graphs (Megatron --cuda-graph-impl / --cuda-graph-scope): none;
// partial (chosen modules, e.g. attention and the MoE router, captured by
// Transformer Engine; dropless MoE still synchronises with the host for its
// token counts); full (the whole iteration replayed as one graph, with a
// fixed expert capacity so nothing waits on the host).
enum class CudaGraphs { kNone, kPartial, kFull };
std::string_view CudaGraphsName(CudaGraphs g);  // "none", "partial", "full"
Result<CudaGraphs> ParseCudaGraphs(std::string_view s);

struct Strategy {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  int cp = 1;
  int ep = 1;
  int vpp = 1;  // virtual pipeline stages (model chunks) per pipeline rank
  int micro_batch = 1;
  int grad_accum = 1;  // micro-batches per step per DP rank
  // 0 plain data parallel; 1 optimizer state sharded (Megatron distributed
  // optimizer); 2 + gradients; 3 + weights (DeepSpeed ZeRO-3 / FSDP).
  int zero_stage = 0;
  Recompute recompute = Recompute::kNone;
  bool sequence_parallel = false;
  Precision precision = Precision::kBf16;
  bool overlap_grad_reduce = true;  // DP communication overlapped with backward/forward
  bool overlap_tp_comm = false;     // TP collectives overlapped with GEMMs (userbuffers)
  // EP all-to-all of one micro-batch overlapped with another's compute
  // (Megatron-Core >= 0.14 --overlap-moe-expert-parallel-comm).
  bool overlap_ep_comm = false;
  // Flex token dispatcher (DeepEP / HybridEP): a token crosses the network
  // once per destination node and fans out to its experts over NVLink,
  // instead of once per routed expert (the all-to-all dispatcher).
  bool ep_dedup = false;
  CudaGraphs cuda_graphs = CudaGraphs::kNone;
  // The attention core in FP8 (Transformer Engine fp8_dot_product_attention).
  bool fp8_attention = false;
  // The expert MLP fused into one kernel (CuTeDSL grouped MLP: FC1, the
  // activation, quantisation and FC2 without writing the intermediate).
  bool fused_expert_mlp = false;
  // ZeRO-3 under pipeline parallelism as PyTorch FSDP2 runs it (torchtitan,
  // NeMo AutoModel: no reshard after forward with PP, "to avoid
  // per-microbatch all-gathers"): weights are gathered once and gradients
  // reduce-scattered once per round of micro-batches, this many rounds per
  // step. 0: every micro-batch gathers twice (forward, backward) and
  // reduce-scatters.
  int zero3_rounds = 0;
  // Uneven pipeline split (0 = even): layers on the first and the last stage.
  int first_stage_layers = 0;
  int last_stage_layers = 0;

  int Gpus() const { return tp * pp * dp * cp; }
  int GlobalBatch() const { return micro_batch * grad_accum * dp; }
};

// One level of the interconnect above the NVLink domain: a group that fits in
// `span_gpus` GPUs communicates at `gbps` per GPU per direction, over a path
// of `hops` switches costing `latency_us` each (so a message's base latency
// is hops x per-hop latency; NIC and PCIe endpoints are folded into the
// per-hop figure).
struct NetworkLevel {
  std::string name;
  int span_gpus = 0;  // 0 = unbounded (top level)
  double gbps = 0;
  double latency_us = 0;  // per hop
  int hops = 1;
};

// What a job was given, as plain numbers so the scheduler can build it from
// its own topology model without the planner depending on cluster/.
struct Placement {
  int gpus = 0;
  int gpus_per_domain = 8;  // NVLink / NVSwitch domain size
  int nodes = 0;            // informational
  double nvlink_gbps = 0;   // per GPU per direction
  double nvlink_latency_us = 3;  // one NVSwitch hop
  std::vector<NetworkLevel> levels;  // innermost first
};

// A DGX-style default: the GPU's NVLink domain (1 hop, 3 us), then a
// rail-optimised leaf of 32 domains (1 switch hop, 5 us) and a non-blocking
// spine (leaf-spine-leaf: 3 hops of 2.7 us) at the GPU's NIC bandwidth.
Placement DefaultPlacement(const GpuSpec& gpu, int gpus);
// "domain=8,nvlink=450,net=50,latency=5,leaf=256,spine_latency=2.7,spine_hops=3":
// any subset (latencies per hop, us), or a YAML file (see docs/planner.md).
Result<Placement> ParseClusterSpec(std::string_view spec, const GpuSpec& gpu, int gpus);

// Calibrated parameters, all physical: the fraction of dense peak large
// GEMMs reach per tensor-core generation and GEMM format (16-bit, FP8 with a
// per-tensor scale, MXFP8 with block scales, NVFP4), the fraction of link
// bandwidth collectives reach, and the fixed cost of one MoE layer per
// micro-batch (router, token-count exchange and host synchronisation of
// dropless routing, kernel launches of the dispatch/combine path: a latency
// that does not shrink with the tokens).
struct Calibration {
  struct Entry {
    std::string generation;  // GpuSpec::generation: ampere, hopper, blackwell
    std::string format;      // GemmFormat(): 16-bit, fp8, mxfp8, nvfp4
    double gemm_fraction = 0.6;
  };
  std::vector<Entry> entries;
  double collective_efficiency = 0.7;
  // Fixed costs per MoE layer and micro-batch (forward + backward): on the
  // device (router, token-count exchange, dispatch launches), and on the host
  // (kernel launches, dropless routing's wait for its token counts), which a
  // full-iteration CUDA graph removes.
  double moe_layer_overhead_us = 0;
  double moe_host_overhead_us = 0;
  // A generation without its own entry for a format uses the nearest one:
  // the same generation's next wider format (nvfp4 -> mxfp8 -> fp8 ->
  // 16-bit), then Hopper's (the most calibrated generation), then any.
  double GemmFraction(std::string_view generation, std::string_view format) const;
  void SetGemmFraction(std::string_view generation, std::string_view format, double v);
};

// The GEMM format a recipe runs its linear layers in: "16-bit" (bf16, fp16),
// "fp8" (delayed or current per-tensor scaling), "mxfp8", "nvfp4".
std::string_view GemmFormat(Precision p);

// The parameters fitted on the calibration split of shared/planner/calibration.csv
// (calibration_test re-fits them and checks they agree).
Calibration DefaultCalibration();

struct TimeBreakdown {
  double compute_s = 0;       // GEMMs + attention + memory-bound kernels, all micro-batches
  double recompute_s = 0;     // part of compute_s spent re-running forward passes
  double bubble_s = 0;        // pipeline fill/drain
  double tp_comm_s = 0;       // exposed
  double cp_comm_s = 0;       // exposed
  double ep_comm_s = 0;       // exposed
  double pp_comm_s = 0;       // exposed
  double dp_comm_s = 0;       // exposed
  double dp_comm_total_s = 0; // before overlap
  double optimizer_s = 0;
};

struct MemoryBreakdown {
  double weights_gib = 0;
  double gradients_gib = 0;
  double optimizer_gib = 0;
  double activations_gib = 0;
  double buffers_gib = 0;
  double TotalGib() const { return weights_gib + gradients_gib + optimizer_gib + activations_gib + buffers_gib; }
};

struct Prediction {
  double step_time_s = 0;
  double tokens_per_s = 0;
  double model_flops_per_step = 0;     // Megatron convention, no recompute
  double hardware_flops_per_step = 0;  // with recompute
  double tflops_per_gpu = 0;           // model TFLOP/s per GPU
  double mfu = 0;
  double hfu = 0;
  double comm_share = 0;  // exposed communication / step time
  double memory_gib = 0;
  bool fits = true;
  TimeBreakdown time;
  MemoryBreakdown memory;
};

// Layers per stage for pp stages: even, or first and last stage lighter (as
// Llama 3 405B on pp 16: 7 + 14 x 8 + 7). first = last = 0 when even; false
// when neither works.
bool SplitLayers(int layers, int pp, int& first, int& last);

// Checks divisibility and feasibility of a strategy for a model and GPU count.
Status ValidateStrategy(const ModelSpec& m, const Strategy& s, int gpus);

// Full prediction. Fails only on an invalid strategy; a plan that does not
// fit in memory is predicted with fits = false.
Result<Prediction> Predict(const ModelSpec& m, const GpuSpec& gpu, const Placement& pl, const Strategy& s,
                           const Calibration& cal);

// Same without validation, for the search's inner loop (the caller
// guarantees ValidateStrategy would pass).
Prediction PredictUnchecked(const ModelSpec& m, const GpuSpec& gpu, const Placement& pl, const Strategy& s,
                            const Calibration& cal);

// Bandwidth (GB/s per GPU) and latency (us) of a group spanning `span` GPUs.
struct Link {
  double gbps;
  double latency_us;  // hops x per-hop latency
  int hops = 1;
};
Link LinkFor(const Placement& pl, int span);

}  // namespace tidal::planner
