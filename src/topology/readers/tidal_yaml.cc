#include "topology/readers/tidal_yaml.h"

#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "topology/builder.h"
#include "topology/hostlist.h"

namespace tidal::topo {
namespace {

struct Ctx {
  std::string source;
  std::map<std::string, HostLayout> host_types;
  std::map<Level, LinkSpec> links;
  TopologyBuilder* b = nullptr;
  size_t hosts = 0;
};

std::string Where(const Ctx& c, const YAML::Node& n) { return fmt::format("{}:{}", c.source, n.Mark().line + 1); }

Status Allowed(const Ctx& c, const YAML::Node& n, std::initializer_list<std::string_view> keys, std::string_view what) {
  if (!n.IsMap()) return MakeError(ErrorCode::kParse, "{}: {} must be a mapping of keys", Where(c, n), what);
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>();
    bool ok = false;
    for (auto a : keys) ok = ok || a == k;
    if (!ok) {
      std::string list;
      for (auto a : keys) list += (list.empty() ? "" : ", ") + std::string(a);
      return MakeError(ErrorCode::kParse, "{}: unknown key '{}' in {} (known: {})", Where(c, kv.first), k, what, list);
    }
  }
  return Ok();
}

template <typename T>
Result<T> Get(const Ctx& c, const YAML::Node& n, std::string_view what) {
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    return MakeError(ErrorCode::kParse, "{}: {} has the wrong type ('{}')", Where(c, n), what, n.IsScalar() ? n.Scalar() : "...");
  }
}

Result<double> GetNumber(const Ctx& c, const YAML::Node& n, std::string_view what, double lo, double hi) {
  TIDAL_ASSIGN_OR_RETURN(double v, Get<double>(c, n, what));
  if (!(v >= lo && v <= hi)) return MakeError(ErrorCode::kParse, "{}: {} = {} is outside [{}, {}]", Where(c, n), what, v, lo, hi);
  return v;
}

Result<LinkSpec> ReadLink(const Ctx& c, const YAML::Node& n, LinkSpec base) {
  TIDAL_RETURN_IF_ERROR(Allowed(c, n, {"gbps", "latency_us", "hops", "oversubscription"}, "a link"));
  if (n["gbps"]) { TIDAL_ASSIGN_OR_RETURN(base.gbps, GetNumber(c, n["gbps"], "gbps", 1e-3, 1e6)); }
  if (n["latency_us"]) { TIDAL_ASSIGN_OR_RETURN(base.latency_us, GetNumber(c, n["latency_us"], "latency_us", 0, 1e6)); }
  if (n["hops"]) {
    TIDAL_ASSIGN_OR_RETURN(double h, GetNumber(c, n["hops"], "hops", 0, 64));
    base.hops = static_cast<int>(h);
  }
  if (n["oversubscription"]) {
    TIDAL_ASSIGN_OR_RETURN(base.oversubscription, GetNumber(c, n["oversubscription"], "oversubscription", 1, 1000));
  }
  return base;
}

Result<std::vector<std::string>> ReadNames(const Ctx& c, const YAML::Node& n, std::string_view what) {
  std::vector<std::string> out;
  auto one = [&](const YAML::Node& s) -> Status {
    TIDAL_ASSIGN_OR_RETURN(std::string text, Get<std::string>(c, s, what));
    auto names = ExpandHostlist(text);
    if (!names) return MakeError(ErrorCode::kParse, "{}: {}", Where(c, s), names.error().message);
    for (auto& x : *names) out.push_back(std::move(x));
    return Ok();
  };
  if (n.IsSequence()) {
    for (const auto& s : n) TIDAL_RETURN_IF_ERROR(one(s));
  } else {
    TIDAL_RETURN_IF_ERROR(one(n));
  }
  return out;
}

