// Slurm's topology.conf and topology.yaml. Both are parsed into the common
// model of slurm_model.h, checked and built there. The syntax rules follow
// Slurm's own parsers (src/common/parse_config.c for topology.conf, the
// data_parser for topology.yaml) and the man pages topology.conf(5),
// topology.yaml(5) and the Topology Guide; where tidal is stricter than Slurm
// (Slurm only warns) the message says so.
#include "topology/readers/slurm.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "common/strings.h"
#include "topology/readers/slurm_model.h"

namespace tidal::topo {
namespace {

using slurm::GroupDef;
using slurm::Kind;
using slurm::SlurmTopo;
using slurm::SwitchDef;

// ---------------------------------------------------------------------------
// topology.conf

struct Pair {
  std::string key, lower, value;
};
struct ConfLine {
  int line = 0;
  std::vector<Pair> pairs;
};

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }
bool IsKeyChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

// One logical line into Key=Value pairs. parse_config.c: a key is
// [[:alnum:]_.]+, blanks may surround '=', a value is "quoted" or runs to the
// next blank.
Status SplitPairs(const std::string& s, const std::string& where, std::vector<Pair>& out) {
  size_t i = 0;
  const size_t n = s.size();
  while (true) {
    while (i < n && IsBlank(s[i])) ++i;
    if (i == n) return Ok();
    size_t j = i;
    while (j < n && IsKeyChar(s[j])) ++j;
    if (j == i) {
      return MakeError(ErrorCode::kParse, "{}: expected Key=Value, found '{}'; lines look like SwitchName=s0 Nodes=tux[0-3]", where,
                       s.substr(i, 40));
    }
    Pair p;
    p.key = s.substr(i, j - i);
    p.lower = AsciiLower(p.key);
    if (out.empty() && p.lower == "include" && j < n && IsBlank(s[j])) {
      return MakeError(ErrorCode::kParse, "{}: Include is not supported; tidal reads one file: put the included lines in it", where);
    }
    while (j < n && IsBlank(s[j])) ++j;
    if (j + 1 < n && s[j + 1] == '=' && (s[j] == '+' || s[j] == '-' || s[j] == '*' || s[j] == '/')) {
      return MakeError(ErrorCode::kParse, "{}: '{}{}=': topology.conf takes no operators; write {}=value", where, p.key, s[j], p.key);
    }
    if (j == n || s[j] != '=') {
      return MakeError(ErrorCode::kParse, "{}: '{}' is not followed by '='; write Key=Value (e.g. SwitchName=s0 Nodes=tux[0-3])",
                       where, p.key);
    }
    ++j;
    const size_t value_start = j;
    while (j < n && IsBlank(s[j])) ++j;
    if (j == n) {
      return MakeError(ErrorCode::kParse, "{}: {}= has no value; the line looks truncated: give {}", where, p.key,
                       p.lower == "nodes" ? "a host list like tux[0-3]" : "its value");
    }
    if (s[j] == '"') {
      const size_t close = s.find('"', j + 1);
      if (close == std::string::npos) return MakeError(ErrorCode::kParse, "{}: the quoted value of {}= is never closed", where, p.key);
      p.value = s.substr(j + 1, close - j - 1);
      j = close + 1;
      if (j < n && !IsBlank(s[j])) {
        return MakeError(ErrorCode::kParse, "{}: text right after the closing quote of {}=; put a blank between pairs", where, p.key);
      }
    } else {
      const size_t e = std::find_if(s.begin() + static_cast<std::ptrdiff_t>(j), s.end(), IsBlank) - s.begin();
      p.value = s.substr(j, e - j);
      // "Nodes= LinkSpeed=5": Slurm would take "LinkSpeed=5" as the node list.
      if (j > value_start && p.value.find('=') != std::string::npos) {
        return MakeError(ErrorCode::kParse, "{}: {}= has no value (the next word is '{}'); the line looks truncated", where, p.key,
                         p.value);
      }
      j = e;
    }
    out.push_back(std::move(p));
    i = j;
  }
}

// parse_config.c's _get_next_line: an unescaped '#' starts a comment, an odd
// run of '\' at the end of a line (before trailing blanks) continues it on the
// next, and then every '\' escapes the character after it ("\#" is '#').
Result<std::vector<ConfLine>> SplitConf(std::string_view text, const std::string& source) {
  std::vector<ConfLine> out;
  std::string buf;
  int lineno = 0, start = 0;
  bool cont = false;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t e = text.find('\n', pos);
    const bool last = e == std::string_view::npos;
    if (last) e = text.size();
    std::string s(text.substr(pos, e - pos));
    pos = e + 1;
    ++lineno;
    if (!cont) {
      buf.clear();
      start = lineno;
    }
    int bs = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '#' && bs % 2 == 0) {
        s.resize(i);
        break;
      }
      bs = s[i] == '\\' ? bs + 1 : 0;
    }
    size_t end = s.size();
    while (end > 0 && (IsBlank(s[end - 1]) || s[end - 1] == '\n')) --end;
    size_t run = 0;
    while (run < end && s[end - 1 - run] == '\\') ++run;
    if (run % 2 == 1) {
      s.resize(end - 1);
      buf += s;
      cont = true;
      if (last) {
        return MakeError(ErrorCode::kParse, "{}:{}: the file ends inside a line continued with '\\'; it looks truncated", source, start);
      }
      continue;
    }
    buf += s;
    cont = false;
    std::string line;
    for (size_t i = 0; i < buf.size(); ++i) {
      if (buf[i] == '\\' && i + 1 < buf.size()) ++i;
      else if (buf[i] == '\\') continue;
      line += buf[i];
    }
    ConfLine cl;
    cl.line = start;
    TIDAL_RETURN_IF_ERROR(SplitPairs(line, fmt::format("{}:{}", source, start), cl.pairs));
    if (!cl.pairs.empty()) out.push_back(std::move(cl));
    if (last) break;
  }
  return out;
}

