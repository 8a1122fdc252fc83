// Calibration and validation against published, measured training runs
// (shared/planner/calibration.csv and any CSV of the same layout).
//
// Each row becomes a case the performance model can predict, or is skipped
// with the reason (unknown GPU or architecture, missing layout, unsupported
// precision, unclear FLOPs convention) — never guessed. Framework defaults
// used to fill unstated knobs (micro-batch 1, no recomputation, ...) are
// recorded per case as assumptions.
//
// Split: rows from the NeMo 24.07 performance summary, the SC21 Table 1
// (Narayanan et al.) and the Megatron-LM README weak-scaling table calibrate;
// every other source is held out: NeMo long-sequence (context parallel), NeMo
// AutoModel (FSDP2, MoE), Korthikanti et al. (selective recompute), SC21 Table
// 2 (ZeRO-3 strong scaling) and the Megatron README GPT-3 example. Holding
// whole sources out tests features and frameworks the fit never saw.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "planner/cost_model.h"

namespace tidal::planner {

enum class Split { kCalibration, kHeldOut };
std::string_view SplitName(Split s);

struct CalibrationCase {
  int line = 0;
  std::string source;
  std::string model;
  int gpus = 0;
  std::string gpu_type;
  Split split = Split::kCalibration;
  bool usable = false;
  std::string skip_reason;  // set when !usable
  ModelSpec spec;
  GpuSpec gpu;
  Strategy strategy;
  FlopsConvention convention = FlopsConvention::kMegatron;
  double measured_tflops = 0;
  std::vector<std::string> assumptions;
};

// Reads every row; structural problems (missing columns, unreadable file,
// a malformed number) are errors naming file:line and column.
Result<std::vector<CalibrationCase>> LoadCalibrationCases(const std::string& path);

// Predicted TFLOP/s per GPU in the case's own FLOPs convention.
double PredictCaseTflops(const CalibrationCase& c, const Calibration& cal);

struct ValidationRow {
  int line = 0;
  std::string model;
  int gpus = 0;
  std::string gpu_type;
  Split split = Split::kCalibration;
  double predicted_tflops = 0;
  double measured_tflops = 0;
  double error_pct = 0;  // (predicted - measured) / measured * 100
  std::string convention;
  std::vector<std::string> assumptions;  // framework defaults used for unstated knobs
  std::string layout;                    // "tp=4 pp=8 dp=4 cp=1 ep=1 vpp=6 mb=1 ga=64 zero=1 full sp"
};

struct SkippedRow {
  int line = 0;
  std::string model;
  std::string reason;
};

struct ValidationReport {
  std::vector<ValidationRow> rows;
  std::vector<SkippedRow> skipped;
  double median_abs_error_pct = 0;
  double max_abs_error_pct = 0;
  int rows_used = 0;
  int rows_skipped = 0;
};

// `only` restricts the rows reported (others are neither used nor skipped).
ValidationReport Validate(const std::vector<CalibrationCase>& cases, const Calibration& cal,
                          std::optional<Split> only = std::nullopt);

// Fits the GEMM fraction of peak per (GPU, precision class) present in the
// calibration split and the collective efficiency, minimising squared log
// error of predicted TFLOP/s. Starts from `start`.
Calibration FitCalibration(const std::vector<CalibrationCase>& cases, const Calibration& start);

}  // namespace tidal::planner
