#include "sim/workload_model.h"

#include <charconv>
#include <numeric>

#include <yaml-cpp/yaml.h>

#include "common/csv.h"
#include "planner/gpu.h"

namespace tidal::sim {
namespace {

// The same text as data/workload_models/default.yaml (a test checks it).
constexpr std::string_view kDefault = R"(version: 1
gpu: h100
classes:
  - {gpus: 2-7, model: llama3-8b, tp: 1, pp: 1, micro_batch: 1, global_batch: 64}
  - {gpus: 8-15, model: llama3-8b, tp: 2, pp: 1, micro_batch: 1, global_batch: 256}
  - {gpus: 16-63, model: llama2-13b, tp: 8, pp: 1, micro_batch: 1, global_batch: 512}
  - {gpus: 64-255, model: llama3-70b, tp: 8, pp: 4, micro_batch: 1, global_batch: 1024}
  - {gpus: 256-1000000, model: llama3-405b, tp: 8, pp: 8, micro_batch: 1, global_batch: 2048}
)";

Result<int> Int(const YAML::Node& n, const std::string& where, std::string_view key, int lo, int hi) {
  int v = 0;
  try {
    v = n.as<int>();
  } catch (const YAML::Exception&) {
    return MakeError(ErrorCode::kParse, "{}: {} must be an integer", where, key);
  }
  if (v < lo || v > hi) return MakeError(ErrorCode::kParse, "{}: {} = {} is outside [{}, {}]", where, key, v, lo, hi);
  return v;
}

}  // namespace

std::string_view WorkloadModel::DefaultText() { return kDefault; }

const WorkloadModel& WorkloadModel::Default() {
  static const WorkloadModel m = *Parse(kDefault, "built-in default workload model");
  return m;
}

Result<WorkloadModel> WorkloadModel::Read(const std::string& path) {
  TIDAL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return Parse(text, path);
}

Result<WorkloadModel> WorkloadModel::Parse(std::string_view text, const std::string& source) {
  WorkloadModel wm;
  wm.source_ = source;
  YAML::Node doc;
  try {
    doc = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return MakeError(ErrorCode::kParse, "{}:{}: not valid YAML: {}", source, e.mark.line + 1, e.msg);
  }
  try {
    if (!doc.IsMap() || !doc["version"] || doc["version"].as<int>() != 1) {
      return MakeError(ErrorCode::kParse, "{}:1: a workload model starts with 'version: 1'", source);
    }
    for (const auto& kv : doc) {
      const std::string k = kv.first.as<std::string>();
      if (k != "version" && k != "gpu" && k != "classes" && k != "strategy") {
        return MakeError(ErrorCode::kParse, "{}:{}: unknown key '{}' (known: version, gpu, strategy, classes)", source,
                         kv.first.Mark().line + 1, k);
      }
    }
    if (doc["gpu"]) wm.gpu_ = doc["gpu"].as<std::string>();
    if (auto g = planner::FindGpu(wm.gpu_); !g) {
      return MakeError(ErrorCode::kParse, "{}:{}: gpu: {}", source, doc["gpu"].Mark().line + 1, g.error().message);
    }
    if (doc["strategy"]) {
      const std::string st = doc["strategy"].as<std::string>();
      if (st != "launched" && st != "planned") {
        return MakeError(ErrorCode::kParse, "{}:{}: strategy '{}' is neither 'launched' (each class's layout) nor "
                                            "'planned' (the planner's layout for each placement)",
                         source, doc["strategy"].Mark().line + 1, st);
      }
      wm.planned_ = st == "planned";
    }
    if (!doc["classes"] || !doc["classes"].IsSequence()) {
      return MakeError(ErrorCode::kParse, "{}: 'classes:' must list the GPU-count classes", source);
    }
    for (const auto& c : doc["classes"]) {
      const std::string where = fmt::format("{}:{}", source, c.Mark().line + 1);
      if (!c.IsMap()) return MakeError(ErrorCode::kParse, "{}: a class is a mapping (gpus, model, tp, pp, ...)", where);
      WorkloadClass w;
      w.where = where;
      for (const auto& kv : c) {
        const std::string k = kv.first.as<std::string>();
        static const char* kKeys[] = {"gpus", "model", "precision", "tp", "pp", "micro_batch", "global_batch", "zero_stage", "recompute", "overlap"};
        if (std::find_if(std::begin(kKeys), std::end(kKeys), [&](const char* x) { return k == x; }) == std::end(kKeys)) {
          return MakeError(ErrorCode::kParse, "{}: unknown key '{}' (known: gpus, model, precision, tp, pp, micro_batch, "
                                              "global_batch, zero_stage, recompute, overlap)",
                           where, k);
        }
      }
      if (!c["gpus"] || !c["model"]) return MakeError(ErrorCode::kParse, "{}: a class needs gpus: A-B and model: NAME", where);
      const std::string range = c["gpus"].as<std::string>();
      const size_t dash = range.find('-');
      auto num = [](std::string_view s, int& v) {
        auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        return ec == std::errc() && p == s.data() + s.size() && v > 0;
      };
      if (!num(std::string_view(range).substr(0, dash), w.min_gpus) ||
          !num(dash == std::string::npos ? std::string_view(range) : std::string_view(range).substr(dash + 1), w.max_gpus) ||
          w.max_gpus < w.min_gpus) {
        return MakeError(ErrorCode::kParse, "{}: gpus '{}' must be a range A-B with 1 <= A <= B", where, range);
      }
      w.model = c["model"].as<std::string>();
      auto spec = planner::FindModelPreset(w.model);
      if (!spec) return MakeError(ErrorCode::kParse, "{}: model: {}", where, spec.error().message);
      if (c["precision"]) {
        auto p = planner::ParsePrecision(c["precision"].as<std::string>());
        if (!p) return MakeError(ErrorCode::kParse, "{}: {}", where, p.error().message);
        w.precision = *p;
      }
      if (c["recompute"]) {
        auto r = planner::ParseRecompute(c["recompute"].as<std::string>());
        if (!r) return MakeError(ErrorCode::kParse, "{}: {}", where, r.error().message);
        w.recompute = *r;
      }
      if (c["overlap"]) {
        try {
          w.overlap = c["overlap"].as<bool>();
        } catch (const YAML::Exception&) {
          return MakeError(ErrorCode::kParse, "{}: overlap must be true or false", where);
        }
      }
      if (c["tp"]) { TIDAL_ASSIGN_OR_RETURN(w.tp, Int(c["tp"], where, "tp", 1, 1024)); }
      if (c["pp"]) { TIDAL_ASSIGN_OR_RETURN(w.pp, Int(c["pp"], where, "pp", 1, 1024)); }
      if (c["micro_batch"]) { TIDAL_ASSIGN_OR_RETURN(w.micro_batch, Int(c["micro_batch"], where, "micro_batch", 1, 1024)); }
      if (c["global_batch"]) { TIDAL_ASSIGN_OR_RETURN(w.global_batch, Int(c["global_batch"], where, "global_batch", 1, 1 << 24)); }
      if (c["zero_stage"]) { TIDAL_ASSIGN_OR_RETURN(w.zero_stage, Int(c["zero_stage"], where, "zero_stage", 0, 3)); }
      for (const auto& o : wm.classes_) {
        if (w.min_gpus <= o.max_gpus && o.min_gpus <= w.max_gpus) {
          return MakeError(ErrorCode::kParse, "{}: gpus {}-{} overlaps the class at {} ({}-{})", where, w.min_gpus, w.max_gpus,
                           o.where, o.min_gpus, o.max_gpus);
        }
      }
      wm.classes_.push_back(std::move(w));
      wm.models_.push_back(std::move(*spec));
    }
  } catch (const YAML::Exception& e) {
    return MakeError(ErrorCode::kParse, "{}:{}: {}", source, e.mark.line + 1, e.msg);
  }
  return wm;
}

