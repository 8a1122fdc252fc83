#include "sim/org.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "common/csv.h"
#include "market/market_config.h"
#include "planner/gpu.h"
#include "plugins/registry.h"
#include "sim/compare.h"
#include "sim/workload_input.h"
#include "topology/formats.h"

namespace tidal::sim {
namespace {

Result<OrgSide> ReadSide(const YAML::Node& n, const std::string& path, const std::string& key) {
  auto where = [&](const YAML::Node& x) { return fmt::format("{}:{}", path, x.Mark().line + 1); };
  if (!n || !n.IsMap()) {
    return MakeError(ErrorCode::kParse, "{}: '{}:' is required: a map {{queue, placer, workload_model, market}}", path, key);
  }
  OrgSide s;
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>();
    if (k == "queue") s.queue = kv.second.as<std::string>();
    else if (k == "placer") s.placer = kv.second.as<std::string>();
    else if (k == "workload_model") s.workload_model = ResolveConfigPath(path, kv.second.as<std::string>());
    else if (k == "market") s.market = kv.second.as<bool>();
    else if (k == "colocation") s.colocation = kv.second.as<bool>();
    else
      return MakeError(ErrorCode::kParse, "{}: unknown key '{}' in {} (queue, placer, workload_model, market, colocation)",
                       where(kv.first), k, key);
  }
  if (s.queue.empty() || s.placer.empty() || s.workload_model.empty()) {
    return MakeError(ErrorCode::kParse, "{}: {} needs queue, placer and workload_model", where(n), key);
  }
  if (auto q = ParseQueuePolicy(s.queue); !q) return MakeError(ErrorCode::kParse, "{}: {}", where(n["queue"]), q.error().message);
  const auto& names = plugins::PlacerNames();
  if (std::find(names.begin(), names.end(), s.placer) == names.end()) {
    return MakeError(ErrorCode::kParse, "{}: unknown placer '{}'", where(n["placer"]), s.placer);
  }
  if (s.market && !UsesTenantQueue(*ParseQueuePolicy(s.queue))) {
    return MakeError(ErrorCode::kParse, "{}: the market needs a tenant queue (static-partitions, kueue, tidal, ...), not '{}'",
                     where(n["market"]), s.queue);
  }
  return s;
}

}  // namespace

