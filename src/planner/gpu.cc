#include "planner/gpu.h"

#include <cctype>

#include "common/strings.h"

namespace tidal::planner {

std::string_view PrecisionName(Precision p) {
  switch (p) {
    case Precision::kBf16: return "bf16";
    case Precision::kFp16: return "fp16";
    case Precision::kFp8: return "fp8";
  }
  return "?";
}

Result<Precision> ParsePrecision(std::string_view s) {
  const std::string l = AsciiLower(s);
  if (l == "bf16" || l == "bfloat16") return Precision::kBf16;
  if (l == "fp16" || l == "float16" || l == "half") return Precision::kFp16;
  if (l == "fp8") return Precision::kFp8;
  return MakeError(ErrorCode::kInvalidArgument, "unknown precision '{}': use bf16, fp16 or fp8", s);
}

Result<double> GpuSpec::PeakFlops(Precision p) const {
  const double tf = p == Precision::kFp8 ? fp8_tflops : bf16_tflops;
  if (tf <= 0) {
    return MakeError(ErrorCode::kInvalidArgument, "GPU {} has no {} tensor cores; use bf16", name, PrecisionName(p));
  }
  return tf * 1e12;
}

// Datasheet values: A100 SXM4 80GB (312 TF BF16, 2.04 TB/s, NVLink3 600 GB/s
// bidirectional, HDR 200 Gb/s per GPU on DGX A100); H100 SXM5 (989/1979 TF,
// 3.35 TB/s, NVLink4 900 GB/s, NDR 400 Gb/s); H200 (H100 compute, 141 GB,
// 4.8 TB/s); B200 (2250/4500 TF dense, 180 GB, 8 TB/s, NVLink5 1.8 TB/s);
// GB200 NVL72 (2500/5000 TF dense, 186 GB, 8 TB/s, 72-GPU NVLink domain).
// Usable memory is a little under the marketed size (driver, ECC).
const std::vector<GpuSpec>& GpuPresets() {
  static const std::vector<GpuSpec> gpus = {
      {"a100", 312, 0, 79.2, 2.039, 300, 8, 25},
      {"h100", 989, 1979, 79.6, 3.35, 450, 8, 50},
      {"h200", 989, 1979, 139.8, 4.8, 450, 8, 50},
      {"b200", 2250, 4500, 178.0, 8.0, 900, 8, 50},
      {"gb200", 2500, 5000, 184.0, 8.0, 900, 72, 50},
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
  if (l.find("pcie") != std::string::npos || (l.find("nvl") != std::string::npos && l.find("gb200") == std::string::npos)) {
    return MakeError(ErrorCode::kNotFound,
                     "GPU '{}' is a PCIe/NVL variant with different peaks and links; not modelled (known: a100, h100, "
                     "h200, b200, gb200 SXM)",
                     name);
  }
  if (l.find("a100") != std::string::npos && l.find("40gb") != std::string::npos) {
    GpuSpec g = preset("a100");  // same silicon and peaks, half the HBM
    g.hbm_gib = 39.4;
    return g;
  }
  // Order matters: "gb200" contains "b200".
  for (std::string_view key : {"gb200", "b200", "h200", "h100", "a100"}) {
    if (l.find(key) != std::string::npos) return preset(key);
  }
  return MakeError(ErrorCode::kNotFound, "unknown GPU '{}' (known: a100, h100, h200, b200, gb200)", name);
}

}  // namespace tidal::planner
