// Kubernetes node labels -> topology. The label table and its sources are in
// k8s_labels.h; parsing of the input shapes is in k8s_objects.cc, HyperNodes
// in k8s_hypernodes.cc.
#include "topology/readers/k8s_labels.h"

#include <charconv>
#include <set>

#include <fmt/format.h>

#include "topology/builder.h"
#include "topology/readers/k8s_objects.h"

namespace tidal::topo {
namespace k8s {

std::string NameList(const std::vector<std::string>& names, size_t n) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < n; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > n) out += fmt::format(" and {} more", names.size() - n);
  return out;
}

}  // namespace k8s

namespace {

using k8s::NameList;

// How one label key places a node. `scoped`: the value names a domain only
// within its parent (Kueue's convention for rack/block labels: "there could be
// two nodes with the same rack label, but in different blocks",
// kubernetes-sigs/kueue site/content/en/docs/concepts/topology_aware_scheduling.md).
// Every other family's values are global ids (switch names, UUIDs, cloud ids).
enum class Family { kClique, kAccelerator, kTopograph, kTidal, kCloud, kScoped };
struct LevelKey {
  Level level = Level::kLeaf;
  Family family = Family::kCloud;
};

// Labels that describe locality tidal does not model, with the reason.
const char* IgnoredReason(std::string_view key) {
  if (key == "accelerator.topograph.run/sub-domain" || key == "xclr.topology.nvidia.com/sub-domain")
    return "a locality inside the accelerator domain; tidal has one block level and uses the domain";
  if (key == "cloud.google.com/gce-topology-host")
    return "it names the physical machine under a VM; tidal's hosts are the Kubernetes nodes";
  if (key == "topology.kubernetes.io/region") return "tidal's outermost level is the zone";
  return nullptr;
}

// nullopt: not a topology label. An error only for a fabric tier deeper than
// tidal models.
Result<std::optional<LevelKey>> MapKey(std::string_view key, const std::string& at) {
  // NVIDIA GPU operator / GFD: <ClusterUUID>.<CliqueID>, one NVLink partition
  // (gfd-generated-labels-doc.md; NVIDIA/topograph docs/reference/node-labels.md).
  if (key == "nvidia.com/gpu.clique") return LevelKey{Level::kBlock, Family::kClique};
  // Topograph's accelerator domain: current, 2026 interim and original keys
  // (NVIDIA/topograph pkg/topology/topology.go history, CHANGELOG "BREAKING").
  if (key == "accelerator.topograph.run/domain" || key == "xclr.topology.nvidia.com/domain" ||
      key == "network.topology.nvidia.com/accelerator")
    return LevelKey{Level::kBlock, Family::kAccelerator};
  // Topograph fabric tiers: "Tier 0 is the switch closest to the node".
  for (std::string_view prefix : {"fabric.topograph.run/tier-", "network.topology.nvidia.com/tier-"}) {
    if (!key.starts_with(prefix)) continue;
    const std::string_view digits = key.substr(prefix.size());
    int tier = -1;
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), tier);
    if (digits.empty() || ec != std::errc() || p != digits.data() + digits.size()) return std::nullopt;
    if (tier > 3) {
      return MakeError(ErrorCode::kParse,
                       "{}: label '{}': tidal models four switch tiers (leaf, spine, core, zone = tier-0..3); "
                       "merge the outer tiers or describe this fabric in tidal's YAML",
                       at, key);
    }
    constexpr Level kTiers[] = {Level::kLeaf, Level::kSpine, Level::kCore, Level::kZone};
    return LevelKey{kTiers[tier], Family::kTopograph};
  }
  if (key == "network.topology.nvidia.com/leaf") return LevelKey{Level::kLeaf, Family::kTopograph};
  if (key == "network.topology.nvidia.com/spine") return LevelKey{Level::kSpine, Family::kTopograph};
  if (key == "network.topology.nvidia.com/core") return LevelKey{Level::kCore, Family::kTopograph};
  // tidal's own keys, written by writers/k8s.cc: one per level, global values.
  if (key.starts_with("tidal.io/topology-")) {
    const std::string_view l = key.substr(std::string_view("tidal.io/topology-").size());
    for (Level lv : {Level::kBlock, Level::kLeaf, Level::kSpine, Level::kCore, Level::kZone})
      if (l == LevelName(lv)) return LevelKey{lv, Family::kTidal};
    return std::nullopt;
  }
  // GKE (cloud.google.com/ai-hypercomputer/docs/workloads/schedule-gke-workloads-tas):
  // a block is a collection of sub-blocks; a sub-block is hosts behind one switch layer.
  if (key == "cloud.google.com/gce-topology-block") return LevelKey{Level::kSpine, Family::kCloud};
  if (key == "cloud.google.com/gce-topology-subblock") return LevelKey{Level::kLeaf, Family::kCloud};
  // AWS, as topograph's docs/reference/node-labels.md lists them (layer-1 spine ... layer-3 leaf).
  if (key == "topology.k8s.aws/network-node-layer-3") return LevelKey{Level::kLeaf, Family::kCloud};
  if (key == "topology.k8s.aws/network-node-layer-2") return LevelKey{Level::kSpine, Family::kCloud};
  if (key == "topology.k8s.aws/network-node-layer-1") return LevelKey{Level::kCore, Family::kCloud};
  if (key == "topology.kubernetes.io/zone") return LevelKey{Level::kZone, Family::kCloud};
  // Kueue's documented examples: <domain>/topology-block holds racks, <domain>/topology-rack nodes.
  if (key.ends_with("/topology-rack")) return LevelKey{Level::kLeaf, Family::kScoped};
  if (key.ends_with("/topology-block")) return LevelKey{Level::kSpine, Family::kScoped};
  return std::nullopt;
}