Result<OrgConfig> ReadOrgConfig(const std::string& path) {
  TIDAL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  OrgConfig c;
  c.source = path;
  YAML::Node doc;
  try {
    doc = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return MakeError(ErrorCode::kParse, "{}:{}: not valid YAML: {}", path, e.mark.line + 1, e.msg);
  }
  auto where = [&](const YAML::Node& n) { return fmt::format("{}:{}", path, n.Mark().line + 1); };
  try {
    if (!doc.IsMap() || !doc["version"] || doc["version"].as<int>() != 1) {
      return MakeError(ErrorCode::kParse, "{}:1: an org config starts with 'version: 1'", path);
    }
    static const std::set<std::string> known = {"version", "name", "jobs", "format", "nodes", "topology", "tenants",
                                                "reference_model", "market", "load", "limit", "seed", "hoarding", "core_project",
                                                "budget_factor", "budgets", "tiers", "checkpoint_interval", "restart_penalty", "inference", "before", "after"};
    for (const auto& kv : doc) {
      const std::string k = kv.first.as<std::string>();
      if (!known.contains(k)) {
        return MakeError(ErrorCode::kParse, "{}: unknown key '{}' (known: name, jobs, format, nodes, topology, tenants, "
                                            "reference_model, market, load, limit, seed, hoarding, core_project, budget_factor, budgets, tiers, "
                                            "checkpoint_interval, "
                                            "restart_penalty, inference, before, after)",
                         where(kv.first), k);
      }
    }
    auto str = [&](const char* k) { return doc[k] ? doc[k].as<std::string>() : std::string(); };
    auto file = [&](const char* k) { return ResolveConfigPath(path, str(k)); };
    c.name = doc["name"] ? str("name") : std::filesystem::path(path).stem().string();
    for (const char* k : {"jobs", "topology", "reference_model"}) {
      if (!doc[k]) return MakeError(ErrorCode::kParse, "{}: '{}:' is required", path, k);
    }
    c.jobs = file("jobs");
    c.topology = file("topology");
    c.reference_model = file("reference_model");
    c.nodes = file("nodes");
    c.market = file("market");
    if (doc["format"]) c.format = str("format");
    if (doc["tenants"]) c.tenants = str("tenants") == "proportional" ? "proportional" : file("tenants");
    if (doc["core_project"]) {
      c.core_project = str("core_project");
      if (c.core_project.empty())
        return MakeError(ErrorCode::kParse, "{}: core_project names a business group, or 'largest'", where(doc["core_project"]));
    }
    auto factor = [&](const YAML::Node& n, const std::string& what) -> Result<double> {
      const double f = n.as<double>();
      if (!std::isfinite(f) || f < 0 || f > 1e6)
        return MakeError(ErrorCode::kParse, "{}: {} {} must be a number in [0, 1e6] (x the floor's GPU-hours at the in-floor rate)",
                         where(n), what, f);
      return f;
    };
    if (doc["budget_factor"]) {
      TIDAL_ASSIGN_OR_RETURN(c.budget_factor, factor(doc["budget_factor"], "budget_factor"));
    }
    if (YAML::Node n = doc["budgets"]) {
      if (!n.IsMap()) return MakeError(ErrorCode::kParse, "{}: budgets is a map {{BUSINESS_GROUP: FACTOR, ...}}", where(n));
      for (const auto& kv : n) {
        const std::string bg = kv.first.as<std::string>();
        TIDAL_ASSIGN_OR_RETURN(c.budgets[bg], factor(kv.second, "the budget factor of '" + bg + "'"));
      }
    }
    if (YAML::Node n = doc["tiers"]) {
      if (!n.IsMap()) return MakeError(ErrorCode::kParse, "{}: tiers is a map {{BUSINESS_GROUP: guaranteed|standard|spot, ...}}", where(n));
      for (const auto& kv : n) {
        const std::string bg = kv.first.as<std::string>();
        auto tier = tenancy::ParseTier(kv.second.as<std::string>());
        if (!tier) return MakeError(ErrorCode::kParse, "{}: tier of '{}': {}", where(kv.second), bg, tier.error().message);
        c.tiers[bg] = *tier;
      }
    }
    if (doc["load"]) {
      c.load = doc["load"].as<double>();
      if (!(c.load > 0 && c.load <= 100)) return MakeError(ErrorCode::kParse, "{}: load {} must be in (0, 100]", where(doc["load"]), c.load);
    }
    if (doc["limit"]) c.limit = doc["limit"].as<int64_t>();
    if (c.limit < 0) return MakeError(ErrorCode::kParse, "{}: limit must be >= 0", where(doc["limit"]));
    if (doc["seed"]) c.seed = doc["seed"].as<uint64_t>();
    if (doc["hoarding"]) {
      TIDAL_ASSIGN_OR_RETURN(c.hoarding, ReadHoardingNode(doc["hoarding"], path));
    }
    if (doc["checkpoint_interval"]) c.checkpoint_interval_s = doc["checkpoint_interval"].as<int64_t>();
    if (doc["restart_penalty"]) c.restart_penalty_s = doc["restart_penalty"].as<int64_t>();
    if (c.checkpoint_interval_s <= 0 || c.restart_penalty_s < 0) {
      return MakeError(ErrorCode::kParse, "{}: checkpoint_interval must be > 0 and restart_penalty >= 0 seconds", path);
    }
    if (YAML::Node n = doc["inference"]) {  // not const: a missing key is a null node, not a zombie
      if (!n.IsMap() || !n["services"])
        return MakeError(ErrorCode::kParse, "{}: inference is a map {{services: FILE, replica: {{...}}, autoscaler: {{...}}, "
                                            "checkpoint_write_s: S}}", where(n));
      for (const auto& kv : n) {
        const std::string k = kv.first.as<std::string>();
        if (k != "services" && k != "replica" && k != "autoscaler" && k != "checkpoint_write_s")
          return MakeError(ErrorCode::kParse, "{}: unknown key inference.{} (services, replica, autoscaler, checkpoint_write_s)",
                           where(kv.first), k);
      }
      OrgInference inf;
      inf.services = ResolveConfigPath(path, n["services"].as<std::string>());
      auto loaded = inference::ReadServicesFile(inf.services, std::filesystem::path(inf.services).parent_path().string());
      if (!loaded) return MakeError(ErrorCode::kParse, "{}: inference.services: {}", where(n["services"]), loaded.error().message);
      inf.loaded = std::move(*loaded);
      if (inf.loaded.empty()) return MakeError(ErrorCode::kParse, "{}: {} has no services", where(n["services"]), inf.services);
      TIDAL_RETURN_IF_ERROR(ReadFleetKnobs(n["replica"], n["autoscaler"], path, inf.knobs));
      if (n["checkpoint_write_s"]) {
        inf.knobs.checkpoint_write_s = n["checkpoint_write_s"].as<int64_t>();
        if (inf.knobs.checkpoint_write_s < 0)
          return MakeError(ErrorCode::kParse, "{}: inference.checkpoint_write_s must be >= 0", where(n["checkpoint_write_s"]));
      }
      c.inference = std::move(inf);
    }
    TIDAL_ASSIGN_OR_RETURN(c.before, ReadSide(doc["before"], path, "before"));
    TIDAL_ASSIGN_OR_RETURN(c.after, ReadSide(doc["after"], path, "after"));
  } catch (const YAML::Exception& e) {
    return MakeError(ErrorCode::kParse, "{}:{}: {}", path, e.mark.line + 1, e.msg);
  }
  return c;
}

