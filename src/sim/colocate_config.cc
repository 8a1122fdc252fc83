// The colocate config file (docs/colocate.md):
//
//   version: 1
//   name: h100-1024-week
//   topology: ../topologies/h100-1024-fat-tree.yaml  # the fleet: its hosts are the nodes
//   services: services.yaml                          # inference/service.h's format
//   training: {jobs: philly-2017-10-09-2weeks.csv, format: philly, load: 1.0, backlog_s: 86400, gaps: skip}
//   days: 7
//   checkpoint: {interval_s: 1800, write_s: 120, restart_penalty_s: 60}
//   replica: {startup_s: 120, mig_create_s: 15, mig_mode_s: 60}
//   autoscaler: {lead_s: 1800, cooldown_s: 1800, error_quantile: 0.99, error_window_s: 86400}
//   lyra_day_hours: [8, 22]
//   policies: [static, lyra, reactive, tidal]
//   seed: 1
//
// Paths are relative to the file. Every error names file:line and the key.
#include <filesystem>
#include <set>

#include <yaml-cpp/yaml.h>

#include "common/csv.h"
#include "sim/colocate.h"
#include "sim/workload_input.h"
#include "topology/formats.h"

namespace tidal::sim {
namespace {

std::string Resolve(const std::filesystem::path& base, const std::string& p) {
  const std::filesystem::path path(p);
  return path.is_absolute() ? p : (base / path).lexically_normal().string();
}

// Reads the integer fields of a map into `out`, each >= 0.
Status ReadInts(const YAML::Node& m, const std::string& key, const std::string& where,
                const std::vector<std::pair<const char*, int64_t*>>& fields) {
  if (!m.IsMap()) return MakeError(ErrorCode::kParse, "{}: '{}' must be a map", where, key);
  for (const auto& kv : m) {
    const std::string k = kv.first.as<std::string>();
    bool found = false;
    for (const auto& [name, dst] : fields) {
      if (k != name) continue;
      found = true;
      const int64_t v = kv.second.as<int64_t>();
      if (v < 0) return MakeError(ErrorCode::kParse, "{}: {}.{} must be >= 0, not {}", where, key, k, v);
      *dst = v;
    }
    if (!found) {
      std::string names;
      for (const auto& f : fields) names += (names.empty() ? "" : ", ") + std::string(f.first);
      return MakeError(ErrorCode::kParse, "{}: unknown key {}.{} (known: {})", where, key, k, names);
    }
  }
  return Ok();
}

}  // namespace

Status ReadFleetKnobs(const YAML::Node& replica, const YAML::Node& autoscaler, const std::string& path, InferenceFleetsOptions& o) {
  auto where = [&](const YAML::Node& n) { return fmt::format("{}:{}", path, n.Mark().line + 1); };
  try {
    if (replica && !replica.IsNull())
      TIDAL_RETURN_IF_ERROR(ReadInts(replica, "replica", where(replica),
                                     {{"startup_s", &o.startup_s}, {"mig_create_s", &o.mig_create_s}, {"mig_mode_s", &o.mig_mode_s}}));
    if (autoscaler && !autoscaler.IsNull()) {
      YAML::Node n = YAML::Clone(autoscaler);
      if (n.IsMap() && n["error_quantile"]) {
        o.error_quantile = n["error_quantile"].as<double>();
        if (!(o.error_quantile >= 0 && o.error_quantile <= 1))
          return MakeError(ErrorCode::kParse, "{}: autoscaler.error_quantile must be in [0, 1]", where(autoscaler["error_quantile"]));
        n.remove("error_quantile");
      }
      if (n.IsMap() && n["error_margin_max"]) {
        o.error_margin_max = n["error_margin_max"].as<double>();
        if (!(o.error_margin_max >= 1))
          return MakeError(ErrorCode::kParse, "{}: autoscaler.error_margin_max must be >= 1", where(autoscaler["error_margin_max"]));
        n.remove("error_margin_max");
      }
      if (n.IsMap() && n["error_of"]) {
        const std::string of = n["error_of"].as<std::string>();
        if (of != "point" && of != "window-max")
          return MakeError(ErrorCode::kParse, "{}: autoscaler.error_of is point or window-max, not '{}'", where(autoscaler["error_of"]), of);
        o.error_of_window_max = of == "window-max";
        n.remove("error_of");
      }
      TIDAL_RETURN_IF_ERROR(ReadInts(n, "autoscaler", where(autoscaler),
                                     {{"lead_s", &o.lead_s}, {"cooldown_s", &o.cooldown_s}, {"error_window_s", &o.error_window_s}, {"error_tod_s", &o.error_tod_s}}));
    }
  } catch (const YAML::Exception& e) {
    return MakeError(ErrorCode::kParse, "{}:{}: {}", path, e.mark.line + 1, e.msg);
  }
  return Ok();
}

Result<ColocatePolicy> ParseColocatePolicy(std::string_view name) {
  if (name == "static") return ColocatePolicy::kStatic;
  if (name == "lyra") return ColocatePolicy::kLyra;
  if (name == "reactive") return ColocatePolicy::kReactive;
  if (name == "tidal") return ColocatePolicy::kTidal;
  return MakeError(ErrorCode::kInvalidArgument, "unknown co-location policy '{}'; choose static, lyra, reactive or tidal", name);
}

std::string_view ColocatePolicyName(ColocatePolicy p) {
  switch (p) {
    case ColocatePolicy::kStatic: return "static";
    case ColocatePolicy::kLyra: return "lyra";
    case ColocatePolicy::kReactive: return "reactive";
    case ColocatePolicy::kTidal: return "tidal";
  }
  return "?";
}

Result<ColocateConfig> ReadColocateConfig(const std::string& path) {
  TIDAL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  YAML::Node doc;
  try {
    doc = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return MakeError(ErrorCode::kParse, "{}:{}: not valid YAML: {}", path, e.mark.line + 1, e.msg);
  }
  auto where = [&](const YAML::Node& n) { return fmt::format("{}:{}", path, n.Mark().line + 1); };
  ColocateConfig c;
  try {
    if (!doc.IsMap() || !doc["version"] || doc["version"].as<int>() != 1)
      return MakeError(ErrorCode::kParse, "{}:1: a colocate config starts with 'version: 1'", path);
    static const std::set<std::string> known = {"version", "name",       "topology",   "services",       "training", "days",
                                                "checkpoint", "replica", "autoscaler", "lyra_day_hours", "policies", "seed"};
    for (const auto& kv : doc) {
      const std::string k = kv.first.as<std::string>();
      if (!known.contains(k))
        return MakeError(ErrorCode::kParse,
                         "{}: unknown key '{}' (known: name, topology, services, training, days, checkpoint, replica, autoscaler, "
                         "lyra_day_hours, policies, seed)",
                         where(kv.first), k);
    }
    const std::filesystem::path base = std::filesystem::path(path).parent_path();
    c.name = doc["name"] ? doc["name"].as<std::string>() : std::filesystem::path(path).stem().string();
    if (!doc["topology"]) return MakeError(ErrorCode::kParse, "{}: 'topology:' (the fleet) is required", path);
    if (!doc["services"]) return MakeError(ErrorCode::kParse, "{}: 'services:' (the inference services file) is required", path);
    {
      const std::string topo_path = Resolve(base, doc["topology"].as<std::string>());
      TIDAL_ASSIGN_OR_RETURN(topo::Topology t, topo::ReadTopology(topo_path));
      TIDAL_ASSIGN_OR_RETURN(c.nodes, NodesFromTopology(t));
      c.topology = std::make_shared<const topo::Topology>(std::move(t));
    }
    {
      const std::string sp = Resolve(base, doc["services"].as<std::string>());
      TIDAL_ASSIGN_OR_RETURN(c.services, inference::ReadServicesFile(sp, std::filesystem::path(sp).parent_path().string()));
    }
    if (const YAML::Node t = doc["training"]) {
      if (!t.IsMap() || !t["jobs"]) return MakeError(ErrorCode::kParse, "{}: 'training:' needs jobs: (a trace)", where(t));
      for (const auto& kv : t) {
        const std::string k = kv.first.as<std::string>();
        if (k != "jobs" && k != "format" && k != "load" && k != "backlog_s" && k != "gaps")
          return MakeError(ErrorCode::kParse, "{}: unknown key training.{} (known: jobs, format, load, backlog_s, gaps)", where(kv.first), k);
      }
      const std::string format = t["format"] ? t["format"].as<std::string>() : "auto";
      if (t["load"]) {
        c.load = t["load"].as<double>();
        if (!(c.load >= 0 && c.load <= 100)) return MakeError(ErrorCode::kParse, "{}: training.load must be in [0, 100]", where(t["load"]));
      }
      if (t["backlog_s"]) {
        c.backlog_s = t["backlog_s"].as<int64_t>();
        if (c.backlog_s < 0) return MakeError(ErrorCode::kParse, "{}: training.backlog_s must be >= 0", where(t["backlog_s"]));
      }
      if (t["gaps"]) {
        const std::string g = t["gaps"].as<std::string>();
        if (g != "keep" && g != "skip")
          return MakeError(ErrorCode::kParse, "{}: training.gaps is keep (arrivals as the trace has them) or skip (no stretch without a waiting job), not '{}'",
                           where(t["gaps"]), g);
        c.skip_gaps = g == "skip";
      }
      TIDAL_ASSIGN_OR_RETURN(Workload w, LoadWorkload("", Resolve(base, t["jobs"].as<std::string>()), format, c.topology.get()));
      c.training = std::move(w.jobs);
    }
    if (doc["days"]) {
      c.days = doc["days"].as<int64_t>();
      if (c.days < 1 || c.days > 366) return MakeError(ErrorCode::kParse, "{}: days must be in [1, 366]", where(doc["days"]));
    }
    if (const YAML::Node n = doc["checkpoint"])
      TIDAL_RETURN_IF_ERROR(ReadInts(n, "checkpoint", where(n),
                                     {{"interval_s", &c.checkpoint_interval_s}, {"write_s", &c.checkpoint_write_s}, {"restart_penalty_s", &c.restart_penalty_s}}));
    InferenceFleetsOptions knobs;
    TIDAL_RETURN_IF_ERROR(ReadFleetKnobs(doc["replica"], doc["autoscaler"], path, knobs));
    c.startup_s = knobs.startup_s;
    c.mig_create_s = knobs.mig_create_s;
    c.mig_mode_s = knobs.mig_mode_s;
    c.lead_s = knobs.lead_s;
    c.cooldown_s = knobs.cooldown_s;
    c.error_quantile = knobs.error_quantile;
    c.error_window_s = knobs.error_window_s;
    c.error_tod_s = knobs.error_tod_s;
    c.error_of_window_max = knobs.error_of_window_max;
    c.error_margin_max = knobs.error_margin_max;
    if (c.checkpoint_interval_s < 1) return MakeError(ErrorCode::kParse, "{}: checkpoint.interval_s must be >= 1", path);
    if (const YAML::Node h = doc["lyra_day_hours"]) {
      if (!h.IsSequence() || h.size() != 2) return MakeError(ErrorCode::kParse, "{}: lyra_day_hours is [start, end], e.g. [8, 22]", where(h));
      c.day_start_hour = h[0].as<int>();
      c.day_end_hour = h[1].as<int>();
      if (c.day_start_hour < 0 || c.day_end_hour > 24 || c.day_start_hour >= c.day_end_hour)
        return MakeError(ErrorCode::kParse, "{}: lyra_day_hours must satisfy 0 <= start < end <= 24", where(h));
    }
    if (const YAML::Node p = doc["policies"]) {
      if (!p.IsSequence() || p.size() == 0) return MakeError(ErrorCode::kParse, "{}: policies lists static, lyra, reactive, tidal", where(p));
      c.policies.clear();
      for (const auto& x : p) {
        auto pol = ParseColocatePolicy(x.as<std::string>());
        if (!pol) return MakeError(ErrorCode::kParse, "{}: {}", where(x), pol.error().message);
        c.policies.push_back(*pol);
      }
    }
    if (doc["seed"]) c.seed = doc["seed"].as<uint64_t>();
  } catch (const YAML::Exception& e) {
    return MakeError(ErrorCode::kParse, "{}:{}: {}", path, e.mark.line + 1, e.msg);
  }
  return c;
}

}  // namespace tidal::sim
