#include "planner/recipe_rules.h"

#include <algorithm>
#include <filesystem>

#include "common/csv.h"
#include "common/strings.h"
#include "planner/calibration.h"

namespace tidal::planner {
namespace {

Result<std::optional<bool>> OptBool(const CsvRow& r, size_t col) {
  TIDAL_ASSIGN_OR_RETURN(std::string_view v, r.Str(col));
  const std::string l = AsciiLower(v);
  if (l.empty()) return std::optional<bool>();
  if (l == "true") return std::optional<bool>(true);
  if (l == "false") return std::optional<bool>(false);
  return MakeError(ErrorCode::kParse, "{}: '{}' is not true, false or empty", r.Where(col), v);
}

void Drop(std::vector<std::string>& assumptions, std::string_view prefix) {
  std::erase_if(assumptions, [&](const std::string& a) { return a.starts_with(prefix); });
}

}  // namespace

std::string NoteField(const std::string& notes_lower, std::string_view key) {
  size_t at = 0;
  const std::string needle = std::string(key) + " ";
  while ((at = notes_lower.find(needle, at)) != std::string::npos) {
    if (at == 0 || notes_lower[at - 1] == ' ' || notes_lower[at - 1] == ';') {
      const size_t from = at + needle.size();
      const size_t end = notes_lower.find(';', from);
      std::string v = notes_lower.substr(from, end == std::string::npos ? std::string::npos : end - from);
      while (!v.empty() && v.back() == ' ') v.pop_back();
      return v;
    }
    at += needle.size();
  }
  return {};
}

Result<std::vector<RecipeRule>> LoadRecipeRules(const std::string& path) {
  TIDAL_ASSIGN_OR_RETURN(CsvTable t, CsvTable::ReadFile(path));
  const char* names[] = {"file",          "model",      "container", "system",           "precision", "cuda_graphs",
                         "fp8_attention", "ep_overlap", "dispatcher", "fused_grouped_mlp", "source"};
  size_t col[11];
  for (int i = 0; i < 11; ++i) {
    TIDAL_ASSIGN_OR_RETURN(col[i], t.RequireColumn(names[i]));
  }
  std::vector<RecipeRule> rules;
  for (const auto& r : t.rows()) {
    RecipeRule rule;
    rule.line = r.line();
    std::string* match[] = {&rule.file, &rule.model, &rule.container, &rule.system, &rule.precision};
    for (int i = 0; i < 5; ++i) {
      TIDAL_ASSIGN_OR_RETURN(std::string_view v, r.Str(col[i]));
      *match[i] = AsciiLower(v);
    }
    if (std::all_of(std::begin(match), std::end(match), [](const std::string* s) { return s->empty(); })) {
      return MakeError(ErrorCode::kParse, "{}: a rule needs at least one of file, model, container, system, "
                       "precision (it would match every row)", r.Where(col[0]));
    }
    TIDAL_ASSIGN_OR_RETURN(std::string_view graphs, r.Str(col[5]));
    if (!graphs.empty()) {
      auto g = ParseCudaGraphs(AsciiLower(graphs));
      if (!g) return MakeError(ErrorCode::kParse, "{}: {}", r.Where(col[5]), g.error().message);
      rule.cuda_graphs = *g;
    }
    TIDAL_ASSIGN_OR_RETURN(rule.fp8_attention, OptBool(r, col[6]));
    TIDAL_ASSIGN_OR_RETURN(rule.ep_overlap, OptBool(r, col[7]));
    TIDAL_ASSIGN_OR_RETURN(std::string_view disp, r.Str(col[8]));
    const std::string d = AsciiLower(disp);
    if (d == "flex") {
      rule.flex_dispatcher = true;
    } else if (d == "alltoall") {
      rule.flex_dispatcher = false;
    } else if (!d.empty()) {
      return MakeError(ErrorCode::kParse, "{}: dispatcher '{}': use alltoall, flex or leave it empty", r.Where(col[8]),
                       disp);
    }
    TIDAL_ASSIGN_OR_RETURN(rule.fused_grouped_mlp, OptBool(r, col[9]));
    TIDAL_ASSIGN_OR_RETURN(std::string_view src, r.Str(col[10]));
    rule.source = std::string(src);
    rules.push_back(std::move(rule));
  }
  return rules;
}

const RecipeRule* ApplyRecipe(const std::vector<RecipeRule>& rules, const std::string& notes_lower,
                              CalibrationCase& k) {
  const std::string file = AsciiLower(std::filesystem::path(k.file).filename().string());
  const std::string model = AsciiLower(k.model);
  const std::string container = NoteField(notes_lower, "container");
  const std::string system = NoteField(notes_lower, "system");
  const std::string precision(PrecisionName(k.strategy.precision));
  auto eq = [](const std::string& rule, const std::string& row) { return rule.empty() || rule == row; };
  for (const auto& r : rules) {
    if (!eq(r.file, file) || !eq(r.container, container) || !eq(r.system, system) || !eq(r.precision, precision) ||
        model.find(r.model) == std::string::npos) {
      continue;
    }
    Strategy& s = k.strategy;
    std::string what;
    if (r.cuda_graphs) {
      s.cuda_graphs = *r.cuda_graphs;
      what += fmt::format(", CUDA graphs {}", CudaGraphsName(s.cuda_graphs));
    }
    if (r.fp8_attention) {
      s.fp8_attention = *r.fp8_attention && k.gpu.fp8_tflops > 0;
      what += s.fp8_attention ? ", FP8 attention" : ", 16-bit attention";
    }
    if (k.spec.IsMoe() && s.ep > 1) {
      if (r.ep_overlap) {
        Drop(k.assumptions, "EP all-to-all overlapped");
        s.overlap_ep_comm = *r.ep_overlap;
        what += s.overlap_ep_comm ? ", EP all-to-all overlapped" : ", EP all-to-all not overlapped";
      }
      if (r.flex_dispatcher) {
        Drop(k.assumptions, "flex dispatcher");
        s.ep_dedup = *r.flex_dispatcher && s.tp * s.cp * s.ep > k.gpu.nvlink_domain;
        what += *r.flex_dispatcher ? ", flex dispatcher" : ", all-to-all dispatcher";
      }
    }
    if (r.fused_grouped_mlp && k.spec.IsMoe()) {
      s.fused_expert_mlp = *r.fused_grouped_mlp;
      what += s.fused_expert_mlp ? ", fused expert MLP" : ", unfused expert MLP";
    }
    const std::string from = r.source.substr(0, r.source.find(" ;"));
    k.assumptions.push_back(fmt::format("recipe (recipes.csv:{}{}{})", r.line, what, from.empty() ? "" : "; " + from));
    return &r;
  }
  return nullptr;
}

}  // namespace tidal::planner