constexpr std::string_view kTidalNvlinkKey = "tidal.io/topology-block-nvlink";

// --- GPUs ------------------------------------------------------------------

struct GpuNotes {
  std::map<std::string, std::vector<std::string>> mig_single, mig_mixed;  // summary -> nodes
  std::vector<std::string> unknown;
};

Result<int64_t> ParseCount(const std::string& v, const std::string& at, std::string_view key) {
  int64_t x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size() || x < 0 || x > 4096 * 64) {
    return MakeError(ErrorCode::kParse, "{}: label '{}' = '{}' is not a whole number of GPUs", at, key, v);
  }
  return x;
}

// The host layout a node's labels give. GFD (gfd-generated-labels-doc.md):
// gpu.count counts GPUs, except that under the MIG "single" strategy it counts
// MIG devices and gpu.product gets "-MIG-<profile>"; under "mixed" it stays the
// whole-GPU count and each profile has nvidia.com/mig-<profile>.count. GPU
// sharing appends "-SHARED" to the product (NVIDIA GPU operator gpu-sharing docs).
Result<HostLayout> NodeLayout(const k8s::Node& n, bool nvlink, GpuNotes& notes) {
  HostLayout L;
  L.nvlink = nvlink;
  const std::string at = fmt::format("{}: node '{}'", n.where, n.name);
  auto label = [&](const char* k) -> const std::string* {
    auto it = n.labels.find(k);
    return it == n.labels.end() ? nullptr : &it->second;
  };
  std::string model = label("nvidia.com/gpu.product") ? *label("nvidia.com/gpu.product") : "";
  if (model.ends_with("-SHARED")) model.resize(model.size() - 7);
  const std::string* strategy = label("nvidia.com/mig.strategy");
  if (const std::string* c = label("nvidia.com/gpu.count")) {
    TIDAL_ASSIGN_OR_RETURN(int64_t count, ParseCount(*c, at, "nvidia.com/gpu.count"));
    const size_t mig = model.find("-MIG-");
    if (strategy && *strategy == "single" && mig != std::string::npos) {
      const std::string profile = model.substr(mig + 5);
      model.resize(mig);
      int gi = 0;
      if (const std::string* s = label("nvidia.com/gpu.slices.gi")) {
        TIDAL_ASSIGN_OR_RETURN(int64_t g, ParseCount(*s, at, "nvidia.com/gpu.slices.gi"));
        gi = static_cast<int>(g);
      } else {
        std::from_chars(profile.data(), profile.data() + profile.size(), gi);  // "1g.5gb" -> 1
      }
      // A100/H100/H200/B200 have 7 GPU-instance slices, A30 has 4 (NVIDIA MIG user guide).
      const int slices = model.find("A30") != std::string::npos ? 4 : 7;
      const int per = gi > 0 && gi <= slices ? slices / gi : 1;
      const int64_t whole = (count + per - 1) / per;
      notes
          .mig_single[fmt::format("nvidia.com/gpu.count {} counts {} MIG devices of {}; tidal counts whole GPUs: {} ({} devices per GPU)",
                                  count, profile, model, whole, per)]
          .push_back(n.name);
      count = whole;
    } else if (strategy && *strategy == "mixed") {
      std::string devices;
      for (const auto& [k, v] : n.labels) {
        if (!k.starts_with("nvidia.com/mig-") || !k.ends_with(".count") || v == "0") continue;
        const std::string profile = k.substr(15, k.size() - 15 - 6);
        devices += fmt::format("{}{}x {}", devices.empty() ? "" : ", ", v, profile);
      }
      if (!devices.empty()) {
        notes
            .mig_mixed[fmt::format("nvidia.com/gpu.count {} counts whole GPUs, as tidal does; their MIG devices ({}) are partitions "
                                   "of those GPUs, not more GPUs",
                                   count, devices)]
            .push_back(n.name);
      }
    }
    L.gpus = static_cast<int>(count);
  } else if (n.has_capacity) {
    int64_t cap = n.capacity_gpus.value_or(0);
    if (const std::string* r = label("nvidia.com/gpu.replicas")) {
      TIDAL_ASSIGN_OR_RETURN(int64_t rep, ParseCount(*r, at, "nvidia.com/gpu.replicas"));
      if (rep > 1) cap /= rep;  // time-slicing multiplies the advertised count
    }
    L.gpus = static_cast<int>(std::min<int64_t>(cap, 4096 * 64));
  } else {
    notes.unknown.push_back(n.name);
  }
  L.gpu_model = model;
  return L;
}

