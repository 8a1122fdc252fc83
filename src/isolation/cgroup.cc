// The isolation policy and the plan: what each (kind, tier) class gets in
// cpu, cpuset, memory and io (docs/isolation.md has the table and why).
#include "isolation/cgroup.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "isolation/sorted_sets.h"
#include "topology/readers/text_lines.h"

namespace tidal::isolation {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kMinQuotaUs = 1000;       // kernel/sched/core.c: min_cfs_quota_period (1 ms)
constexpr int64_t kMaxPeriodUs = 1000000;   // kernel/sched/core.c: max_cfs_quota_period (1 s)
constexpr int64_t kMaxMemoryMib = int64_t{1} << 32;  // 4 PiB: far above any node, and bytes never overflow
constexpr int64_t kMaxWriteMbps = 10000000;          // 10 TB/s
constexpr int64_t kMinWbps = 1000000;                // the ladder's floor: 1 MB/s

// v * pm / 1000 without overflow (v >= 0, 0 <= pm <= 10000), rounded down.
int64_t ScalePermille(int64_t v, int64_t pm) { return v / 1000 * pm + v % 1000 * pm / 1000; }

std::string ClassName(WorkloadKind k, Tier t) { return fmt::format("{} {}", tenancy::TierName(t), WorkloadKindName(k)); }

bool IsDnsLabel(std::string_view s) {
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (s.empty() || s.size() > 63 || !alnum(s.front()) || !alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return alnum(c) || c == '-'; });
}

Status ValidateRequest(const ContainerRequest& c, const NodeLayout& n) {
  if (!IsDnsLabel(c.name)) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "container name '{}' must be a DNS-1123 label (1-63 lowercase letters, digits and '-', starting and ending "
                     "with a letter or digit): it names the cgroup directory and the Kubernetes container",
                     topo::Printable(c.name));
  }
  if (!std::isfinite(c.cpus) || c.cpus <= 0 || std::llround(c.cpus * 1000) < 1) {
    return MakeError(ErrorCode::kInvalidArgument, "container {}: cpus is {}; ask for 0.001 CPUs or more (e.g. 8 or 0.5)", c.name, c.cpus);
  }
  if (c.cpus > n.cpus_total) {
    return MakeError(ErrorCode::kUnresolvable, "container {}: asks for {} CPUs but node {} has {}", c.name, c.cpus, n.name, n.cpus_total);
  }
  if (c.memory_mib <= 0 || c.memory_mib > kMaxMemoryMib) {
    return MakeError(ErrorCode::kInvalidArgument, "container {}: memory is {} MiB; ask for 1 MiB to {} MiB", c.name, c.memory_mib,
                     kMaxMemoryMib);
  }
  std::vector<int> seen;
  for (int g : c.gpus) {
    if (g < 0 || g >= static_cast<int>(n.gpus.size())) {
      const std::string has = n.gpus.empty() ? "no GPUs" : fmt::format("GPUs 0-{}", n.gpus.size() - 1);
      return MakeError(ErrorCode::kInvalidArgument, "container {}: GPU {} is not on node {}, which has {}", c.name, g, n.name, has);
    }
    if (std::find(seen.begin(), seen.end(), g) != seen.end()) {
      return MakeError(ErrorCode::kInvalidArgument, "container {}: GPU {} is listed twice", c.name, g);
    }
    seen.push_back(g);
  }
  if (c.checkpoint_write_mbps < 0 || c.checkpoint_write_mbps > kMaxWriteMbps) {
    return MakeError(ErrorCode::kInvalidArgument, "container {}: checkpoint_write_mbps is {}; give 0 (none) to {} MB/s", c.name,
                     c.checkpoint_write_mbps, kMaxWriteMbps);
  }
  if (c.checkpoint_write_mbps > 0 && !n.checkpoint_device) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "container {}: checkpoint writes of {} MB/s need node {}'s checkpoint block device for io.max; give its "
                     "MAJ:MIN (`lsblk -o NAME,MAJ:MIN`) in the node layout, or ask for 0 MB/s",
                     c.name, c.checkpoint_write_mbps, n.name);
  }
  if (c.borrowed && c.tier == Tier::kGuaranteed) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "container {}: a guaranteed container cannot run on borrowed quota (guaranteed work stays within its "
                     "tenant's floor); plan it as standard",
                     c.name);
  }
  return Ok();
}