Result<HostLayout> ReadHostType(const Ctx& c, const YAML::Node& n) {
  TIDAL_RETURN_IF_ERROR(Allowed(c, n, {"gpus", "gpu_model", "nvlink", "link", "groups"}, "a host type"));
  HostLayout L;
  if (n["gpus"]) {
    TIDAL_ASSIGN_OR_RETURN(double g, GetNumber(c, n["gpus"], "gpus", 0, 4096));
    L.gpus = static_cast<int>(g);
  }
  if (n["gpu_model"]) { TIDAL_ASSIGN_OR_RETURN(L.gpu_model, Get<std::string>(c, n["gpu_model"], "gpu_model")); }
  if (n["nvlink"]) { TIDAL_ASSIGN_OR_RETURN(L.nvlink, Get<bool>(c, n["nvlink"], "nvlink")); }
  if (n["link"]) { TIDAL_ASSIGN_OR_RETURN(L.link, ReadLink(c, n["link"], {})); }
  if (n["groups"]) {
    if (!n["groups"].IsSequence()) return MakeError(ErrorCode::kParse, "{}: groups must be a list", Where(c, n["groups"]));
    for (const auto& g : n["groups"]) {
      TIDAL_RETURN_IF_ERROR(Allowed(c, g, {"level", "name", "gpus", "nvlink", "link"}, "a GPU group"));
      HostLayout::Group G;
      if (g["level"]) {
        TIDAL_ASSIGN_OR_RETURN(std::string l, Get<std::string>(c, g["level"], "level"));
        auto lv = ParseLevel(l);
        if (!lv || (*lv != Level::kPcie && *lv != Level::kNvlink)) {
          return MakeError(ErrorCode::kParse, "{}: a GPU group's level is pcie or nvlink, not '{}'", Where(c, g["level"]), l);
        }
        G.level = *lv;
      }
      if (g["name"]) { TIDAL_ASSIGN_OR_RETURN(G.name, Get<std::string>(c, g["name"], "name")); }
      if (g["nvlink"]) { TIDAL_ASSIGN_OR_RETURN(G.nvlink, Get<bool>(c, g["nvlink"], "nvlink")); }
      if (G.level == Level::kNvlink) G.nvlink = true;
      if (g["link"]) {
        TIDAL_ASSIGN_OR_RETURN(G.link, ReadLink(c, g["link"], {}));
      } else if (auto it = c.links.find(G.level); it != c.links.end()) {
        G.link = it->second;  // the document's `links:` default for the group's level
      }
      if (!g["gpus"]) return MakeError(ErrorCode::kParse, "{}: a GPU group needs gpus: [indices]", Where(c, g));
      TIDAL_ASSIGN_OR_RETURN(G.gpus, Get<std::vector<int>>(c, g["gpus"], "gpus"));
      L.groups.push_back(std::move(G));
    }
  }
  return L;
}

// Shares `items` out among `parts` parents: evenly, or `per` each.
Result<std::vector<std::vector<std::string>>> Share(const Ctx& c, const YAML::Node& at, std::vector<std::string> items,
                                                    size_t parts, int per, std::string_view what) {
  std::vector<std::vector<std::string>> out(parts);
  if (parts == 1 && per <= 0) {  // with per: N, one parent must still hold them all
    out[0] = std::move(items);
    return out;
  }
  size_t chunk = 0;
  if (per > 0) {
    chunk = static_cast<size_t>(per);
    if ((items.size() + chunk - 1) / chunk != parts) {
      return MakeError(ErrorCode::kParse, "{}: {} {} at {} per parent fill {} parents, but there are {}", Where(c, at), items.size(),
                       what, per, (items.size() + chunk - 1) / chunk, parts);
    }
  } else {
    if (items.size() % parts != 0) {
      return MakeError(ErrorCode::kParse,
                       "{}: {} {} cannot be shared evenly among {} parents; change the counts or give per: N", Where(c, at),
                       items.size(), what, parts);
    }
    chunk = items.size() / parts;
  }
  for (size_t i = 0; i < items.size(); ++i) out[i / chunk].push_back(std::move(items[i]));
  return out;
}