void AddGpuNotes(const GpuNotes& g, std::vector<std::string>& notes) {
  for (const auto& [what, nodes] : g.mig_single)
    notes.push_back(fmt::format("MIG single strategy on {} node(s) ({}): {}", nodes.size(), NameList(nodes), what));
  for (const auto& [what, nodes] : g.mig_mixed)
    notes.push_back(fmt::format("MIG mixed strategy on {} node(s) ({}): {}", nodes.size(), NameList(nodes), what));
  if (!g.unknown.empty()) {
    notes.push_back(
        fmt::format("{} node(s) give no GPU count (no nvidia.com/gpu.count label, no status.capacity): {}; their GPU "
                    "count is unknown",
                    g.unknown.size(), NameList(g.unknown)));
  }
}

// --- labels -> fabric graph ------------------------------------------------

struct Placed {
  Level level;
  std::string value, key;
  Family family;
};

Result<Topology> BuildFromLabels(const k8s::Objects& o, const std::vector<HostLayout>& layouts,
                                 const std::vector<std::vector<Placed>>& chains, const std::vector<bool>& tidal_nvlink,
                                 std::vector<std::string> notes, const std::string& source) {
  // Domains in order of first appearance, keyed by (level, identity). A scoped
  // value's identity is its parent's identity + "/" + value.
  struct DomainInfo {
    Level level;
    std::string id, where;
    bool nvlink = false;
    std::string nvlink_by;  // the node (and how) that first said whether it is NVLink
  };
  std::vector<DomainInfo> domains;
  std::map<std::pair<int, std::string>, size_t> index;
  std::vector<std::vector<size_t>> node_domains(o.nodes.size());
  for (size_t i = 0; i < o.nodes.size(); ++i) {
    const k8s::Node& n = o.nodes[i];
    std::string parent;
    for (const Placed& p : chains[i]) {
      const std::string id = p.family == Family::kScoped && !parent.empty() ? parent + "/" + p.value : p.value;
      parent = id;
      auto [it, inserted] = index.emplace(std::make_pair(LevelIndex(p.level), id), domains.size());
      if (inserted) domains.push_back({p.level, id, n.where});
      node_domains[i].push_back(it->second);
      if (p.level != Level::kBlock) continue;
      // Whether a block is an NVLink domain: every node in it must agree.
      const bool nv = p.family == Family::kTidal ? tidal_nvlink[i] : true;
      const std::string how = p.family == Family::kTidal ? fmt::format("{}={}", kTidalNvlinkKey, nv ? "true" : "false") : p.key;
      DomainInfo& d = domains[it->second];
      if (d.nvlink_by.empty()) {
        d.nvlink = nv;
        d.nvlink_by = fmt::format("node '{}' ({}, {})", n.name, n.where, how);
      } else if (d.nvlink != nv) {
        return MakeError(ErrorCode::kParse,
                         "{}: node '{}' ({}) makes block '{}' {}an NVLink domain, but {} does {}; give every node of "
                         "the block the same labels",
                         n.where, n.name, how, id, nv ? "" : "not ", d.nvlink_by, nv ? "not" : "");
      }
    }
  }
  // Names: the identity, or "<level>:<identity>" where it would collide with
  // a domain of another level or a host.
  std::map<std::string, std::set<int>> levels_of;
  for (const DomainInfo& d : domains) levels_of[d.id].insert(LevelIndex(d.level));
  std::set<std::string> hosts;
  for (const k8s::Node& n : o.nodes) hosts.insert(n.name);
  std::vector<std::string> names;
  int prefixed = 0;
  for (const DomainInfo& d : domains) {
    const bool clash = levels_of[d.id].size() > 1 || hosts.contains(d.id);
    names.push_back(clash ? fmt::format("{}:{}", LevelName(d.level), d.id) : d.id);
    prefixed += clash;
  }
  if (prefixed > 0) {
    notes.push_back(
        fmt::format("{} domain name(s) are prefixed with their level (e.g. leaf:x) because the same value names domains of "
                    "two levels or a host",
                    prefixed));
  }
  FabricGraph g(source);
  for (size_t d = 0; d < domains.size(); ++d) {
    const bool nvlink = domains[d].level == Level::kBlock && domains[d].nvlink;
    TIDAL_RETURN_IF_ERROR(g.AddSwitch(names[d], domains[d].level, domains[d].where, {}, nvlink));
  }
  std::vector<std::string> lonely;
  for (size_t i = 0; i < o.nodes.size(); ++i) {
    const k8s::Node& n = o.nodes[i];
    TIDAL_RETURN_IF_ERROR(g.AddHost(n.name, n.where, layouts[i]));
    const auto& nd = node_domains[i];
    if (nd.empty()) {
      lonely.push_back(n.name);
      continue;
    }
    const std::string at = fmt::format("{}: node '{}'", n.where, n.name);
    for (size_t k = 0; k + 1 < nd.size(); ++k) g.Connect(names[nd[k]], names[nd[k + 1]], at);
    g.Connect(names[nd.back()], n.name, at);
  }
  // A node without topology labels among labelled ones is usually a control
  // plane or CPU node, or one the labeller has not reached yet. It is kept
  // (never dropped) at the root, the farthest place from every other host,
  // so the scheduler never assumes locality the labels do not show.
  if (!lonely.empty() && !domains.empty()) {
    notes.push_back(
        fmt::format("{} node(s) carry no topology label ({}); they sit directly under the root, as far from the other "
                    "hosts as the topology allows",
                    lonely.size(), NameList(lonely)));
  }
  for (auto& note : notes) g.AddNote(std::move(note));
  // A label names one domain, so two spines over the same leaf are two
  // contradicting labels, never a spine plane: no merging of parallel switches,
  // and the builder's "under both" error names the nodes.
  FabricGraph::Options options;
  options.merge_parallel = false;
  return std::move(g).Build(options);
}

}  // namespace

