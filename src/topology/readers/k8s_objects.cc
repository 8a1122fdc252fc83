#include "topology/readers/k8s_objects.h"

#include <charconv>
#include <functional>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

namespace tidal::topo::k8s {
namespace {

using nlohmann::json;
// Where each object (and each item of a List) came from.
using ItemWhere = std::function<std::string(size_t)>;

struct Ctx {
  std::string source;
  Objects out;
};

std::string_view TrimView(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// 1-based line and column of a byte offset.
std::pair<int, int> LineCol(std::string_view text, size_t offset) {
  int line = 1, col = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

std::string TypeName(const json& v) { return v.type_name(); }

Result<std::string> GetString(const json& obj, const char* key, const std::string& where, std::string_view what) {
  auto it = obj.find(key);
  if (it == obj.end()) return MakeError(ErrorCode::kParse, "{}: {} has no '{}'", where, what, key);
  if (!it->is_string()) return MakeError(ErrorCode::kParse, "{}: {}: '{}' must be a string, found {}", where, what, key, TypeName(*it));
  return it->get<std::string>();
}

// A map of strings (labels, annotations, matchLabels).
Result<std::map<std::string, std::string>> GetStringMap(const json& v, const std::string& where, std::string_view what) {
  std::map<std::string, std::string> out;
  if (v.is_null()) return out;
  if (!v.is_object()) return MakeError(ErrorCode::kParse, "{}: {} must be a mapping of strings, found {}", where, what, TypeName(v));
  for (const auto& [k, x] : v.items()) {
    if (!x.is_string()) {
      return MakeError(ErrorCode::kParse, "{}: {} '{}' must be a string (Kubernetes label and annotation values are strings), found {}",
                       where, what, k, TypeName(x));
    }
    out.emplace(k, x.get<std::string>());
  }
  return out;
}

// Integers written as JSON numbers or as strings (Kubernetes quantities, YAML scalars).
Result<int64_t> GetInt(const json& v, const std::string& where, std::string_view what, int64_t lo, int64_t hi) {
  int64_t x = 0;
  if (v.is_number_integer()) {
    x = v.get<int64_t>();
  } else if (v.is_string()) {
    const std::string s = v.get<std::string>();
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
    if (s.empty() || ec != std::errc() || p != s.data() + s.size()) {
      return MakeError(ErrorCode::kParse, "{}: {} = '{}' is not a whole number", where, what, s);
    }
  } else {
    return MakeError(ErrorCode::kParse, "{}: {} must be a whole number, found {}", where, what, TypeName(v));
  }
  if (x < lo || x > hi) return MakeError(ErrorCode::kParse, "{}: {} = {} is outside [{}, {}]", where, what, x, lo, hi);
  return x;
}

Status AddNode(Ctx& c, const json& v, const std::string& where) {
  const auto md = v.find("metadata");
  if (md == v.end() || !md->is_object()) return MakeError(ErrorCode::kParse, "{}: a Node without metadata; expected metadata.name", where);
  Node n;
  TIDAL_ASSIGN_OR_RETURN(n.name, GetString(*md, "name", where, "a Node's metadata"));
  if (n.name.empty()) return MakeError(ErrorCode::kParse, "{}: a Node has an empty metadata.name", where);
  n.where = where;
  if (auto l = md->find("labels"); l != md->end()) {
    TIDAL_ASSIGN_OR_RETURN(n.labels, GetStringMap(*l, fmt::format("{}: node '{}'", where, n.name), "label"));
  }
  if (auto st = v.find("status"); st != v.end() && st->is_object()) {
    if (auto cap = st->find("capacity"); cap != st->end() && cap->is_object()) {
      n.has_capacity = true;
      if (auto g = cap->find("nvidia.com/gpu"); g != cap->end()) {
        TIDAL_ASSIGN_OR_RETURN(int64_t x,
                               GetInt(*g, fmt::format("{}: node '{}'", where, n.name), "status.capacity nvidia.com/gpu", 0, 1'000'000));
        n.capacity_gpus = x;
      }
    }
  }
  c.out.nodes.push_back(std::move(n));
  return Ok();
}

Status AddHyperNode(Ctx& c, const json& v, const std::string& where) {
  if (auto api = v.find("apiVersion");
      api != v.end() && (!api->is_string() || !api->get<std::string>().starts_with("topology.volcano.sh/"))) {
    return MakeError(ErrorCode::kParse, "{}: a HyperNode with apiVersion {}; tidal reads Volcano's topology.volcano.sh/v1alpha1", where,
                     api->dump());
  }
  const auto md = v.find("metadata");
  if (md == v.end() || !md->is_object()) return MakeError(ErrorCode::kParse, "{}: a HyperNode without metadata.name", where);
  HyperNode h;
  TIDAL_ASSIGN_OR_RETURN(h.name, GetString(*md, "name", where, "a HyperNode's metadata"));
  if (h.name.empty()) return MakeError(ErrorCode::kParse, "{}: a HyperNode has an empty metadata.name", where);
  const std::string at = fmt::format("{}: HyperNode '{}'", where, h.name);
  h.where = where;
  if (auto a = md->find("annotations"); a != md->end()) {
    TIDAL_ASSIGN_OR_RETURN(h.annotations, GetStringMap(*a, at, "annotation"));
  }
  const auto spec = v.find("spec");
  if (spec == v.end() || !spec->is_object())
    return MakeError(ErrorCode::kParse, "{}: no spec (spec.tier and spec.members are required)", at);
  const auto tier = spec->find("tier");
  if (tier == spec->end()) return MakeError(ErrorCode::kParse, "{}: no spec.tier (1 is the tier nearest the nodes)", at);
  TIDAL_ASSIGN_OR_RETURN(int64_t t, GetInt(*tier, at, "spec.tier", 1, 64));
  h.tier = static_cast<int>(t);
  const auto members = spec->find("members");
  if (members == spec->end() || !members->is_array() || members->empty()) {
    return MakeError(ErrorCode::kParse, "{}: spec.members must list at least one Node or HyperNode", at);
  }
  for (size_t i = 0; i < members->size(); ++i) {
    const json& m = (*members)[i];
    const std::string mat = fmt::format("{}: member {}", at, i + 1);
    if (!m.is_object()) return MakeError(ErrorCode::kParse, "{}: a member must be a mapping with type and selector", mat);
    HyperNodeMember hm;
    TIDAL_ASSIGN_OR_RETURN(std::string type, GetString(m, "type", mat, "the member"));
    if (type != "Node" && type != "HyperNode")
      return MakeError(ErrorCode::kParse, "{}: type '{}' is neither Node nor HyperNode", mat, type);
    hm.hypernode = type == "HyperNode";
    const auto sel = m.find("selector");
    if (sel == m.end() || !sel->is_object())
      return MakeError(ErrorCode::kParse, "{}: no selector (exactMatch, regexMatch or labelMatch)", mat);
    const int kinds = sel->contains("exactMatch") + sel->contains("regexMatch") + sel->contains("labelMatch");
    if (kinds != 1)
      return MakeError(ErrorCode::kParse, "{}: the selector needs exactly one of exactMatch, regexMatch and labelMatch (found {})", mat,
                       kinds);
    if (auto e = sel->find("exactMatch"); e != sel->end()) {
      if (!e->is_object()) return MakeError(ErrorCode::kParse, "{}: exactMatch must be a mapping with name", mat);
      TIDAL_ASSIGN_OR_RETURN(hm.value, GetString(*e, "name", mat, "exactMatch"));
    } else if (auto r = sel->find("regexMatch"); r != sel->end()) {
      if (!r->is_object()) return MakeError(ErrorCode::kParse, "{}: regexMatch must be a mapping with pattern", mat);
      hm.kind = HyperNodeMember::Kind::kRegex;
      TIDAL_ASSIGN_OR_RETURN(hm.value, GetString(*r, "pattern", mat, "regexMatch"));
    } else {
      const json& l = (*sel)["labelMatch"];
      hm.kind = HyperNodeMember::Kind::kLabels;
      if (!l.is_object() || l.contains("matchExpressions") || !l.contains("matchLabels")) {
        return MakeError(ErrorCode::kParse, "{}: labelMatch is read with matchLabels only (matchExpressions are not supported)", mat);
      }
      TIDAL_ASSIGN_OR_RETURN(hm.match_labels, GetStringMap(l["matchLabels"], mat, "matchLabels"));
      if (hm.match_labels.empty())
        return MakeError(ErrorCode::kParse, "{}: labelMatch.matchLabels is empty (it would match every node)", mat);
    }
    if (hm.kind != HyperNodeMember::Kind::kLabels && hm.value.empty())
      return MakeError(ErrorCode::kParse, "{}: an empty name or pattern", mat);
    h.members.push_back(std::move(hm));
  }
  c.out.hypernodes.push_back(std::move(h));
  return Ok();
}

Status AddTopologyObject(Ctx& c, const json& v, const std::string& where) {
  TopologyObject t;
  t.where = where;
  TIDAL_ASSIGN_OR_RETURN(t.api_version, GetString(v, "apiVersion", where, "a Topology"));
  if (!t.api_version.starts_with("kueue.x-k8s.io/") && !t.api_version.starts_with("kai.scheduler/")) {
    return MakeError(ErrorCode::kParse,
                     "{}: a Topology with apiVersion '{}'; tidal reads Kueue's (kueue.x-k8s.io) and KAI's (kai.scheduler)", where,
                     t.api_version);
  }
  if (auto md = v.find("metadata"); md != v.end() && md->is_object() && md->contains("name") && (*md)["name"].is_string()) {
    t.name = (*md)["name"].get<std::string>();
  }
  const auto spec = v.find("spec");
  const json* levels = spec != v.end() && spec->is_object() && spec->contains("levels") ? &(*spec)["levels"] : nullptr;
  if (!levels || !levels->is_array() || levels->empty())
    return MakeError(ErrorCode::kParse, "{}: Topology '{}' has no spec.levels", where, t.name);
  for (const json& l : *levels) {
    if (!l.is_object()) return MakeError(ErrorCode::kParse, "{}: Topology '{}': each level is a mapping with nodeLabel", where, t.name);
    TIDAL_ASSIGN_OR_RETURN(std::string key, GetString(l, "nodeLabel", where, "a Topology level"));
    t.levels.push_back(std::move(key));
  }
  c.out.topologies.push_back(std::move(t));
  return Ok();
}

// One node's labels as a bare mapping: the node is named by kubernetes.io/hostname.
Status AddLabelsObject(Ctx& c, const json& v, const std::string& where) {
  Node n;
  n.where = where;
  TIDAL_ASSIGN_OR_RETURN(n.labels, GetStringMap(v, where, "label"));
  auto h = n.labels.find("kubernetes.io/hostname");
  if (h == n.labels.end() || h->second.empty()) {
    return MakeError(ErrorCode::kParse,
                     "{}: a mapping of node labels without kubernetes.io/hostname; tidal names each host and will not guess, so "
                     "add that label or give the whole Node (kubectl get node NAME -o json)",
                     where);
  }
  n.name = h->second;
  c.out.nodes.push_back(std::move(n));
  return Ok();
}

Status AddObject(Ctx& c, const json& v, const std::string& where, const ItemWhere& item_where, int depth = 0) {
  if (!v.is_object()) {
    return MakeError(ErrorCode::kParse,
                     "{}: expected an object (a NodeList, a Node, a HyperNode, a Topology or one node's labels), found {}", where,
                     TypeName(v));
  }
  const auto kind = v.find("kind");
  if (kind == v.end()) {
    if (v.contains("metadata") || v.contains("items") || v.contains("spec")) {
      return MakeError(ErrorCode::kParse,
                       "{}: an object with metadata/items/spec but no kind; expected kind Node, NodeList, HyperNode or Topology", where);
    }
    return AddLabelsObject(c, v, where);
  }
  if (!kind->is_string()) return MakeError(ErrorCode::kParse, "{}: kind must be a string", where);
  const std::string k = kind->get<std::string>();
  if (k == "NodeList" || k == "List" || k == "HyperNodeList" || k == "TopologyList") {
    if (depth > 0) return MakeError(ErrorCode::kParse, "{}: a {} inside a list", where, k);
    const auto items = v.find("items");
    if (items == v.end() || !items->is_array()) return MakeError(ErrorCode::kParse, "{}: a {} without items", where, k);
    for (size_t i = 0; i < items->size(); ++i) TIDAL_RETURN_IF_ERROR(AddObject(c, (*items)[i], item_where(i), item_where, depth + 1));
    return Ok();
  }
  if (k == "Node") return AddNode(c, v, where);
  if (k == "HyperNode") return AddHyperNode(c, v, where);
  if (k == "Topology") return AddTopologyObject(c, v, where);
  return MakeError(ErrorCode::kParse, "{}: kind '{}' is not one tidal reads topology from (Node, NodeList, HyperNode, Topology)", where, k);
}

// --- JSON: one value or several concatenated (a JSON stream) ---------------

// The end of the JSON value starting at `pos` (a '{' or '['), by bracket
// matching outside strings; npos if the text ends first.
size_t JsonValueEnd(std::string_view text, size_t pos) {
  int depth = 0;
  bool in_string = false, escape = false;
  for (size_t i = pos; i < text.size(); ++i) {
    const char ch = text[i];
    if (in_string) {
      if (escape)
        escape = false;
      else if (ch == '\\')
        escape = true;
      else if (ch == '"')
        in_string = false;
      continue;
    }
    if (ch == '"')
      in_string = true;
    else if (ch == '{' || ch == '[')
      ++depth;
    else if ((ch == '}' || ch == ']') && --depth == 0)
      return i + 1;
  }
  return std::string_view::npos;
}

Status ParseJson(Ctx& c, std::string_view text) {
  size_t pos = 0;
  while (true) {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' || text[pos] == '\n' || text[pos] == '\r')) ++pos;
    if (pos >= text.size()) return Ok();
    const auto [line, col] = LineCol(text, pos);
    if (text[pos] != '{' && text[pos] != '[') {
      return MakeError(ErrorCode::kParse, "{}:{}:{}: expected '{{' (another JSON object) or the end of the file", c.source, line, col);
    }
    size_t end = JsonValueEnd(text, pos);
    const std::string_view slice = text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    json v;
    try {
      v = json::parse(slice);
    } catch (const json::parse_error& e) {
      // e.byte is 1-based within the slice; the message after "column N: " says what was wrong.
      const auto [el, ec] = LineCol(text, pos + (e.byte > 0 ? e.byte - 1 : 0));
      std::string what = e.what();
      if (auto p = what.find(": ", what.find("column")); p != std::string::npos) what = what.substr(p + 2);
      return MakeError(ErrorCode::kParse, "{}:{}:{}: not valid JSON ({}){}", c.source, el, ec, what,
                       end == std::string_view::npos ? "; the file ends inside an object (truncated?)" : "");
    }
    const std::string where = fmt::format("{}:{}", c.source, line);
    TIDAL_RETURN_IF_ERROR(AddObject(c, v, where, [&](size_t i) { return fmt::format("{}: items[{}]", where, i); }));
    if (end == std::string_view::npos) return Ok();
    pos = end;
  }
}

// --- YAML: a multi-document stream -----------------------------------------

// YAML to JSON, scalars as strings (Kubernetes reads label values as strings
// whether or not they are quoted).
Result<json> ToJson(const YAML::Node& n, const std::string& source) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return json(nullptr);
    case YAML::NodeType::Scalar:
      return json(n.Scalar());
    case YAML::NodeType::Sequence: {
      json a = json::array();
      for (const auto& x : n) {
        TIDAL_ASSIGN_OR_RETURN(json j, ToJson(x, source));
        a.push_back(std::move(j));
      }
      return a;
    }
    case YAML::NodeType::Map: {
      json o = json::object();
      for (const auto& kv : n) {
        if (!kv.first.IsScalar())
          return MakeError(ErrorCode::kParse, "{}:{}: a mapping key must be a plain string", source, kv.first.Mark().line + 1);
        TIDAL_ASSIGN_OR_RETURN(json j, ToJson(kv.second, source));
        o[kv.first.Scalar()] = std::move(j);
      }
      return o;
    }
  }
  return json(nullptr);
}

Status ParseYaml(Ctx& c, std::string_view text) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(std::string(text));
  } catch (const YAML::Exception& e) {
    return MakeError(ErrorCode::kParse, "{}:{}: not valid YAML: {}", c.source, e.mark.line + 1, e.msg);
  }
  try {
    for (const YAML::Node& d : docs) {
      if (d.IsNull()) continue;  // an empty document between two '---'
      const std::string where = fmt::format("{}:{}", c.source, d.Mark().line + 1);
      if (!d.IsMap()) {
        return MakeError(ErrorCode::kParse, "{}: expected a mapping (a Node, a NodeList, a HyperNode, a Topology or one node's labels)",
                         where);
      }
      TIDAL_ASSIGN_OR_RETURN(json v, ToJson(d, c.source));
      const YAML::Node items = d["items"];
      TIDAL_RETURN_IF_ERROR(AddObject(c, v, where, [&](size_t i) {
        const int line = items.IsSequence() && i < items.size() ? items[i].Mark().line + 1 : d.Mark().line + 1;
        return fmt::format("{}:{}", c.source, line);
      }));
    }
  } catch (const YAML::Exception& e) {
    return MakeError(ErrorCode::kParse, "{}:{}: {}", c.source, e.mark.line + 1, e.msg);
  }
  if (docs.empty()) return MakeError(ErrorCode::kParse, "{}: the file has no YAML documents", c.source);
  return Ok();
}

