// `tidal cgroup plan --topo FILE --gpus 0,1 --tier standard --kind training
//   --cpus 16 --memory 128GiB [--format files|systemd|k8s|k8s-json|json]`:
// the cgroup v2 settings of one co-located container (docs/isolation.md) on
// the node whose `nvidia-smi topo -m` output FILE is. Bad input: the
// message (what, where, what to do) on stderr and exit status 2.
#include <memory>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "common/csv.h"
#include "isolation/cgroup_writers.h"
#include "topology/readers/text_lines.h"

namespace tidal::cli {
namespace {

using namespace tidal::isolation;

struct CgroupArgs {
  std::string topo, gpus, tier = "standard", kind = "training", memory, format = "files", name = "job";
  std::string reserve, device, device_path, section = "service";
  double cpus = 0;
  int cpus_total = 0;
  int64_t checkpoint_mbps = 0;
  bool borrowed = false, colocated = false;
};

constexpr int kBadInput = 2;

// "128GiB", "128Gi", "512MiB", "1TiB" or a bare number of MiB.
Result<int64_t> ParseMemoryMib(std::string_view s) {
  struct Unit {
    std::string_view suffix;
    int64_t mib;
  };
  for (const Unit u : {Unit{"TiB", 1 << 20}, Unit{"Ti", 1 << 20}, Unit{"GiB", 1024}, Unit{"Gi", 1024}, Unit{"MiB", 1}, Unit{"Mi", 1},
                       Unit{"", 1}}) {
    if (!s.ends_with(u.suffix)) continue;
    const auto v = topo::ParseDecimal(s.substr(0, s.size() - u.suffix.size()), (int64_t{1} << 42) / u.mib);
    if (v) return *v * u.mib;
    break;
  }
  return MakeError(ErrorCode::kInvalidArgument, "--memory '{}': give a whole number of MiB, GiB or TiB (e.g. 128GiB, 512MiB)",
                   topo::Printable(s));
}

Result<std::optional<BlockDevice>> ParseDevice(const CgroupArgs& a) {
  if (a.device.empty()) return std::optional<BlockDevice>{};
  const size_t colon = a.device.find(':');
  const auto ma = topo::ParseDecimal(a.device.substr(0, colon), 4095);
  const auto mi = colon == std::string::npos ? std::nullopt : topo::ParseDecimal(a.device.substr(colon + 1), 1048575);
  if (!ma || !mi) {
    return MakeError(ErrorCode::kInvalidArgument, "--checkpoint-device '{}': give MAJ:MIN as `lsblk -o NAME,MAJ:MIN` shows it (e.g. 259:0)",
                     topo::Printable(a.device));
  }
  return BlockDevice{static_cast<int>(*ma), static_cast<int>(*mi), a.device_path};
}

Result<CgroupSettings> Plan(const CgroupArgs& a) {
  TIDAL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(a.topo));
  TIDAL_ASSIGN_OR_RETURN(topo::NodeAffinity aff, topo::ReadNvidiaSmiAffinity(text, a.topo));
  NodeLayoutOptions o;
  o.cpus_total = a.cpus_total;
  o.inference_reserved_cpus = a.reserve;
  TIDAL_ASSIGN_OR_RETURN(o.checkpoint_device, ParseDevice(a));
  TIDAL_ASSIGN_OR_RETURN(NodeLayout n, NodeLayoutFromAffinity(aff, o));
  ContainerRequest c;
  c.name = a.name;
  TIDAL_ASSIGN_OR_RETURN(c.tier, tenancy::ParseTier(a.tier));
  TIDAL_ASSIGN_OR_RETURN(c.kind, ParseWorkloadKind(a.kind));
  c.cpus = a.cpus;
  TIDAL_ASSIGN_OR_RETURN(c.memory_mib, ParseMemoryMib(a.memory));
  auto gpus = topo::ParseCpuList(a.gpus);
  if (!gpus) return MakeError(ErrorCode::kInvalidArgument, "--gpus '{}': {}; give GPU indices such as 0,1 or 0-3", topo::Printable(a.gpus), gpus.error().message);
  c.gpus = *gpus;
  c.checkpoint_write_mbps = a.checkpoint_mbps;
  c.borrowed = a.borrowed;
  c.colocated_with_inference = a.colocated;
  return PlanCgroup(c, n, DefaultIsolationPolicy());
}

int Run(const CgroupArgs& a) {
  auto s = Plan(a);
  if (!s) {
    fmt::print(stderr, "tidal cgroup plan: {}\n", s.error().message);
    return kBadInput;
  }
  if (a.format == "files") {
    for (const auto& n : s->notes) fmt::print("# {}\n", n);
    for (const auto& f : CgroupFiles(*s)) fmt::print("{}: {}\n", f.name, f.value);
  } else if (a.format == "systemd") {
    const SystemdSection sec = a.section == "slice" ? SystemdSection::kSlice : a.section == "scope" ? SystemdSection::kScope : SystemdSection::kService;
    fmt::print("{}", SystemdDropIn(*s, sec));
  } else if (a.format == "k8s") {
    fmt::print("{}", KubernetesResourcesYaml(*s));
  } else if (a.format == "k8s-json") {
    fmt::print("{}\n", KubernetesResourcesJson(*s).dump(2));
  } else {
    nlohmann::ordered_json j;
    j["container"] = s->request.name;
    j["files"] = nlohmann::ordered_json::object();
    for (const auto& f : CgroupFiles(*s)) j["files"][f.name] = f.value;
    j["notes"] = s->notes;
    fmt::print("{}\n", j.dump(2));
  }
  return 0;
}

}  // namespace