Result<Topology> ReadK8sNodeLabels(std::string_view text, const std::string& source) {
  TIDAL_ASSIGN_OR_RETURN(k8s::Objects o, k8s::ParseObjects(text, source));
  if (o.nodes.empty() && o.hypernodes.empty()) {
    return MakeError(ErrorCode::kParse, "{}: no nodes found (no Node objects, no labels); expected `kubectl get nodes -o json` output",
                     source);
  }
  std::vector<std::string> notes = std::move(o.notes);
  std::map<std::string, std::pair<int, const char*>> ignored;  // key -> (nodes, reason)
  // Each node's chain of domains, outermost first, with the label that gave each.
  std::vector<std::vector<Placed>> chains(o.nodes.size());
  std::vector<bool> tidal_nvlink(o.nodes.size(), false);
  int accelerator_overridden = 0;
  for (size_t i = 0; i < o.nodes.size(); ++i) {
    const k8s::Node& n = o.nodes[i];
    const std::string at = fmt::format("{}: node '{}'", n.where, n.name);
    std::map<int, Placed> by_level;
    for (const auto& [k, v] : n.labels) {
      if (k == kTidalNvlinkKey) {
        if (v != "true" && v != "false") return MakeError(ErrorCode::kParse, "{}: label '{}' = '{}' must be true or false", at, k, v);
        tidal_nvlink[i] = v == "true";
        continue;
      }
      if (const char* why = IgnoredReason(k)) {
        auto& e = ignored[k];
        ++e.first;
        e.second = why;
        continue;
      }
      TIDAL_ASSIGN_OR_RETURN(std::optional<LevelKey> lk, MapKey(k, at));
      if (!lk) continue;
      if (v.empty()) {
        return MakeError(ErrorCode::kParse, "{}: topology label '{}' is empty; give the domain's name or remove the label", at, k);
      }
      Placed p{lk->level, v, k, lk->family};
      auto [it, inserted] = by_level.emplace(LevelIndex(lk->level), p);
      if (inserted || it->second.value == v) continue;
      // GFD's clique is the NVLink partition, topograph's accelerator domain
      // may be the whole NVL domain (topograph node-labels.md): the clique wins.
      const bool clique_vs_acc = (it->second.family == Family::kClique && p.family == Family::kAccelerator) ||
                                 (it->second.family == Family::kAccelerator && p.family == Family::kClique);
      if (clique_vs_acc) {
        if (p.family == Family::kClique) it->second = p;
        ++accelerator_overridden;
        continue;
      }
      return MakeError(ErrorCode::kParse, "{}: two {} labels disagree: {}={} and {}={}; remove the stale one", at, LevelName(lk->level),
                       it->second.key, it->second.value, k, v);
    }
    for (auto it = by_level.rbegin(); it != by_level.rend(); ++it) chains[i].push_back(it->second);
  }
  if (accelerator_overridden > 0) {
    notes.push_back(
        fmt::format("{} node(s) carry both nvidia.com/gpu.clique and a topograph accelerator domain that differ; the clique "
                    "(the NVLink partition) is used",
                    accelerator_overridden));
  }
  for (const auto& [k, e] : ignored) notes.push_back(fmt::format("label {} (on {} node(s)) is not modelled: {}", k, e.first, e.second));
  for (const auto& t : o.topologies) {
    for (const auto& key : t.levels) {
      if (key == "kubernetes.io/hostname" || IgnoredReason(key)) continue;
      auto lk = MapKey(key, t.where);
      if (lk && !*lk) {
        notes.push_back(
            fmt::format("{}: Topology '{}' has level '{}', which tidal does not map to a level (see k8s_labels.h); nodes "
                        "are placed by the labels tidal knows",
                        t.where, t.name, key));
      }
    }
  }
  // Layouts: GPUs from the labels; NVLink hosts are those in an NVLink block.
  GpuNotes gpu_notes;
  std::vector<HostLayout> layouts;
  for (size_t i = 0; i < o.nodes.size(); ++i) {
    bool nvlink = false;
    for (const Placed& p : chains[i]) {
      if (p.family == Family::kClique || p.family == Family::kAccelerator) nvlink = true;
      if (p.family == Family::kTidal && p.level == Level::kBlock) nvlink = tidal_nvlink[i];
    }
    TIDAL_ASSIGN_OR_RETURN(HostLayout L, NodeLayout(o.nodes[i], nvlink, gpu_notes));
    layouts.push_back(std::move(L));
  }
  AddGpuNotes(gpu_notes, notes);
  if (!o.hypernodes.empty()) {
    size_t labelled = 0;
    for (const auto& c : chains) labelled += !c.empty();
    if (labelled > 0) {
      notes.push_back(fmt::format("the HyperNodes define the switch tree; the topology labels of {} node(s) are not used", labelled));
    }
    return k8s::BuildFromHyperNodes(o, layouts, std::move(notes), source);
  }
  return BuildFromLabels(o, layouts, chains, tidal_nvlink, std::move(notes), source);
}

}  // namespace tidal::topo