Status ReadEntry(Ctx& c, const YAML::Node& n, const std::vector<DomainId>& parents, const std::vector<std::vector<std::string>>* given) {
  TIDAL_RETURN_IF_ERROR(Allowed(c, n, {"level", "name", "names", "per", "link", "nvlink", "rails", "switches", "children", "hosts",
                                       "hosts_per", "host_type"},
                                "a domain entry"));
  if (!n["level"]) return MakeError(ErrorCode::kParse, "{}: a domain entry needs a level (block, leaf, spine, core or zone)", Where(c, n));
  TIDAL_ASSIGN_OR_RETURN(std::string ls, Get<std::string>(c, n["level"], "level"));
  auto level = ParseLevel(ls);
  if (!level) return MakeError(ErrorCode::kParse, "{}: {}", Where(c, n["level"]), level.error().message);
  if (LevelIndex(*level) < LevelIndex(Level::kNode)) {
    return MakeError(ErrorCode::kParse, "{}: level {} is not a domain entry; GPUs and their groups go in host_types", Where(c, n["level"]), ls);
  }
  if (n["name"] && n["names"]) return MakeError(ErrorCode::kParse, "{}: give name or names, not both", Where(c, n));
  if (!n["name"] && !n["names"]) return MakeError(ErrorCode::kParse, "{}: a domain entry needs a name (or names: a[1-4])", Where(c, n));
  // `name:` is one name as written (a merged switch set is named "s[1-2]"); `names:` is a host list.
  std::vector<std::string> names;
  if (n["name"]) {
    TIDAL_ASSIGN_OR_RETURN(std::string one, Get<std::string>(c, n["name"], "name"));
    if (!one.empty()) names.push_back(std::move(one));
  } else {
    TIDAL_ASSIGN_OR_RETURN(names, ReadNames(c, n["names"], "names"));
  }
  if (names.empty()) return MakeError(ErrorCode::kParse, "{}: the entry names no domains", Where(c, n));
  int per = 0, hosts_per = 0;
  if (n["per"]) { TIDAL_ASSIGN_OR_RETURN(double p, GetNumber(c, n["per"], "per", 1, 1e7)); per = static_cast<int>(p); }
  if (n["hosts_per"]) { TIDAL_ASSIGN_OR_RETURN(double p, GetNumber(c, n["hosts_per"], "hosts_per", 1, 1e7)); hosts_per = static_cast<int>(p); }
  std::vector<std::vector<std::string>> shares;
  if (given) {
    shares = *given;
  } else {
    TIDAL_ASSIGN_OR_RETURN(shares, Share(c, n, names, parents.size(), per, "names"));
  }
  if (*level == Level::kNode) {
    // Hosts as an entry of their own (a one-host topology, or hosts of several types under one domain).
    for (const char* k : {"children", "hosts", "hosts_per", "link", "nvlink", "rails", "switches"}) {
      if (n[k]) return MakeError(ErrorCode::kParse, "{}: a node entry takes names and host_type only, not {}", Where(c, n[k]), k);
    }
    HostLayout L;
    if (n["host_type"]) {
      TIDAL_ASSIGN_OR_RETURN(std::string ht, Get<std::string>(c, n["host_type"], "host_type"));
      auto it = c.host_types.find(ht);
      if (it == c.host_types.end()) return MakeError(ErrorCode::kParse, "{}: unknown host_type '{}'; define it under host_types", Where(c, n["host_type"]), ht);
      L = it->second;
    }
    for (size_t p = 0; p < parents.size(); ++p)
      for (const auto& h : shares[p]) {
        c.b->AddHost(h, parents[p], L, Where(c, n));
        ++c.hosts;
      }
    return Ok();
  }
  LinkSpec link;
  if (auto it = c.links.find(*level); it != c.links.end()) link = it->second;
  if (n["link"]) { TIDAL_ASSIGN_OR_RETURN(link, ReadLink(c, n["link"], link)); }
  bool nvlink = false;
  if (n["nvlink"]) { TIDAL_ASSIGN_OR_RETURN(nvlink, Get<bool>(c, n["nvlink"], "nvlink")); }
  int rails = 0, switches = 1;
  if (n["rails"]) { TIDAL_ASSIGN_OR_RETURN(double r, GetNumber(c, n["rails"], "rails", 0, 64)); rails = static_cast<int>(r); }
  if (n["switches"]) { TIDAL_ASSIGN_OR_RETURN(double s, GetNumber(c, n["switches"], "switches", 1, 4096)); switches = static_cast<int>(s); }
  std::vector<DomainId> mine;
  for (size_t p = 0; p < parents.size(); ++p) {
    for (const auto& name : shares[p]) {
      const DomainId id = c.b->AddDomain(*level, name, parents[p], Where(c, n));
      Domain& d = c.b->mutable_domain(id);
      d.link = link;
      d.nvlink = nvlink;
      d.rails = rails;
      d.switches = switches;
      mine.push_back(id);
    }
  }
  if (n["children"]) {
    if (!n["children"].IsSequence()) return MakeError(ErrorCode::kParse, "{}: children must be a list of entries", Where(c, n["children"]));
    for (const auto& k : n["children"]) TIDAL_RETURN_IF_ERROR(ReadEntry(c, k, mine, nullptr));
  }
  if (n["hosts"]) {
    TIDAL_ASSIGN_OR_RETURN(std::vector<std::string> hosts, ReadNames(c, n["hosts"], "hosts"));
    HostLayout L;
    if (n["host_type"]) {
      TIDAL_ASSIGN_OR_RETURN(std::string ht, Get<std::string>(c, n["host_type"], "host_type"));
      auto it = c.host_types.find(ht);
      if (it == c.host_types.end()) return MakeError(ErrorCode::kParse, "{}: unknown host_type '{}'; define it under host_types", Where(c, n["host_type"]), ht);
      L = it->second;
    }
    TIDAL_ASSIGN_OR_RETURN(auto split, Share(c, n["hosts"], std::move(hosts), mine.size(), hosts_per, "hosts"));
    for (size_t i = 0; i < mine.size(); ++i) {
      for (const auto& h : split[i]) {
        c.b->AddHost(h, mine[i], L, Where(c, n["hosts"]));
        ++c.hosts;
      }
    }
  } else if (n["host_type"]) {
    return MakeError(ErrorCode::kParse, "{}: host_type without hosts", Where(c, n["host_type"]));
  }
  return Ok();
}

}  // namespace

