#include "server/daemon_config.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "common/csv.h"
#include "common/data_path.h"
#include "plugins/registry.h"
#include "server/auth.h"
#include "sim/workload_input.h"
#include "tenancy/tenants_file.h"
#include "topology/formats.h"
#include "adapters/slurm/binder.h"
#include "adapters/slurm/cluster_import.h"

namespace tidal::server {
namespace {

std::string Resolve(const std::filesystem::path& base, const std::string& p) {
  const std::filesystem::path path(p);
  return path.is_absolute() ? p : (base / path).lexically_normal().string();
}

}  // namespace

std::string DefaultDaemonConfigPath() {
  if (const char* d = std::getenv("TIDAL_DATA_DIR"); d && *d) return (std::filesystem::path(d) / "serve/default.yaml").string();
  return FindShippedPath("data/serve/default.yaml");
}

namespace {

Result<SlurmBinderConfig> ReadSlurmBinder(const YAML::Node& b, const std::filesystem::path& base,
                                          const std::function<std::string(const YAML::Node&)>& where) {
  if (!b.IsMap()) return MakeError(ErrorCode::kParse, "{}: 'binder:' is a map (kind: slurm, slurm_conf: FILE, ...)", where(b));
  static const std::set<std::string> known = {"kind", "slurm_conf", "partition", "gpu_model", "script", "output", "workdir", "poll_s"};
  for (const auto& kv : b) {
    const std::string k = kv.first.as<std::string>();
    if (!known.contains(k)) {
      return MakeError(ErrorCode::kParse, "{}: unknown key binder.{} (known: kind, slurm_conf, partition, gpu_model, script, output, "
                       "workdir, poll_s)", where(kv.first), k);
    }
  }
  if (!b["kind"] || b["kind"].as<std::string>() != "slurm") {
    return MakeError(ErrorCode::kParse, "{}: binder.kind must be slurm (the embedded simulated cluster needs no binder)", where(b));
  }
  SlurmBinderConfig sc;
  if (!b["slurm_conf"]) return MakeError(ErrorCode::kParse, "{}: binder.slurm_conf (the cluster's slurm.conf) is required", where(b));
  sc.slurm_conf = Resolve(base, b["slurm_conf"].as<std::string>());
  if (std::error_code ec; !std::filesystem::is_regular_file(sc.slurm_conf, ec)) {
    return MakeError(ErrorCode::kNotFound, "{}: binder.slurm_conf {} is not a file; give the cluster's slurm.conf "
                     "(scripts/slurm-dev.sh start DIR prints a local one's)", where(b["slurm_conf"]), sc.slurm_conf);
  }
  if (b["partition"]) sc.partition = b["partition"].as<std::string>();
  if (b["gpu_model"]) sc.gpu_model = b["gpu_model"].as<std::string>();
  if (b["script"]) sc.script = b["script"].as<std::string>();
  if (b["output"]) sc.output = b["output"].as<std::string>();
  if (b["workdir"]) sc.workdir = b["workdir"].as<std::string>();
  if (b["poll_s"]) sc.poll_s = b["poll_s"].as<double>();
  if (!(sc.poll_s >= 0.1 && sc.poll_s <= 600)) return MakeError(ErrorCode::kParse, "{}: binder.poll_s must be in [0.1, 600]", where(b["poll_s"]));
  if (sc.script.empty()) return MakeError(ErrorCode::kParse, "{}: binder.script is empty", where(b));
  return sc;
}

struct SlurmCluster {
  slurm::ImportedCluster cluster;
  std::string topology_text;
};

// The nodes of the binder's partition and the topology.conf next to its
// slurm.conf (none: one flat pool).
Result<SlurmCluster> ImportSlurm(const SlurmBinderConfig& sc) {
  slurm::ProcessRunner run({{"SLURM_CONF", sc.slurm_conf}});
  slurm::SlurmBinder binder(run, {.partition = sc.partition});
  auto nodes = binder.Nodes();
  if (!nodes) {
    return MakeError(nodes.error().code, "reading the Slurm cluster of {} (is slurmctld up?): {}", sc.slurm_conf, nodes.error().message);
  }
  SlurmCluster out;
  const std::filesystem::path topo = std::filesystem::path(sc.slurm_conf).parent_path() / "topology.conf";
  std::error_code ec;
  if (std::filesystem::exists(topo, ec)) {
    TIDAL_ASSIGN_OR_RETURN(out.topology_text, ReadFileToString(topo.string()));
  }
  TIDAL_ASSIGN_OR_RETURN(out.cluster, slurm::ImportCluster(*nodes, sc.partition, sc.gpu_model, out.topology_text, topo.string()));
  return out;
}

}  // namespace

Result<DaemonConfig> ReadDaemonConfig(const std::string& path) {
  TIDAL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  YAML::Node doc;
  try {
    doc = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return MakeError(ErrorCode::kParse, "{}:{}: not valid YAML: {}", path, e.mark.line + 1, e.msg);
  }
  auto where = [&](const YAML::Node& n) { return fmt::format("{}:{}", path, n.Mark().line + 1); };
  DaemonConfig c;
  c.source = path;
  // The digest covers what the config says (its parsed form: comments and
  // layout do not count) and the content of every file it names.
  std::string digest_input;
  try {
    digest_input = YAML::Dump(doc);
    if (!doc.IsMap() || !doc["version"] || doc["version"].as<int>() != 1)
      return MakeError(ErrorCode::kParse, "{}:1: a serve config starts with 'version: 1'", path);
    static const std::set<std::string> known = {"version", "name", "topology", "trace", "clock", "scheduler", "market", "reports", "binder"};
    for (const auto& kv : doc) {
      const std::string k = kv.first.as<std::string>();
      if (!known.contains(k))
        return MakeError(ErrorCode::kParse,
                         "{}: unknown key '{}' (known: name, topology, trace, clock, scheduler, market, reports, binder)",
                         where(kv.first), k);
    }
    const std::filesystem::path base = std::filesystem::path(path).parent_path();
    c.name = doc["name"] ? doc["name"].as<std::string>() : std::filesystem::path(path).stem().string();
    if (const YAML::Node b = doc["binder"]) {
      // A real Slurm: the cluster is imported from it, not simulated.
      TIDAL_ASSIGN_OR_RETURN(SlurmBinderConfig sc, ReadSlurmBinder(b, base, where));
      if (doc["topology"] || doc["trace"]) {
        return MakeError(ErrorCode::kParse, "{}: with binder: slurm the nodes and switches come from Slurm; drop 'topology:' and 'trace:'",
                         where(b));
      }
      TIDAL_ASSIGN_OR_RETURN(SlurmCluster imported, ImportSlurm(sc));
      c.nodes = std::move(imported.cluster.nodes);
      c.topology = std::move(imported.cluster.topology);
      c.slurm_drained = std::move(imported.cluster.drained);
      digest_input += imported.topology_text;
      c.slurm = std::move(sc);
    } else if (!doc["topology"]) {
      return MakeError(ErrorCode::kParse, "{}: 'topology:' (the simulated cluster's fabric) is required", path);
    }
    if (doc["topology"]) {
      const std::string tp = Resolve(base, doc["topology"].as<std::string>());
      TIDAL_ASSIGN_OR_RETURN(std::string t_text, ReadFileToString(tp));
      digest_input += t_text;
      TIDAL_ASSIGN_OR_RETURN(topo::Topology t, topo::ReadTopology(tp));
      TIDAL_ASSIGN_OR_RETURN(c.nodes, sim::NodesFromTopology(t));
      c.topology = std::make_shared<const topo::Topology>(std::move(t));
    }
    int64_t total_gpus = 0;
    for (const NodeSpec& n : c.nodes) total_gpus += n.gpu_count;
    if (const YAML::Node t = doc["trace"]) {
      if (!t.IsMap() || !t["jobs"]) return MakeError(ErrorCode::kParse, "{}: 'trace:' needs jobs: (a trace file)", where(t));
      for (const auto& kv : t) {
        const std::string k = kv.first.as<std::string>();
        if (k != "jobs" && k != "format" && k != "load" && k != "limit" && k != "backlog_s")
          return MakeError(ErrorCode::kParse, "{}: unknown key trace.{} (known: jobs, format, load, limit, backlog_s)", where(kv.first), k);
      }
      const std::string jp = Resolve(base, t["jobs"].as<std::string>());
      TIDAL_ASSIGN_OR_RETURN(std::string j_text, ReadFileToString(jp));
      digest_input += j_text;
      const std::string format = t["format"] ? t["format"].as<std::string>() : "auto";
      TIDAL_ASSIGN_OR_RETURN(sim::Workload w, sim::LoadWorkload("", jp, format, c.topology.get()));
      std::vector<Job> jobs = std::move(w.jobs);
      std::stable_sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) {
        return std::pair(*a.submit_time_s, a.id) < std::pair(*b.submit_time_s, b.id);
      });
      if (t["limit"]) {
        const int64_t limit = t["limit"].as<int64_t>();
        if (limit < 0) return MakeError(ErrorCode::kParse, "{}: trace.limit must be >= 0", where(t["limit"]));
        if (limit > 0 && static_cast<size_t>(limit) < jobs.size()) jobs.resize(static_cast<size_t>(limit));
      }
      const double load = t["load"] ? t["load"].as<double>() : 0;
      if (!(load >= 0 && load <= 100)) return MakeError(ErrorCode::kParse, "{}: trace.load must be in [0, 100]", where(t["load"]));
      // A backlog: the arrivals of the first backlog_s (after compression)
      // are already waiting at the start, so the cluster is busy from the
      // first minute instead of filling up over hours.
      const int64_t backlog = t["backlog_s"] ? t["backlog_s"].as<int64_t>() : 0;
      if (backlog < 0) return MakeError(ErrorCode::kParse, "{}: trace.backlog_s must be >= 0", where(t["backlog_s"]));
      if (!jobs.empty()) {
        TIDAL_ASSIGN_OR_RETURN(sim::ArrivalScale scale, sim::ScaleArrivals(jobs, total_gpus, load, 0));
        (void)scale;
        const int64_t t0 = *jobs.front().submit_time_s;
        for (size_t i = 0; i < jobs.size(); ++i) {
          Job& j = jobs[i];
          j.submit_time_s = std::max<int64_t>(0, *j.submit_time_s - t0 - backlog);
          j.id = kTraceIdBase + static_cast<JobId>(i);
          j.end_time_s.reset();
          j.scheduled_time_s.reset();
        }
      }
      c.trace = std::move(jobs);
      c.trace_source = jp;
    }
    if (const YAML::Node k = doc["clock"]) {
      for (const auto& kv : k)
        if (kv.first.as<std::string>() != "speed")
          return MakeError(ErrorCode::kParse, "{}: unknown key clock.{} (known: speed)", where(kv.first), kv.first.as<std::string>());
      if (k["speed"]) c.speed = k["speed"].as<double>();
      if (!(c.speed > 0 && c.speed <= 1e6)) return MakeError(ErrorCode::kParse, "{}: clock.speed must be in (0, 1e6]", where(k));
    }
    std::string tenants = "proportional";
    if (const YAML::Node s = doc["scheduler"]) {
      static const std::set<std::string> sk = {"placer", "queue", "tenants", "seed", "start_estimate_samples",
                                               "checkpoint_interval_s", "restart_penalty_s"};
      for (const auto& kv : s)
        if (!sk.contains(kv.first.as<std::string>()))
          return MakeError(ErrorCode::kParse,
                           "{}: unknown key scheduler.{} (known: placer, queue, tenants, seed, start_estimate_samples, "
                           "checkpoint_interval_s, restart_penalty_s)",
                           where(kv.first), kv.first.as<std::string>());
      if (s["placer"]) c.placer = s["placer"].as<std::string>();
      if (s["queue"]) {
        auto q = ParseQueuePolicy(s["queue"].as<std::string>());
        if (!q) return MakeError(ErrorCode::kParse, "{}: scheduler.queue: {}", where(s["queue"]), q.error().message);
        c.queue = *q;
      }
      if (s["tenants"]) tenants = s["tenants"].as<std::string>();
      if (s["seed"]) c.seed = s["seed"].as<uint64_t>();
      if (s["start_estimate_samples"]) c.start_estimate_samples = s["start_estimate_samples"].as<int>();
      if (c.start_estimate_samples < 1 || c.start_estimate_samples > 1000)
        return MakeError(ErrorCode::kParse, "{}: scheduler.start_estimate_samples must be in [1, 1000]", where(s));
      if (s["checkpoint_interval_s"]) c.checkpoint_interval_s = s["checkpoint_interval_s"].as<int64_t>();
      if (s["restart_penalty_s"]) c.restart_penalty_s = s["restart_penalty_s"].as<int64_t>();
    }
    if (c.placer == "fgd") return MakeError(ErrorCode::kParse, "{}: scheduler.placer fgd needs a workload's typical pods; the daemon runs the others", path);
    if (auto p = plugins::MakePolicyProfile(c.placer, nullptr); !p) {
      return MakeError(ErrorCode::kParse, "{}: scheduler.placer: {}", path, p.error().message);
    }
    if (UsesTenantQueue(c.queue) || tenants != "none") {
      if (tenants == "proportional") {
        std::map<std::string, double> by_group;
        for (const Job& j : c.trace)
          if (!j.group.empty()) by_group[j.group] += static_cast<double>(j.TotalGpuMilli()) / kMilliPerGpu * static_cast<double>(*j.duration_s);
        if (by_group.empty())
          return MakeError(ErrorCode::kParse, "{}: scheduler.tenants: proportional needs a trace with a tenant column", path);
        std::vector<tenancy::GroupUsage> groups;
        for (const auto& [g, v] : by_group) groups.push_back({g, v});
        TIDAL_ASSIGN_OR_RETURN(tenancy::TenantTree t, tenancy::ProportionalTenants(std::move(groups), total_gpus));
        c.tenants = std::make_shared<const tenancy::TenantTree>(std::move(t));
      } else if (tenants != "none") {
        const std::string tp = Resolve(base, tenants);
        TIDAL_ASSIGN_OR_RETURN(std::string t_text, ReadFileToString(tp));
        digest_input += t_text;
        TIDAL_ASSIGN_OR_RETURN(tenancy::TenantTree t, tenancy::ReadTenantsFile(tp));
        c.tenants = std::make_shared<const tenancy::TenantTree>(std::move(t));
      } else {
        return MakeError(ErrorCode::kParse, "{}: scheduler.queue {} needs tenants (proportional or a tenants file)", path,
                         QueuePolicyName(c.queue));
      }
    }
    if (doc["market"]) {
      const std::string mp = Resolve(base, doc["market"].as<std::string>());
      TIDAL_ASSIGN_OR_RETURN(std::string m_text, ReadFileToString(mp));
      digest_input += m_text;
      TIDAL_ASSIGN_OR_RETURN(market::MarketConfig m, market::ReadMarketFile(mp));
      c.market = std::move(m);
    }
    if (doc["reports"]) c.reports_dir = Resolve(base, doc["reports"].as<std::string>());
  } catch (const YAML::Exception& e) {
    return MakeError(ErrorCode::kParse, "{}:{}: {}", path, e.mark.line + 1, e.msg);
  }
  c.digest = Sha256Hex(digest_input);
  return c;
}

}  // namespace tidal::server
