#include "planner/gpu.h"

#include <cctype>

#include "common/strings.h"

namespace tidal::planner {

std::string_view PrecisionName(Precision p) {
  switch (p) {
    case Precision::kBf16: return "bf16";
    case Precision::kFp16: return "fp16";
    case Precision::kFp8: return "fp8";
    case Precision::kFp8Current: return "fp8-cs";
    case Precision::kMxfp8: return "mxfp8";
    case Precision::kNvfp4: return "nvfp4";
  }
  return "?";
}

bool IsFp8(Precision p) { return p == Precision::kFp8 || p == Precision::kFp8Current || p == Precision::kMxfp8; }

Result<Precision> ParsePrecision(std::string_view s) {
  std::string l = AsciiLower(s);
  std::erase(l, '_');
  if (l == "bf16" || l == "bfloat16") return Precision::kBf16;
  if (l == "fp16" || l == "float16" || l == "half") return Precision::kFp16;
  if (l == "fp8" || l == "fp8-ds" || l == "fp8-delayed" || l == "fp8ds") return Precision::kFp8;
  if (l == "fp8-cs" || l == "fp8cs" || l == "fp8-current" || l == "fp8-tensorwise") return Precision::kFp8Current;
  if (l == "mxfp8" || l == "fp8-mx" || l == "fp8mx") return Precision::kMxfp8;
  if (l == "nvfp4" || l == "fp4") return Precision::kNvfp4;
  return MakeError(ErrorCode::kInvalidArgument,
                   "unknown precision '{}': use bf16, fp16, fp8 (delayed scaling), fp8-cs (current scaling), mxfp8 "
                   "or nvfp4",
                   s);
}

Result<double> GpuSpec::PeakFlops(Precision p) const {
  double tf = bf16_tflops;
  if (IsFp8(p)) tf = fp8_tflops;
  if (p == Precision::kNvfp4) tf = fp4_tflops;
  if (tf <= 0) {
    return MakeError(ErrorCode::kInvalidArgument, "GPU {} has no {} tensor cores; use bf16", name, PrecisionName(p));
  }
  if (p == Precision::kMxfp8 && !mx_scaling) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "GPU {} has no block-scaled (MX) tensor cores: MXFP8 needs Blackwell; use fp8 or fp8-cs", name);
  }
  return tf * 1e12;
}

// Datasheet values: A100 SXM4 80GB (312 TF BF16, 2.04 TB/s, NVLink3 600 GB/s
// bidirectional, HDR 200 Gb/s per GPU on DGX A100); H100 SXM5 (989/1979 TF,
// 3.35 TB/s, NVLink4 900 GB/s, NDR 400 Gb/s); H200 (H100 compute, 141 GB,
// 4.8 TB/s); B200 (2250/4500 TF dense, 180 GB, 8 TB/s, NVLink5 1.8 TB/s);
// GB200 NVL72 (2500/5000 TF dense, 186 GB, 8 TB/s, 72-GPU NVLink domain).
// Blackwell Ultra: HGX B300 (2250/4500 TF dense, NVFP4 13.5 PF dense, 288 GB,
// 8 TB/s, ConnectX-8 800 Gb/s per GPU) and GB300 NVL72 (2500/5000 TF, NVFP4
// 15 PF dense, 288 GB, 72-GPU NVLink domain, ConnectX-8); dense NVFP4 of B200
// 9 PF and GB200 10 PF. Blackwell has block-scaled (MX/NVFP4) tensor cores.
// Blackwell Ultra (B300/GB300) shares Blackwell's calibrated fractions: a
// generation of its own fitted on one row per format was tried and only
// over-fitted (docs/planner.md).
// Usable memory is a little under the marketed size (driver, ECC).
const std::vector<GpuSpec>& GpuPresets() {
  static const std::vector<GpuSpec> gpus = {
      {"a100", 312, 0, 79.2, 2.039, 300, 8, 25, 0, false, "ampere"},
      {"h100", 989, 1979, 79.6, 3.35, 450, 8, 50, 0, false, "hopper"},
      {"h200", 989, 1979, 139.8, 4.8, 450, 8, 50, 0, false, "hopper"},
      {"b200", 2250, 4500, 178.0, 8.0, 900, 8, 50, 9000, true, "blackwell"},
      {"gb200", 2500, 5000, 184.0, 8.0, 900, 72, 50, 10000, true, "blackwell"},
      {"b300", 2250, 4500, 284.0, 8.0, 900, 8, 100, 13500, true, "blackwell"},
      {"gb300", 2500, 5000, 284.0, 8.0, 900, 72, 100, 15000, true, "blackwell"},
  };
  return gpus;
}

Result<GpuSpec> FindGpu(std::string_view name) {
  const std::string l = AsciiLower(name);
  auto preset = [](std::string_view n) -> GpuSpec {
    for (const auto& g : GpuPresets()) {
      if (g.name == n) return g;
    }
    return {};
  };
  const bool rack = l.find("gb200") != std::string::npos || l.find("gb300") != std::string::npos;
  if (l.find("pcie") != std::string::npos || (l.find("nvl") != std::string::npos && !rack)) {
    return MakeError(ErrorCode::kNotFound,
                     "GPU '{}' is a PCIe/NVL variant with different peaks and links; not modelled (known: a100, h100, "
                     "h200, b200, gb200, b300, gb300 SXM)",
                     name);
  }
  if (l.find("a100") != std::string::npos && l.find("40gb") != std::string::npos) {
    GpuSpec g = preset("a100");  // same silicon and peaks, half the HBM
    g.hbm_gib = 39.4;
    return g;
  }
  // Order matters: "gb200" contains "b200".
  for (std::string_view key : {"gb300", "b300", "gb200", "b200", "h200", "h100", "a100"}) {
    if (l.find(key) != std::string::npos) return preset(key);
  }
  return MakeError(ErrorCode::kNotFound, "unknown GPU '{}' (known: a100, h100, h200, b200, gb200, b300, gb300)", name);
}

}  // namespace tidal::planner
