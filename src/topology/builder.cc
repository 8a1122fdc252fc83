#include "topology/builder.h"

#include <algorithm>
#include <functional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "topology/hostlist.h"

namespace tidal::topo {
namespace {

std::string At(const std::string& where) { return where.empty() ? std::string() : where + ": "; }

std::string FirstNames(const std::vector<std::string>& v, size_t n = 5) {
  std::string out;
  for (size_t i = 0; i < v.size() && i < n; ++i) out += (i ? ", " : "") + v[i];
  if (v.size() > n) out += fmt::format(" and {} more", v.size() - n);
  return out;
}

}  // namespace

DomainId TopologyBuilder::AddDomain(Level level, std::string name, DomainId parent, std::string where) {
  Item it;
  it.d.level = level;
  it.d.name = std::move(name);
  it.d.parent = parent;
  it.where = std::move(where);
  const auto id = static_cast<DomainId>(nodes_.size());
  nodes_.push_back(std::move(it));
  if (parent != kNoDomain) nodes_[static_cast<size_t>(parent)].kids.push_back(id);
  return id;
}

DomainId TopologyBuilder::AddHost(std::string name, DomainId parent, HostLayout layout, std::string where) {
  const DomainId id = AddDomain(Level::kNode, std::move(name), parent, std::move(where));
  Item& it = nodes_[static_cast<size_t>(id)];
  it.host = true;
  it.d.nvlink = layout.nvlink;
  it.d.link = layout.link;
  it.d.gpu_model = layout.gpu_model;
  it.layout = std::move(layout);
  return id;
}

Result<Topology> TopologyBuilder::Build() && {
  Topology t;
  t.source_ = source_;
  t.notes_ = std::move(notes_);
  const std::string& src = source_;
  std::vector<DomainId> tops;
  std::unordered_set<std::string> names;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Item& it = nodes_[i];
    if (it.d.name.empty()) return MakeError(ErrorCode::kParse, "{}{}: a {} domain has no name", At(it.where), src, LevelName(it.d.level));
    if (!names.insert(it.d.name).second) {
      return MakeError(ErrorCode::kParse, "{}{}: the name '{}' is used twice; switch, block and host names must be unique",
                       At(it.where), src, it.d.name);
    }
    if (it.d.level == Level::kGpu || it.d.level == Level::kNvlink || it.d.level == Level::kPcie) {
      return MakeError(ErrorCode::kParse, "{}{}: '{}': {} domains are described inside a host's layout, not on their own",
                       At(it.where), src, it.d.name, LevelName(it.d.level));
    }
    if (it.d.parent == kNoDomain) {
      tops.push_back(static_cast<DomainId>(i));
      continue;
    }
    const Item& p = nodes_[static_cast<size_t>(it.d.parent)];
    if (p.host) {
      return MakeError(ErrorCode::kParse, "{}{}: '{}' is placed inside host '{}'; only GPUs are inside hosts",
                       At(it.where), src, it.d.name, p.d.name);
    }
    if (LevelIndex(p.d.level) <= LevelIndex(it.d.level)) {
      return MakeError(ErrorCode::kParse,
                       "{}{}: {} '{}' is under {} '{}'; a parent must be at a higher level (gpu < nvlink < pcie < node < "
                       "block < leaf < spine < core < zone)",
                       At(it.where), src, LevelName(it.d.level), it.d.name, LevelName(p.d.level), p.d.name);
    }
  }
  if (tops.empty()) return MakeError(ErrorCode::kParse, "{}: the topology is empty (no hosts or switches)", src);
  int hosts = 0;
  for (const Item& it : nodes_) hosts += it.host;
  if (hosts == 0) return MakeError(ErrorCode::kParse, "{}: the topology has no hosts; name the nodes under the switches", src);

