// `tidal topo show FILE [--format F] [--json]`,
// `tidal topo export FILE --to slurm-conf|slurm-yaml|kueue|kai|volcano|tidal-yaml [--format F]` and
// `tidal topo nvml [--lib PATH]` (this node's GPUs through NVML, as JSON).
// Bad or partial input: the reader's message (file, line, problem) on stderr
// and exit status 2.
#include <algorithm>
#include <map>
#include <memory>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "common/csv.h"
#include "nvml/nvml.h"
#include "topology/formats.h"

namespace tidal::cli {
namespace {

struct TopoArgs {
  std::string file, format = "auto", to;
  bool json = false;
};

constexpr int kBadInput = 2;

int Fail(std::string_view cmd, const Error& e, int code) {
  fmt::print(stderr, "tidal topo {}: {}\n", cmd, e.message);
  return code;
}

Result<std::pair<topo::Topology, topo::Format>> Load(const TopoArgs& a) {
  TIDAL_ASSIGN_OR_RETURN(topo::Format f, topo::ParseFormat(a.format));
  TIDAL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(a.file));
  if (f == topo::Format::kAuto) {
    TIDAL_ASSIGN_OR_RETURN(f, topo::DetectFormat(text, a.file));
  }
  TIDAL_ASSIGN_OR_RETURN(topo::Topology t, topo::ParseTopology(text, a.file, f));
  return std::make_pair(std::move(t), f);
}

nlohmann::json LinkJson(const topo::LinkSpec& l) {
  return {{"gbps", l.gbps}, {"latency_us", l.latency_us}, {"hops", l.hops}, {"oversubscription", l.oversubscription}};
}

nlohmann::json ShowJson(const topo::Topology& t, topo::Format f) {
  using namespace topo;
  nlohmann::json j;
  j["source"] = t.source();
  j["format"] = std::string(FormatName(f));
  j["hosts"] = t.num_hosts();
  j["gpus"] = t.gpus_known() ? nlohmann::json(t.total_gpus()) : nlohmann::json(nullptr);
  j["levels"] = nlohmann::json::array();
  for (Level l : t.levels()) {
    const auto ds = t.domains_at(l);
    nlohmann::json lv;
    lv["level"] = std::string(LevelName(l));
    lv["domains"] = ds.size();
    if (l != Level::kGpu) {
      int32_t gmin = INT32_MAX, gmax = 0, hmin = INT32_MAX, hmax = 0;
      std::map<std::string, std::pair<LinkSpec, int64_t>> links;
      int64_t nvlink = 0, rails = 0;
      for (DomainId d : ds) {
        gmin = std::min(gmin, t.gpus_under(d)), gmax = std::max(gmax, t.gpus_under(d));
        hmin = std::min(hmin, t.hosts_under(d)), hmax = std::max(hmax, t.hosts_under(d));
        const auto& x = t.domain(d);
        nvlink += x.nvlink;
        rails = std::max<int64_t>(rails, x.rails);
        const std::string key = LinkJson(x.link).dump();
        auto& e = links[key];
        e.first = x.link;
        ++e.second;
      }
      if (t.gpus_known()) lv["gpus_per_domain"] = {{"min", gmin}, {"max", gmax}};
      if (LevelIndex(l) > LevelIndex(Level::kNode)) lv["hosts_per_domain"] = {{"min", hmin}, {"max", hmax}};
      if (nvlink > 0) lv["nvlink_domains"] = nvlink;
      if (rails > 0) lv["rails"] = rails;
      lv["links"] = nlohmann::json::array();
      for (const auto& [key, e] : links) {
        nlohmann::json lj = LinkJson(e.first);
        lj["domains"] = e.second;
        lv["links"].push_back(lj);
      }
    }
    j["levels"].push_back(lv);
  }
  // NVLink domains by size.
  std::map<int32_t, int64_t> nv_sizes;
  std::vector<uint8_t> seen(static_cast<size_t>(t.num_domains()), 0);
  for (DomainId g : t.domains_at(Level::kGpu)) {
    const DomainId nv = t.NvlinkDomain(g);
    if (nv == g || seen[static_cast<size_t>(nv)]) continue;
    seen[static_cast<size_t>(nv)] = 1;
    ++nv_sizes[t.gpus_under(nv)];
  }
  j["nvlink_domains"] = nlohmann::json::array();
  for (const auto& [size, count] : nv_sizes) j["nvlink_domains"].push_back({{"gpus", size}, {"count", count}});
  // Switch-level domains (above hosts), with parents, for a reader to check.
  j["domains"] = nlohmann::json::array();
  for (DomainId d = 0; d < t.num_domains(); ++d) {
    if (LevelIndex(t.level(d)) <= LevelIndex(Level::kNode)) continue;
    const auto& x = t.domain(d);
    nlohmann::json dj = {{"name", x.name},
                         {"level", std::string(LevelName(x.level))},
                         {"parent", x.parent == kNoDomain ? nlohmann::json(nullptr) : nlohmann::json(t.domain(x.parent).name)},
                         {"hosts", t.hosts_under(d)},
                         {"gpus", t.gpus_known() ? nlohmann::json(t.gpus_under(d)) : nlohmann::json(nullptr)},
                         {"link", LinkJson(x.link)}};
    if (x.nvlink) dj["nvlink"] = true;
    if (x.rails) dj["rails"] = x.rails;
    if (x.switches > 1) dj["switches"] = x.switches;
    j["domains"].push_back(dj);
  }
  j["notes"] = t.notes();
  return j;
}

void ShowText(const topo::Topology& t, topo::Format f) {
  const nlohmann::json j = ShowJson(t, f);
  fmt::print("topology {} ({}): {} hosts, {} GPUs\n", t.source(), topo::FormatName(f), t.num_hosts(),
             t.gpus_known() ? std::to_string(t.total_gpus()) : std::string("unknown (the format does not give GPU counts)"));
  fmt::print("  {:<8} {:>8} {:>14} {:>14}  links (GB/s per GPU, latency us, hops, oversubscription)\n", "level", "domains",
             "GPUs/domain", "hosts/domain");
  for (const auto& lv : j["levels"]) {
    std::string gpd = "", hpd = "", links;
    if (lv.contains("gpus_per_domain")) {
      const auto& g = lv["gpus_per_domain"];
      gpd = g["min"] == g["max"] ? g["min"].dump() : g["min"].dump() + "-" + g["max"].dump();
    }
    if (lv.contains("hosts_per_domain")) {
      const auto& h = lv["hosts_per_domain"];
      hpd = h["min"] == h["max"] ? h["min"].dump() : h["min"].dump() + "-" + h["max"].dump();
    }
    if (lv.contains("links")) {
      for (const auto& l : lv["links"]) {
        links += fmt::format("{}{:g}/{:g}/{}", links.empty() ? "" : "; ", l["gbps"].get<double>(), l["latency_us"].get<double>(),
                             l["hops"].get<int>());
        if (l["oversubscription"].get<double>() != 1) links += fmt::format("/{:g}:1", l["oversubscription"].get<double>());
        if (lv["links"].size() > 1) links += fmt::format(" (x{})", l["domains"].get<int64_t>());
      }
    }
    std::string extra;
    if (lv.contains("nvlink_domains")) extra += fmt::format("  [{} NVLink]", lv["nvlink_domains"].get<int64_t>());
    if (lv.contains("rails")) extra += fmt::format("  [{} rails]", lv["rails"].get<int64_t>());
    fmt::print("  {:<8} {:>8} {:>14} {:>14}  {}{}\n", lv["level"].get<std::string>(), lv["domains"].get<int64_t>(), gpd, hpd, links, extra);
  }
  for (const auto& nv : j["nvlink_domains"])
    fmt::print("  NVLink domains: {} of {} GPUs\n", nv["count"].get<int64_t>(), nv["gpus"].get<int64_t>());
  for (const auto& n : t.notes()) fmt::print("  note: {}\n", n);
}

int RunShow(const TopoArgs& a) {
  auto r = Load(a);
  if (!r) return Fail("show", r.error(), kBadInput);
  if (a.json) fmt::print("{}\n", ShowJson(r->first, r->second).dump(2));
  else ShowText(r->first, r->second);
  return 0;
}

int RunExport(const TopoArgs& a) {
  auto to = topo::ParseExportFormat(a.to);
  if (!to) return Fail("export", to.error(), kBadInput);
  auto r = Load(a);
  if (!r) return Fail("export", r.error(), kBadInput);
  auto text = topo::WriteTopology(r->first, *to);
  if (!text) return Fail("export", text.error(), kBadInput);
  fmt::print("{}", *text);
  return 0;
}

// This node's GPUs read through NVML: the inventory, the `topo -m` matrix
// and the host layout tidal derives from it (the one the nvidia-smi reader
// derives from that matrix).
int RunNvml(const std::string& lib_path) {
  auto lib = nvml::Library::Open(lib_path);
  if (!lib) return Fail("nvml", lib.error(), kBadInput);
  auto node = (*lib)->Read();
  if (!node) return Fail("nvml", node.error(), 1);
  nlohmann::ordered_json out = nvml::ToJson(*node);
  const topo::nvsmi::Matrix m = nvml::ToMatrix(*node);
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (int a = 0; a < m.gpus; ++a) {
    nlohmann::ordered_json row = nlohmann::ordered_json::array();
    for (int b = 0; b < m.gpus; ++b) row.push_back(topo::nvsmi::CellName(m.At(a, b)));
    rows.push_back(std::move(row));
  }
  out["matrix"] = std::move(rows);
  std::vector<std::string> notes;
  const topo::HostLayout L = topo::nvsmi::LayoutFromMatrix(m, "nvml", notes);
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  for (const auto& g : L.groups) {
    groups.push_back({{"level", topo::LevelName(g.level)}, {"name", g.name}, {"gpus", g.gpus}, {"nvlink", g.nvlink}, {"gbps", g.link.gbps}});
  }
  out["layout"] = {{"gpus", L.gpus}, {"nvlink", L.nvlink}, {"gbps", L.link.gbps}, {"groups", std::move(groups)}};
  for (const std::string& n : notes) out["notes"].push_back(n);
  fmt::print("{}\n", out.dump(2));
  return 0;
}

}  // namespace