Result<Topology> ReadTidalYaml(std::string_view text, const std::string& source) {
  YAML::Node doc;
  try {
    doc = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return MakeError(ErrorCode::kParse, "{}:{}: not valid YAML: {}", source, e.mark.line + 1, e.msg);
  }
  Ctx c;
  c.source = source;
  if (!doc.IsMap()) return MakeError(ErrorCode::kParse, "{}:1: a tidal topology is a YAML mapping with version: 1", source);
  try {
    TIDAL_RETURN_IF_ERROR(Allowed(c, doc, {"version", "name", "links", "host_types", "root", "notes"}, "the document"));
    if (!doc["version"]) return MakeError(ErrorCode::kParse, "{}:1: missing 'version: 1'", source);
    TIDAL_ASSIGN_OR_RETURN(int version, Get<int>(c, doc["version"], "version"));
    if (version != 1) return MakeError(ErrorCode::kParse, "{}: version {} is not supported (this tidal reads version 1)", Where(c, doc["version"]), version);
    if (doc["links"]) {
      TIDAL_RETURN_IF_ERROR(Allowed(c, doc["links"], {"nvlink", "pcie", "node", "block", "leaf", "spine", "core", "zone"}, "links"));
      for (const auto& kv : doc["links"]) {
        const Level l = *ParseLevel(kv.first.as<std::string>());
        TIDAL_ASSIGN_OR_RETURN(c.links[l], ReadLink(c, kv.second, DefaultLink(l, false)));
      }
    }
    if (doc["host_types"]) {
      if (!doc["host_types"].IsMap()) return MakeError(ErrorCode::kParse, "{}: host_types must map names to host types", Where(c, doc["host_types"]));
      for (const auto& kv : doc["host_types"]) {
        TIDAL_ASSIGN_OR_RETURN(HostLayout L, ReadHostType(c, kv.second));
        if (L.link.gbps <= 0) {
          if (auto it = c.links.find(Level::kNode); it != c.links.end() && !L.nvlink) L.link = it->second;
        }
        c.host_types[kv.first.as<std::string>()] = std::move(L);
      }
    }
    if (!doc["root"]) return MakeError(ErrorCode::kParse, "{}: missing 'root:' (the tree of domains)", source);
    TopologyBuilder b(source);
    c.b = &b;
    if (doc["notes"]) {
      TIDAL_ASSIGN_OR_RETURN(auto notes, Get<std::vector<std::string>>(c, doc["notes"], "notes"));
      for (auto& note : notes) b.AddNote(std::move(note));
    }
    const std::vector<DomainId> top = {kNoDomain};
    if (doc["root"].IsSequence()) {
      for (const auto& e : doc["root"]) TIDAL_RETURN_IF_ERROR(ReadEntry(c, e, top, nullptr));
    } else {
      TIDAL_RETURN_IF_ERROR(ReadEntry(c, doc["root"], top, nullptr));
    }
    return std::move(b).Build();
  } catch (const YAML::Exception& e) {
    return MakeError(ErrorCode::kParse, "{}:{}: {}", source, e.mark.line + 1, e.msg);
  }
}

