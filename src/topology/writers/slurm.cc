// Slurm topology writers. What tidal knows and Slurm cannot say is dropped
// with a '#' comment in the output (never silently): links, NVLink, rails
// beyond the switch count, sub-node levels. Whatever is written reads back
// through readers/slurm.cc into the same domains at node level and above
// (names, levels, parents, hosts), except where a comment says otherwise.
#include "topology/writers/slurm.h"

#include <algorithm>
#include <functional>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "topology/hostlist.h"
#include "topology/readers/slurm_model.h"

namespace tidal::topo {
namespace {

struct SwitchLine {
  std::string name;
  std::vector<std::string> nodes, switches;  // exactly one is non-empty
};
struct Tree {
  std::vector<SwitchLine> lines;
  std::vector<std::string> comments;
};
struct BlockLine {
  std::string name;
  std::vector<std::string> nodes;
};
struct Blocks {
  std::vector<BlockLine> lines;
  std::vector<int64_t> sizes;
  std::vector<std::string> comments, outside;  // hosts in no block
};

bool IsSwitch(Level l) { return LevelIndex(l) > LevelIndex(Level::kBlock); }

// A host list that expands back to exactly `v` (CompressHostlist promises it
// for plain names; checked anyway, since a wrong list would move nodes).
std::string Hostlist(const std::vector<std::string>& v) {
  std::string s = CompressHostlist(v);
  auto back = ExpandHostlist(s, v.size() + 1);
  if (back && *back == v) return s;
  s.clear();
  for (const auto& n : v) s += (s.empty() ? "" : ",") + n;
  return s;
}

Status CheckWritable(const Topology& t, const std::string& name, std::string_view what) {
  TIDAL_RETURN_IF_ERROR(slurm::CheckName(name, what, t.source()));
  if (what == "switch name" && name.size() > slurm::kMaxSwitchName) {
    return MakeError(ErrorCode::kInvalidArgument, "{}: switch name '{}' has {} characters; Slurm allows at most {}: rename it",
                     t.source(), name, name.size(), slurm::kMaxSwitchName);
  }
  return Ok();
}

// Unused names for switches tidal has to invent.
std::string FreshName(std::set<std::string>& used, const std::string& base) {
  std::string n = base;
  for (int i = 2; used.contains(n); ++i) n = fmt::format("{}{}", base, i);
  used.insert(n);
  return n;
}

// The Slurm switches of a domain: one per merged parallel switch. The
// reader names a merged domain by the compressed list of its members
// ("s[4-7]"), so that list is expanded back; other names get -1..-k.
std::vector<std::string> Members(const Domain& d, std::set<std::string>& used, std::vector<std::string>& comments) {
  if (d.switches <= 1) return {d.name};
  auto names = ExpandHostlist(d.name, static_cast<size_t>(d.switches) + 1);
  if (names && names->size() == static_cast<size_t>(d.switches) && std::set<std::string>(names->begin(), names->end()).size() == names->size()) {
    for (const auto& n : *names) used.insert(n);
    return *names;
  }
  std::vector<std::string> out;
  for (int i = 1; i <= d.switches; ++i) out.push_back(FreshName(used, fmt::format("{}-{}", d.name, i)));
  comments.push_back(fmt::format("{} '{}' of {} parallel switches is written as {} (they read back as one domain named so)",
                                 LevelName(d.level), d.name, d.switches, Hostlist(out)));
  return out;
}

// The topology/tree view: every domain above blocks is a switch; a block's
// hosts belong to the switch above it (topology.conf has no block level in
// a tree). Children before parents, so the reader keeps tidal's order.
Result<Tree> TreeOf(const Topology& t) {
  Tree tree;
  std::set<std::string> used;
  for (DomainId d = 0; d < t.num_domains(); ++d)
    if (LevelIndex(t.level(d)) >= LevelIndex(Level::kNode)) used.insert(t.domain(d).name);
  auto hosts_of = [&](DomainId d) {
    std::vector<std::string> v;
    for (int32_t h = t.first_host(d); h < t.first_host(d) + t.hosts_under(d); ++h) v.push_back(t.domain(t.host(h)).name);
    return v;
  };
  for (DomainId h : t.hosts()) TIDAL_RETURN_IF_ERROR(CheckWritable(t, t.domain(h).name, "host name"));
  if (!IsSwitch(t.level(t.root()))) {
    // One host or one block: Slurm needs a switch to hold the nodes.
    const std::string name = FreshName(used, "cluster");
    tree.lines.push_back({name, hosts_of(t.root()), {}});
    tree.comments.push_back(fmt::format("'{}' is a switch tidal adds: Slurm's tree needs one above the nodes", name));
    return tree;
  }
  std::vector<std::vector<std::string>> members(static_cast<size_t>(t.num_domains()));
  std::function<Status(DomainId)> visit = [&](DomainId d) -> Status {
    const Domain& x = t.domain(d);
    std::vector<std::string> nodes, subs;
    for (DomainId k : t.children(d)) {
      if (IsSwitch(t.level(k))) {
        TIDAL_RETURN_IF_ERROR(visit(k));
        for (const auto& m : members[static_cast<size_t>(k)]) subs.push_back(m);
      } else {
        for (auto& h : hosts_of(k)) nodes.push_back(std::move(h));
      }
    }
    if (nodes.empty() && subs.empty()) {
      tree.comments.push_back(fmt::format("{} '{}' has no hosts under it and is left out (Slurm would take it for an empty leaf)",
                                          LevelName(x.level), x.name));
      return Ok();
    }
    if (!nodes.empty() && !subs.empty()) {
      // switch_record.c rejects a switch with both Nodes= and Switches=.
      const std::string leaf = FreshName(used, x.name + "-nodes");
      tree.lines.push_back({leaf, std::move(nodes), {}});
      subs.push_back(leaf);
      nodes.clear();
      tree.comments.push_back(fmt::format("'{}' is a leaf switch tidal adds for the hosts directly under {} '{}': a Slurm switch "
                                          "holds either nodes or switches", leaf, LevelName(x.level), x.name));
    }
    members[static_cast<size_t>(d)] = Members(x, used, tree.comments);
    for (const auto& m : members[static_cast<size_t>(d)]) {
      TIDAL_RETURN_IF_ERROR(CheckWritable(t, m, "switch name"));
      tree.lines.push_back({m, nodes, subs});
    }
    if (x.rails > x.switches) {
      tree.comments.push_back(fmt::format("{} '{}' is a rail group of {} rails behind {} switch(es); the rails are not written "
                                          "(write one switch per rail to keep them)", LevelName(x.level), x.name, x.rails, x.switches));
    }
    return Ok();
  };
  TIDAL_RETURN_IF_ERROR(visit(t.root()));
  if (tree.lines.empty()) return MakeError(ErrorCode::kInvalidArgument, "{}: no switch has hosts under it; nothing to write", t.source());
  // Expanded member names must not meet another switch or a host: the file would not read back.
  std::set<std::string> seen;
  for (DomainId h : t.hosts()) seen.insert(t.domain(h).name);
  for (const auto& l : tree.lines) {
    if (!seen.insert(l.name).second) {
      return MakeError(ErrorCode::kInvalidArgument, "{}: two switches or a switch and a host would both be named '{}' in Slurm's "
                       "file; rename one", t.source(), l.name);
    }
  }
  return tree;
}

// The topology/block view: BlockName= per block-level domain, in tidal's
// order (Slurm aggregates neighbouring blocks in file order).
Result<Blocks> BlocksOf(const Topology& t) {
  Blocks b;
  std::vector<uint8_t> in_block(static_cast<size_t>(t.num_hosts()), 0);
  size_t base = SIZE_MAX;
  std::vector<std::string> nvlink;
  for (DomainId d : t.domains_at(Level::kBlock)) {
    BlockLine line{t.domain(d).name, {}};
    TIDAL_RETURN_IF_ERROR(CheckWritable(t, line.name, "block name"));
    for (int32_t h = t.first_host(d); h < t.first_host(d) + t.hosts_under(d); ++h) {
      line.nodes.push_back(t.domain(t.host(h)).name);
      TIDAL_RETURN_IF_ERROR(CheckWritable(t, line.nodes.back(), "host name"));
      in_block[static_cast<size_t>(h)] = 1;
    }
    if (line.nodes.empty()) {
      b.comments.push_back(fmt::format("block '{}' has no hosts and is left out", line.name));
      continue;
    }
    if (t.domain(d).nvlink) nvlink.push_back(line.name);
    base = std::min(base, line.nodes.size());
    b.lines.push_back(std::move(line));
  }
  for (int32_t h = 0; h < t.num_hosts(); ++h)
    if (!in_block[static_cast<size_t>(h)]) b.outside.push_back(t.domain(t.host(h)).name);
  if (b.lines.empty()) return b;
  // block_record.c: the first BlockSizes value is the base block size in
  // nodes, the others the base times 2^k. The smallest block is the base (the
  // reader notes bigger blocks' spares); aggregates double up to all blocks.
  for (size_t k = 1; k <= b.lines.size() && k <= (size_t{1} << 15); k *= 2) b.sizes.push_back(static_cast<int64_t>(base * k));
  if (!nvlink.empty()) {
    b.comments.push_back(fmt::format("NVLink domains, which Slurm's files cannot mark: block(s) {}", Hostlist(nvlink)));
  }
  return b;
}

std::string OneLine(const std::string& s) {
  std::string out = s;
  for (char& c : out)
    if (static_cast<unsigned char>(c) < ' ') c = ' ';
  return out;
}

}  // namespace

Result<std::string> WriteSlurmTopologyConf(const Topology& t) {
  if (t.num_hosts() == 0) return MakeError(ErrorCode::kInvalidArgument, "{}: the topology has no hosts; nothing to write", t.source());
  std::string out;
  if (!t.domains_at(Level::kBlock).empty()) {
    TIDAL_ASSIGN_OR_RETURN(Blocks b, BlocksOf(t));
    if (!b.outside.empty()) {
      return MakeError(ErrorCode::kInvalidArgument, "{}: {} host(s) are in no block ({}); topology/block leaves such nodes out of "
                       "every allocation, so the block form would lose them: put them in blocks, or export --to slurm-yaml "
                       "(a tree topology with every host, and the blocks)", t.source(), b.outside.size(), Hostlist(b.outside));
    }
    out += fmt::format("# topology.conf for TopologyPlugin=topology/block, written by tidal from {}\n", OneLine(t.source()));
    // The root a reader adds over several blocks ("cluster", "cluster-root"...) reads back by itself.
    const std::string& root = t.domain(t.root()).name;
    const bool synthetic_root = root == "cluster" || root.starts_with("cluster-root");
    size_t switches = 0;
    for (DomainId d = 0; d < t.num_domains(); ++d) switches += IsSwitch(t.level(d)) && !(d == t.root() && synthetic_root);
    if (switches > 0) {
      b.comments.push_back(fmt::format("the {} switch domains above the blocks are not written: topology.conf holds one plugin's "
                                       "lines; export --to slurm-yaml for the tree and the blocks", switches));
    }
    for (const auto& c : b.comments) out += "# tidal: " + c + "\n";
    for (const auto& l : b.lines) out += fmt::format("BlockName={} Nodes={}\n", l.name, Hostlist(l.nodes));
    std::string sizes;
    for (int64_t s : b.sizes) sizes += fmt::format("{}{}", sizes.empty() ? "" : ",", s);
    out += "BlockSizes=" + sizes + "\n";
    return out;
  }
  TIDAL_ASSIGN_OR_RETURN(Tree tree, TreeOf(t));
  out += fmt::format("# topology.conf for TopologyPlugin=topology/tree, written by tidal from {}\n", OneLine(t.source()));
  for (const auto& c : tree.comments) out += "# tidal: " + c + "\n";
  for (const auto& l : tree.lines) {
    out += l.nodes.empty() ? fmt::format("SwitchName={} Switches={}\n", l.name, Hostlist(l.switches))
                           : fmt::format("SwitchName={} Nodes={}\n", l.name, Hostlist(l.nodes));
  }
  return out;
}

Result<std::string> WriteSlurmTopologyYaml(const Topology& t) {
  if (t.num_hosts() == 0) return MakeError(ErrorCode::kInvalidArgument, "{}: the topology has no hosts; nothing to write", t.source());
  TIDAL_ASSIGN_OR_RETURN(Tree tree, TreeOf(t));
  TIDAL_ASSIGN_OR_RETURN(Blocks blocks, BlocksOf(t));
  // Comments go on top: yaml-cpp would append them to the previous line.
  std::string head = fmt::format("# topology.yaml written by tidal from {}\n", OneLine(t.source()));
  for (const auto& c : tree.comments) head += "# tidal: " + c + "\n";
  YAML::Emitter y;
  y << YAML::BeginSeq;
  y << YAML::BeginMap << YAML::Key << "topology" << YAML::Value << "tree";
  y << YAML::Key << "cluster_default" << YAML::Value << true;
  y << YAML::Key << "tree" << YAML::Value << YAML::BeginMap << YAML::Key << "switches" << YAML::Value << YAML::BeginSeq;
  for (const auto& l : tree.lines) {
    y << YAML::BeginMap << YAML::Key << "switch" << YAML::Value << l.name;
    if (l.nodes.empty()) y << YAML::Key << "children" << YAML::Value << Hostlist(l.switches);
    else y << YAML::Key << "nodes" << YAML::Value << Hostlist(l.nodes);
    y << YAML::EndMap;
  }
  y << YAML::EndSeq << YAML::EndMap << YAML::EndMap;
  if (!blocks.lines.empty()) {
    if (!blocks.outside.empty()) {
      blocks.comments.push_back(fmt::format("{} host(s) are in no block ({}); partitions on topology 'block' cannot use them",
                                            blocks.outside.size(), Hostlist(blocks.outside)));
    }
    for (const auto& c : blocks.comments) head += "# tidal: " + c + "\n";
    y << YAML::BeginMap << YAML::Key << "topology" << YAML::Value << "block";
    y << YAML::Key << "cluster_default" << YAML::Value << false;
    y << YAML::Key << "block" << YAML::Value << YAML::BeginMap;
    y << YAML::Key << "block_sizes" << YAML::Value << YAML::Flow << blocks.sizes;
    y << YAML::Key << "blocks" << YAML::Value << YAML::BeginSeq;
    for (const auto& l : blocks.lines) {
      y << YAML::BeginMap << YAML::Key << "block" << YAML::Value << l.name << YAML::Key << "nodes" << YAML::Value << Hostlist(l.nodes)
        << YAML::EndMap;
    }
    y << YAML::EndSeq << YAML::EndMap << YAML::EndMap;
  }
  y << YAML::EndSeq;
  if (!y.good()) return MakeError(ErrorCode::kInternal, "{}: writing topology.yaml failed: {}", t.source(), y.GetLastError());
  return head + y.c_str() + "\n";
}

}  // namespace tidal::topo