void RegisterTopoCommands(CLI::App& app) {
  auto* topo = app.add_subcommand("topo", "Read, show and convert interconnect topologies");
  topo->require_subcommand(1);
  auto args = std::make_shared<TopoArgs>();
  const std::string formats = "auto, nvidia-smi, ibnetdiscover, slurm-conf, slurm-yaml, k8s-labels, lingjun-csv, tidal-yaml";
  auto* show = topo->add_subcommand("show", "Print levels, domains per level, GPUs, links and bandwidths (exit 2 on bad input)");
  show->add_option("file", args->file, "topology file")->required();
  show->add_option("--format", args->format, formats)->capture_default_str();
  show->add_flag("--json", args->json, "print JSON");
  show->callback([args] { SetExitCode(RunShow(*args)); });
  auto* exp = topo->add_subcommand("export", "Write the topology in another format on stdout (exit 2 on bad input)");
  exp->add_option("file", args->file, "topology file")->required();
  exp->add_option("--to", args->to, "slurm-conf, slurm-yaml, kueue, kai, volcano or tidal-yaml")->required();
  exp->add_option("--format", args->format, formats)->capture_default_str();
  exp->callback([args] { SetExitCode(RunExport(*args)); });
  auto lib = std::make_shared<std::string>("libnvidia-ml.so.1");
  auto* nv = topo->add_subcommand("nvml", "This node's GPUs through NVML as JSON: devices, MIG, NVLinks, the topo -m matrix, the layout (exit 2 without NVML)");
  nv->add_option("--lib", *lib, "the NVML library to load")->capture_default_str();
  nv->callback([lib] { SetExitCode(RunNvml(*lib)); });
}

}  // namespace tidal::cli