  // Pre-order emission. A synthetic root joins several top-level domains.
  std::vector<Domain>& out = t.domains_;
  out.reserve(nodes_.size());
  std::vector<std::pair<DomainId, DomainId>> stack;  // (item, parent id in out)
  if (tops.size() > 1) {
    Level top = Level::kNode;
    for (DomainId d : tops) top = std::max(top, nodes_[static_cast<size_t>(d)].d.level, [](Level a, Level b) { return LevelIndex(a) < LevelIndex(b); });
    if (top == Level::kZone) {
      std::string list;
      for (size_t i = 0; i < tops.size() && i < 4; ++i) {
        const Item& it = nodes_[static_cast<size_t>(tops[i])];
        list += fmt::format("{}{} '{}'{}", i ? ", " : "", LevelName(it.d.level), it.d.name, it.where.empty() ? "" : " (" + it.where + ")");
      }
      return MakeError(ErrorCode::kParse,
                       "{}: {} top-level items ({}{}) have no common parent and one of them is a zone; a topology has one "
                       "root: put them under one zone or connect the stray items",
                       src, tops.size(), list, tops.size() > 4 ? ", ..." : "");
    }
    Domain root;
    root.level = kAllLevels[static_cast<size_t>(LevelIndex(top) + 1)];
    if (root.level == Level::kBlock) root.level = Level::kLeaf;  // a flat set of hosts behind one switch
    root.name = "cluster";
    for (int k = 2; names.contains(root.name); ++k) root.name = fmt::format("cluster-{}", k);
    root.link = DefaultLink(root.level, false);
    out.push_back(root);
    for (auto it = tops.rbegin(); it != tops.rend(); ++it) stack.push_back({*it, 0});
  } else {
    stack.push_back({tops.front(), kNoDomain});
  }
  std::set<std::pair<Level, bool>> defaulted;
  std::vector<HostLayout> layouts;
  while (!stack.empty()) {
    auto [item, parent] = stack.back();
    stack.pop_back();
    Item& it = nodes_[static_cast<size_t>(item)];
    Domain d = it.d;
    d.parent = parent;
    // Inside an NVLink domain everything talks over NVLink: a host in an
    // NVL72 block is an NVLink host, at the block's figures unless given.
    if (parent != kNoDomain && out[static_cast<size_t>(parent)].nvlink && !d.nvlink) {
      d.nvlink = true;
      if (d.link.gbps <= 0) {
        d.link = out[static_cast<size_t>(parent)].link;
        d.link.oversubscription = 1;
      }
    }
    if (d.link.gbps <= 0) {
      const double over = d.link.oversubscription;
      const int hops = d.link.hops;
      const double lat = d.link.latency_us;
      d.link = DefaultLink(d.level, d.nvlink);
      if (over > 1) d.link.oversubscription = over;
      if (hops > 0) d.link.hops = hops;
      if (lat > 0) d.link.latency_us = lat;
      defaulted.insert({d.level, d.nvlink});
    }
    const auto id = static_cast<DomainId>(out.size());
    out.push_back(d);
    if (!it.host) {
      for (auto k = it.kids.rbegin(); k != it.kids.rend(); ++k) stack.push_back({*k, id});
      continue;
    }
    // Expand the host's layout: groups (largest first) nest or are disjoint.
    HostLayout& L = it.layout;
    L.nvlink = d.nvlink;
    L.link = it.d.link;
    layouts.push_back(L);
    if (L.gpus < 0) {
      t.gpus_known_ = false;
      if (!L.groups.empty()) {
        return MakeError(ErrorCode::kParse, "{}{}: host '{}' has GPU groups but no GPU count", At(it.where), src, d.name);
      }
      continue;
    }
    if (L.gpus > 4096) {
      return MakeError(ErrorCode::kParse, "{}{}: host '{}' has {} GPUs; at most 4096 per host", At(it.where), src, d.name, L.gpus);
    }
    std::vector<std::vector<int>> sets;
    for (const auto& g : L.groups) {
      std::vector<int> s = g.gpus;
      std::sort(s.begin(), s.end());
      if (s.empty() || s.front() < 0 || s.back() >= L.gpus || std::adjacent_find(s.begin(), s.end()) != s.end()) {
        return MakeError(ErrorCode::kParse, "{}{}: host '{}': group '{}' names GPUs outside 0..{} or twice", At(it.where), src,
                         d.name, g.name, L.gpus - 1);
      }
      sets.push_back(std::move(s));
    }
    std::vector<size_t> order(L.groups.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return sets[a].size() > sets[b].size(); });
    // parent group of each group (index into L.groups, -1 host); innermost group of each GPU
    std::vector<int> gparent(L.groups.size(), -1), gpu_group(static_cast<size_t>(L.gpus), -1);
    for (size_t oi = 0; oi < order.size(); ++oi) {
      const size_t g = order[oi];
      for (size_t oj = 0; oj < oi; ++oj) {
        const size_t p = order[oj];
        std::vector<int> inter;
        std::set_intersection(sets[g].begin(), sets[g].end(), sets[p].begin(), sets[p].end(), std::back_inserter(inter));
        if (inter.empty()) continue;
        if (inter.size() != sets[g].size()) {
          return MakeError(ErrorCode::kParse, "{}{}: host '{}': GPU groups '{}' and '{}' overlap without one holding the other",
                           At(it.where), src, d.name, L.groups[g].name, L.groups[p].name);
        }
        gparent[g] = static_cast<int>(p);  // later (smaller) containing groups override earlier (larger) ones
      }
      for (int x : sets[g]) gpu_group[static_cast<size_t>(x)] = static_cast<int>(g);
    }
    for (size_t g = 0; g < L.groups.size(); ++g) {
      const Level parent_level = gparent[g] < 0 ? Level::kNode : L.groups[static_cast<size_t>(gparent[g])].level;
      if (LevelIndex(L.groups[g].level) >= LevelIndex(parent_level) || L.groups[g].level == Level::kGpu) {
        return MakeError(ErrorCode::kParse, "{}{}: host '{}': group '{}' ({}) cannot sit inside a {}", At(it.where), src, d.name,
                         L.groups[g].name, LevelName(L.groups[g].level), LevelName(parent_level));
      }
    }
    // Emit recursively: children of a group/host ordered by their smallest GPU.
    std::function<void(int, DomainId)> emit = [&](int group, DomainId pid) {
      struct Kid {
        int min_gpu;
        int group;  // -1: a GPU
        int gpu;
      };
      std::vector<Kid> kids;
      for (size_t g = 0; g < L.groups.size(); ++g)
        if (gparent[g] == group) kids.push_back({sets[g].front(), static_cast<int>(g), -1});
      for (int x = 0; x < L.gpus; ++x)
        if (gpu_group[static_cast<size_t>(x)] == group) kids.push_back({x, -1, x});
      std::sort(kids.begin(), kids.end(), [](const Kid& a, const Kid& b) { return a.min_gpu < b.min_gpu; });
      for (const Kid& k : kids) {
        Domain c;
        c.parent = pid;
        if (k.group < 0) {
          c.level = Level::kGpu;
          c.local_index = k.gpu;
          out.push_back(c);
          continue;
        }
        const auto& G = L.groups[static_cast<size_t>(k.group)];
        c.level = G.level;
        c.name = d.name + "/" + (G.name.empty() ? fmt::format("{}{}", LevelName(G.level), k.group) : G.name);
        // Groups of an NVSwitch host (NUMA halves, PCIe switches) are inside
        // its NVLink domain: NVLink at the host's figures unless given.
        c.nvlink = G.nvlink || out[static_cast<size_t>(pid)].nvlink;
        c.link = G.link.gbps > 0 ? G.link : (c.nvlink && !G.nvlink ? out[static_cast<size_t>(pid)].link : DefaultLink(G.level, G.nvlink));
        const auto gid = static_cast<DomainId>(out.size());
        out.push_back(c);
        emit(k.group, gid);
      }
    };
    emit(-1, id);
  }
  t.layouts_ = std::move(layouts);
  for (const auto& [l, nv] : defaulted) {
    // Once each: a rebuild (Materialize) brings the notes of the first build along.
    std::string note = fmt::format("{}{} links: the input gives no bandwidth; using tidal's default {} GB/s per GPU", LevelName(l),
                                   nv ? " (NVLink)" : "", DefaultLink(l, nv).gbps);
    if (std::find(t.notes_.begin(), t.notes_.end(), note) == t.notes_.end()) t.notes_.push_back(std::move(note));
  }
  t.Index();
  return t;
}

