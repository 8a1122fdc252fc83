#include "sim/compare.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "common/csv.h"
#include "plugins/registry.h"
#include "sim/svg.h"
#include "sim/workload_input.h"
#include "topology/formats.h"

namespace tidal::sim {
namespace {

std::string Resolve(const std::filesystem::path& base, const std::string& p) {
  if (p.empty()) return p;
  const std::filesystem::path path(p);
  return path.is_absolute() ? p : (base / path).lexically_normal().string();
}

}  // namespace

Result<HoardingScenario> ReadHoardingNode(const YAML::Node& h, const std::string& path) {
  auto where = [&](const YAML::Node& n) { return fmt::format("{}:{}", path, n.Mark().line + 1); };
  HoardingScenario s;
  if (!h.IsMap()) return MakeError(ErrorCode::kParse, "{}: 'hoarding:' is a map {{share, min_tail, max_tail, seed}}", where(h));
  for (const auto& kv : h) {
    const std::string k = kv.first.as<std::string>();
    if (k == "share") s.share = kv.second.as<double>();
    else if (k == "min_tail") s.min_tail_s = kv.second.as<int64_t>();
    else if (k == "max_tail") s.max_tail_s = kv.second.as<int64_t>();
    else if (k == "seed") s.seed = kv.second.as<uint64_t>();
    else return MakeError(ErrorCode::kParse, "{}: unknown hoarding key '{}' (share, min_tail, max_tail, seed)", where(kv.first), k);
  }
  if (auto v = s.Validate(); !v) return MakeError(ErrorCode::kParse, "{}: {}", where(h), v.error().message);
  return s;
}

std::string ResolveConfigPath(const std::string& config_file, const std::string& p) {
  return Resolve(std::filesystem::path(config_file).parent_path(), p);
}

Result<CompareConfig> ReadCompareConfig(const std::string& path) {
  TIDAL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  CompareConfig c;
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
      return MakeError(ErrorCode::kParse, "{}:1: a compare config starts with 'version: 1'", path);
    }
    static const std::set<std::string> known = {"version", "name",   "jobs",   "format",  "nodes",       "topology",
                                                "workload_model", "queue", "placers", "loads", "time_scales", "seeds",
                                                "limit",  "max_wait", "slowdown_ok", "single_node_if_fits",
                                                "policies", "tenants", "checkpoint_interval", "restart_penalty", "estimates",
                                                "start_estimates", "start_estimate_samples", "hoarding", "market",
                                                "reclaim_slowdown_max"};
    for (const auto& kv : doc) {
      const std::string k = kv.first.as<std::string>();
      if (!known.contains(k)) {
        return MakeError(ErrorCode::kParse, "{}: unknown key '{}' (known: name, jobs, format, nodes, topology, workload_model, "
                                            "queue, placers, policies, tenants, loads, time_scales, seeds, limit, max_wait, "
                                            "slowdown_ok, single_node_if_fits, checkpoint_interval, restart_penalty, estimates, "
                                            "start_estimates, start_estimate_samples, hoarding, market, reclaim_slowdown_max)",
                         where(kv.first), k);
      }
    }
    const std::filesystem::path base = std::filesystem::path(path).parent_path();
    auto str = [&](const char* k) { return doc[k] ? doc[k].as<std::string>() : std::string(); };
    c.name = doc["name"] ? str("name") : std::filesystem::path(path).stem().string();
    if (!doc["jobs"]) return MakeError(ErrorCode::kParse, "{}: 'jobs:' (the trace to replay) is required", path);
    c.jobs = Resolve(base, str("jobs"));
    if (doc["format"]) c.format = str("format");
    c.nodes = Resolve(base, str("nodes"));
    c.topology = Resolve(base, str("topology"));
    c.workload_model = Resolve(base, str("workload_model"));
    if (doc["queue"]) c.queue = str("queue");
    const auto& names = plugins::PlacerNames();
    auto check_placer = [&](const YAML::Node& p) -> Result<std::string> {
      const std::string n = p.as<std::string>();
      if (std::find(names.begin(), names.end(), n) == names.end()) {
        std::string all;
        for (const auto& x : names) all += (all.empty() ? "" : ", ") + x;
        return MakeError(ErrorCode::kParse, "{}: unknown placer '{}'; choose from {}", where(p), n, all);
      }
      return n;
    };
    if (doc["policies"]) {
      if (doc["placers"]) return MakeError(ErrorCode::kParse, "{}: give placers or policies, not both", path);
      if (!doc["policies"].IsSequence() || doc["policies"].size() == 0) {
        return MakeError(ErrorCode::kParse, "{}: 'policies:' lists {{name, queue, placer}} maps", path);
      }
      for (const auto& p : doc["policies"]) {
        if (!p.IsMap() || !p["name"] || !p["queue"] || !p["placer"]) {
          return MakeError(ErrorCode::kParse, "{}: each policy needs name, queue and placer", where(p));
        }
        if (auto q = ParseQueuePolicy(p["queue"].as<std::string>()); !q) {
          return MakeError(ErrorCode::kParse, "{}: {}", where(p["queue"]), q.error().message);
        }
        TIDAL_ASSIGN_OR_RETURN(std::string placer, check_placer(p["placer"]));
        const std::string name = p["name"].as<std::string>();
        for (const auto& other : c.policies)
          if (other.name == name) return MakeError(ErrorCode::kParse, "{}: policy name '{}' is used twice", where(p["name"]), name);
        bool market = false;
        if (p["market"]) market = p["market"].as<bool>();
        for (const auto& kv : p) {
          const std::string k = kv.first.as<std::string>();
          if (k != "name" && k != "queue" && k != "placer" && k != "market")
            return MakeError(ErrorCode::kParse, "{}: unknown policy key '{}' (name, queue, placer, market)",
                             where(kv.first), k);
        }
        c.policies.push_back({name, p["queue"].as<std::string>(), placer, market});
      }
    } else {
      if (!doc["placers"] || !doc["placers"].IsSequence() || doc["placers"].size() == 0) {
        return MakeError(ErrorCode::kParse, "{}: 'placers:' must list placers, e.g. [topo, first-fit] (or give 'policies:')", path);
      }
      for (const auto& p : doc["placers"]) {
        TIDAL_ASSIGN_OR_RETURN(std::string n, check_placer(p));
        c.placers.push_back(n);
      }
    }
    if (doc["tenants"]) {
      const std::string t = str("tenants");
      c.tenants = t == "proportional" ? t : Resolve(base, t);
    }
    if (doc["estimates"]) {
      c.estimates.clear();
      for (const auto& v : doc["estimates"]) c.estimates.push_back(v.as<std::string>());
      if (c.estimates.empty()) return MakeError(ErrorCode::kParse, "{}: 'estimates:' is empty", where(doc["estimates"]));
    }
    if (const YAML::Node h = doc["hoarding"]) {
      TIDAL_ASSIGN_OR_RETURN(c.hoarding, ReadHoardingNode(h, path));
    }
    if (doc["market"]) c.market = Resolve(base, str("market"));
    if (doc["checkpoint_interval"]) c.checkpoint_interval_s = doc["checkpoint_interval"].as<int64_t>();
    if (doc["restart_penalty"]) c.restart_penalty_s = doc["restart_penalty"].as<int64_t>();
    if (doc["start_estimates"]) c.start_estimates = doc["start_estimates"].as<int64_t>();
    if (doc["start_estimate_samples"]) c.start_estimate_samples = doc["start_estimate_samples"].as<int>();
    if (c.start_estimates < 0 || c.start_estimate_samples < 1) {
      return MakeError(ErrorCode::kParse, "{}: start_estimates must be >= 0 and start_estimate_samples >= 1", path);
    }
    if (c.checkpoint_interval_s <= 0 || c.restart_penalty_s < 0) {
      return MakeError(ErrorCode::kParse, "{}: checkpoint_interval must be > 0 and restart_penalty >= 0", path);
    }
    if (doc["loads"] && doc["time_scales"]) return MakeError(ErrorCode::kParse, "{}: give loads or time_scales, not both", path);
    for (const char* key : {"loads", "time_scales"}) {
      if (!doc[key]) continue;
      for (const auto& v : doc[key]) {
        const double x = v.as<double>();
        const double hi = std::string(key) == "loads" ? 100 : 1e6;
        if (!(x > 0 && x <= hi)) return MakeError(ErrorCode::kParse, "{}: {} value {} must be in (0, {}]", where(v), key, x, hi);
        (std::string(key) == "loads" ? c.loads : c.time_scales).push_back(x);
      }
    }
    if (c.loads.empty() && c.time_scales.empty()) c.time_scales = {1};
    if (doc["seeds"]) {
      c.seeds.clear();
      for (const auto& v : doc["seeds"]) c.seeds.push_back(v.as<uint64_t>());
    }
    if (c.seeds.empty()) return MakeError(ErrorCode::kParse, "{}: 'seeds:' is empty", path);
    if (doc["limit"]) c.limit = doc["limit"].as<int64_t>();
    if (doc["max_wait"]) c.max_wait_s = doc["max_wait"].as<int64_t>();
    if (doc["slowdown_ok"]) c.slowdown_ok = doc["slowdown_ok"].as<double>();
    if (doc["single_node_if_fits"]) c.single_node_if_fits = doc["single_node_if_fits"].as<bool>();
    if (c.limit < 0 || c.max_wait_s < -1 || c.slowdown_ok < 1) {
      return MakeError(ErrorCode::kParse, "{}: limit must be >= 0, max_wait >= -1 and slowdown_ok >= 1", path);
    }
    if (doc["reclaim_slowdown_max"]) {
      c.reclaim_slowdown_max = doc["reclaim_slowdown_max"].as<double>();
      if (!(c.reclaim_slowdown_max >= 1)) {
        return MakeError(ErrorCode::kParse, "{}: reclaim_slowdown_max must be >= 1 (times a compact placement's step time)",
                         where(doc["reclaim_slowdown_max"]));
      }
    }
  } catch (const YAML::Exception& e) {
    return MakeError(ErrorCode::kParse, "{}:{}: {}", path, e.mark.line + 1, e.msg);
  }
  return c;
}