void RegisterCgroupCommand(CLI::App& app) {
  auto* cg = app.add_subcommand("cgroup", "cgroup v2 isolation of co-located containers (docs/isolation.md)");
  cg->require_subcommand(1);
  auto a = std::make_shared<CgroupArgs>();
  auto* plan = cg->add_subcommand("plan", "Print one container's cgroup v2 settings (exit 2 on bad input)");
  plan->add_option("--topo", a->topo, "the node's `nvidia-smi topo -m` output")->required();
  plan->add_option("--gpus", a->gpus, "node-local GPU indices, e.g. 0,1 (none: a CPU-only container)");
  plan->add_option("--tier", a->tier, "guaranteed, standard or spot")->capture_default_str();
  plan->add_option("--kind", a->kind, "training or inference")->capture_default_str();
  plan->add_option("--cpus", a->cpus, "CPUs, to 1/1000")->required();
  plan->add_option("--memory", a->memory, "memory, e.g. 128GiB or 512MiB")->required();
  plan->add_option("--name", a->name, "container name (a DNS-1123 label)")->capture_default_str();
  plan->add_option("--checkpoint-mbps", a->checkpoint_mbps, "checkpoint writes in MB/s (io.max); needs --checkpoint-device");
  plan->add_option("--checkpoint-device", a->device, "the checkpoint block device as MAJ:MIN");
  plan->add_option("--checkpoint-device-path", a->device_path, "its device node, for systemd (default /dev/block/MAJ:MIN)");
  plan->add_option("--reserve", a->reserve, "CPUs kept for inference, as a cpu list");
  plan->add_option("--cpus-total", a->cpus_total, "the node's CPU count (default: from the affinity lists)");
  plan->add_flag("--borrowed", a->borrowed, "standard tier running on borrowed quota");
  plan->add_flag("--colocated", a->colocated, "inference runs on the same node");
  plan->add_option("--format", a->format, "files, systemd, k8s, k8s-json or json")
      ->check(CLI::IsMember({"files", "systemd", "k8s", "k8s-json", "json"}))
      ->capture_default_str();
  plan->add_option("--systemd-section", a->section, "service, slice or scope")
      ->check(CLI::IsMember({"service", "slice", "scope"}))
      ->capture_default_str();
  plan->callback([a] { SetExitCode(Run(*a)); });
}

}  // namespace tidal::cli
