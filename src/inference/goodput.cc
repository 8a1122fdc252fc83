#include "inference/goodput.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "common/csv.h"
#include "inference/yaml_fields.h"

namespace tidal::inference {
namespace {

struct MigProfile {
  const char* name;
  int compute_slices;
  int memory_slices;
  double memory_gb;
  double gpu_memory_gb;  // the GPU the profile belongs to
};

// NVIDIA MIG user guide, "Supported MIG Profiles" (A100-40GB, A100-80GB, H100-80GB).
constexpr MigProfile kMigProfiles[] = {
    {"1g.5gb", 1, 1, 5, 40},    {"2g.10gb", 2, 2, 10, 40},  {"3g.20gb", 3, 4, 20, 40},
    {"4g.20gb", 4, 4, 20, 40},  {"7g.40gb", 7, 8, 40, 40},  {"1g.10gb", 1, 1, 10, 80},
    {"1g.20gb", 1, 2, 20, 80},  {"2g.20gb", 2, 2, 20, 80},  {"3g.40gb", 3, 4, 40, 80},
    {"4g.40gb", 4, 4, 40, 80},  {"7g.80gb", 7, 8, 80, 80},
};

std::string KnownShapes(double gpu_memory_gb) {
  std::string out;
  for (const MigProfile& p : kMigProfiles)
    if (p.gpu_memory_gb == gpu_memory_gb) out += fmt::format("{}, ", p.name);
  return out + "gpu, tp2, tp4, tp8";
}

}  // namespace

Result<ShapeInfo> ParseShape(std::string_view shape, double gpu_memory_gb) {
  ShapeInfo s{.name = std::string(shape)};
  if (shape == "gpu") {
    s.memory_gb = gpu_memory_gb;
    return s;
  }
  if (shape == "tp2" || shape == "tp4" || shape == "tp8") {
    s.gpus = shape[2] - '0';
    s.memory_gb = s.gpus * gpu_memory_gb;
    return s;
  }
  for (const MigProfile& p : kMigProfiles) {
    if (shape != p.name) continue;
    if (p.gpu_memory_gb != gpu_memory_gb) {
      return MakeError(ErrorCode::kInvalidArgument, "MIG profile '{}' belongs to a {} GB GPU, not this {} GB one (its "
                       "shapes: {})", shape, p.gpu_memory_gb, gpu_memory_gb, KnownShapes(gpu_memory_gb));
    }
    s.mig = true;
    s.compute_slices = p.compute_slices;
    s.memory_slices = p.memory_slices;
    s.memory_gb = p.memory_gb;
    return s;
  }
  return MakeError(ErrorCode::kInvalidArgument, "unknown replica shape '{}' (write a MIG profile, gpu, or tpN; known: {})",
                   shape, KnownShapes(gpu_memory_gb));
}

Result<double> ShapeGpuCost(std::string_view shape, double gpu_memory_gb) {
  TIDAL_ASSIGN_OR_RETURN(ShapeInfo s, ParseShape(shape, gpu_memory_gb));
  return s.GpuCost();
}

Result<RooflineEstimate> Roofline(const ModelSpec& m, const ShapeInfo& shape, double in, double out,
                                  const Hardware& hw, const RooflineParams& p) {
  const double tp = std::pow(p.tp_efficiency, std::log2(static_cast<double>(shape.gpus)));
  const double bw = hw.hbm_bytes_per_s * shape.BandwidthFraction() * shape.gpus * p.bw_efficiency * tp;
  const double flops = hw.peak_flops * shape.SmFraction() * shape.gpus * p.flops_efficiency * tp;
  const double w = m.WeightsGb() * 1e9;
  const double kv_room = p.kv_memory_fraction * shape.memory_gb * 1e9 - w;
  if (kv_room <= 0) {
    return MakeError(ErrorCode::kUnresolvable,
                     "model '{}' ({:.1f} GB of weights) does not fit in shape '{}' ({} GB, of which {:.0f}% may hold "
                     "weights and KV cache); pick a larger shape",
                     m.name, m.WeightsGb(), shape.name, shape.memory_gb, p.kv_memory_fraction * 100);
  }
  const double kv_seq = m.kv_bytes_per_token * (in + out);
  const double kv_mean = m.kv_bytes_per_token * (in + out / 2);
  const double b = std::min({kv_room / kv_seq, (p.tpot_s * bw - w) / kv_mean, p.max_batch});
  if (!(b >= 1)) {
    return MakeError(ErrorCode::kUnresolvable,
                     "model '{}' on shape '{}': not one sequence of {} + {} tokens meets a {} s decode step (batch "
                     "bound {:.2f}); pick a larger shape",
                     m.name, shape.name, in, out, p.tpot_s, b);
  }
  RooflineEstimate e;
  e.batch = b;
  e.step_s = (w + b * kv_mean) / bw;
  e.prefill_s = 2 * m.params_b * 1e9 * in / flops;
  e.rps = 1 / (e.prefill_s + out * e.step_s / b);
  e.output_tokens_per_s = e.rps * out;
  return e;
}

Result<GoodputRow> GoodputTable::Lookup(std::string_view model, std::string_view shape) const {
  std::string have;
  for (const GoodputRow& r : rows_) {
    if (r.model != model) continue;
    if (r.shape == shape) return r;
    have += fmt::format("{}{}", have.empty() ? "" : ", ", r.shape);
  }
  if (have.empty()) {
    std::string models;
    for (const ModelSpec& m : models_) models += fmt::format("{}{}", models.empty() ? "" : ", ", m.name);
    return MakeError(ErrorCode::kNotFound, "{}: no goodput rows for model '{}' (models in the file: {}); add rows for it",
                     source_, model, models);
  }
  return MakeError(ErrorCode::kNotFound,
                   "{}: no goodput row for model '{}' on shape '{}'; it has rows for: {} (pick one, or add a row)",
                   source_, model, shape, have);
}

Result<ModelSpec> GoodputTable::Model(std::string_view name) const {
  for (const ModelSpec& m : models_)
    if (m.name == name) return m;
  return MakeError(ErrorCode::kNotFound, "{}: model '{}' is not under 'models:'", source_, name);
}

namespace {

Status ReadHeader(const YAML::Node& doc, const std::string& src, Hardware& hw, RooflineParams& p) {
  if (const YAML::Node g = doc["gpu"]) {
    TIDAL_RETURN_IF_ERROR(yaml::CheckKeys(g, {"name", "memory_gb", "hbm_tb_per_s", "peak_tflops"}, src, "gpu"));
    TIDAL_ASSIGN_OR_RETURN(hw.name, yaml::Str(g, "name", src, "gpu"));
    TIDAL_ASSIGN_OR_RETURN(hw.memory_gb, yaml::Num(g, "memory_gb", src, "gpu", 1, 1e4));
    TIDAL_ASSIGN_OR_RETURN(double tb, yaml::Num(g, "hbm_tb_per_s", src, "gpu", 0.01, 1e3));
    TIDAL_ASSIGN_OR_RETURN(double tf, yaml::Num(g, "peak_tflops", src, "gpu", 1, 1e6));
    hw.hbm_bytes_per_s = tb * 1e12;
    hw.peak_flops = tf * 1e12;
  }
  if (const YAML::Node r = doc["roofline"]) {
    TIDAL_RETURN_IF_ERROR(yaml::CheckKeys(r, {"bw_efficiency", "flops_efficiency", "tp_efficiency",
                                              "kv_memory_fraction", "max_batch", "tpot_s"}, src, "roofline"));
    TIDAL_ASSIGN_OR_RETURN(p.bw_efficiency, yaml::NumOr(r, "bw_efficiency", p.bw_efficiency, src, "roofline", 0.01, 1));
    TIDAL_ASSIGN_OR_RETURN(p.flops_efficiency,
                           yaml::NumOr(r, "flops_efficiency", p.flops_efficiency, src, "roofline", 0.01, 1));
    TIDAL_ASSIGN_OR_RETURN(p.tp_efficiency, yaml::NumOr(r, "tp_efficiency", p.tp_efficiency, src, "roofline", 0.01, 1));
    TIDAL_ASSIGN_OR_RETURN(p.kv_memory_fraction,
                           yaml::NumOr(r, "kv_memory_fraction", p.kv_memory_fraction, src, "roofline", 0.01, 1));
    TIDAL_ASSIGN_OR_RETURN(p.max_batch, yaml::NumOr(r, "max_batch", p.max_batch, src, "roofline", 1, 1e6));
    TIDAL_ASSIGN_OR_RETURN(p.tpot_s, yaml::NumOr(r, "tpot_s", p.tpot_s, src, "roofline", 1e-4, 10));
  }
  return Ok();
}

Result<ModelSpec> ReadModel(const YAML::Node& n, const std::string& src) {
  TIDAL_RETURN_IF_ERROR(yaml::CheckKeys(n, {"name", "params_b", "bytes_per_param", "kv_bytes_per_token", "source"}, src,
                                        "a model"));
  ModelSpec m;
  TIDAL_ASSIGN_OR_RETURN(m.name, yaml::Str(n, "name", src, "a model"));
  const std::string what = fmt::format("model '{}'", m.name);
  TIDAL_ASSIGN_OR_RETURN(m.params_b, yaml::Num(n, "params_b", src, what, 1e-3, 1e5));
  TIDAL_ASSIGN_OR_RETURN(m.bytes_per_param, yaml::Num(n, "bytes_per_param", src, what, 0.125, 8));
  TIDAL_ASSIGN_OR_RETURN(m.kv_bytes_per_token, yaml::Num(n, "kv_bytes_per_token", src, what, 1, 1e9));
  TIDAL_ASSIGN_OR_RETURN(m.source, yaml::Str(n, "source", src, what));
  return m;
}

}  // namespace

Result<GoodputTable> GoodputTable::ReadFile(const std::string& path) {
  TIDAL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return Parse(text, path);
}

Result<GoodputTable> GoodputTable::Parse(const std::string& text, const std::string& src) {
  TIDAL_ASSIGN_OR_RETURN(YAML::Node doc, yaml::Load(text, src));
  GoodputTable t;
  t.source_ = src;
  try {
    TIDAL_RETURN_IF_ERROR(yaml::CheckKeys(doc, {"version", "gpu", "roofline", "models", "rows", "calibration"}, src,
                                          "the goodput file"));
    TIDAL_RETURN_IF_ERROR(ReadHeader(doc, src, t.hw_, t.roofline_));
    const YAML::Node models = doc["models"];
    if (!models || !models.IsSequence() || models.size() == 0) {
      return MakeError(ErrorCode::kParse, "{}: 'models:' must list the models (name, params_b, ...)", src);
    }
    for (const YAML::Node& n : models) {
      TIDAL_ASSIGN_OR_RETURN(ModelSpec m, ReadModel(n, src));
      if (t.Model(m.name)) return MakeError(ErrorCode::kParse, "{}: model '{}' is listed twice", yaml::Where(src, n), m.name);
      t.models_.push_back(std::move(m));
    }
    const YAML::Node rows = doc["rows"];
    if (!rows || !rows.IsSequence() || rows.size() == 0) {
      return MakeError(ErrorCode::kParse, "{}: 'rows:' must list the goodput rows (model, shape, rps, ...)", src);
    }
    for (const YAML::Node& n : rows) {
      TIDAL_RETURN_IF_ERROR(yaml::CheckKeys(n, {"model", "shape", "rps", "output_tokens_per_s", "input_tokens",
                                                "output_tokens", "slo", "derived", "source"}, src, "a goodput row"));
      GoodputRow r;
      r.line = n.Mark().line + 1;
      TIDAL_ASSIGN_OR_RETURN(r.model, yaml::Str(n, "model", src, "a goodput row"));
      TIDAL_ASSIGN_OR_RETURN(r.shape, yaml::Str(n, "shape", src, "a goodput row"));
      const std::string what = fmt::format("the row for {} on {}", r.model, r.shape);
      TIDAL_ASSIGN_OR_RETURN(ModelSpec m, yaml::MapError(t.Model(r.model), [&](Error e) {
        e.message = fmt::format("{}: model '{}' is not under 'models:'; add it there first", yaml::Where(src, n["model"]),
                                r.model);
        return e;
      }));
      auto shape = ParseShape(r.shape, t.hw_.memory_gb);
      if (!shape) return MakeError(ErrorCode::kParse, "{}: {}", yaml::Where(src, n["shape"]), shape.error().message);
      if (m.WeightsGb() > t.roofline_.kv_memory_fraction * shape->memory_gb) {
        return MakeError(ErrorCode::kParse, "{}: model '{}' ({:.1f} GB of weights) does not fit in shape '{}' ({} GB, "
                         "of which {:.0f}% may hold weights); use a larger shape",
                         yaml::Where(src, n), r.model, m.WeightsGb(), r.shape, shape->memory_gb,
                         t.roofline_.kv_memory_fraction * 100);
      }
      for (const GoodputRow& o : t.rows_) {
        if (o.model == r.model && o.shape == r.shape) {
          return MakeError(ErrorCode::kParse, "{}: duplicate row for model '{}' on shape '{}' (first at line {}); keep one",
                           yaml::Where(src, n), r.model, r.shape, o.line);
        }
      }
      auto positive = [&](const char* key) -> Result<double> {
        TIDAL_ASSIGN_OR_RETURN(double v, yaml::Num(n, key, src, what, -1e12, 1e12));
        if (v > 0) return v;
        return MakeError(ErrorCode::kParse, "{}: '{}' of {} is {}; goodput must be positive (measure it, or "
                         "remove the row)", yaml::Where(src, n[key]), key, what, v);
      };
      TIDAL_ASSIGN_OR_RETURN(r.rps, positive("rps"));
      TIDAL_ASSIGN_OR_RETURN(r.output_tokens_per_s, positive("output_tokens_per_s"));
      TIDAL_ASSIGN_OR_RETURN(r.input_tokens, yaml::Num(n, "input_tokens", src, what, 1, 1e7));
      TIDAL_ASSIGN_OR_RETURN(r.output_tokens, yaml::Num(n, "output_tokens", src, what, 1, 1e7));
      TIDAL_ASSIGN_OR_RETURN(r.slo, yaml::Str(n, "slo", src, what));
      TIDAL_ASSIGN_OR_RETURN(r.derived, yaml::BoolOr(n, "derived", false, src, what));
      TIDAL_ASSIGN_OR_RETURN(r.source, yaml::Str(n, "source", src, what));
      t.rows_.push_back(std::move(r));
    }
    for (const YAML::Node& n : doc["calibration"]) {
      TIDAL_RETURN_IF_ERROR(yaml::CheckKeys(n, {"model", "shape", "input_tokens", "output_tokens", "tpot_s",
                                                "measured_output_tokens_per_s", "source"}, src, "a calibration point"));
      Calibration c;
      c.line = n.Mark().line + 1;
      const char* what = "a calibration point";
      TIDAL_ASSIGN_OR_RETURN(c.model, yaml::Str(n, "model", src, what));
      TIDAL_ASSIGN_OR_RETURN(c.shape, yaml::Str(n, "shape", src, what));
      TIDAL_ASSIGN_OR_RETURN(c.input_tokens, yaml::Num(n, "input_tokens", src, what, 1, 1e7));
      TIDAL_ASSIGN_OR_RETURN(c.output_tokens, yaml::Num(n, "output_tokens", src, what, 1, 1e7));
      TIDAL_ASSIGN_OR_RETURN(c.tpot_s, yaml::Num(n, "tpot_s", src, what, 1e-4, 10));
      TIDAL_ASSIGN_OR_RETURN(c.measured_output_tokens_per_s,
                             yaml::Num(n, "measured_output_tokens_per_s", src, what, 1e-3, 1e9));
      TIDAL_ASSIGN_OR_RETURN(c.source, yaml::Str(n, "source", src, what));
      t.calibration_.push_back(std::move(c));
    }
  } catch (const YAML::Exception& e) {
    return MakeError(ErrorCode::kParse, "{}:{}: {}", src, e.mark.line + 1, e.msg);
  }
  return t;
}

}  // namespace tidal::inference