const WorkloadClass* WorkloadModel::For(int gpus) const {
  for (const auto& c : classes_)
    if (gpus >= c.min_gpus && gpus <= c.max_gpus) return &c;
  return nullptr;
}

int WorkloadModel::ClassIndex(int gpus) const {
  const WorkloadClass* c = For(gpus);
  return c == nullptr ? -1 : static_cast<int>(c - classes_.data());
}

std::optional<WorkloadModel::Resolved> WorkloadModel::Resolve(int gpus) const {
  const WorkloadClass* c = For(gpus);
  if (c == nullptr) return std::nullopt;
  const planner::ModelSpec& m = models_[static_cast<size_t>(c - classes_.data())];
  auto try_layout = [&](int tp, int pp) -> std::optional<Resolved> {
    planner::Strategy s;
    s.tp = tp;
    s.pp = pp;
    s.dp = gpus / (tp * pp);
    s.micro_batch = c->micro_batch;
    s.grad_accum = std::max(1, c->global_batch / (s.dp * s.micro_batch));
    s.zero_stage = s.dp > 1 ? c->zero_stage : 0;
    s.recompute = c->recompute;
    s.sequence_parallel = tp > 1;
    s.precision = c->precision;
    s.overlap_grad_reduce = c->overlap;
    if (tp * pp * s.dp != gpus) return std::nullopt;
    // Layers that pp does not divide: lighter first and last stages, as
    // Llama 3 405B runs on pp 16 (planner::SplitLayers).
    if (pp > 1 && !planner::SplitLayers(m.layers, pp, s.first_stage_layers, s.last_stage_layers)) return std::nullopt;
    if (!planner::ValidateStrategy(m, s, gpus)) return std::nullopt;
    Resolved r{c, m, s};
    r.model.global_batch = s.GlobalBatch();
    return r;
  };
  const int tp = std::gcd(c->tp, gpus);
  const int pp = std::gcd(c->pp, gpus / tp);
  if (auto r = try_layout(tp, pp)) return r;
  if (auto r = try_layout(tp, 1)) return r;
  return try_layout(1, 1);
}

}  // namespace tidal::sim