Result<uint32_t> ParseUint(std::string_view v, std::string_view key, const std::string& where) {
  uint32_t x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size()) {
    return MakeError(ErrorCode::kParse, "{}: {}={} is not a whole number from 0 to 4294967295", where, key, v);
  }
  return x;
}

constexpr std::string_view kConfKeys = "SwitchName (with Switches=, Nodes=, LinkSpeed=), BlockName (with Nodes=), BlockSizes, RingName (with Nodes=)";

Result<SlurmTopo> ParseConf(std::string_view text, const std::string& source) {
  TIDAL_ASSIGN_OR_RETURN(std::vector<ConfLine> lines, SplitConf(text, source));
  SlurmTopo topo;
  int kind_line = 0;
  for (const ConfLine& cl : lines) {
    const std::string where = fmt::format("{}:{}", source, cl.line);
    const Pair& head = cl.pairs.front();
    Kind kind;
    if (head.lower == "switchname") kind = Kind::kTree;
    else if (head.lower == "blockname" || head.lower == "blocksizes") kind = Kind::kBlock;
    else if (head.lower == "ringname") kind = Kind::kRing;
    else if (head.lower == "nodes" || head.lower == "switches" || head.lower == "linkspeed") {
      return MakeError(ErrorCode::kParse, "{}: {}= starts the line; it belongs after SwitchName=, BlockName= or RingName= on the same line",
                       where, head.key);
    } else {
      return MakeError(ErrorCode::kParse, "{}: unknown key '{}' (topology.conf keys, in any case: {})", where, head.key, kConfKeys);
    }
    if (kind_line == 0) {
      topo.kind = kind;
      topo.where = where;
      kind_line = cl.line;
    } else if (kind != topo.kind) {
      // Each plugin's parser knows only its own keys, so Slurm rejects the mix.
      return MakeError(ErrorCode::kParse, "{}: {}= in a file of {} lines (since line {}); topology.conf holds one plugin's lines: "
                       "topology/tree (SwitchName), topology/block (BlockName, BlockSizes) or topology/ring (RingName); use "
                       "topology.yaml for several", where, head.key, slurm::KindName(topo.kind), kind_line);
    }
    if (head.lower == "blocksizes") {
      if (cl.pairs.size() > 1) return MakeError(ErrorCode::kParse, "{}: BlockSizes= stands alone on its line; move '{}=' to a line of its own", where, cl.pairs[1].key);
      if (!topo.block_sizes_where.empty()) {
        return MakeError(ErrorCode::kParse, "{}: BlockSizes is given twice (first at {}); give one list", where, topo.block_sizes_where);
      }
      topo.block_sizes_where = where;
      std::string_view v = head.value;
      while (true) {
        const size_t comma = v.find(',');
        const std::string_view item = v.substr(0, comma);
        int64_t x = 0;
        auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), x);
        if (item.empty() || ec != std::errc() || p != item.data() + item.size()) {
          return MakeError(ErrorCode::kParse, "{}: BlockSizes value '{}' is not a whole number; write node counts like BlockSizes=18,36",
                           where, item);
        }
        topo.block_sizes.push_back(x);
        if (comma == std::string_view::npos) break;
        v.remove_prefix(comma + 1);
      }
      continue;
    }
    // The rest of the line: this record's options (parse_config.c: keys case-insensitive).
    SwitchDef sw;
    GroupDef grp;
    sw.name = grp.name = head.value;
    sw.where = grp.where = where;
    for (size_t i = 1; i < cl.pairs.size(); ++i) {
      const Pair& p = cl.pairs[i];
      for (size_t k = 1; k < i; ++k) {
        if (cl.pairs[k].lower == p.lower) return MakeError(ErrorCode::kParse, "{}: {}= is given twice on one line; give it once", where, p.key);
      }
      if (p.lower == "nodes") {
        slurm::Names& names = kind == Kind::kTree ? sw.nodes : grp.nodes;
        names.given = true;
        TIDAL_ASSIGN_OR_RETURN(names.names, slurm::ExpandNames(p.value, p.key + "=", where));
      } else if (kind == Kind::kTree && p.lower == "switches") {
        sw.switches.given = true;
        TIDAL_ASSIGN_OR_RETURN(sw.switches.names, slurm::ExpandNames(p.value, p.key + "=", where));
      } else if (kind == Kind::kTree && p.lower == "linkspeed") {
        TIDAL_ASSIGN_OR_RETURN(sw.link_speed, ParseUint(p.value, p.key, where));
      } else {
        return MakeError(ErrorCode::kParse, "{}: unknown key '{}' on a {} line ({} takes {})", where, p.key, head.key, head.key,
                         kind == Kind::kTree ? "Switches=, Nodes= and LinkSpeed=" : "Nodes=");
      }
    }
    if (kind == Kind::kTree) topo.switches.push_back(std::move(sw));
    else topo.groups.push_back(std::move(grp));
  }
  if (kind_line == 0) {
    return MakeError(ErrorCode::kParse, "{}: no SwitchName=, BlockName= or RingName= lines; a topology.conf names switches, blocks "
                     "or rings with their nodes", source);
  }
  return topo;
}