namespace {

struct Arm {
  std::string name;
  OrgSide side;
};

// After, with each lever alone set back to before's.
std::vector<Arm> Arms(const OrgConfig& c) {
  std::vector<Arm> arms = {{"before", c.before}, {"after", c.after}};
  auto ablate = [&](const char* name, auto set) {
    OrgSide s = c.after;
    set(s);
    arms.push_back({name, s});
  };
  ablate("no_pool", [&](OrgSide& s) { s.queue = c.before.queue; });
  ablate("no_topology", [&](OrgSide& s) { s.placer = c.before.placer; });
  ablate("no_planner", [&](OrgSide& s) { s.workload_model = c.before.workload_model; });
  ablate("no_market", [&](OrgSide& s) { s.market = c.before.market; });
  if (c.inference) ablate("no_colocation", [&](OrgSide& s) { s.colocation = c.before.colocation; });
  return arms;
}

OrgFigures Figures(const Arm& arm, const QueueSimResult& q, double peak_bf16) {
  OrgFigures f;
  f.name = arm.name;
  f.side = arm.side;
  const double gpu_s = static_cast<double>(q.total_gpus) * static_cast<double>(q.window_s);
  if (q.window_peak_bf16_flops > 0) f.training_mfu = q.window_model_flops / q.window_peak_bf16_flops;
  if (q.window_peak_native_flops > 0) f.training_mfu_native = q.window_model_flops / q.window_peak_native_flops;
  if (gpu_s > 0) {
    f.cluster_mfu = q.window_model_flops / (gpu_s * peak_bf16);
    f.idle_gpu_share = std::max(0.0, 1 - q.window_allocated_gpu_s / gpu_s);
    f.stranded_gpu_share = q.window_stranded_gpu_s / gpu_s;
    f.hoarded_gpu_share = q.window_hoarded_gpu_s / gpu_s;
  }
  f.comm_share = std::max(0.0, q.comm_share);
  f.queue_delay_s = q.queue_delay_s;
  for (const TenantResult& t : q.per_tenant) {
    f.queue_delay_mean_s_by_bg[t.name] = t.queue_delay_s.mean;
    if (t.name != q.core_tenant) continue;
    f.core_project = t.name;
    f.core_queue_delay_mean_s = t.queue_delay_s.mean;
    f.core_guarantee_violation_hours = t.guarantee_violation_hours;
    f.core_preemptions = t.preemptions;
  }
  f.model_flops = q.window_model_flops;
  f.locality_leaf = q.locality_leaf;
  f.jobs_finished = q.jobs_finished;
  f.jobs_unresolvable = q.jobs_unresolvable;
  f.preemptions = q.preemptions;
  f.lost_gpu_hours = q.lost_gpu_hours;
  f.hoarded_gpu_hours = q.hoarded_gpu_hours;
  f.guarantee_violation_hours = q.guarantee_violation_hours;
  f.zombies = q.zombies;
  f.zombies_reclaimed = q.zombies_reclaimed;
  f.market = q.market;
  for (const QueueJobRecord& j : q.jobs) {
    if (j.mfu < 0 || j.outcome != JobOutcome::kFinished) continue;
    f.job_mfu.push_back({j.mfu, static_cast<double>(j.num_gpu) * static_cast<double>(j.run_s) / 3600.0});
  }
  f.inference = q.inference;
  if (gpu_s > 0) f.inference_gpu_share = q.window_inference_gpu_s / gpu_s;
  f.hourly = q.hourly;
  f.seconds = q.seconds;
  return f;
}

}  // namespace

