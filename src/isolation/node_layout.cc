// NodeLayout: from the affinity columns of `nvidia-smi topo -m`, and the
// checks a hand-built layout must pass before PlanCgroup trusts it.
#include <algorithm>
#include <iterator>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "isolation/cgroup.h"
#include "isolation/sorted_sets.h"
#include "topology/readers/text_lines.h"



namespace tidal::isolation {
namespace {

bool SortedUnique(const std::vector<int>& v) { return std::adjacent_find(v.begin(), v.end(), std::greater_equal<int>()) == v.end(); }

Status CheckList(const NodeLayout& n, const std::vector<int>& v, const std::string& what, bool may_be_empty) {
  if (v.empty() && !may_be_empty) {
    return MakeError(ErrorCode::kInvalidArgument, "node {}: {} is empty; every GPU needs the CPUs nearest it", n.name, what);
  }
  if (!SortedUnique(v)) return MakeError(ErrorCode::kInvalidArgument, "node {}: {} is not sorted and unique", n.name, what);
  if (!v.empty() && (v.front() < 0 || v.back() >= n.cpus_total)) {
    return MakeError(ErrorCode::kInvalidArgument, "node {}: {} ({}) names CPUs outside 0-{}, the node's {} CPUs", n.name, what,
                     topo::FormatCpuList(v), n.cpus_total - 1, n.cpus_total);
  }
  return Ok();
}

}  // namespace

Status ValidateNodeLayout(const NodeLayout& n) {
  if (n.cpus_total <= 0 || n.cpus_total > topo::kMaxCpuListId + 1) {
    return MakeError(ErrorCode::kInvalidArgument, "node {}: cpus_total is {}; give the node's CPU count (1..{})", n.name,
                     n.cpus_total, topo::kMaxCpuListId + 1);
  }
  for (size_t g = 0; g < n.gpus.size(); ++g) {
    TIDAL_RETURN_IF_ERROR(CheckList(n, n.gpus[g].cpus, fmt::format("GPU{}'s CPU list", g), false));
    const auto& numa = n.gpus[g].numa_nodes;
    if (!SortedUnique(numa) || (!numa.empty() && numa.front() < 0)) {
      return MakeError(ErrorCode::kInvalidArgument, "node {}: GPU{}'s NUMA nodes must be sorted, unique and >= 0", n.name, g);
    }
  }
  for (const auto& [node, cpus] : n.numa_cpus) {
    if (node < 0) return MakeError(ErrorCode::kInvalidArgument, "node {}: NUMA node {} is negative", n.name, node);
    TIDAL_RETURN_IF_ERROR(CheckList(n, cpus, fmt::format("NUMA node {}'s CPU list", node), false));
  }
  for (auto a = n.numa_cpus.begin(); a != n.numa_cpus.end(); ++a) {
    for (auto b = std::next(a); b != n.numa_cpus.end(); ++b) {
      const std::vector<int> both = Intersection(a->second, b->second);
      if (!both.empty()) {
        return MakeError(ErrorCode::kInvalidArgument,
                         "node {}: NUMA nodes {} and {} both hold CPUs {}; a CPU belongs to one node (do two GPU rows of "
                         "`nvidia-smi topo -m` disagree?)",
                         n.name, a->first, b->first, topo::FormatCpuList(both));
      }
    }
  }
  for (const auto& [node, mib] : n.numa_memory_mib) {
    if (node < 0 || mib <= 0 || mib > (int64_t{1} << 40)) {
      return MakeError(ErrorCode::kInvalidArgument, "node {}: NUMA node {} memory {} MiB; give a size of 1 MiB..1 EiB", n.name, node, mib);
    }
  }
  TIDAL_RETURN_IF_ERROR(CheckList(n, n.inference_reserved_cpus, "the inference reserve", true));
  if (const auto& d = n.checkpoint_device) {
    // dev_t on Linux: 12-bit major, 20-bit minor.
    if (d->major <= 0 || d->major > 4095 || d->minor < 0 || d->minor > 1048575) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "node {}: checkpoint device {}:{} is not a block device number (major 1..4095, minor 0..1048575); "
                       "see `lsblk -o NAME,MAJ:MIN`",
                       n.name, d->major, d->minor);
    }
    const bool bad_path = !d->path.empty() && (d->path.front() != '/' || std::any_of(d->path.begin(), d->path.end(), [](char c) {
                                                 return c <= ' ' || c == 0x7f;
                                               }));
    if (bad_path) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "node {}: checkpoint device path '{}' must be an absolute path without spaces (e.g. /dev/nvme1n1)", n.name,
                       topo::Printable(d->path));
    }
  }
  return Ok();
}

Result<NodeLayout> NodeLayoutFromAffinity(const topo::NodeAffinity& a, const NodeLayoutOptions& o) {
  NodeLayout n;
  n.name = a.source;
  n.notes = a.notes;
  int highest = -1;
  for (const auto& g : a.gpus)
    if (!g.cpus.empty()) highest = std::max(highest, g.cpus.back());
  if (o.cpus_total > 0 && highest >= o.cpus_total) {
    return MakeError(ErrorCode::kInvalidArgument, "{}: the affinity columns name CPU {} but the node is said to have {} CPUs", a.source,
                     highest, o.cpus_total);
  }
  n.cpus_total = o.cpus_total > 0 ? o.cpus_total : highest + 1;
  if (n.cpus_total <= 0) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "{}: every GPU has CPU Affinity N/A, so the node's CPUs are not known; give the CPU count (nproc)", a.source);
  }
  std::vector<int> all(static_cast<size_t>(n.cpus_total));
  for (int c = 0; c < n.cpus_total; ++c) all[static_cast<size_t>(c)] = c;
  std::vector<int> spread;  // GPUs near several nodes: their CPUs belong to no single node
  for (const auto& g : a.gpus) {
    NodeLayout::Gpu lg{g.cpus.empty() ? all : g.cpus, g.numa_nodes};
    if (g.numa_nodes.size() == 1 && !g.cpus.empty()) {
      auto& cpus = n.numa_cpus[g.numa_nodes.front()];
      cpus = Union(cpus, lg.cpus);
    } else if (g.numa_nodes.size() > 1) {
      spread.push_back(g.gpu);
    }
    n.gpus.push_back(std::move(lg));
  }
  if (!spread.empty()) {
    n.notes.push_back(fmt::format("{}: GPUs {{{}}} are near several NUMA nodes; their CPUs are not counted to any one node",
                                  a.source, fmt::join(spread, ",")));
  }
  for (const auto& [node, mib] : o.numa_memory_mib) {
    const bool named = n.numa_cpus.contains(node) || std::any_of(n.gpus.begin(), n.gpus.end(), [&](const NodeLayout::Gpu& g) {
                         return std::binary_search(g.numa_nodes.begin(), g.numa_nodes.end(), node);
                       });
    if (!named) {
      return MakeError(ErrorCode::kInvalidArgument, "{}: memory is given for NUMA node {}, which no GPU row names", a.source, node);
    }
    n.numa_memory_mib[node] = mib;
  }
  auto reserved = topo::ParseCpuList(o.inference_reserved_cpus);
  if (!reserved) {
    return MakeError(ErrorCode::kInvalidArgument, "{}: inference reserve '{}': {}", a.source,
                     topo::Printable(o.inference_reserved_cpus), reserved.error().message);
  }
  n.inference_reserved_cpus = std::move(*reserved);
  n.checkpoint_device = o.checkpoint_device;
  TIDAL_RETURN_IF_ERROR(ValidateNodeLayout(n));
  return n;
}

}  // namespace tidal::isolation