// ---------------------------------------------------------------------------
// topology.yaml

struct YamlCtx {
  const std::string& source;
  std::string Where(const YAML::Node& n) const { return fmt::format("{}:{}", source, n.Mark().line + 1); }
};

Status YamlKeys(const YamlCtx& c, const YAML::Node& n, std::initializer_list<std::string_view> keys, std::string_view what) {
  if (!n.IsMap()) return MakeError(ErrorCode::kParse, "{}: {} must be a mapping of keys", c.Where(n), what);
  for (const auto& kv : n) {
    const std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "?";
    if (std::find(keys.begin(), keys.end(), k) != keys.end()) continue;
    std::string list;
    for (auto a : keys) list += (list.empty() ? "" : ", ") + std::string(a);
    return MakeError(ErrorCode::kParse, "{}: unknown key '{}' in {} (topology.yaml(5) keys are lower case: {})", c.Where(kv.first), k,
                     what, list);
  }
  return Ok();
}

Result<std::string> YamlString(const YamlCtx& c, const YAML::Node& n, std::string_view what) {
  if (!n.IsScalar()) return MakeError(ErrorCode::kParse, "{}: {} must be a single value, like {}", c.Where(n), what,
                                      what == "nodes" || what == "children" ? "node[01-04]" : "a name");
  return n.Scalar();
}

