// The goodput table: per (model, replica shape), the requests/s one replica
// sustains within its latency SLO, each row with its source. Read from
// data/inference/goodput.yaml (docs/inference.md lists the sources).
//
// A replica shape is a MIG profile ("1g.10gb", "3g.40gb", "7g.80gb", ...), "gpu"
// (one whole GPU) or "tpN" (a tensor-parallel group of N whole GPUs, N = 2, 4, 8).
// Its GPU cost is compute slices / 7 for MIG, 1 for gpu, N for tpN. The MIG
// profiles are listed here, not taken from the mig module, so this module
// depends on nothing but tidal_common.
//
// Rows marked derived: true come from the roofline below (Roofline()), with
// the parameters in the file's `roofline:` section; a test keeps them equal.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tidal::inference {

struct ShapeInfo {
  std::string name;
  int gpus = 1;                    // whole GPUs in the replica (tpN: N; MIG and gpu: 1)
  int compute_slices = 7;          // MIG compute slices used of 7 (7 for whole GPUs)
  int memory_slices = 8;           // MIG memory slices used of 8 (8 for whole GPUs)
  double memory_gb = 0;            // memory of the whole replica
  bool mig = false;
  // GPUs this shape takes from the fleet: compute slices / 7, or the GPU count.
  double GpuCost() const { return mig ? compute_slices / 7.0 : gpus; }
  double SmFraction() const { return compute_slices / 7.0; }
  double BandwidthFraction() const { return memory_slices / 8.0; }
};

// Parses a shape for a GPU with gpu_memory_gb of memory (80 for H100-80GB).
// A MIG profile must be one of that GPU's profiles.
Result<ShapeInfo> ParseShape(std::string_view shape, double gpu_memory_gb);
// The GPU cost of a shape name, or an error for an unknown one.
Result<double> ShapeGpuCost(std::string_view shape, double gpu_memory_gb);

struct ModelSpec {
  std::string name;
  double params_b = 0;            // parameters, billions
  double bytes_per_param = 2;     // 1 for FP8 weights
  double kv_bytes_per_token = 0;  // KV cache bytes per token, all layers
  std::string source;
  double WeightsGb() const { return params_b * bytes_per_param; }
};

struct Hardware {
  std::string name = "H100-SXM-80GB";
  double memory_gb = 80;
  double hbm_bytes_per_s = 3.35e12;
  double peak_flops = 1979e12;  // dense FP8
};

struct RooflineParams {
  double bw_efficiency = 0.7;       // achieved / peak HBM bandwidth in decode
  double flops_efficiency = 0.5;    // achieved / peak FLOP/s in prefill
  double tp_efficiency = 0.9;       // per doubling of the tensor-parallel group
  double kv_memory_fraction = 0.9;  // memory usable for weights + KV cache
  double max_batch = 256;           // concurrent sequences (vLLM's max_num_seqs)
  double tpot_s = 0.1;              // decode step time allowed by the SLO
};

struct RooflineEstimate {
  double rps = 0;
  double output_tokens_per_s = 0;
  double batch = 0;      // concurrent sequences in decode
  double step_s = 0;     // one decode step
  double prefill_s = 0;  // prefill of one request
};

// Goodput of one replica by roofline (docs/inference.md):
//   BW = HBM x bandwidth fraction x gpus x bw_eff x tp_eff^log2(gpus); FL likewise from FLOP/s
//   B  = min(KV room / (kv x (in+out)), (tpot x BW - W) / (kv x (in+out/2)), max_batch)
//   step = (W + B x kv x (in+out/2)) / BW;  prefill = 2 x params x in / FL
//   rps = 1 / (prefill + out x step / B)
// Errors when the weights do not fit or not one sequence meets the TPOT.
Result<RooflineEstimate> Roofline(const ModelSpec& m, const ShapeInfo& shape, double input_tokens,
                                  double output_tokens, const Hardware& hw, const RooflineParams& p);

struct GoodputRow {
  std::string model;
  std::string shape;
  double rps = 0;                  // requests/s within the SLO, for the mix below
  double output_tokens_per_s = 0;
  double input_tokens = 0;         // the request mix the row is for
  double output_tokens = 0;
  std::string slo;
  bool derived = false;
  std::string source;
  int line = 0;
};

// A published measurement the roofline is checked against.
struct Calibration {
  std::string model, shape;
  double input_tokens = 0, output_tokens = 0, tpot_s = 0;
  double measured_output_tokens_per_s = 0;
  std::string source;
  int line = 0;
};

class GoodputTable {
 public:
  static Result<GoodputTable> ReadFile(const std::string& path);
  static Result<GoodputTable> Parse(const std::string& text, const std::string& source);

  // The row for (model, shape), or an error naming the file, the model and
  // the shapes it does have.
  Result<GoodputRow> Lookup(std::string_view model, std::string_view shape) const;
  Result<ModelSpec> Model(std::string_view name) const;

  const std::string& source() const { return source_; }
  const Hardware& hardware() const { return hw_; }
  const RooflineParams& roofline() const { return roofline_; }
  const std::vector<ModelSpec>& models() const { return models_; }
  const std::vector<GoodputRow>& rows() const { return rows_; }
  const std::vector<Calibration>& calibration() const { return calibration_; }

 private:
  std::string source_;
  Hardware hw_;
  RooflineParams roofline_;
  std::vector<ModelSpec> models_;
  std::vector<GoodputRow> rows_;
  std::vector<Calibration> calibration_;
};

}  // namespace tidal::inference
