// The interface files, the systemd drop-in and the Kubernetes resources of
// planned settings (the directory I/O is in cgroup_dir.cc).
#include "isolation/cgroup_writers.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

namespace tidal::isolation {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max();  // "max"

std::string Bytes(std::optional<int64_t> v) { return v ? fmt::format("{}", *v) : "max"; }

std::string CpuMax(const CgroupSettings& s) {
  return fmt::format("{} {}", s.cpu_quota_us ? fmt::format("{}", *s.cpu_quota_us) : "max", s.cpu_period_us);
}

std::string IoMaxLine(const IoMax& io) { return fmt::format("{}:{} rbps=max wbps={} riops=max wiops=max", io.major, io.minor, io.wbps); }

// Kubernetes quantities: whole CPUs or millicores; Gi where exact, else Mi.
std::string CpuQuantity(int64_t milli) { return milli % 1000 == 0 ? fmt::format("{}", milli / 1000) : fmt::format("{}m", milli); }
std::string MemQuantity(int64_t mib) { return mib % 1024 == 0 ? fmt::format("{}Gi", mib / 1024) : fmt::format("{}Mi", mib); }

struct K8sValues {
  std::optional<int64_t> limit_milli;  // none: no CPU limit
  int64_t request_milli = 0;
  int64_t limit_mib = 0, request_mib = 0;
  bool guaranteed = false;
};

K8sValues K8s(const CgroupSettings& s) {
  K8sValues k;
  const int64_t asked = std::llround(std::clamp(s.request.cpus, 0.0, 1e9) * 1000);
  if (s.cpu_quota_us) k.limit_milli = *s.cpu_quota_us * 1000 / std::max<int64_t>(s.cpu_period_us, 1);
  // Kubernetes wants requests <= limits, so a quota the policy lowered lowers the request too.
  k.request_milli = k.limit_milli ? std::min(asked, *k.limit_milli) : asked;
  k.limit_mib = s.memory_max_bytes / kMiB;
  k.request_mib = std::min(s.request.memory_mib, k.limit_mib);
  k.guaranteed = k.limit_milli && *k.limit_milli == k.request_milli && k.limit_mib == k.request_mib;
  return k;
}

std::string Describe(const CgroupSettings& s) {
  return fmt::format("{} ({} {}{})", s.request.name, tenancy::TierName(s.request.tier), WorkloadKindName(s.request.kind),
                     s.request.borrowed ? ", borrowed" : "");
}

// A small YAML rendering of the JSON: objects as blocks, arrays of objects
// as "- " items, every scalar a double-quoted string (valid YAML).
void Yaml(const nlohmann::ordered_json& j, int indent, bool item, std::string& out) {
  bool first = true;
  for (const auto& [key, v] : j.items()) {
    const std::string pad(static_cast<size_t>(indent), ' ');
    const std::string lead = item && first ? std::string(static_cast<size_t>(std::max(indent - 2, 0)), ' ') + "- " : pad;
    first = false;
    if (v.is_object()) {
      out += lead + key + ":\n";
      Yaml(v, indent + 2, false, out);
    } else if (v.is_array()) {
      out += lead + key + ":\n";
      for (const auto& e : v) Yaml(e, indent + 2, true, out);
    } else {
      out += lead + key + ": " + v.dump() + "\n";
    }
  }
}

}  // namespace

std::vector<CgroupFile> CgroupWritePlan(const CgroupSettings& s, const MemoryLimits& cur) {
  std::vector<CgroupFile> out;
  if (!s.cpuset_mems.empty()) out.push_back({"cpuset.mems", topo::FormatCpuList(s.cpuset_mems)});
  if (!s.cpuset_cpus.empty()) out.push_back({"cpuset.cpus", topo::FormatCpuList(s.cpuset_cpus)});
  out.push_back({"cpu.weight", fmt::format("{}", s.cpu_weight)});
  out.push_back({"cpu.max", CpuMax(s)});
  const CgroupFile min{"memory.min", fmt::format("{}", s.memory_min_bytes)};
  const CgroupFile high{"memory.high", Bytes(s.memory_high_bytes)};
  const CgroupFile max{"memory.max", Bytes(s.memory_max_bytes)};
  const bool lower_min = s.memory_min_bytes < cur.min;
  const bool raise_max = s.memory_max_bytes > cur.max.value_or(kUnlimited);
  if (lower_min) out.push_back(min);
  if (raise_max) out.push_back(max);
  out.push_back(high);
  if (!raise_max) out.push_back(max);
  if (!lower_min) out.push_back(min);
  if (s.io_max) out.push_back({"io.max", IoMaxLine(*s.io_max)});
  return out;
}

std::vector<CgroupFile> CgroupFiles(const CgroupSettings& s) { return CgroupWritePlan(s, MemoryLimits{}); }

