// The software recipe a published run used, as data.
//
// A published row states its layout (TP, PP, EP, micro-batch, ...) but not
// the framework's optimisations: CUDA graphs, FP8 attention, a fused expert
// MLP, the EP all-to-all overlap, the token dispatcher. Those change the
// throughput of the same layout by up to 1.6x between software versions
// (Megatron-Bridge's Qwen3-30B-A3B on GB200: 599 TFLOP/s in container
// 26.04.01, 936 in 26.06). A recipe file (data/planner/recipes.csv) records,
// per row group, what the benchmark recipe of that version set, with the
// source file and line it was read from; the performance model then predicts
// the run that actually ran rather than a default.
//
// Columns: file, model, container, system, precision (the match; an empty
// field matches anything) and cuda_graphs (none|partial|full),
// fp8_attention, ep_overlap, fused_grouped_mlp (true|false), dispatcher
// (alltoall|flex), source (where the values were read). An empty knob leaves
// the framework default. The first matching rule decides.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "planner/cost_model.h"

namespace tidal::planner {

struct CalibrationCase;

struct RecipeRule {
  int line = 0;
  // Match (lower case): `file` is the CSV's file name, `model` occurs in the
  // row's model, `container` and `system` equal the notes' "container X;" and
  // "system X;", `precision` equals the parsed recipe (PrecisionName).
  std::string file, model, container, system, precision;
  std::optional<CudaGraphs> cuda_graphs;
  std::optional<bool> fp8_attention, ep_overlap, fused_grouped_mlp;
  std::optional<bool> flex_dispatcher;  // true: flex (DeepEP/HybridEP), false: all-to-all
  std::string source;
};

// Errors name file:line and the column.
Result<std::vector<RecipeRule>> LoadRecipeRules(const std::string& path);
inline constexpr const char* kDefaultRecipeFile = "data/planner/recipes.csv";

// The value of "<key> X;" in lower-case notes ("container 26.06; ..."), or
// empty.
std::string NoteField(const std::string& notes_lower, std::string_view key);

// Applies the first rule matching a usable case to its strategy and records
// it among the case's assumptions (replacing the defaults it overrides).
// Returns the rule applied, or null.
const RecipeRule* ApplyRecipe(const std::vector<RecipeRule>& rules, const std::string& notes_lower,
                              CalibrationCase& k);

}  // namespace tidal::planner