// cpuset.cpus: the CPUs nearest the container's GPUs, less the inference
// reserve where the class may not use it; the whole node where those are
// too few (or there is no GPU). cpuset.mems: the GPUs' NUMA nodes, or left
// to the parent where that is unknown or the CPUs were widened.
Status PlanCpuset(const ContainerRequest& c, const NodeLayout& n, const ClassPolicy& cls, int64_t usable_milli, CgroupSettings& s) {
  std::vector<int> all(static_cast<size_t>(n.cpus_total));
  for (int i = 0; i < n.cpus_total; ++i) all[static_cast<size_t>(i)] = i;
  const bool exclude = !cls.may_use_reserved_cpus && !n.inference_reserved_cpus.empty();
  const std::vector<int> usable_all = exclude ? Minus(all, n.inference_reserved_cpus) : all;
  const int64_t need = (usable_milli + 999) / 1000;
  std::vector<int> cpus, nodes;
  bool numa_known = !c.gpus.empty();
  for (int g : c.gpus) {
    const auto& gpu = n.gpus[static_cast<size_t>(g)];
    cpus = Union(cpus, gpu.cpus);
    nodes = Union(nodes, gpu.numa_nodes);
    numa_known = numa_known && !gpu.numa_nodes.empty();
  }
  if (exclude) {
    const size_t before = cpus.size();
    cpus = Minus(cpus, n.inference_reserved_cpus);
    if (cpus.size() < before) {
      s.notes.push_back(fmt::format("cpuset.cpus leaves out the inference reserve {}: a {} container may not use it",
                                    topo::FormatCpuList(n.inference_reserved_cpus), ClassName(c.kind, c.tier)));
    }
  }
  if (static_cast<int64_t>(usable_all.size()) < need) {
    return MakeError(ErrorCode::kUnresolvable, "container {}: needs {} CPUs but node {} has {}{}", c.name, need, n.name,
                     usable_all.size(), exclude ? " outside the inference reserve" : "");
  }
  if (c.gpus.empty()) {
    s.notes.push_back("no GPU: cpuset.cpus is every usable CPU of the node and cpuset.mems is left to the parent");
    cpus = usable_all;
  } else if (static_cast<int64_t>(cpus.size()) < need) {
    s.notes.push_back(fmt::format(
        "the CPUs nearest GPUs {{{}}} ({} usable) are fewer than the {} the container can use: cpuset.cpus is every usable CPU "
        "of the node and cpuset.mems is left to the parent",
        fmt::join(c.gpus, ","), cpus.size(), need));
    cpus = usable_all;
    numa_known = false;
  } else if (!numa_known) {
    s.notes.push_back("a GPU's NUMA node is not known (NUMA Affinity N/A or no column): cpuset.mems is left to the parent");
  }
  s.cpuset_cpus = std::move(cpus);
  if (!numa_known) return Ok();
  int64_t node_mib = 0;
  bool sized = true;
  for (int node : nodes) {
    const auto it = n.numa_memory_mib.find(node);
    sized = sized && it != n.numa_memory_mib.end();
    if (it != n.numa_memory_mib.end()) node_mib += it->second;
  }
  if (sized && node_mib < s.memory_max_bytes / kMiB) {
    s.notes.push_back(fmt::format("NUMA node(s) {} hold {} MiB, less than memory.max ({} MiB): cpuset.mems is left to the "
                                  "parent so memory may come from other nodes",
                                  topo::FormatCpuList(nodes), node_mib, s.memory_max_bytes / kMiB));
    return Ok();
  }
  s.cpuset_mems = std::move(nodes);
  return Ok();
}

int64_t Permille(double f) {
  if (!std::isfinite(f)) return 1000;
  return std::llround(std::clamp(f, 0.0, 1.0) * 1000);
}

}  // namespace

Result<WorkloadKind> ParseWorkloadKind(std::string_view name) {
  if (name == "training") return WorkloadKind::kTraining;
  if (name == "inference") return WorkloadKind::kInference;
  return MakeError(ErrorCode::kInvalidArgument, "unknown workload kind '{}'; choose training or inference", topo::Printable(name));
}

const char* WorkloadKindName(WorkloadKind k) { return k == WorkloadKind::kInference ? "inference" : "training"; }

IsolationPolicy DefaultIsolationPolicy() {
  IsolationPolicy p;
  using K = WorkloadKind;
  // weight, cpu.max ‰ (0: max), memory.min ‰, memory.high ‰ of max (1000: max), memory.max ‰, reserve
  p.For(K::kInference, Tier::kGuaranteed) = {1000, 0, 1000, 1000, 1000, true};
  p.For(K::kInference, Tier::kStandard) = {400, 1000, 0, 950, 1000, true};
  p.For(K::kInference, Tier::kSpot) = {50, 1000, 0, 900, 1000, false};
  p.For(K::kTraining, Tier::kGuaranteed) = {200, 1000, 1000, 1000, 1000, false};
  p.For(K::kTraining, Tier::kStandard) = {100, 1000, 0, 900, 1000, false};
  p.For(K::kTraining, Tier::kSpot) = {10, 1000, 0, 800, 1000, false};
  return p;
}