Result<slurm::Names> YamlNames(const YamlCtx& c, const YAML::Node& n, std::string_view key) {
  slurm::Names out;
  out.given = true;
  TIDAL_ASSIGN_OR_RETURN(std::string list, YamlString(c, n, key));
  TIDAL_ASSIGN_OR_RETURN(out.names, slurm::ExpandNames(list, fmt::format("{}:", key), c.Where(n)));
  return out;
}

Result<YAML::Node> YamlList(const YamlCtx& c, const YAML::Node& parent, const char* key, std::string_view what) {
  const YAML::Node n = parent[key];
  if (!n) return MakeError(ErrorCode::kParse, "{}: {} needs '{}:', a list of {}", c.Where(parent), what, key, key);
  if (!n.IsSequence()) return MakeError(ErrorCode::kParse, "{}: '{}:' must be a list of {}", c.Where(n), key, key);
  return n;
}

// Blocks and rings have the same shape: [{block|ring: name, nodes: list}].
Status YamlGroups(const YamlCtx& c, const YAML::Node& list, const char* name_key, SlurmTopo& t) {
  for (const auto& e : list) {
    TIDAL_RETURN_IF_ERROR(YamlKeys(c, e, {name_key, "nodes"}, fmt::format("a {}", name_key)));
    GroupDef g;
    g.where = c.Where(e);
    if (!e[name_key]) return MakeError(ErrorCode::kParse, "{}: a {} needs '{}: <name>'", g.where, name_key, name_key);
    TIDAL_ASSIGN_OR_RETURN(g.name, YamlString(c, e[name_key], name_key));
    if (e["nodes"]) { TIDAL_ASSIGN_OR_RETURN(g.nodes, YamlNames(c, e["nodes"], "nodes")); }
    t.groups.push_back(std::move(g));
  }
  return Ok();
}

struct YamlTopo {
  SlurmTopo topo;
  bool cluster_default = false;
};