// --- `kubectl get nodes --show-labels` --------------------------------------

// NAME first, LABELS last; the columns between vary (-o wide adds OS-IMAGE,
// which has blanks), so only the first and last field of a row are read.
Status ParseShowLabels(Ctx& c, std::string_view text) {
  size_t pos = 0, header_cols = 0;
  int line = 0;
  bool header = false;
  while (pos < text.size()) {
    size_t e = text.find('\n', pos);
    if (e == std::string_view::npos) e = text.size();
    const std::string_view raw = TrimView(text.substr(pos, e - pos));
    pos = e + 1;
    ++line;
    if (raw.empty()) continue;
    std::vector<std::string_view> cols;
    for (size_t i = 0; i < raw.size();) {
      while (i < raw.size() && (raw[i] == ' ' || raw[i] == '\t')) ++i;
      size_t j = i;
      while (j < raw.size() && raw[j] != ' ' && raw[j] != '\t') ++j;
      if (j > i) cols.push_back(raw.substr(i, j - i));
      i = j;
    }
    if (!header) {
      if (cols.size() < 2 || cols.front() != "NAME" || cols.back() != "LABELS") {
        return MakeError(ErrorCode::kParse, "{}:{}: expected the header of `kubectl get nodes --show-labels` (NAME ... LABELS)", c.source,
                         line);
      }
      header = true;
      header_cols = cols.size();
      continue;
    }
    const std::string where = fmt::format("{}:{}", c.source, line);
    if (cols.size() < header_cols) {
      return MakeError(ErrorCode::kParse, "{}: {} columns where the header has {} (a truncated line?); the last column is LABELS", where,
                       cols.size(), header_cols);
    }
    Node n;
    n.name = std::string(cols.front());
    n.where = where;
    const std::string_view labels = cols.back();
    if (labels != "<none>") {
      for (size_t i = 0; i <= labels.size();) {
        size_t j = labels.find(',', i);
        if (j == std::string_view::npos) j = labels.size();
        const std::string_view kv = labels.substr(i, j - i);
        const size_t eq = kv.find('=');
        if (eq == std::string_view::npos || eq == 0) {
          return MakeError(ErrorCode::kParse, "{}: node '{}': label '{}' is not key=value (a truncated line?)", where, n.name, kv);
        }
        const std::string key(kv.substr(0, eq));
        if (!n.labels.emplace(key, std::string(kv.substr(eq + 1))).second) {
          return MakeError(ErrorCode::kParse, "{}: node '{}': label '{}' is given twice", where, n.name, key);
        }
        i = j + 1;
      }
    }
    c.out.nodes.push_back(std::move(n));
  }
  if (!header) return MakeError(ErrorCode::kParse, "{}: no header line", c.source);
  return Ok();
}