Result<std::vector<CompareRow>> RunCompare(const CompareConfig& config, int threads,
                                           const std::function<void(const CompareProgress&)>& progress) {
  std::vector<ComparePolicy> policies = config.policies;
  if (policies.empty()) {
    for (const auto& p : config.placers) policies.push_back({p, config.queue, p});
  }
  for (const auto& p : policies) {
    TIDAL_RETURN_IF_ERROR(ParseQueuePolicy(p.queue));
  }
  std::shared_ptr<const topo::Topology> topology;
  if (!config.topology.empty()) {
    TIDAL_ASSIGN_OR_RETURN(topo::Topology t, topo::ReadTopology(config.topology));
    topology = std::make_shared<const topo::Topology>(std::move(t));
  }
  std::optional<WorkloadModel> wm;
  if (!config.workload_model.empty()) {
    TIDAL_ASSIGN_OR_RETURN(wm, WorkloadModel::Read(config.workload_model));
  }
  TIDAL_ASSIGN_OR_RETURN(Workload w, LoadWorkload(config.nodes, config.jobs, config.format, topology.get()));
  market::MarketConfig market_config = market::DefaultMarketConfig();
  if (!config.market.empty()) {
    TIDAL_ASSIGN_OR_RETURN(market_config, market::ReadMarketFile(config.market));
  }
  std::vector<CompareRow> rows;
  const auto& scales = config.loads.empty() ? config.time_scales : config.loads;
  for (const auto& p : policies)
    for (const auto& est : config.estimates)
    for (double x : scales)
      for (uint64_t seed : config.seeds) {
        CompareRow r;
        r.estimate = est;
        r.policy = config.estimates.size() > 1 && est != "exact" ? p.name + "@" + est : p.name;
        r.queue = p.queue;
        r.placer = p.placer;
        r.market = p.market;
        (config.loads.empty() ? r.time_scale : r.load) = x;
        r.seed = seed;
        rows.push_back(std::move(r));
      }
  const int n = static_cast<int>(rows.size());
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = std::min(threads, n);
  std::atomic<int> next{0}, done{0};
  std::mutex mu;
  std::optional<Error> failure;
  auto work = [&] {
    for (int i = next++; i < n; i = next++) {
      CompareRow& row = rows[static_cast<size_t>(i)];
      QueueSimOptions o;
      o.policy = row.placer;
      o.queue = *ParseQueuePolicy(row.queue);
      o.tenants = config.tenants;
      o.estimate = row.estimate;
      o.checkpoint_interval_s = config.checkpoint_interval_s;
      o.restart_penalty_s = config.restart_penalty_s;
      o.start_estimates = config.start_estimates;
      o.hoarding = config.hoarding;
      if (row.market) o.market = MarketSimOptions{.config = market_config};
      o.start_estimate_samples = config.start_estimate_samples;
      o.seed = row.seed;
      o.limit = config.limit;
      o.single_node_if_fits = config.single_node_if_fits;
      o.topology = topology;
      o.workload_model = wm;
      o.max_wait_s = config.max_wait_s;
      o.slowdown_ok = config.slowdown_ok;
      o.reclaim_slowdown_max = config.reclaim_slowdown_max;
      if (row.load > 0) o.load = row.load;
      else o.time_scale = row.time_scale;
      auto r = RunQueueSim(w.nodes, w.jobs, o);
      std::lock_guard lock(mu);
      if (!r) {
        if (!failure) failure = r.error();
        continue;
      }
      row.result = std::move(*r);
      row.result.jobs.clear();
      row.result.jobs.shrink_to_fit();
      const int d = ++done;
      if (progress) {
        progress({d, n, fmt::format("{} @ {} seed {}", row.policy, row.load > 0 ? fmt::format("load {}", row.load)
                                                                                  : fmt::format("x{}", row.time_scale),
                                    row.seed)});
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (failure) return std::unexpected(*failure);
  return rows;
}

nlohmann::json CompareTargets(const std::vector<CompareRow>& rows) {
  // Per load (or time scale): means over seeds per placer.
  struct Agg {
    double comm = 0, jct = 0, delay = 0;
    int n = 0;
    bool comm_measured = true;
  };
  std::map<double, std::map<std::string, Agg>> by;
  for (const auto& r : rows) {
    Agg& a = by[r.load > 0 ? r.load : r.time_scale][r.policy];
    a.comm += r.result.comm_share;
    a.comm_measured = a.comm_measured && r.result.comm_share >= 0;
    a.jct += r.result.jct_s.mean;
    a.delay += r.result.queue_delay_s.mean;
    ++a.n;
  }
  nlohmann::json out = nlohmann::json::array();
  for (auto& [x, m] : by) {
    if (!m.contains("topo")) continue;
    for (auto& [p, a] : m) a.comm /= a.n, a.jct /= a.n, a.delay /= a.n;
    const Agg& t = m.at("topo");
    bool lowest_comm = t.comm_measured, lowest_jct = true, delay_ok = true;
    double best_delay = 1e300;
    std::string best_delay_by;
    for (const auto& [p, a] : m) {
      if (p == "topo") continue;
      if (a.comm_measured && a.comm < t.comm) lowest_comm = false;
      if (a.jct < t.jct) lowest_jct = false;
      if (a.delay < best_delay) best_delay = a.delay, best_delay_by = p;
    }
    delay_ok = t.delay <= best_delay;
    const bool by_load = rows.front().load > 0;
    nlohmann::json j = {{by_load ? "load" : "time_scale", x},
                        {"topo_comm_share", t.comm},
                        {"topo_jct_mean", t.jct},
                        {"topo_delay_mean", t.delay},
                        {"lowest_comm_share", lowest_comm},
                        {"lowest_jct_mean", lowest_jct},
                        {"best_other_delay_mean", best_delay},
                        {"best_other_delay_by", best_delay_by},
                        {"delay_no_worse_than_best_other", delay_ok}};
    if (m.contains("first-fit")) {
      const Agg& f = m.at("first-fit");
      j["first_fit_comm_share"] = f.comm;
      j["comm_below_12pct_where_first_fit_20pct"] = f.comm >= 0.20 ? nlohmann::json(t.comm < 0.12) : nlohmann::json(nullptr);
    }
    out.push_back(j);
  }
  return out;
}

nlohmann::json CompareTenantTargets(const std::vector<CompareRow>& rows) {
  struct Agg {
    double wait = 0, p99 = 0, lost = 0, violations = 0;
    int64_t preemptions = 0;
    int n = 0;
  };
  std::map<double, std::map<std::string, Agg>> by;
  for (const auto& r : rows) {
    Agg& a = by[r.load > 0 ? r.load : r.time_scale][r.policy];
    a.wait += r.result.wait_s.mean;
    a.p99 += r.result.wait_s.p99;
    a.lost += r.result.lost_gpu_hours;
    a.violations += static_cast<double>(r.result.guarantee_violations);
    a.preemptions += r.result.preemptions;
    ++a.n;
  }
  nlohmann::json out = nlohmann::json::array();
  for (auto& [x, m] : by) {
    if (!m.contains("tidal")) continue;
    for (auto& [p, a] : m) a.wait /= a.n, a.p99 /= a.n, a.lost /= a.n, a.violations /= a.n;
    const Agg& t = m.at("tidal");
    double best = 1e300, best_p99 = 1e300;
    std::string best_by, best_p99_by;
    for (const auto& [p, a] : m) {
      if (p == "tidal" || p == "static-partitions") continue;
      if (a.wait < best) best = a.wait, best_by = p;
      if (a.p99 < best_p99) best_p99 = a.p99, best_p99_by = p;
    }
    const bool by_load = rows.front().load > 0;
    nlohmann::json j = {{by_load ? "load" : "time_scale", x},
                        {"tidal_wait_mean", t.wait},
                        {"tidal_wait_p99", t.p99},
                        {"tidal_guarantee_violations", t.violations},
                        {"tidal_lost_gpu_hours", t.lost},
                        {"best_other_wait_mean", best},
                        {"best_other_wait_by", best_by},
                        {"best_other_wait_p99", best_p99},
                        {"best_other_p99_by", best_p99_by},
                        {"wait_at_most_half_best_other", t.wait <= 0.5 * best},
                        {"p99_no_worse_than_best_other", t.p99 <= best_p99},
                        {"zero_guarantee_violations", t.violations == 0}};
    if (m.contains("static-partitions")) {
      j["static_partitions_wait_mean"] = m.at("static-partitions").wait;
      j["wait_at_most_tenth_static"] = t.wait <= 0.1 * m.at("static-partitions").wait;
    }
    for (const char* peer : {"kueue", "slurm-multifactor"}) {
      if (!m.contains(peer)) continue;
      const Agg& a = m.at(peer);
      j[std::string("fewer_lost_gpu_hours_than_") + peer] =
          a.preemptions > 0 ? nlohmann::json(t.lost < a.lost) : nlohmann::json(nullptr);  // null: the peer never preempts
    }
    out.push_back(j);
  }
  return out;
}

nlohmann::json CompareJson(const CompareConfig& config, const std::vector<CompareRow>& rows) {
  nlohmann::json j;
  j["name"] = config.name;
  j["config"] = config.source;
  j["rows"] = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json row = {{"policy", r.policy}, {"load", r.load > 0 ? nlohmann::json(r.load) : nlohmann::json(nullptr)}, {"seed", r.seed}};
    row.update(QueueSimJson(r.result));
    row["name"] = r.policy;
    row["placer"] = r.placer;
    row["policy"] = r.policy;
    j["rows"].push_back(row);
  }
  const bool market_compare = std::any_of(rows.begin(), rows.end(), [](const CompareRow& r) { return r.market; });
  const bool tenant_compare = std::any_of(rows.begin(), rows.end(), [](const CompareRow& r) { return r.policy == "tidal"; });
  j["targets"] = market_compare   ? CompareMarketTargets(rows)
                 : tenant_compare ? CompareTenantTargets(rows)
                                  : CompareTargets(rows);
  return j;
}

nlohmann::json CompareMarketTargets(const std::vector<CompareRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const CompareRow& m : rows) {
    if (!m.market) continue;
    const CompareRow* base = nullptr;
    for (const CompareRow& r : rows)
      if (r.queue == "static-partitions" && r.load == m.load && r.time_scale == m.time_scale && r.seed == m.seed) base = &r;
    nlohmann::json j = {{"policy", m.policy}, {"load", m.load}, {"seed", m.seed}};
    const auto& q = m.result;
    j["ledger_check_ok"] = q.market && q.market->check.ok();
    j["sum_of_balances_equals_grants"] = q.market && q.market->check.tenant_balances == q.market->check.grants;
    if (base) {
      const auto& b = base->result;
      const double wait_cut = q.queue_delay_s.mean > 0 ? b.queue_delay_s.mean / q.queue_delay_s.mean : 0;
      const double hoard_cut = b.hoarded_gpu_hours > 0 ? 1 - q.hoarded_gpu_hours / b.hoarded_gpu_hours : 0;
      j["static_partitions_queue_delay_mean_s"] = b.queue_delay_s.mean;
      j["queue_delay_mean_s"] = q.queue_delay_s.mean;
      j["queue_delay_cut_x"] = wait_cut;
      j["queue_delay_cut_5x"] = wait_cut >= 5;
      j["static_partitions_hoarded_gpu_hours"] = b.hoarded_gpu_hours;
      j["hoarded_gpu_hours"] = q.hoarded_gpu_hours;
      j["hoarded_cut"] = hoard_cut;
      j["hoarded_cut_80pct"] = hoard_cut >= 0.8;
    }
    out.push_back(j);
  }
  return out;
}

std::string CompareTable(const std::vector<CompareRow>& rows) {
  const bool zombies = std::any_of(rows.begin(), rows.end(), [](const CompareRow& r) { return r.result.zombies > 0; });
  if (zombies || std::any_of(rows.begin(), rows.end(), [](const CompareRow& r) { return r.market; })) {
    // The market comparison: queueing, allocation, what zombies held, and per market row each tenant's money.
    std::string out = fmt::format("{:<18} {:>5} {:>4} {:>10} {:>10} {:>10} {:>6} {:>8} {:>9} {:>10} {:>8}\n", "policy", "load",
                                  "seed", "delay_mean", "delay_p99", "jct_mean", "alloc%", "zombies", "reclaimed",
                                  "hoard_gph", "ledger");
    for (const auto& r : rows) {
      const auto& q = r.result;
      out += fmt::format("{:<18} {:>5} {:>4} {:>10.0f} {:>10.0f} {:>10.0f} {:>6.1f} {:>8} {:>9} {:>10.1f} {:>8}\n", r.policy,
                         r.load > 0 ? fmt::format("{:.2f}", r.load) : fmt::format("x{:g}", r.time_scale), r.seed,
                         q.queue_delay_s.mean, q.queue_delay_s.p99, q.jct_s.mean, 100 * q.allocation_rate, q.zombies,
                         q.zombies_reclaimed, q.hoarded_gpu_hours,
                         q.market ? (q.market->check.ok() ? "ok" : "FAILED") : "-");
    }
    for (const auto& r : rows) {
      if (!r.result.market) continue;
      const MarketSimResult& m = *r.result.market;
      out += fmt::format("\n{} @ {:.2f}: revenue {} credits, keep fees {}, multiplier {:.2f}-{:.2f} (mean {:.2f}); grants {} = "
                         "balances {}\n",
                         r.policy, r.load, market::FormatCredits(m.revenue), market::FormatCredits(m.penalties),
                         m.multiplier_min, m.multiplier_max, m.multiplier_mean, market::FormatCredits(m.check.grants),
                         market::FormatCredits(m.check.tenant_balances));
      out += fmt::format("  {:<14} {:>14} {:>14} {:>14} {:>12} {:>12} {:>14} {:>7}\n", "tenant", "granted", "spent", "lending",
                         "fees", "compens.", "balance", "budget");
      for (const auto& t : m.tenants)
        out += fmt::format("  {:<14} {:>14} {:>14} {:>14} {:>12} {:>12} {:>14} {:>7}\n", t.name, market::FormatCredits(t.granted),
                           market::FormatCredits(t.spent), market::FormatCredits(t.lending_credits),
                           market::FormatCredits(t.hoarding_fees), market::FormatCredits(t.compensation),
                           market::FormatCredits(t.balance), t.over_budget ? "over" : "ok");
    }
    return out;
  }
  auto pct = [](double v) { return v < 0 ? std::string("-") : fmt::format("{:.1f}", 100 * v); };
  if (!rows.empty() && !rows.front().result.tenants.empty()) {
    // With start estimates: the error of the P50 estimate, |P50 - actual| p50 / p90 in seconds, and the share of
    // jobs that started by their P90.
    const bool estimates = std::any_of(rows.begin(), rows.end(), [](const CompareRow& r) { return r.result.start_estimate_error.sampled > 0; });
    std::string out = fmt::format("{:<18} {:>5} {:>4} {:>10} {:>9} {:>10} {:>10} {:>6} {:>7} {:>8} {:>7} {:>7} {:>8} {:>8}", "policy",
                                  "load", "seed", "wait_mean", "wait_p50", "wait_p99", "jct_mean", "alloc%", "strand%",
                                  "fair_mm", "ftf_max", "viol_h", "preempt", "lost_gph");
    out += estimates ? fmt::format(" {:>6} {:>9} {:>9} {:>6}\n", "est_n", "est_p50", "est_p90", "cov%") : "\n";
    for (const auto& r : rows) {
      const auto& q = r.result;
      out += fmt::format("{:<18} {:>5} {:>4} {:>10.0f} {:>9.0f} {:>10.0f} {:>10.0f} {:>6.1f} {:>7.2f} {:>8.2f} {:>7.2f} {:>7.1f} {:>8} {:>8.1f}",
                         r.policy, r.load > 0 ? fmt::format("{:.2f}", r.load) : fmt::format("x{:g}", r.time_scale), r.seed,
                         q.wait_s.mean, q.wait_s.p50, q.wait_s.p99, q.jct_s.mean, 100 * q.allocation_rate,
                         100 * q.stranded_gpu_share, q.fairness_max_min_slowdown, q.finish_time_fairness_max,
                         q.guarantee_violation_hours, q.preemptions, q.lost_gpu_hours);
      const auto& e = q.start_estimate_error;
      out += estimates ? fmt::format(" {:>6} {:>9.0f} {:>9.0f} {:>6.1f}\n", e.samples, e.p50, e.p90, 100 * e.coverage_p90) : "\n";
    }
    return out;
  }
  std::string out = fmt::format("{:<11} {:>5} {:>4} {:>10} {:>11} {:>10} {:>6} {:>8} {:>6} {:>6} {:>6} {:>7}\n", "placer", "load",
                                "seed", "delay_mean", "delay_p99", "jct_mean", "alloc%", "strand%", "node%", "leaf%", "comm%",
                                "slowdn");
  for (const auto& r : rows) {
    const auto& q = r.result;
    out += fmt::format("{:<11} {:>5} {:>4} {:>10.0f} {:>11.0f} {:>10.0f} {:>6.1f} {:>8.2f} {:>6} {:>6} {:>6} {:>7}\n", r.policy,
                       r.load > 0 ? fmt::format("{:.2f}", r.load) : fmt::format("x{:g}", r.time_scale), r.seed,
                       q.queue_delay_s.mean, q.queue_delay_s.p99, q.jct_s.mean, 100 * q.allocation_rate,
                       100 * q.stranded_gpu_share, pct(q.locality_node), pct(q.locality_leaf), pct(q.comm_share),
                       q.slowdown_mean < 0 ? std::string("-") : fmt::format("{:.3f}", q.slowdown_mean));
  }
  return out;
}

Status WriteCompareOutputs(const CompareConfig& config, const std::vector<CompareRow>& rows, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return MakeError(ErrorCode::kIo, "cannot create output directory '{}': {}", dir, ec.message());
  auto write = [&](const std::string& name, const std::string& text) -> Status {
    const std::string path = dir + "/" + name;
    std::ofstream out(path);
    if (!out) return MakeError(ErrorCode::kIo, "cannot write '{}'", path);
    out << text;
    if (!out) return MakeError(ErrorCode::kIo, "writing '{}' failed (disk full?)", path);
    return Ok();
  };
  const nlohmann::json j = CompareJson(config, rows);
  TIDAL_RETURN_IF_ERROR(write("rows.json", j.dump(2) + "\n"));
  std::string csv = "policy,load,time_scale,seed,delay_mean_s,delay_p99_s,jct_mean_s,allocation_rate,stranded_gpu_share,"
                    "locality_node,locality_leaf,comm_share,slowdown_mean\n";
  for (const auto& r : rows) {
    const auto& q = r.result;
    csv += fmt::format("{},{},{:.6g},{},{:.1f},{:.1f},{:.1f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f}\n", r.policy, r.load,
                       q.time_scale, r.seed, q.queue_delay_s.mean, q.queue_delay_s.p99, q.jct_s.mean, q.allocation_rate,
                       q.stranded_gpu_share, q.locality_node, q.locality_leaf, q.comm_share, q.slowdown_mean);
  }
  TIDAL_RETURN_IF_ERROR(write("rows.csv", csv));
  // HTML: one chart per metric, x = offered load (or time scale), a line per placer (mean over seeds).
  std::vector<std::string> placers;
  for (const auto& r : rows)
    if (std::find(placers.begin(), placers.end(), r.policy) == placers.end()) placers.push_back(r.policy);
  struct Metric {
    const char* title;
    const char* ylabel;
    double (*get)(const QueueSimResult&);
    double scale;
  };
  const Metric metrics[] = {
      {"Communication share of step time (multi-GPU jobs, GPU-time weighted)", "%", [](const QueueSimResult& q) { return q.comm_share; }, 100},
      {"Mean JCT", "hours", [](const QueueSimResult& q) { return q.jct_s.mean; }, 1 / 3600.0},
      {"Mean queueing delay", "hours", [](const QueueSimResult& q) { return q.queue_delay_s.mean; }, 1 / 3600.0},
      {"Mean wait (JCT - time run; counts waits after preemption)", "hours", [](const QueueSimResult& q) { return q.tenants.empty() ? -1.0 : q.wait_s.mean; }, 1 / 3600.0},
      {"Guarantee violations (tenant-hours)", "tenant-hours", [](const QueueSimResult& q) { return q.tenants.empty() ? -1.0 : q.guarantee_violation_hours; }, 1},
      {"Lost GPU-hours (preemption)", "GPU-hours", [](const QueueSimResult& q) { return q.tenants.empty() ? -1.0 : q.lost_gpu_hours; }, 1},
      {"Fairness: max/min per-tenant mean slowdown", "x", [](const QueueSimResult& q) { return q.fairness_max_min_slowdown; }, 1},
      {"p99 queueing delay", "hours", [](const QueueSimResult& q) { return q.queue_delay_s.p99; }, 1 / 3600.0},
      {"Multi-GPU GPU-time spanning more than one leaf switch", "%", [](const QueueSimResult& q) { return q.locality_leaf; }, 100},
      {"Mean placement slowdown (multi-GPU jobs)", "x", [](const QueueSimResult& q) { return q.slowdown_mean; }, 1},
      {"GPU allocation rate (time average)", "%", [](const QueueSimResult& q) { return q.allocation_rate; }, 100},
  };
  std::string html = "<!doctype html><html><head><meta charset=\"utf-8\"><title>tidal sim compare: " + HtmlEscape(config.name) +
                     "</title><style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}table{border-collapse:collapse}"
                     "td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right}svg{margin:1em 0}</style></head><body>";
  const bool tenant_compare = std::any_of(rows.begin(), rows.end(), [](const CompareRow& r) { return r.policy == "tidal"; });
  html += std::string("<h1>") + (tenant_compare ? "Tenant" : "Placement") + " comparison: " + HtmlEscape(config.name) +
          "</h1><p>Config <code>" + HtmlEscape(config.source) +
          "</code>; every run is <code>tidal sim queue</code> with the same trace and topology.</p>";
  const bool by_load = !config.loads.empty();
  for (const Metric& m : metrics) {
    std::vector<SvgSeries> series;
    double ymax = 0, xmin = 1e300, xmax = -1e300;
    for (size_t pi = 0; pi < placers.size(); ++pi) {
      std::map<double, std::pair<double, int>> pts;
      for (const auto& r : rows) {
        if (r.policy != placers[pi]) continue;
        const double v = m.get(r.result);
        if (v < 0) continue;
        auto& e = pts[by_load ? r.load : r.time_scale];
        e.first += v * m.scale;
        ++e.second;
      }
      SvgSeries s;
      s.label = placers[pi];
      s.color = static_cast<int>(pi);
      for (const auto& [x, e] : pts) {
        s.points.emplace_back(x, e.first / e.second);
        ymax = std::max(ymax, e.first / e.second);
        xmin = std::min(xmin, x), xmax = std::max(xmax, x);
      }
      if (!s.points.empty()) series.push_back(std::move(s));
    }
    if (series.empty()) continue;
    SvgAxes ax;
    ax.title = m.title;
    ax.xlabel = by_load ? "offered load" : "arrival time scale";
    ax.ylabel = m.ylabel;
    ax.xmin = xmin == xmax ? xmin - 0.05 : xmin;
    ax.xmax = xmin == xmax ? xmax + 0.05 : xmax;
    ax.ymin = 0;
    ax.ymax = ymax > 0 ? ymax * 1.1 : 1;
    ax.xticks = 6;
    html += SvgLineChart(ax, series);
  }
  html += "<h2>Targets</h2><pre>" + HtmlEscape(j["targets"].dump(2)) + "</pre><h2>All runs</h2><pre>" + HtmlEscape(CompareTable(rows)) +
          "</pre></body></html>\n";
  return write("report.html", html);
}

}  // namespace tidal::sim
