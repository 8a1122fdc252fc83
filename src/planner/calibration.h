// Calibration and validation against published, measured training runs
// (shared/planner/calibration.csv and any CSV of the same layout).
//
// Each row becomes a case the performance model can predict, or is skipped
// with the reason (unknown GPU or architecture, missing layout, unsupported
// precision, unclear FLOPs convention) — never guessed. Framework defaults
// used to fill unstated knobs (micro-batch 1, no recomputation, ...) are
// recorded per case as assumptions.
//
// Split: which rows calibrate and which only validate is data, not code — a
// `split` column in the CSV, or else the first matching rule of a split file
// (data/planner/split.csv: rules on the file name, source, model and notes).
// Rows no rule names validate. docs/planner.md says which sources calibrate
// and why; holding out whole sources, models and software versions tests what
// the fit never saw.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "planner/cost_model.h"
#include "planner/recipe_rules.h"

namespace tidal::planner {

enum class Split { kCalibration, kValidation };
std::string_view SplitName(Split s);  // "calibration", "validation"
// "calibration", "validation" (or its older name "held-out").
Result<Split> ParseSplit(std::string_view s);

// One line of a split file. Each non-empty field must occur (ignoring case)
// in the row's field of the same name; `file` is matched against the CSV's
// file name. The first matching rule decides.
struct SplitRule {
  int line = 0;
  std::string file, source, model, notes;
  Split split = Split::kValidation;
};
// Columns file,source,model,notes,split (and optionally why); errors name
// file:line and the column.
Result<std::vector<SplitRule>> LoadSplitRules(const std::string& path);
// The shipped rules, relative to the repository root.
inline constexpr const char* kDefaultSplitFile = "data/planner/split.csv";

struct CalibrationCase {
  std::string file;  // the CSV it came from
  int line = 0;
  std::string source;
  std::string model;
  int gpus = 0;
  std::string gpu_type;
  Split split = Split::kValidation;
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
// `rules` decide each row's split unless the CSV has a `split` column.
// `recipes` (recipe_rules.h) set the knobs the row does not state.
Result<std::vector<CalibrationCase>> LoadCalibrationCases(const std::string& path,
                                                          const std::vector<SplitRule>& rules = {},
                                                          const std::vector<RecipeRule>& recipes = {});

// Predicted TFLOP/s per GPU in the case's own FLOPs convention.
double PredictCaseTflops(const CalibrationCase& c, const Calibration& cal);

struct ValidationRow {
  std::string file;
  int line = 0;
  std::string model;
  int gpus = 0;
  std::string gpu_type;
  std::string generation;  // ampere, hopper, blackwell
  std::string precision;   // bf16, fp16, fp8, fp8-cs, mxfp8, nvfp4
  std::string family;      // dense or moe
  Split split = Split::kValidation;
  double predicted_tflops = 0;
  double measured_tflops = 0;
  double error_pct = 0;  // (predicted - measured) / measured * 100
  std::string convention;
  std::vector<std::string> assumptions;  // framework defaults used for unstated knobs
  std::string layout;                    // "tp=4 pp=8 dp=4 cp=1 ep=1 vpp=6 mb=1 ga=64 zero=1 full sp"
};

struct SkippedRow {
  std::string file;
  int line = 0;
  std::string model;
  std::string reason;
};

// |error| statistics of a group of rows.
struct ErrorStats {
  int rows = 0;
  double median_abs_error_pct = 0;
  double p90_abs_error_pct = 0;  // nearest rank
  double max_abs_error_pct = 0;
};
ErrorStats StatsOf(std::vector<double> abs_errors_pct);

struct ValidationReport {
  std::vector<ValidationRow> rows;
  std::vector<SkippedRow> skipped;
  double median_abs_error_pct = 0;
  double p90_abs_error_pct = 0;
  double max_abs_error_pct = 0;
  int rows_used = 0;
  int rows_skipped = 0;
  // Keyed "split/generation/precision/family", e.g. "validation/blackwell/mxfp8/moe".
  std::vector<std::pair<std::string, ErrorStats>> groups;
};

// `only` restricts the rows reported (others are neither used nor skipped).
ValidationReport Validate(const std::vector<CalibrationCase>& cases, const Calibration& cal,
                          std::optional<Split> only = std::nullopt);

// Fits the GEMM fraction of peak per (generation, GEMM format) present in
// the calibration split, the collective efficiency and (when MoE rows
// calibrate) the fixed MoE layer cost, minimising squared log error of
// predicted TFLOP/s. Starts from `start`.
Calibration FitCalibration(const std::vector<CalibrationCase>& cases, const Calibration& start);

}  // namespace tidal::planner