template <typename T>
Status CheckUnique(const std::vector<T>& v, std::string_view what) {
  std::unordered_map<std::string, const T*> seen;
  for (const T& x : v) {
    auto [it, inserted] = seen.emplace(x.name, &x);
    if (!inserted) {
      return MakeError(ErrorCode::kParse, "{}: {} '{}' appears twice (first at {}); each must appear once", x.where, what, x.name,
                       it->second->where);
    }
  }
  return Ok();
}

}  // namespace

Result<Objects> ParseObjects(std::string_view text, const std::string& source) {
  Ctx c;
  c.source = source;
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  // The first line that is not blank says which shape this is.
  size_t pos = 0;
  std::string_view first;
  int first_line = 0;
  for (int line = 1; pos < text.size(); ++line) {
    size_t e = text.find('\n', pos);
    if (e == std::string_view::npos) e = text.size();
    first = TrimView(text.substr(pos, e - pos));
    pos = e + 1;
    if (!first.empty()) {
      first_line = line;
      break;
    }
  }
  if (first.empty()) return MakeError(ErrorCode::kParse, "{}: the file is empty; expected Kubernetes nodes or their labels", source);
  if (first == "...") {
    // Documentation shortens label dumps with a line of dots (NVIDIA's
    // mig-k8s.rst does). The labels left out may include the hostname and the
    // topology, so reading the rest would build a wrong topology.
    return MakeError(ErrorCode::kParse,
                     "{}:{}: the text starts with '...': it is an excerpt of a label dump with labels left out (as documentation "
                     "shortens them), not a whole dump; save the full output of `kubectl get nodes -o json` (or "
                     "`kubectl get node NAME -o json | jq .metadata.labels`) instead",
                     source, first_line);
  }
  Status st;
  if (first.front() == '{' || first.front() == '[') {
    st = ParseJson(c, text);
  } else if (first.starts_with("NAME") && first.ends_with("LABELS")) {
    st = ParseShowLabels(c, text);
  } else {
    st = ParseYaml(c, text);
  }
  if (!st) return std::unexpected(st.error());
  TIDAL_RETURN_IF_ERROR(CheckUnique(c.out.nodes, "node"));
  TIDAL_RETURN_IF_ERROR(CheckUnique(c.out.hypernodes, "HyperNode"));
  return std::move(c.out);
}

}  // namespace tidal::topo::k8s