Result<YamlTopo> ParseYamlTopology(const YamlCtx& c, const YAML::Node& e) {
  TIDAL_RETURN_IF_ERROR(YamlKeys(c, e, {"topology", "cluster_default", "tree", "block", "flat", "ring", "torus3d"}, "a topology"));
  YamlTopo out;
  SlurmTopo& t = out.topo;
  t.yaml = true;
  t.where = c.Where(e);
  if (!e["topology"]) return MakeError(ErrorCode::kParse, "{}: a topology needs 'topology: <name>' (its first attribute)", t.where);
  TIDAL_ASSIGN_OR_RETURN(t.name, YamlString(c, e["topology"], "topology"));
  if (t.name.empty() || t.name.find('+') != std::string::npos) {
    return MakeError(ErrorCode::kParse, "{}: topology name '{}' must be non-empty and without '+'", t.where, t.name);
  }
  if (e["cluster_default"]) {
    bool b = false;
    if (!YAML::convert<bool>::decode(e["cluster_default"], b)) {
      return MakeError(ErrorCode::kParse, "{}: cluster_default must be true or false", c.Where(e["cluster_default"]));
    }
    out.cluster_default = b;
  }
  std::vector<std::string> types;
  bool flat = false;
  if (e["flat"]) {
    // topology.yaml(5): "flat: true", or a dictionary of options (alpha_step_rank).
    const YAML::Node f = e["flat"];
    if (f.IsMap()) {
      TIDAL_RETURN_IF_ERROR(YamlKeys(c, f, {"alpha_step_rank"}, "flat"));
      flat = true;
    } else if (!YAML::convert<bool>::decode(f, flat)) {
      return MakeError(ErrorCode::kParse, "{}: flat must be true, false or a mapping of options", c.Where(f));
    }
    if (flat) types.push_back("flat");
  }
  for (const char* k : {"tree", "block", "ring", "torus3d"})
    if (e[k]) types.push_back(k);
  if (types.size() != 1) {
    return MakeError(ErrorCode::kParse, "{}: topology '{}' {}; each topology has exactly one of tree, block, ring, flat, torus3d "
                     "(topology.yaml(5))", t.where, t.name,
                     types.empty() ? std::string("has no type") : fmt::format("has both {} and {}", types[0], types[1]));
  }
  if (types[0] == "flat") {
    t.kind = Kind::kFlat;
  } else if (types[0] == "torus3d") {
    t.kind = Kind::kTorus3d;  // not modelled; an error only if it is the one read
  } else if (types[0] == "tree") {
    t.kind = Kind::kTree;
    const YAML::Node tree = e["tree"];
    TIDAL_RETURN_IF_ERROR(YamlKeys(c, tree, {"switches"}, "tree"));
    TIDAL_ASSIGN_OR_RETURN(YAML::Node list, YamlList(c, tree, "switches", "a tree"));
    for (const auto& s : list) {
      TIDAL_RETURN_IF_ERROR(YamlKeys(c, s, {"switch", "children", "nodes"}, "a switch"));
      SwitchDef sw;
      sw.where = c.Where(s);
      if (!s["switch"]) return MakeError(ErrorCode::kParse, "{}: a switch needs 'switch: <name>'", sw.where);
      TIDAL_ASSIGN_OR_RETURN(sw.name, YamlString(c, s["switch"], "switch"));
      if (s["nodes"]) { TIDAL_ASSIGN_OR_RETURN(sw.nodes, YamlNames(c, s["nodes"], "nodes")); }
      if (s["children"]) { TIDAL_ASSIGN_OR_RETURN(sw.switches, YamlNames(c, s["children"], "children")); }
      t.switches.push_back(std::move(sw));
    }
  } else if (types[0] == "block") {
    t.kind = Kind::kBlock;
    const YAML::Node block = e["block"];
    TIDAL_RETURN_IF_ERROR(YamlKeys(c, block, {"block_sizes", "blocks"}, "block"));
    if (const YAML::Node bs = block["block_sizes"]) {
      t.block_sizes_where = c.Where(bs);
      if (!bs.IsSequence()) return MakeError(ErrorCode::kParse, "{}: block_sizes must be a list of node counts, like [18, 36]", t.block_sizes_where);
      for (const auto& v : bs) {
        int64_t x = 0;
        if (!v.IsScalar() || !YAML::convert<int64_t>::decode(v, x)) {
          return MakeError(ErrorCode::kParse, "{}: block_sizes value '{}' is not a whole number", c.Where(v), v.IsScalar() ? v.Scalar() : "...");
        }
        t.block_sizes.push_back(x);
      }
    }
    TIDAL_ASSIGN_OR_RETURN(YAML::Node list, YamlList(c, block, "blocks", "a block topology"));
    TIDAL_RETURN_IF_ERROR(YamlGroups(c, list, "block", t));
  } else {
    t.kind = Kind::kRing;
    TIDAL_RETURN_IF_ERROR(YamlKeys(c, e["ring"], {"rings"}, "ring"));
    TIDAL_ASSIGN_OR_RETURN(YAML::Node list, YamlList(c, e["ring"], "rings", "a ring topology"));
    TIDAL_RETURN_IF_ERROR(YamlGroups(c, list, "ring", t));
  }
  return out;
}

std::string Listing(const std::vector<YamlTopo>& all) {
  std::string s;
  for (const auto& y : all) s += fmt::format("{}{} ({})", s.empty() ? "" : ", ", y.topo.name, slurm::KindName(y.topo.kind));
  return s;
}