Status ValidatePolicy(const IsolationPolicy& p) {
  if (p.cpu_period_us < kMinQuotaUs || p.cpu_period_us > kMaxPeriodUs) {
    return MakeError(ErrorCode::kInvalidArgument, "policy: cpu period {} µs is outside the kernel's 1000..1000000 µs", p.cpu_period_us);
  }
  if (p.colocated_reclaimable_training_cpu_permille < 1 || p.colocated_reclaimable_training_cpu_permille > 1000) {
    return MakeError(ErrorCode::kInvalidArgument, "policy: colocated_reclaimable_training_cpu_permille is {}; give 1..1000",
                     p.colocated_reclaimable_training_cpu_permille);
  }
  for (WorkloadKind k : {WorkloadKind::kTraining, WorkloadKind::kInference}) {
    for (Tier t : {Tier::kGuaranteed, Tier::kStandard, Tier::kSpot}) {
      const ClassPolicy& c = p.For(k, t);
      const std::string who = ClassName(k, t);
      if (c.cpu_weight < 1 || c.cpu_weight > 10000) {
        return MakeError(ErrorCode::kInvalidArgument, "policy {}: cpu.weight {} is outside the kernel's 1..10000", who, c.cpu_weight);
      }
      if (c.cpu_limit_permille < 0 || c.cpu_limit_permille > 10000) {
        return MakeError(ErrorCode::kInvalidArgument, "policy {}: cpu_limit_permille {}; give 0 (no limit) to 10000", who,
                         c.cpu_limit_permille);
      }
      if (c.memory_max_permille < 1 || c.memory_max_permille > 10000 || c.memory_min_permille < 0 ||
          c.memory_high_permille < 1 || c.memory_high_permille > 1000) {
        return MakeError(ErrorCode::kInvalidArgument,
                         "policy {}: memory permille out of range (min {} of 0.., high {} of 1..1000, max {} of 1..10000)", who,
                         c.memory_min_permille, c.memory_high_permille, c.memory_max_permille);
      }
      if (c.memory_min_permille > c.memory_max_permille) {
        return MakeError(ErrorCode::kInvalidArgument,
                         "policy {}: memory.min ({}‰ of the request) is above memory.max ({}‰ of it); the kernel would protect "
                         "more than the container may use: lower memory_min_permille or raise memory_max_permille",
                         who, c.memory_min_permille, c.memory_max_permille);
      }
      if (int64_t{c.memory_min_permille} * 1000 > int64_t{c.memory_max_permille} * c.memory_high_permille) {
        return MakeError(ErrorCode::kInvalidArgument,
                         "policy {}: memory.high ({}‰ of memory.max) falls below memory.min ({}‰ of the request): the container "
                         "would be throttled inside its protection; raise memory_high_permille",
                         who, c.memory_high_permille, c.memory_min_permille);
      }
    }
  }
  return Ok();
}

