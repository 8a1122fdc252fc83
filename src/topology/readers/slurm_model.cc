#include "topology/readers/slurm_model.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "topology/builder.h"
#include "topology/hostlist.h"

namespace tidal::topo::slurm {
namespace {

// ExpandHostlist enforces its max_hosts only after a whole bracket is
// expanded, so "n[1-9999999]" would first build ten million names. Sum the
// ranges of each bracket here and stop at Slurm's own per-range limit; the
// syntax itself (and its error messages) stay ExpandHostlist's.
Status CheckRangeSizes(std::string_view list, std::string_view key, const std::string& where) {
  size_t pos = 0;
  while ((pos = list.find('[', pos)) != std::string_view::npos) {
    const size_t close = list.find(']', pos);
    if (close == std::string_view::npos) return Ok();
    std::string_view inner = list.substr(pos + 1, close - pos - 1);
    uint64_t total = 0;
    while (!inner.empty()) {
      const size_t comma = inner.find(',');
      const std::string_view part = inner.substr(0, comma);
      const size_t dash = part.find('-');
      uint64_t lo = 0, hi = 0;
      const std::string_view a = part.substr(0, dash), b = dash == std::string_view::npos ? a : part.substr(dash + 1);
      const bool ok_a = !a.empty() && a.size() <= 18 && std::from_chars(a.data(), a.data() + a.size(), lo).ptr == a.data() + a.size();
      const bool ok_b = !b.empty() && b.size() <= 18 && std::from_chars(b.data(), b.data() + b.size(), hi).ptr == b.data() + b.size();
      if (ok_a && ok_b && hi >= lo) total += hi - lo + 1;
      if (total > kMaxNamesPerList) {
        return MakeError(ErrorCode::kParse, "{}: {}{} names more than {} hosts in one bracket; Slurm's hostlist stops at {} per range",
                         where, key, list.size() > 80 ? std::string(list.substr(0, 80)) + "..." : std::string(list),
                         kMaxNamesPerList, kMaxNamesPerList);
      }
      if (comma == std::string_view::npos) break;
      inner.remove_prefix(comma + 1);
    }
    pos = close + 1;
  }
  return Ok();
}

// The name of a root that tidal adds over several top-level items. The
// builder would add one too, but its "cluster" / "cluster-root" can meet a
// name of the file; this one cannot.
std::string RootName(const std::set<std::string>& used) {
  std::string n = "cluster";
  for (int i = 1; used.contains(n); ++i) n = i == 1 ? "cluster-root" : fmt::format("cluster-root{}", i);
  return n;
}

// Notes a tree reader owes its user: LinkSpeed values, merged parallel
// switches and top-level switches without a common parent. Returns those
// top-level switches when there are several groups of them (else none).
std::vector<std::string> TreeNotes(const SlurmTopo& topo, FabricGraph& g) {
  std::map<uint32_t, std::vector<std::string>> by_speed;
  for (const SwitchDef& s : topo.switches)
    if (s.link_speed) by_speed[*s.link_speed].push_back(s.name);
  if (!by_speed.empty()) {
    // topology.conf(5): "The units used are arbitrary and this information is
    // currently not used." So it is no bandwidth; keep it as a ratio only.
    std::string list;
    for (const auto& [speed, names] : by_speed) list += fmt::format("{}{} {}", list.empty() ? "" : "; ", CompressHostlist(names), speed);
    const double ratio = static_cast<double>(by_speed.rbegin()->first) / std::max<uint32_t>(1, by_speed.begin()->first);
    g.AddNote(fmt::format("LinkSpeed is in arbitrary units and unused by Slurm (topology.conf(5)): {}; fastest/slowest = {:g}; "
                          "tidal keeps its default link bandwidths",
                          list, ratio));
  }
  // Switches with the same children: FabricGraph merges them (spine planes, rails).
  std::map<std::pair<bool, std::vector<std::string>>, std::vector<std::string>> same;
  std::set<std::string> children;
  for (const SwitchDef& s : topo.switches) {
    std::vector<std::string> k = s.nodes.given ? s.nodes.names : s.switches.names;
    for (const auto& c : s.switches.names) children.insert(c);
    std::sort(k.begin(), k.end());
    k.erase(std::unique(k.begin(), k.end()), k.end());
    same[{s.nodes.given, k}].push_back(s.name);
  }
  size_t top_groups = 0;
  std::vector<std::string> tops;
  for (const auto& [key, names] : same) {
    if (!children.contains(names.front())) {
      ++top_groups;
      tops.insert(tops.end(), names.begin(), names.end());
    }
    if (names.size() < 2) continue;
    if (key.first) {
      g.AddNote(fmt::format("switches {} list the same nodes: one leaf domain with {} parallel switches, a rail group of {} rails "
                            "(Slurm itself warns 'Multiple leaf switches contain nodes')",
                            CompressHostlist(names), names.size(), names.size()));
    } else {
      g.AddNote(fmt::format("switches {} have the same child switches ({}): one domain with {} parallel switches (spine planes)",
                            CompressHostlist(names), CompressHostlist(key.second), names.size()));
    }
  }
  if (top_groups < 2) return {};
  g.AddNote(fmt::format("{} have no common parent switch: Slurm runs no job across them unless TopologyParam=TopoOptional "
                        "(Topology Guide); tidal joins them under a synthetic root",
                        CompressHostlist(tops)));
  return tops;
}

Result<Topology> BuildTree(const SlurmTopo& topo, const std::string& source, const SlurmTopo* blocks) {
  if (topo.switches.empty()) {
    return MakeError(ErrorCode::kParse, "{}: topology{}{} has no switches; a tree topology needs SwitchName= lines (switches: in YAML)",
                     topo.where, topo.name.empty() ? "" : " ", topo.name);
  }
  // The keys as the file spells them.
  const std::string_view kNodes = topo.yaml ? "nodes:" : "Nodes=", kSwitches = topo.yaml ? "children:" : "Switches=";
  std::set<std::string> nodes, switches;
  for (const SwitchDef& s : topo.switches) {
    if (s.nodes.given && s.switches.given) {
      // switch_record.c: error("switch %s has both child switches and nodes").
      return MakeError(ErrorCode::kParse, "{}: switch '{}' has both {} and {}; Slurm rejects that (a switch holds either nodes or "
                       "switches): put the nodes on a leaf switch of their own", s.where, s.name, kNodes, kSwitches);
    }
    if (!s.nodes.given && !s.switches.given) {
      return MakeError(ErrorCode::kParse, "{}: switch '{}' has neither {} nor {}; name the nodes of a leaf switch or the child "
                       "switches of an upper one", s.where, s.name, kNodes, kSwitches);
    }
    TIDAL_RETURN_IF_ERROR(CheckName(s.name, topo.yaml ? "switch" : "SwitchName", s.where));
    if (s.name.size() > kMaxSwitchName) {
      return MakeError(ErrorCode::kParse, "{}: switch name '{}' has {} characters; Slurm allows at most {}", s.where, s.name,
                       s.name.size(), kMaxSwitchName);
    }
    switches.insert(s.name);
    for (const auto& n : s.nodes.names) nodes.insert(n);
  }
  FabricGraph g(source);
  for (const auto& n : topo.notes) g.AddNote(n);
  const std::vector<std::string> tops = TreeNotes(topo, g);
  for (const SwitchDef& s : topo.switches) TIDAL_RETURN_IF_ERROR(g.AddSwitch(s.name, std::nullopt, s.where));
  if (!tops.empty()) {
    std::set<std::string> used = switches;
    used.insert(nodes.begin(), nodes.end());
    if (blocks)
      for (const GroupDef& b : blocks->groups) used.insert(b.name);
    const std::string root = RootName(used);
    TIDAL_RETURN_IF_ERROR(g.AddSwitch(root, std::nullopt, topo.where));
    for (const auto& top : tops) g.Connect(root, top, topo.where);
  }
  // Blocks inside the tree: each under the leaf (or parallel leaves) of its hosts.
  std::unordered_map<std::string, const GroupDef*> block_of;
  if (blocks) {
    std::map<std::string, std::set<std::string>> leaves_of;  // host -> leaves listing it
    for (const SwitchDef& s : topo.switches)
      for (const auto& n : s.nodes.names) leaves_of[n].insert(s.name);
    for (const GroupDef& b : blocks->groups) {
      TIDAL_RETURN_IF_ERROR(g.AddSwitch(b.name, Level::kBlock, b.where));
      const std::set<std::string>* first = nullptr;
      for (const auto& h : b.nodes.names) {
        auto it = leaves_of.find(h);
        if (it == leaves_of.end()) {
          return MakeError(ErrorCode::kParse, "{}: host '{}' of block '{}' is on no switch of tree topology '{}'; a block joins hosts "
                           "of the tree", b.where, h, b.name, topo.name);
        }
        if (!first) first = &it->second;
        if (it->second != *first) {
          return MakeError(ErrorCode::kParse, "{}: block '{}' spans leaf switches {} (host '{}') and {} (host '{}'); to combine "
                           "a tree and a block topology each block must sit under one leaf", b.where, b.name,
                           CompressHostlist({first->begin(), first->end()}), b.nodes.names.front(),
                           CompressHostlist({it->second.begin(), it->second.end()}), h);
        }
        if (!block_of.emplace(h, &b).second) {
          return MakeError(ErrorCode::kParse, "{}: host '{}' is in block '{}' and in block '{}' ({})", b.where, h,
                           block_of[h]->name, b.name, block_of[h]->where);
        }
      }
    }
    g.AddNote(fmt::format("blocks of topology '{}' sit between the leaves of tree topology '{}' and their hosts",
                          blocks->name, topo.name));
  }
  for (const SwitchDef& s : topo.switches) {
    for (const auto& c : s.switches.names) {
      if (c == s.name) return MakeError(ErrorCode::kParse, "{}: switch '{}' lists itself in {} (a cycle)", s.where, s.name, kSwitches);
      if (switches.contains(c)) {
        g.Connect(s.name, c, s.where);
        continue;
      }
      if (nodes.contains(c)) {
        return MakeError(ErrorCode::kParse, "{}: switch '{}' lists '{}' in {}, but '{}' is a node; nodes go in {} of a leaf switch",
                         s.where, s.name, c, kSwitches, c, kNodes);
      }
      return MakeError(ErrorCode::kParse, "{}: switch '{}' lists '{}' in {}, but no switch of that name is defined; add {} or fix "
                       "the name", s.where, s.name, c, kSwitches,
                       topo.yaml ? fmt::format("'- switch: {}'", c) : fmt::format("a SwitchName={} line", c));
    }
    for (const auto& n : s.nodes.names) {
      auto b = block_of.find(n);
      if (b != block_of.end()) {
        g.Connect(s.name, b->second->name, s.where);
        continue;
      }
      TIDAL_RETURN_IF_ERROR(g.AddHost(n, s.where));
      g.Connect(s.name, n, s.where);
    }
  }
  if (blocks) {
    for (const GroupDef& b : blocks->groups) {
      for (const auto& h : b.nodes.names) {
        TIDAL_RETURN_IF_ERROR(g.AddHost(h, b.where));
        g.Connect(b.name, h, b.where);
      }
    }
  }
  return std::move(g).Build();
}

void BlockSizeNotes(const SlurmTopo& topo, TopologyBuilder& b, int64_t base, bool given) {
  const std::vector<int64_t>& sizes = topo.block_sizes;
  if (given) {
    std::string agg;
    for (size_t i = 1; i < sizes.size(); ++i)
      agg += fmt::format("{}{} blocks ({} nodes)", agg.empty() ? "" : ", ", sizes[i] / base, sizes[i]);
    b.AddNote(fmt::format("BlockSizes: the base block is {} nodes{}{}; tidal models the blocks, not their aggregates", base,
                          agg.empty() ? "" : "; Slurm also places jobs in aggregates of ", agg));
  } else {
    // block_record.c: without BlockSizes the first block's node count is the
    // base block size and aggregates of 1, 2, 4, 8 and 16 blocks are enforced.
    b.AddNote(fmt::format("no BlockSizes: Slurm takes the first block's {} nodes as the base block size and aggregates 2, 4, 8 "
                          "and 16 blocks", base));
  }
  // topology.conf(5): "Each block must have at least the planning base block
  // size count of nodes." Slurm does not check it when it reads the file: a
  // bigger block keeps the rest as spares (a block counts as free once `base`
  // of its nodes are), a smaller one never holds a base-block job.
  std::map<size_t, std::vector<std::string>> more, fewer;
  for (const GroupDef& g : topo.groups) {
    const auto n = g.nodes.names.size();
    if (static_cast<int64_t>(n) > base) more[n].push_back(g.name);
    if (static_cast<int64_t>(n) < base) fewer[n].push_back(g.name);
  }
  for (const auto& [n, names] : more) {
    b.AddNote(fmt::format("{} {} {} {} nodes, more than the base block size {}: Slurm plans {} nodes per block and keeps {} as spares",
                          names.size() == 1 ? "block" : "blocks", CompressHostlist(names), names.size() == 1 ? "has" : "have", n,
                          base, base, static_cast<int64_t>(n) - base));
  }
  for (const auto& [n, names] : fewer) {
    b.AddNote(fmt::format("{} {} {} only {} nodes, fewer than the base block size {} that topology.conf(5) requires: Slurm places "
                          "no base-block job there", names.size() == 1 ? "block" : "blocks", CompressHostlist(names),
                          names.size() == 1 ? "has" : "have", n, base));
  }
}

Status CheckBlockSizes(const SlurmTopo& topo) {
  const std::vector<int64_t>& v = topo.block_sizes;
  for (size_t i = 0; i < v.size(); ++i) {
    // block_record.c: the first value is the base block size in nodes; every
    // value must be the base times 2^k, k <= 15, else fatal("Invalid
    // BlockSizes value"). topology.conf(5): "Successive BlockSizes must be a
    // power of two larger than the prior values."
    if (v[i] <= 0 || (i == 0 && v[i] > 65535)) {  // the base is a uint16_t in block_record.h
      return MakeError(ErrorCode::kParse, "{}: BlockSizes value {} is not a node count{}", topo.block_sizes_where, v[i],
                       i == 0 ? " from 1 to 65535" : " above 0");
    }
    if (i == 0) continue;
    const int64_t m = v[i] / v[0];
    if (v[i] <= v[i - 1] || v[i] % v[0] != 0 || (m & (m - 1)) != 0 || m > (int64_t{1} << 15)) {
      return MakeError(ErrorCode::kParse, "{}: BlockSizes value {} is not the base block size {} times a power of two (up to 2^15) "
                       "larger than the prior value {}; Slurm stops with 'Invalid BlockSizes value'",
                       topo.block_sizes_where, v[i], v[0], v[i - 1]);
    }
  }
  return Ok();
}

Result<Topology> BuildGroups(const SlurmTopo& topo, const std::string& source) {
  const bool ring = topo.kind == Kind::kRing;
  const std::string_view what = ring ? "ring" : "block";
  if (topo.groups.empty()) {
    return MakeError(ErrorCode::kParse, "{}: topology{}{} has no {}s; name at least one with its nodes", topo.where,
                     topo.name.empty() ? "" : " ", topo.name, what);
  }
  TIDAL_RETURN_IF_ERROR(CheckBlockSizes(topo));
  TopologyBuilder b(source);
  for (const auto& n : topo.notes) b.AddNote(n);
  DomainId root = kNoDomain;
  if (topo.groups.size() > 1) {  // a flat set of blocks behind one switch, as the builder would make it
    std::set<std::string> used;
    for (const GroupDef& g : topo.groups) {
      used.insert(g.name);
      used.insert(g.nodes.names.begin(), g.nodes.names.end());
    }
    root = b.AddDomain(Level::kLeaf, RootName(used), kNoDomain, topo.where);
  }
  std::unordered_map<std::string, const GroupDef*> by_name, host_in;
  for (const GroupDef& g : topo.groups) {
    TIDAL_RETURN_IF_ERROR(CheckName(g.name, topo.yaml ? what : ring ? "RingName" : "BlockName", g.where));
    if (!g.nodes.given || g.nodes.names.empty()) {
      return MakeError(ErrorCode::kParse, "{}: {} '{}' names no nodes; give {}<host list>", g.where, what, g.name,
                       topo.yaml ? "nodes: " : "Nodes=");
    }
    if (ring && g.nodes.names.size() > kMaxRingNodes) {
      return MakeError(ErrorCode::kParse, "{}: ring '{}' has {} nodes; Slurm allows at most {} per ring (topology.conf(5))", g.where,
                       g.name, g.nodes.names.size(), kMaxRingNodes);
    }
    if (auto [it, inserted] = by_name.emplace(g.name, &g); !inserted) {
      return MakeError(ErrorCode::kParse, "{}: {} '{}' is defined twice (first at {}); names must be unique", g.where, what, g.name,
                       it->second->where);
    }
    const DomainId id = b.AddDomain(Level::kBlock, g.name, root, g.where);
    b.mutable_domain(id).nvlink = false;  // the file does not say; see the note below
    for (const auto& h : g.nodes.names) {
      if (auto [it, inserted] = host_in.emplace(h, &g); !inserted) {
        if (it->second == &g) {
          return MakeError(ErrorCode::kParse, "{}: {} '{}' lists node '{}' twice", g.where, what, g.name, h);
        }
        return MakeError(ErrorCode::kParse, "{}: node '{}' is in {} '{}' and in {} '{}' ({}); a node belongs to one {}", g.where, h,
                         what, it->second->name, what, g.name, it->second->where, what);
      }
      b.AddHost(h, id, HostLayout{}, g.where);
    }
  }
  if (ring) {
    b.AddNote("topology/ring: each ring is a block-level domain with its hosts in ring order; tidal does not model the ring's "
              "wrap-around neighbours, and writes rings back as topology/block BlockName= lines");
  } else {
    const bool given = !topo.block_sizes.empty();
    BlockSizeNotes(topo, b, given ? topo.block_sizes[0] : static_cast<int64_t>(topo.groups[0].nodes.names.size()), given);
    b.AddNote("blocks are block-level domains without NVLink: Slurm blocks often are multi-node NVLink domains (GB200/GB300 "
              "NVL72 racks), but the file does not say; describe them in tidal YAML with nvlink: true if they are");
  }
  return std::move(b).Build();
}

}  // namespace

std::string_view KindName(Kind k) {
  switch (k) {
    case Kind::kTree: return "tree";
    case Kind::kBlock: return "block";
    case Kind::kRing: return "ring";
    case Kind::kFlat: return "flat";
    case Kind::kTorus3d: return "torus3d";
  }
  return "?";
}

Status CheckName(std::string_view name, std::string_view what, const std::string& where) {
  if (name.empty()) return MakeError(ErrorCode::kParse, "{}: {} is empty; give a name", where, what);
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= ' ' || u == 0x7f || c == '"' || c == '#' || c == '=' || c == '[' || c == ']' || c == ',' || c == '\\') {
      return MakeError(ErrorCode::kParse, "{}: {} '{}' contains {}; Slurm names have no blanks, quotes, '#', '=', '\\' or "
                       "host-list punctuation ([ ] ,)", where, what, name,
                       u <= ' ' || u == 0x7f ? fmt::format("the control or blank character 0x{:02x}", u) : fmt::format("'{}'", c));
    }
  }
  return Ok();
}