Result<Topology> ReadYaml(const YamlCtx& c, const YAML::Node& doc, const std::string& topology_name) {
  const std::string& source = c.source;
  if (!doc || doc.IsNull()) {
    return MakeError(ErrorCode::kParse, "{}: the file holds no topologies; topology.yaml is a list of '- topology: <name>' entries", source);
  }
  if (!doc.IsSequence()) {
    return MakeError(ErrorCode::kParse, "{}: topology.yaml is a list of topologies ('- topology: <name>' entries), not a single {}",
                     c.Where(doc), doc.IsMap() ? "mapping" : "value");
  }
  std::vector<YamlTopo> all;
  for (const auto& e : doc) {
    TIDAL_ASSIGN_OR_RETURN(YamlTopo y, ParseYamlTopology(c, e));
    for (const auto& o : all) {
      if (o.topo.name == y.topo.name) {
        return MakeError(ErrorCode::kParse, "{}: topology '{}' is defined twice (first at {}); names must be unique", y.topo.where,
                         y.topo.name, o.topo.where);
      }
    }
    all.push_back(std::move(y));
  }
  if (all.empty()) return MakeError(ErrorCode::kParse, "{}: the list of topologies is empty", source);
  // Which to read. topology.yaml(5): "The first topology defined with
  // cluster_default: true" is the cluster's; "a+b" reads tree a with the
  // blocks of b inside it (tidal's one tree holds both views).
  std::vector<std::string> want;
  for (size_t p = 0, q; p <= topology_name.size(); p = q + 1) {
    q = std::min(topology_name.find('+', p), topology_name.size());
    want.push_back(topology_name.substr(p, q - p));
  }
  std::vector<size_t> pick;
  std::string why;
  if (topology_name.empty()) {
    auto it = std::find_if(all.begin(), all.end(), [](const YamlTopo& y) { return y.cluster_default; });
    why = it == all.end() ? "the first; none has cluster_default: true" : "cluster_default";
    pick.push_back(it == all.end() ? 0 : static_cast<size_t>(it - all.begin()));
  } else {
    if (want.size() > 2) return MakeError(ErrorCode::kInvalidArgument, "{}: topology name '{}': combine at most a tree and a block topology, as tree+block", source, topology_name);
    for (const auto& w : want) {
      auto it = std::find_if(all.begin(), all.end(), [&](const YamlTopo& y) { return y.topo.name == w; });
      if (it == all.end()) {
        return MakeError(ErrorCode::kNotFound, "{}: no topology named '{}'; the file has {}", source, w, Listing(all));
      }
      pick.push_back(static_cast<size_t>(it - all.begin()));
    }
    why = "asked for";
  }
  if (pick.size() == 2) {
    if (all[pick[0]].topo.kind != Kind::kTree) std::swap(pick[0], pick[1]);
    const Kind k = all[pick[1]].topo.kind;
    if (all[pick[0]].topo.kind != Kind::kTree || (k != Kind::kBlock && k != Kind::kRing)) {
      return MakeError(ErrorCode::kInvalidArgument, "{}: '{}' combines {} and {}; only a tree topology and a block (or ring) "
                       "topology combine", source, topology_name, slurm::KindName(all[pick[0]].topo.kind), slurm::KindName(k));
    }
  }
  // Every topology of the file is checked, as Slurm reads them all.
  std::optional<Topology> result;
  for (size_t i = 0; i < all.size(); ++i) {
    SlurmTopo& t = all[i].topo;
    const bool chosen = pick.size() == 1 && pick[0] == i;
    if (!chosen && (t.kind == Kind::kFlat || t.kind == Kind::kTorus3d)) continue;
    if (chosen && all.size() > 1) {
      std::vector<YamlTopo> others;
      for (size_t j = 0; j < all.size(); ++j)
        if (j != i) others.push_back(all[j]);
      t.notes.push_back(fmt::format("read topology '{}' ({}) of {}; the file also has {}", t.name, why, all.size(), Listing(others)));
    }
    auto r = slurm::BuildTopology(t, source);
    if (!r) return std::unexpected(r.error());
    if (chosen) result = std::move(*r);
  }
  if (pick.size() == 2) return slurm::BuildTopology(all[pick[0]].topo, source, &all[pick[1]].topo);
  return std::move(*result);
}

}  // namespace

Result<Topology> ReadSlurmTopologyConf(std::string_view text, const std::string& source) {
  TIDAL_ASSIGN_OR_RETURN(SlurmTopo topo, ParseConf(text, source));
  return slurm::BuildTopology(topo, source);
}

Result<Topology> ReadSlurmTopologyYaml(std::string_view text, const std::string& source, const std::string& topology_name) {
  YamlCtx c{source};
  try {
    YAML::Node doc;
    try {
      doc = YAML::Load(std::string(text));
    } catch (const YAML::Exception& e) {
      return MakeError(ErrorCode::kParse, "{}:{}: not valid YAML: {}", source, e.mark.line + 1, e.msg);
    }
    return ReadYaml(c, doc, topology_name);
  } catch (const YAML::Exception& e) {
    return MakeError(ErrorCode::kParse, "{}:{}: {}", source, e.mark.line + 1, e.msg);
  }
}

}  // namespace tidal::topo