Result<CgroupSettings> PlanCgroup(const ContainerRequest& c, const NodeLayout& n, const IsolationPolicy& p) {
  TIDAL_RETURN_IF_ERROR(ValidatePolicy(p));
  TIDAL_RETURN_IF_ERROR(ValidateNodeLayout(n));
  TIDAL_RETURN_IF_ERROR(ValidateRequest(c, n));
  const ClassPolicy& cls = p.For(c.kind, c.tier);
  CgroupSettings s;
  s.request = c;
  s.cpu_period_us = p.cpu_period_us;
  s.cpu_weight = cls.cpu_weight;
  const int64_t milli = std::llround(c.cpus * 1000);
  int64_t usable_milli = milli;
  if (cls.cpu_limit_permille > 0) {
    int64_t limit = ScalePermille(milli, cls.cpu_limit_permille);
    const bool reclaimable = c.tier == Tier::kSpot || (c.tier == Tier::kStandard && c.borrowed);
    if (c.kind == WorkloadKind::kTraining && c.colocated_with_inference && reclaimable) {
      limit = ScalePermille(limit, p.colocated_reclaimable_training_cpu_permille);
      s.notes.push_back(fmt::format("cpu.max at {}‰ of the class quota: {} training beside inference yields CPU first",
                                    p.colocated_reclaimable_training_cpu_permille, c.borrowed ? "borrowed" : "spot"));
    }
    const int64_t quota = limit * p.cpu_period_us / 1000;
    if (quota < kMinQuotaUs) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "container {}: cpu.max quota {} µs per {} µs is below the kernel's 1000 µs minimum; ask for more CPUs or "
                       "plan with a longer period",
                       c.name, quota, p.cpu_period_us);
    }
    s.cpu_quota_us = quota;
    usable_milli = limit;
  }
  const int64_t max_mib = ScalePermille(c.memory_mib, cls.memory_max_permille);
  const int64_t min_mib = ScalePermille(c.memory_mib, cls.memory_min_permille);
  if (max_mib < 1) {
    return MakeError(ErrorCode::kInvalidArgument, "container {}: memory.max would be 0 MiB ({}‰ of {} MiB); ask for more memory", c.name,
                     cls.memory_max_permille, c.memory_mib);
  }
  s.memory_max_bytes = max_mib * kMiB;
  s.memory_min_bytes = min_mib * kMiB;
  if (cls.memory_high_permille < 1000) {
    const int64_t high_mib = ScalePermille(max_mib, cls.memory_high_permille);
    if (high_mib < min_mib) {
      return MakeError(ErrorCode::kInvalidArgument, "container {}: memory.high {} MiB would fall below memory.min {} MiB; ask for more memory",
                       c.name, high_mib, min_mib);
    }
    s.memory_high_bytes = high_mib * kMiB;
  }
  TIDAL_RETURN_IF_ERROR(PlanCpuset(c, n, cls, usable_milli, s));
  if (c.checkpoint_write_mbps > 0) {
    const BlockDevice& d = *n.checkpoint_device;
    // udev keeps /dev/block/MAJ:MIN links to every block device node.
    s.io_max = IoMax{d.major, d.minor, c.checkpoint_write_mbps * 1000000,
                     d.path.empty() ? fmt::format("/dev/block/{}:{}", d.major, d.minor) : d.path};
  }
  return s;
}

CgroupSettings Throttle(const CgroupSettings& s, double cpu_fraction, double memory_fraction, double io_fraction) {
  CgroupSettings out = s;
  if (s.request.kind == WorkloadKind::kInference) {
    out.notes.push_back("not throttled: the co-location ladder lowers training, never inference");
    return out;
  }
  const int64_t cpu_pm = Permille(cpu_fraction), mem_pm = Permille(memory_fraction), io_pm = Permille(io_fraction);
  std::vector<std::string> done;
  const bool cpus_ok = std::isfinite(s.request.cpus) && s.request.cpus > 0 && s.request.cpus < 1e9;
  if (cpu_pm < 1000 && (s.cpu_quota_us || cpus_ok)) {
    const int64_t base = s.cpu_quota_us ? std::max<int64_t>(*s.cpu_quota_us, 0)
                                        : std::llround(s.request.cpus * 1000) * std::clamp<int64_t>(s.cpu_period_us, 0, kMaxPeriodUs) / 1000;
    out.cpu_quota_us = std::max(kMinQuotaUs, ScalePermille(base, cpu_pm));
    done.push_back(fmt::format("cpu.max {} -> {} µs", s.cpu_quota_us ? fmt::format("{}", *s.cpu_quota_us) : "max", *out.cpu_quota_us));
  }
  if (mem_pm < 1000) {
    const int64_t base_mib = std::max<int64_t>(s.memory_high_bytes.value_or(s.memory_max_bytes), 0) / kMiB;
    const int64_t floor_mib = std::max<int64_t>((std::max<int64_t>(s.memory_min_bytes, 0) + kMiB - 1) / kMiB, 1);
    out.memory_high_bytes = std::max(floor_mib, ScalePermille(base_mib, mem_pm)) * kMiB;
    done.push_back(fmt::format("memory.high -> {} MiB", *out.memory_high_bytes / kMiB));
  }
  if (io_pm < 1000 && s.io_max) {
    out.io_max->wbps = std::max(kMinWbps, ScalePermille(std::max<int64_t>(s.io_max->wbps, 0), io_pm));
    done.push_back(fmt::format("io.max wbps {} -> {}", s.io_max->wbps, out.io_max->wbps));
  }
  if (!done.empty()) out.notes.push_back(fmt::format("throttled for an inference spike: {}", fmt::join(done, ", ")));
  return out;
}

}  // namespace tidal::isolation
