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

enum class Precision { kBf16, kFp16, kFp8 };

std::string_view PrecisionName(Precision p);
Result<Precision> ParsePrecision(std::string_view s);

struct GpuSpec {
  std::string name;          // canonical: a100, h100, h200, b200, gb200
  double bf16_tflops = 0;    // dense peak
  double fp8_tflops = 0;     // dense peak, 0 = no FP8 tensor cores
  double hbm_gib = 0;        // usable device memory
  double hbm_tbps = 0;       // HBM bandwidth, TB/s
  double nvlink_gbps = 0;    // per GPU, per direction, GB/s
  int nvlink_domain = 8;     // GPUs per NVLink/NVSwitch domain in the usual system
  double nic_gbps = 0;       // scale-out bandwidth per GPU, per direction, GB/s

  // Dense peak for a precision in FLOP/s; error if the GPU has none.
  Result<double> PeakFlops(Precision p) const;
};

// Accepts the spellings of published tables and tools: "h100", "H100-SXM-80GB",
// "H100 (80GB)", "NVIDIA H100 80GB HBM3", "A100-SXM4-80GB", "GB200", ...
// PCIe/NVL variants have different peaks and links and are not guessed at;
// A100 40GB is the 80GB part's silicon with half the memory.
Result<GpuSpec> FindGpu(std::string_view name);
const std::vector<GpuSpec>& GpuPresets();

}  // namespace tidal::planner