Result<OrgResult> RunOrg(const OrgConfig& config, int threads, const std::function<void(const OrgProgress&)>& progress) {
  TIDAL_ASSIGN_OR_RETURN(topo::Topology t, topo::ReadTopology(config.topology));
  auto topology = std::make_shared<const topo::Topology>(std::move(t));
  TIDAL_ASSIGN_OR_RETURN(WorkloadModel reference, WorkloadModel::Read(config.reference_model));
  if (reference.planned()) {
    return MakeError(ErrorCode::kInvalidArgument, "{}: the reference model gives the layouts the trace ran with; it "
                     "cannot be 'strategy: planned'", config.reference_model);
  }
  TIDAL_ASSIGN_OR_RETURN(Workload w, LoadWorkload(config.nodes, config.jobs, config.format, topology.get()));
  market::MarketConfig market_config = market::DefaultMarketConfig();
  if (!config.market.empty()) {
    TIDAL_ASSIGN_OR_RETURN(market_config, market::ReadMarketFile(config.market));
  }
  const std::vector<Arm> arms = Arms(config);
  std::map<std::string, WorkloadModel> models;
  for (const Arm& a : arms) {
    if (models.contains(a.side.workload_model)) continue;
    TIDAL_ASSIGN_OR_RETURN(WorkloadModel m, WorkloadModel::Read(a.side.workload_model));
    if (m.gpu() != reference.gpu()) {
      return MakeError(ErrorCode::kInvalidArgument, "{}: gpu {} differs from the reference model's {} ({}): both sides run "
                       "on one fleet", a.side.workload_model, m.gpu(), reference.gpu(), config.reference_model);
    }
    models.emplace(a.side.workload_model, std::move(m));
  }
  const double peak_bf16 = planner::FindGpu(reference.gpu())->PeakFlops(planner::Precision::kBf16).value_or(0);

  // The sides with co-location follow the same forecast: its targets depend
  // on the demand traces only, so one copy is shared.
  std::shared_ptr<ScalingTargets> targets;
  if (config.inference) {
    InferenceFleetsOptions forecast = config.inference->knobs;
    forecast.mode = ScalingMode::kForecast;
    TIDAL_ASSIGN_OR_RETURN(targets, ScalingTargets::Make(config.inference->loaded, forecast));
  }

  const int n = static_cast<int>(arms.size());
  std::vector<std::optional<QueueSimResult>> results(arms.size());
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = std::min(threads, n);
  std::atomic<int> next{0};
  int done = 0;
  std::mutex mu;
  std::optional<Error> failure;
  auto work = [&] {
    for (int i = next++; i < n; i = next++) {
      const Arm& arm = arms[static_cast<size_t>(i)];
      QueueSimOptions o;
      o.policy = arm.side.placer;
      o.queue = *ParseQueuePolicy(arm.side.queue);
      o.tenants = config.tenants;
      o.core_tenant = config.core_project;
      o.tenant_tiers = config.tiers;
      o.topology = topology;
      o.workload_model = models.at(arm.side.workload_model);
      o.reference_model = reference;
      o.load = config.load;
      o.limit = config.limit;
      o.seed = config.seed;
      o.hoarding = config.hoarding;
      o.checkpoint_interval_s = config.checkpoint_interval_s;
      o.restart_penalty_s = config.restart_penalty_s;
      if (arm.side.market)
        o.market = MarketSimOptions{
            .config = market_config, .budget_factor = config.budget_factor, .budget_factor_by_tenant = config.budgets};
      if (config.inference) {
        QueueSimOptions::Inference inf{.services = config.inference->loaded, .fleets = config.inference->knobs,
                                       .lend = arm.side.colocation};
        const bool co = arm.side.colocation;
        inf.fleets.mode = co ? ScalingMode::kForecast : ScalingMode::kPeak;
        if (co) inf.fleets.targets = targets;
        inf.fleets.emptiest_first = co;
        inf.fleets.notice = co;
        o.inference = std::move(inf);
      }
      auto r = RunQueueSim(w.nodes, w.jobs, o);
      std::lock_guard lock(mu);
      if (!r) {
        if (!failure) failure = Error{r.error().code, fmt::format("{}: {}", arm.name, r.error().message)};
        continue;
      }
      const double seconds = r->seconds;
      results[static_cast<size_t>(i)] = std::move(*r);
      ++done;
      if (progress) progress({done, n, arm.name, seconds});
    }
  };
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();
  if (failure) return std::unexpected(*failure);

  OrgResult out;
  const QueueSimResult& b = *results[0];
  out.total_gpus = b.total_gpus;
  out.jobs = b.jobs_total;
  out.window_s = b.window_s;
  out.offered_load = b.offered_load;
  out.offered_load_native = b.offered_load_native;
  out.gpu = reference.gpu();
  std::vector<OrgFigures> figs;
  for (size_t i = 0; i < arms.size(); ++i) figs.push_back(Figures(arms[i], *results[i], peak_bf16));
  for (OrgFigures& f : figs) f.effective_compute_gain = figs[0].model_flops > 0 ? f.model_flops / figs[0].model_flops - 1 : 0;
  out.before = std::move(figs[0]);
  out.after = std::move(figs[1]);
  for (size_t i = 2; i < figs.size(); ++i) out.ablations.push_back(std::move(figs[i]));
  return out;
}

}  // namespace tidal::sim