Result<Topology> Materialize(const Topology& t, const std::vector<NodeGpus>& nodes, const HostLayout& host_default) {
  std::unordered_map<std::string, const NodeGpus*> by_name;
  for (const NodeGpus& n : nodes) by_name.emplace(n.name, &n);
  std::vector<std::string> missing_nodes, missing_hosts;
  for (int32_t h = 0; h < t.num_hosts(); ++h)
    if (!by_name.contains(t.domain(t.host(h)).name)) missing_nodes.push_back(t.domain(t.host(h)).name);
  for (const NodeGpus& n : nodes)
    if (!t.FindHost(n.name)) missing_hosts.push_back(n.name);
  if (!missing_nodes.empty() || !missing_hosts.empty()) {
    std::string msg = fmt::format("{}: the topology and the node list name different hosts", t.source());
    if (!missing_hosts.empty()) msg += fmt::format("; {} node(s) are not in the topology: {}", missing_hosts.size(), FirstNames(missing_hosts));
    if (!missing_nodes.empty()) msg += fmt::format("; {} topology host(s) are not in the node list: {}", missing_nodes.size(), FirstNames(missing_nodes));
    msg += "; node names must match exactly";
    return std::unexpected(Error{ErrorCode::kInvalidArgument, msg});
  }
  TopologyBuilder b(t.source());
  for (const auto& n : t.notes()) b.AddNote(n);
  std::vector<DomainId> map(static_cast<size_t>(t.num_domains()), kNoDomain);
  for (DomainId d = 0; d < t.num_domains(); ++d) {
    const Domain& x = t.domain(d);
    if (LevelIndex(x.level) < LevelIndex(Level::kNode)) continue;
    const DomainId p = x.parent == kNoDomain ? kNoDomain : map[static_cast<size_t>(x.parent)];
    if (x.level != Level::kNode) {
      map[static_cast<size_t>(d)] = b.AddDomain(x.level, x.name, p);
      b.mutable_domain(map[static_cast<size_t>(d)]) = x;
      b.mutable_domain(map[static_cast<size_t>(d)]).parent = p;
      continue;
    }
    const int32_t h = t.host_index(d);
    HostLayout L = t.layout(h);
    const NodeGpus& n = *by_name.at(x.name);
    if (L.gpus >= 0 && L.gpus != n.gpus) {
      return MakeError(ErrorCode::kInvalidArgument, "{}: host '{}' has {} GPUs in the topology but {} in the node list", t.source(),
                       x.name, L.gpus, n.gpus);
    }
    if (L.gpus < 0) {
      const LinkSpec keep = L.link;
      const bool keep_nv = L.nvlink;
      L = host_default;
      L.gpus = n.gpus;
      if (keep.gbps > 0) L.link = keep;
      L.nvlink = L.nvlink || keep_nv;
      std::erase_if(L.groups, [&](const HostLayout::Group& g) {
        return std::any_of(g.gpus.begin(), g.gpus.end(), [&](int i) { return i >= n.gpus; });
      });
    }
    if (L.gpu_model.empty()) L.gpu_model = n.gpu_model;
    map[static_cast<size_t>(d)] = b.AddHost(x.name, p, L);
  }
  return std::move(b).Build();
}

}  // namespace tidal::topo