std::string SystemdDropIn(const CgroupSettings& s, SystemdSection section) {
  const char* name = section == SystemdSection::kSlice ? "Slice" : section == SystemdSection::kScope ? "Scope" : "Service";
  std::string out = fmt::format(
      "# tidal: cgroup v2 settings for {} as a systemd drop-in (systemd.resource-control(5)).\n"
      "# Save as /etc/systemd/system/UNIT.d/50-tidal-isolation.conf and run `systemctl daemon-reload`.\n"
      "# CPUWeight= sets cpu.weight, CPUQuota= and CPUQuotaPeriodSec= cpu.max, AllowedCPUs= cpuset.cpus,\n"
      "# AllowedMemoryNodes= cpuset.mems, MemoryMin/High/Max= memory.min/high/max, IOWriteBandwidthMax= io.max.\n",
      Describe(s));
  std::string quota;
  if (s.cpu_quota_us) {
    // CPUQuota= is a percentage of one CPU, to 1/100 %.
    const int64_t period = std::max<int64_t>(s.cpu_period_us, 1);
    const int64_t permyriad = *s.cpu_quota_us * 10000 / period;
    quota = permyriad % 100 == 0 ? fmt::format("{}%", permyriad / 100) : fmt::format("{}.{:02}%", permyriad / 100, permyriad % 100);
    if (*s.cpu_quota_us * 10000 % period != 0) {
      out += fmt::format("# CPUQuota= holds 1/100 %: cpu.max's {} µs per {} µs is rounded down to {}.\n", *s.cpu_quota_us, period, quota);
    }
  }
  const std::string period = s.cpu_period_us % 1000 == 0 ? fmt::format("{}ms", s.cpu_period_us / 1000) : fmt::format("{}us", s.cpu_period_us);
  out += fmt::format("[{}]\nCPUWeight={}\nCPUQuota={}\nCPUQuotaPeriodSec={}\n", name, s.cpu_weight, quota, period);
  if (!s.cpuset_cpus.empty()) out += fmt::format("AllowedCPUs={}\n", topo::FormatCpuList(s.cpuset_cpus));
  if (!s.cpuset_mems.empty()) out += fmt::format("AllowedMemoryNodes={}\n", topo::FormatCpuList(s.cpuset_mems));
  out += fmt::format("MemoryMin={}\nMemoryHigh={}\nMemoryMax={}\n", s.memory_min_bytes,
                     s.memory_high_bytes ? fmt::format("{}", *s.memory_high_bytes) : "infinity", s.memory_max_bytes);
  if (s.io_max) out += fmt::format("IOWriteBandwidthMax={} {}\n", s.io_max->path, s.io_max->wbps);
  return out;
}

nlohmann::ordered_json KubernetesResourcesJson(const CgroupSettings& s) {
  const K8sValues k = K8s(s);
  nlohmann::ordered_json ann = nlohmann::ordered_json::object();
  const std::string p = "cgroup.tidal.io/";
  ann[p + "cpu.weight"] = fmt::format("{}", s.cpu_weight);
  if (!s.cpuset_cpus.empty()) ann[p + "cpuset.cpus"] = topo::FormatCpuList(s.cpuset_cpus);
  if (!s.cpuset_mems.empty()) ann[p + "cpuset.mems"] = topo::FormatCpuList(s.cpuset_mems);
  ann[p + "memory.min"] = fmt::format("{}", s.memory_min_bytes);
  ann[p + "memory.high"] = Bytes(s.memory_high_bytes);
  if (s.io_max) ann[p + "io.max"] = IoMaxLine(*s.io_max);
  nlohmann::ordered_json res;
  res["requests"]["cpu"] = CpuQuantity(k.request_milli);
  res["requests"]["memory"] = MemQuantity(k.request_mib);
  if (k.limit_milli) res["limits"]["cpu"] = CpuQuantity(*k.limit_milli);
  res["limits"]["memory"] = MemQuantity(k.limit_mib);
  nlohmann::ordered_json container;
  container["name"] = s.request.name;
  container["resources"] = res;
  nlohmann::ordered_json out;
  out["metadata"]["annotations"] = ann;
  out["spec"]["containers"] = nlohmann::ordered_json::array({container});
  return out;
}

std::string KubernetesResourcesYaml(const CgroupSettings& s) {
  const K8sValues k = K8s(s);
  std::string out = fmt::format("# tidal: Kubernetes resources for {}, as a Pod patch.\n", Describe(s));
  const bool whole = k.request_milli % 1000 == 0;
  out += fmt::format("# QoS class {}. What the kubelet makes of them (cgroup v2):\n",
                     k.guaranteed ? "Guaranteed (requests equal limits)" : "Burstable (requests below limits, or no CPU limit)");
  if (k.limit_milli) {
    out += fmt::format("#   limits.cpu -> cpu.max \"{} 100000\" at the kubelet's default 100ms cpuCFSQuotaPeriod (tidal: \"{} {}\")\n",
                       *k.limit_milli * 100, *s.cpu_quota_us, s.cpu_period_us);
  } else {
    out += "#   no limits.cpu -> cpu.max \"max 100000\", as tidal planned\n";
  }
  out += fmt::format("#   requests.cpu -> cpu.weight by the runtime's conversion of CPU shares, not tidal's {}\n", s.cpu_weight);
  out += fmt::format("#   limits.memory -> memory.max {}\n", k.limit_mib * kMiB);
  out += "#   requests.memory -> memory.min (memory.low for Burstable pods in newer kubelets) only with the MemoryQoS\n"
         "#     feature gate and its reservation policy; memory.high only with memoryThrottlingFactor, by its formula\n";
  out += fmt::format("#   cpuset.cpus/mems -> only with the static CPU manager policy{}; the kubelet picks the CPUs\n",
                     k.guaranteed && whole ? " (this pod qualifies: Guaranteed, whole CPUs)"
                                           : ", Guaranteed QoS and whole CPUs (this pod does not qualify)");
  out += "#   io.max -> no Kubernetes resource\n";
  out += "# The cgroup.tidal.io/ annotations carry tidal's value of each such file, for a node agent to write.\n";
  Yaml(KubernetesResourcesJson(s), 0, false, out);
  return out;
}

}  // namespace tidal::isolation
