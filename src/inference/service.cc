#include "inference/service.h"

#include <climits>
#include <cmath>

#include <fmt/format.h>

#include "common/csv.h"
#include "inference/goodput.h"
#include "inference/yaml_fields.h"

namespace tidal::inference {

int ReplicasNeeded(double demand_rps, double goodput_rps, double headroom, int min_replicas) {
  if (!(goodput_rps > 0)) return INT_MAX;
  if (!(demand_rps > 0)) return min_replicas;
  const double x = demand_rps * (1 + headroom) / goodput_rps;
  if (!(x < static_cast<double>(INT_MAX))) return INT_MAX;
  const double whole = std::round(x);
  const double n = std::abs(x - whole) <= 1e-9 * std::max(1.0, whole) ? whole : std::ceil(x);
  return std::max(min_replicas, static_cast<int>(n));
}

namespace {

std::string Resolve(const std::string& base_dir, const std::string& p) {
  if (p.starts_with('/') || base_dir.empty()) return p;
  return base_dir.ends_with('/') ? base_dir + p : base_dir + "/" + p;
}

// Prefixes an error from another file with where in the services file it was asked for.
auto Within(const std::string& where, const std::string& service, const char* what) {
  return [=](Error e) {
    e.message = fmt::format("{}: service '{}': {}: {}", where, service, what, e.message);
    return e;
  };
}

Result<Service> ReadService(const YAML::Node& n, const std::string& src, const std::string& base_dir,
                            const GoodputTable& table) {
  TIDAL_RETURN_IF_ERROR(yaml::CheckKeys(n, {"name", "model", "shape", "trace", "headroom", "min_replicas", "slo",
                                            "goodput_rps"}, src, "a service"));
  Service s;
  TIDAL_ASSIGN_OR_RETURN(s.name, yaml::Str(n, "name", src, "a service"));
  const std::string what = fmt::format("service '{}'", s.name);
  TIDAL_ASSIGN_OR_RETURN(s.model, yaml::Str(n, "model", src, what));
  TIDAL_ASSIGN_OR_RETURN(s.shape, yaml::Str(n, "shape", src, what));
  TIDAL_ASSIGN_OR_RETURN(s.slo, yaml::Str(n, "slo", src, what));
  TIDAL_ASSIGN_OR_RETURN(s.headroom, yaml::NumOr(n, "headroom", 0.1, src, what, 0, 10));
  TIDAL_ASSIGN_OR_RETURN(double min_rep, yaml::NumOr(n, "min_replicas", 1, src, what, 0, 1e6));
  if (min_rep != std::floor(min_rep)) {
    return MakeError(ErrorCode::kParse, "{}: min_replicas of {} is {}; write a whole number", yaml::Where(src, n["min_replicas"]),
                     what, min_rep);
  }
  s.min_replicas = static_cast<int>(min_rep);
  const std::string at = yaml::Where(src, n);
  TIDAL_ASSIGN_OR_RETURN(s.gpus_per_replica, yaml::MapError(ShapeGpuCost(s.shape, table.hardware().memory_gb),
                                                                Within(yaml::Where(src, n["shape"]), s.name, "shape")));
  if (n["goodput_rps"]) {
    TIDAL_ASSIGN_OR_RETURN(s.goodput_rps, yaml::Num(n, "goodput_rps", src, what, 1e-9, 1e9));
    s.goodput_source = fmt::format("{} (goodput_rps given)", yaml::Where(src, n["goodput_rps"]));
  } else {
    TIDAL_ASSIGN_OR_RETURN(GoodputRow row,
                           yaml::MapError(table.Lookup(s.model, s.shape), Within(at, s.name, "goodput")));
    s.goodput_rps = row.rps;
    s.goodput_source = fmt::format("{}:{}", table.source(), row.line);
  }
  const YAML::Node tr = n["trace"];
  if (!tr) return MakeError(ErrorCode::kParse, "{}: {} has no 'trace:' {{format, path}}; add it", at, what);
  TIDAL_RETURN_IF_ERROR(yaml::CheckKeys(tr, {"format", "path", "scale_to_peak_rps"}, src, "a trace"));
  TIDAL_ASSIGN_OR_RETURN(std::string format, yaml::Str(tr, "format", src, what + " trace"));
  TIDAL_ASSIGN_OR_RETURN(std::string path, yaml::Str(tr, "path", src, what + " trace"));
  TIDAL_ASSIGN_OR_RETURN(double peak, yaml::NumOr(tr, "scale_to_peak_rps", -1, src, what + " trace", 1e-9, 1e12));
  TIDAL_ASSIGN_OR_RETURN(s.demand, yaml::MapError(ReadDemandTrace(Resolve(base_dir, path), format),
                                                  Within(yaml::Where(src, tr), s.name, "trace")));
  if (peak > 0) s.demand = ScaleToPeak(s.demand, peak);
  s.demand.name = s.name;
  return s;
}

}  // namespace

Result<std::vector<Service>> ParseServicesYaml(const std::string& text, const std::string& src,
                                               const std::string& base_dir) {
  TIDAL_ASSIGN_OR_RETURN(YAML::Node doc, yaml::Load(text, src));
  std::vector<Service> out;
  try {
    TIDAL_RETURN_IF_ERROR(yaml::CheckKeys(doc, {"version", "goodput", "services"}, src, "the services file"));
    TIDAL_ASSIGN_OR_RETURN(std::string goodput, yaml::Str(doc, "goodput", src, "the services file"));
    TIDAL_ASSIGN_OR_RETURN(GoodputTable table, yaml::MapError(GoodputTable::ReadFile(Resolve(base_dir, goodput)), [&](Error e) {
                                                     e.message = fmt::format("{}: goodput table: {}",
                                                                             yaml::Where(src, doc["goodput"]), e.message);
                                                     return e;
                                                   }));
    const YAML::Node list = doc["services"];
    if (!list || !list.IsSequence() || list.size() == 0) {
      return MakeError(ErrorCode::kParse, "{}: 'services:' must list the services (name, model, shape, trace, slo)", src);
    }
    for (const YAML::Node& n : list) {
      TIDAL_ASSIGN_OR_RETURN(Service s, ReadService(n, src, base_dir, table));
      for (const Service& o : out) {
        if (o.name == s.name) {
          return MakeError(ErrorCode::kParse, "{}: service '{}' is listed twice; names must be unique",
                           yaml::Where(src, n), s.name);
        }
      }
      out.push_back(std::move(s));
    }
  } catch (const YAML::Exception& e) {
    return MakeError(ErrorCode::kParse, "{}:{}: {}", src, e.mark.line + 1, e.msg);
  }
  return out;
}

Result<std::vector<Service>> ReadServicesFile(const std::string& path, const std::string& base_dir) {
  TIDAL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return ParseServicesYaml(text, path, base_dir);
}

}  // namespace tidal::inference