Result<std::vector<std::string>> ExpandNames(std::string_view list, std::string_view key, const std::string& where) {
  TIDAL_RETURN_IF_ERROR(CheckRangeSizes(list, key, where));
  auto names = ExpandHostlist(list, kMaxNamesPerList);
  if (!names) return MakeError(ErrorCode::kParse, "{}: {} {}; fix the host list (Slurm syntax: tux[0-3,12])", where, key, names.error().message);
  if (names->empty()) return MakeError(ErrorCode::kParse, "{}: {} is empty; give a host list like tux[0-3]", where, key);
  for (const auto& n : *names) TIDAL_RETURN_IF_ERROR(CheckName(n, fmt::format("a name in {}", key), where));
  return names;
}

Result<Topology> BuildTopology(const SlurmTopo& topo, const std::string& source, const SlurmTopo* blocks) {
  switch (topo.kind) {
    case Kind::kTree: return BuildTree(topo, source, blocks);
    case Kind::kBlock:
    case Kind::kRing: return BuildGroups(topo, source);
    case Kind::kFlat:
      return MakeError(ErrorCode::kParse, "{}: topology '{}' is flat (topology/flat): it names no switches, blocks or nodes, so "
                       "there is no topology to read; read another topology of the file (name it, or give it cluster_default: true)",
                       topo.where, topo.name);
    case Kind::kTorus3d:
      return MakeError(ErrorCode::kParse, "{}: topology '{}' is a 3D torus (topology/torus3d), which tidal does not model; read a "
                       "tree, block or ring topology of the file (name it, or give it cluster_default: true)", topo.where, topo.name);
  }
  return MakeError(ErrorCode::kInternal, "unhandled Slurm topology kind");
}

}  // namespace tidal::topo::slurm