namespace {

void EmitLink(YAML::Emitter& y, const LinkSpec& l) {
  y << YAML::Key << "link" << YAML::Value << YAML::Flow << YAML::BeginMap;
  y << YAML::Key << "gbps" << YAML::Value << l.gbps;
  y << YAML::Key << "latency_us" << YAML::Value << l.latency_us;
  y << YAML::Key << "hops" << YAML::Value << l.hops;
  if (l.oversubscription != 1) y << YAML::Key << "oversubscription" << YAML::Value << l.oversubscription;
  y << YAML::EndMap;
}

}  // namespace

std::string WriteTidalYaml(const Topology& t) {
  // One host type per distinct layout, named after its first host's model.
  std::vector<std::pair<std::string, HostLayout>> types;
  std::vector<int> type_of(static_cast<size_t>(t.num_hosts()), -1);
  for (int32_t h = 0; h < t.num_hosts(); ++h) {
    const HostLayout& L = t.layout(h);
    if (L.gpus < 0 && L.link.gbps <= 0 && !L.nvlink && L.gpu_model.empty()) continue;
    int found = -1;
    for (size_t i = 0; i < types.size(); ++i)
      if (types[i].second == L) found = static_cast<int>(i);
    if (found < 0) {
      found = static_cast<int>(types.size());
      types.push_back({fmt::format("type{}", types.size() + 1), L});
    }
    type_of[static_cast<size_t>(h)] = found;
  }
  YAML::Emitter y;
  y << YAML::BeginMap;
  y << YAML::Key << "version" << YAML::Value << 1;
  y << YAML::Key << "name" << YAML::Value << t.source();
  if (!types.empty()) {
    y << YAML::Key << "host_types" << YAML::Value << YAML::BeginMap;
    for (const auto& [name, L] : types) {
      y << YAML::Key << name << YAML::Value << YAML::BeginMap;
      if (L.gpus >= 0) y << YAML::Key << "gpus" << YAML::Value << L.gpus;
      if (!L.gpu_model.empty()) y << YAML::Key << "gpu_model" << YAML::Value << L.gpu_model;
      if (L.nvlink) y << YAML::Key << "nvlink" << YAML::Value << true;
      if (L.link.gbps > 0) EmitLink(y, L.link);
      if (!L.groups.empty()) {
        y << YAML::Key << "groups" << YAML::Value << YAML::BeginSeq;
        for (const auto& g : L.groups) {
          y << YAML::BeginMap << YAML::Key << "level" << YAML::Value << std::string(LevelName(g.level));
          if (!g.name.empty()) y << YAML::Key << "name" << YAML::Value << g.name;
          if (g.nvlink && g.level != Level::kNvlink) y << YAML::Key << "nvlink" << YAML::Value << true;
          if (g.link.gbps > 0) EmitLink(y, g.link);
          y << YAML::Key << "gpus" << YAML::Value << YAML::Flow << g.gpus;
          y << YAML::EndMap;
        }
        y << YAML::EndSeq;
      }
      y << YAML::EndMap;
    }
    y << YAML::EndMap;
  }
  // The tree. A root that is a host (one-host topology) becomes a leaf entry.
  std::function<void(DomainId)> entry = [&](DomainId d) {
    const Domain& x = t.domain(d);
    y << YAML::BeginMap;
    y << YAML::Key << "level" << YAML::Value << std::string(LevelName(x.level));
    y << YAML::Key << "name" << YAML::Value << x.name;
    if (!(x.link == DefaultLink(x.level, x.nvlink))) EmitLink(y, x.link);
    if (x.nvlink) y << YAML::Key << "nvlink" << YAML::Value << true;
    if (x.rails > 0) y << YAML::Key << "rails" << YAML::Value << x.rails;
    if (x.switches > 1) y << YAML::Key << "switches" << YAML::Value << x.switches;
    std::vector<DomainId> sub;
    std::map<int, std::vector<std::string>> hosts_by_type;
    std::vector<int> type_order;
    for (DomainId k : t.children(d)) {
      if (t.level(k) == Level::kNode) {
        const int ty = type_of[static_cast<size_t>(t.host_index(k))];
        if (!hosts_by_type.contains(ty)) type_order.push_back(ty);
        hosts_by_type[ty].push_back(t.domain(k).name);
      } else {
        sub.push_back(k);
      }
    }
    if (!sub.empty() || type_order.size() > 1) {
      // Hosts of several types (or next to sub-domains) are node entries among the children.
      y << YAML::Key << "children" << YAML::Value << YAML::BeginSeq;
      for (DomainId k : sub) entry(k);
      for (int ty : type_order) {
        y << YAML::BeginMap << YAML::Key << "level" << YAML::Value << "node";
        y << YAML::Key << "names" << YAML::Value << CompressHostlist(hosts_by_type[ty]);
        if (ty >= 0) y << YAML::Key << "host_type" << YAML::Value << types[static_cast<size_t>(ty)].first;
        y << YAML::EndMap;
      }
      y << YAML::EndSeq;
    } else if (type_order.size() == 1) {
      const int ty = type_order.front();
      y << YAML::Key << "hosts" << YAML::Value << CompressHostlist(hosts_by_type[ty]);
      if (ty >= 0) y << YAML::Key << "host_type" << YAML::Value << types[static_cast<size_t>(ty)].first;
    }
    y << YAML::EndMap;
  };
  y << YAML::Key << "root" << YAML::Value;
  if (t.level(t.root()) == Level::kNode) {
    y << YAML::BeginMap << YAML::Key << "level" << YAML::Value << "node";
    y << YAML::Key << "name" << YAML::Value << t.domain(t.root()).name;
    const int ty = type_of[0];
    if (ty >= 0) y << YAML::Key << "host_type" << YAML::Value << types[static_cast<size_t>(ty)].first;
    y << YAML::EndMap;
  } else {
    entry(t.root());
  }
  y << YAML::EndMap;
  return std::string(y.c_str()) + "\n";
}

}  // namespace tidal::topo
