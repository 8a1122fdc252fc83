// FabricGraph: switches and hosts by name -> a tree (see builder.h).
#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "topology/builder.h"
#include "topology/hostlist.h"

namespace tidal::topo {
namespace {

std::string At(const std::string& where) { return where.empty() ? std::string() : where + ": "; }

}  // namespace

Status FabricGraph::AddSwitch(const std::string& name, std::optional<Level> level, const std::string& where, LinkSpec link,
                              bool nvlink) {
  if (name.empty()) return MakeError(ErrorCode::kParse, "{}a switch has an empty name", At(where));
  if (auto it = switches_.find(name); it != switches_.end()) {
    return MakeError(ErrorCode::kParse, "{}switch '{}' is declared twice (first at {}); names must be unique", At(where), name,
                     it->second.where);
  }
  if (auto it = hosts_.find(name); it != hosts_.end()) {
    return MakeError(ErrorCode::kParse, "{}'{}' is both a switch and a host (host at {})", At(where), name, it->second.where);
  }
  switches_.emplace(name, Switch{level, where, link, nvlink, next_order_++});
  return Ok();
}

Status FabricGraph::AddHost(const std::string& name, const std::string& where, HostLayout layout) {
  if (name.empty()) return MakeError(ErrorCode::kParse, "{}a host has an empty name", At(where));
  if (auto it = switches_.find(name); it != switches_.end()) {
    return MakeError(ErrorCode::kParse, "{}'{}' is both a host and a switch (switch at {})", At(where), name, it->second.where);
  }
  auto [it, inserted] = hosts_.emplace(name, Host{where, layout, next_order_});
  if (inserted) {
    ++next_order_;
    return Ok();
  }
  if (it->second.layout.gpus < 0) {
    it->second.layout = std::move(layout);
  } else if (layout.gpus >= 0 && !(it->second.layout == layout)) {
    return MakeError(ErrorCode::kParse, "{}host '{}' is described twice, differently (first at {})", At(where), name,
                     it->second.where);
  }
  return Ok();
}

void FabricGraph::Connect(const std::string& parent, const std::string& child, const std::string& where) {
  edges_.push_back({parent, child, where});
}

Result<Topology> FabricGraph::Build(const Options& options) && {
  // Items: switches then hosts, each with an index; edges resolved to indices.
  std::vector<std::string> name;
  std::vector<bool> is_host;
  std::vector<size_t> order;
  std::unordered_map<std::string, int> index;
  for (const auto& [n, s] : switches_) {
    index[n] = static_cast<int>(name.size());
    name.push_back(n);
    is_host.push_back(false);
    order.push_back(s.order);
  }
  for (const auto& [n, h] : hosts_) {
    index[n] = static_cast<int>(name.size());
    name.push_back(n);
    is_host.push_back(true);
    order.push_back(h.order);
  }
  const size_t n_items = name.size();
  auto where_of = [&](int i) -> const std::string& {
    return is_host[static_cast<size_t>(i)] ? hosts_.at(name[static_cast<size_t>(i)]).where : switches_.at(name[static_cast<size_t>(i)]).where;
  };
  std::vector<std::vector<int>> kids(n_items), parents(n_items);
  std::vector<std::vector<std::string>> parent_where(n_items);
  std::set<std::pair<int, int>> seen;
  for (const Edge& e : edges_) {
    auto p = index.find(e.parent);
    if (p == index.end() || is_host[static_cast<size_t>(p->second)]) {
      return MakeError(ErrorCode::kParse, "{}'{}' is used as a switch but is not declared as one", At(e.where), e.parent);
    }
    auto c = index.find(e.child);
    if (c == index.end()) {
      return MakeError(ErrorCode::kParse, "{}switch '{}' names '{}', which is not declared anywhere (unknown switch or host)",
                       At(e.where), e.parent, e.child);
    }
    if (p->second == c->second) {
      return MakeError(ErrorCode::kParse, "{}switch '{}' lists itself as its child (a cycle)", At(e.where), e.parent);
    }
    if (!seen.insert({p->second, c->second}).second) continue;  // parallel links: one edge in the tree
    kids[static_cast<size_t>(p->second)].push_back(c->second);
    parents[static_cast<size_t>(c->second)].push_back(p->second);
    parent_where[static_cast<size_t>(c->second)].push_back(e.where);
  }
  // Heights above hosts bottom-up without recursion (Kahn's order over the
  // child edges): whatever is left unordered lies on or above a cycle.
  std::vector<int> height(n_items, -1);
  {
    std::vector<int> pending(n_items, 0);  // children not yet given a height
    std::vector<int> ready;
    for (size_t i = 0; i < n_items; ++i) {
      pending[i] = static_cast<int>(kids[i].size());
      if (pending[i] == 0) ready.push_back(static_cast<int>(i));
    }
    size_t done = 0;
    while (!ready.empty()) {
      const int u = ready.back();
      ready.pop_back();
      ++done;
      int h = is_host[static_cast<size_t>(u)] ? 0 : 1;
      for (int v : kids[static_cast<size_t>(u)]) h = std::max(h, height[static_cast<size_t>(v)] + 1);
      height[static_cast<size_t>(u)] = h;
      for (int p : parents[static_cast<size_t>(u)])
        if (--pending[static_cast<size_t>(p)] == 0) ready.push_back(p);
    }
    if (done != n_items) {
      // Walk down through unordered children until a switch repeats: a cycle.
      int u = 0;
      while (height[static_cast<size_t>(u)] >= 0) ++u;
      std::vector<int> path;
      std::vector<int> seen_at(n_items, -1);
      while (seen_at[static_cast<size_t>(u)] < 0) {
        seen_at[static_cast<size_t>(u)] = static_cast<int>(path.size());
        path.push_back(u);
        for (int v : kids[static_cast<size_t>(u)])
          if (height[static_cast<size_t>(v)] < 0) {
            u = v;
            break;
          }
      }
      std::string cycle;
      for (size_t i = static_cast<size_t>(seen_at[static_cast<size_t>(u)]); i < path.size(); ++i)
        cycle += name[static_cast<size_t>(path[i])] + " -> ";
      cycle += name[static_cast<size_t>(u)];
      const std::string& w = where_of(u);
      return MakeError(ErrorCode::kParse, "{}: the switches form a cycle ({}); a fabric description must be a tree or a Clos",
                       w.empty() ? source_ : w, cycle);
    }
  }
  int max_h = 0;
  for (size_t i = 0; i < n_items; ++i) max_h = std::max(max_h, height[i]);
  // Five switch tiers at most above hosts (block, leaf, spine, core, zone):
  // checked here, so the walks below stay shallow on any input.
  if (max_h > 5) {
    size_t top = 0;
    for (size_t i = 0; i < n_items; ++i)
      if (height[i] > height[top]) top = i;
    return MakeError(ErrorCode::kParse,
                     "{}switch '{}' sits {} switch tiers above the hosts; tidal models at most five (block, leaf, spine, core, zone)",
                     At(where_of(static_cast<int>(top))), name[top], max_h);
  }
  // Merge parallel switches bottom-up: group[i] is the merged id of item i.
  std::vector<int> group(n_items);
  for (size_t i = 0; i < n_items; ++i) group[i] = static_cast<int>(i);
  std::vector<std::vector<int>> members(n_items);
  for (size_t i = 0; i < n_items; ++i) members[i] = {static_cast<int>(i)};
  if (options.merge_parallel) {
    for (int h = 1; h <= max_h; ++h) {
      std::map<std::pair<std::vector<int>, int>, int> by_kids;  // (merged children, level) -> representative
      std::vector<int> items;
      for (size_t i = 0; i < n_items; ++i)
        if (!is_host[i] && height[i] == h) items.push_back(static_cast<int>(i));
      std::sort(items.begin(), items.end(), [&](int a, int b) { return order[static_cast<size_t>(a)] < order[static_cast<size_t>(b)]; });
      for (int i : items) {
        std::vector<int> k;
        for (int v : kids[static_cast<size_t>(i)]) k.push_back(group[static_cast<size_t>(v)]);
        std::sort(k.begin(), k.end());
        k.erase(std::unique(k.begin(), k.end()), k.end());
        if (k.empty()) continue;
        const auto& sw = switches_.at(name[static_cast<size_t>(i)]);
        const int lvl = sw.level ? LevelIndex(*sw.level) : -1;
        auto [it, inserted] = by_kids.emplace(std::make_pair(k, lvl), i);
        if (!inserted) {
          group[static_cast<size_t>(i)] = it->second;
          members[static_cast<size_t>(it->second)].push_back(i);
          members[static_cast<size_t>(i)].clear();
        }
      }
    }
  }
  // Merged parents of each merged item: at most one.
  std::vector<int> gparent(n_items, -1);
  for (size_t i = 0; i < n_items; ++i) {
    if (group[i] != static_cast<int>(i)) continue;
    std::vector<std::pair<int, std::string>> ps;
    for (int m : members[i]) {
      for (size_t k = 0; k < parents[static_cast<size_t>(m)].size(); ++k) {
        const int pg = group[static_cast<size_t>(parents[static_cast<size_t>(m)][k])];
        if (std::none_of(ps.begin(), ps.end(), [&](const auto& x) { return x.first == pg; }))
          ps.push_back({pg, parent_where[static_cast<size_t>(m)][k]});
      }
    }
    if (ps.size() > 1) {
      auto label = [&](int g) {
        std::vector<std::string> ns;
        for (int m : members[static_cast<size_t>(g)]) ns.push_back(name[static_cast<size_t>(m)]);
        return CompressHostlist(ns);
      };
      return MakeError(ErrorCode::kParse,
                       "{}{} '{}' is under both '{}' ({}) and '{}' ({}); tidal models the fabric as a tree, so each host and "
                       "switch needs one parent{}",
                       At(ps[1].second), is_host[i] ? "host" : "switch", label(static_cast<int>(i)), label(ps[0].first),
                       ps[0].second, label(ps[1].first), ps[1].second,
                       options.merge_parallel ? " (or parents with identical children, which are merged as parallel switches)" : "");
    }
    if (!ps.empty()) gparent[i] = ps[0].first;
  }
  // Levels: explicit, else the next level above the highest child.
  std::vector<int> level(n_items, -1);
  std::function<Result<int>(int)> level_of = [&](int u) -> Result<int> {
    int& l = level[static_cast<size_t>(u)];
    if (l >= 0) return l;
    if (is_host[static_cast<size_t>(u)]) return l = LevelIndex(Level::kNode);
    const auto& sw = switches_.at(name[static_cast<size_t>(u)]);
    int need = LevelIndex(Level::kNode);
    for (int m : members[static_cast<size_t>(u)])
      for (int v : kids[static_cast<size_t>(m)]) {
        TIDAL_ASSIGN_OR_RETURN(int cl, level_of(group[static_cast<size_t>(v)]));
        need = std::max(need, cl);
      }
    if (sw.level) return l = LevelIndex(*sw.level);
    int next = need + 1;
    if (next == LevelIndex(Level::kBlock)) next = LevelIndex(Level::kLeaf);
    if (next >= kNumLevels) {
      return MakeError(ErrorCode::kParse, "{}switch '{}' sits more than four switch tiers above the hosts; tidal models leaf, spine, core and zone",
                       At(sw.where), name[static_cast<size_t>(u)]);
    }
    return l = next;
  };
  // Emit through a TopologyBuilder, in declaration order.
  TopologyBuilder b(source_);
  for (auto& n : notes_) b.AddNote(std::move(n));
  std::vector<std::vector<int>> gkids(n_items);
  std::vector<int> roots;
  for (size_t i = 0; i < n_items; ++i) {
    if (group[i] != static_cast<int>(i)) continue;
    if (gparent[i] < 0) roots.push_back(static_cast<int>(i));
    else gkids[static_cast<size_t>(gparent[i])].push_back(static_cast<int>(i));
  }
  auto by_order = [&](int a, int c) { return order[static_cast<size_t>(a)] < order[static_cast<size_t>(c)]; };
  std::sort(roots.begin(), roots.end(), by_order);
  for (auto& k : gkids) std::sort(k.begin(), k.end(), by_order);
  int lonely_hosts = 0;
  for (int r : roots) lonely_hosts += is_host[static_cast<size_t>(r)] && !switches_.empty();
  if (lonely_hosts > 0) {
    b.AddNote(fmt::format("{} host(s) are connected to no switch; they sit directly under the root", lonely_hosts));
  }
  std::function<Status(int, DomainId)> emit = [&](int u, DomainId parent) -> Status {
    const std::string& n = name[static_cast<size_t>(u)];
    if (is_host[static_cast<size_t>(u)]) {
      const Host& h = hosts_.at(n);
      b.AddHost(n, parent, h.layout, h.where);
      return Ok();
    }
    TIDAL_ASSIGN_OR_RETURN(int l, level_of(u));
    const Switch& sw = switches_.at(n);
    std::vector<std::string> ns;
    for (int m : members[static_cast<size_t>(u)]) ns.push_back(name[static_cast<size_t>(m)]);
    const DomainId id = b.AddDomain(kAllLevels[static_cast<size_t>(l)], ns.size() > 1 ? CompressHostlist(ns) : n, parent, sw.where);
    Domain& d = b.mutable_domain(id);
    d.link = sw.link;
    d.nvlink = sw.nvlink;
    d.switches = static_cast<int>(ns.size());
    bool over_hosts = !gkids[static_cast<size_t>(u)].empty();
    for (int k : gkids[static_cast<size_t>(u)]) over_hosts = over_hosts && is_host[static_cast<size_t>(k)];
    if (over_hosts && ns.size() > 1) d.rails = static_cast<int>(ns.size());
    for (int k : gkids[static_cast<size_t>(u)]) TIDAL_RETURN_IF_ERROR(emit(k, id));
    return Ok();
  };
  for (int r : roots) TIDAL_RETURN_IF_ERROR(emit(r, kNoDomain));
  return std::move(b).Build();
}

}  // namespace tidal::topo
