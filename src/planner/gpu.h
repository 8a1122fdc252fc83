// GPU presets: the peak figures every MFU and every prediction is relative to.
//
// Peaks are the vendors' *dense* tensor-core figures (no 2:4 sparsity). FP16
// and BF16 share a peak on every GPU here, so an fp16 run is modelled at the
// BF16 peak. A GPU without FP8 tensor cores has fp8 peak 0, and asking for FP8
// on it is an error rather than a silent fallback.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tidal::planner {

// The precision recipe of a run: what the linear-layer GEMMs run at and how
// their inputs are quantised (Transformer Engine / Megatron-LM recipes).
//   bf16, fp16 - 16-bit everywhere;
//   fp8        - FP8 with per-tensor delayed scaling (amax history; Megatron
//                --fp8-recipe delayed), Hopper and later;
//   fp8-cs     - FP8 with per-tensor current scaling (an amax pass before each
//                cast; --fp8-recipe tensorwise);
//   mxfp8      - MXFP8 block scaling (32-element blocks, E8M0 scales; rowwise
//                and columnwise copies; --fp8-recipe mxfp8), Blackwell only;
//   nvfp4      - NVFP4 (16-element blocks, FP8 scales; --fp4-recipe nvfp4),
//                Blackwell only.
// Attention, the output layer and the router stay in BF16 in every recipe.
enum class Precision { kBf16, kFp16, kFp8, kFp8Current, kMxfp8, kNvfp4 };

std::string_view PrecisionName(Precision p);
// Accepts the names above and the spellings of published tables: "FP8-DS",
// "FP8-CS", "FP8-MX", "MXFP8", "NVFP4", "bfloat16", ...
Result<Precision> ParsePrecision(std::string_view s);
// True for the recipes whose linear GEMMs run on 8-bit tensor cores.
bool IsFp8(Precision p);
// True for any recipe below 16 bits.
inline bool IsLowPrecision(Precision p) { return p != Precision::kBf16 && p != Precision::kFp16; }

struct GpuSpec {
  std::string name;          // canonical: a100, h100, h200, b200, gb200, b300, gb300
  double bf16_tflops = 0;    // dense peak
  double fp8_tflops = 0;     // dense peak, 0 = no FP8 tensor cores
  double hbm_gib = 0;        // usable device memory
  double hbm_tbps = 0;       // HBM bandwidth, TB/s
  double nvlink_gbps = 0;    // per GPU, per direction, GB/s
  int nvlink_domain = 8;     // GPUs per NVLink/NVSwitch domain in the usual system
  double nic_gbps = 0;       // scale-out bandwidth per GPU, per direction, GB/s
  double fp4_tflops = 0;     // dense NVFP4 peak, 0 = no FP4 tensor cores
  bool mx_scaling = false;   // block-scaled (MX) tensor cores: Blackwell and later
  // Tensor-core generation ("ampere", "hopper", "blackwell"): the calibrated
  // fraction of peak is per generation and GEMM format, not per SKU.
  std::string generation;

  // Dense peak of the run's linear GEMMs in FLOP/s; error if the GPU has none.
  Result<double> PeakFlops(Precision p) const;
};

// Accepts the spellings of published tables and tools: "h100", "H100-SXM-80GB",
// "H100 (80GB)", "NVIDIA H100 80GB HBM3", "A100-SXM4-80GB", "GB200", "GB300", ...
// PCIe/NVL variants have different peaks and links and are not guessed at;
// A100 40GB is the 80GB part's silicon with half the memory.
Result<GpuSpec> FindGpu(std::string_view name);
const std::vector<GpuSpec>& GpuPresets();

}  // namespace tidal::planner
