#include "adapters/k8s/extender_wire.h"

#include <cctype>
#include <limits>

#include <fmt/format.h>

namespace tidal::k8s {
namespace {

const char* TypeName(const ojson& v) {
  switch (v.type()) {
    case ojson::value_t::null: return "null";
    case ojson::value_t::boolean: return "a boolean";
    case ojson::value_t::number_integer:
    case ojson::value_t::number_unsigned:
    case ojson::value_t::number_float: return "a number";
    case ojson::value_t::string: return "a string";
    case ojson::value_t::array: return "an array";
    case ojson::value_t::object: return "an object";
    default: return "a value";
  }
}

bool EqualFold(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

// Go's decoder: a key matches a field exactly or, failing that, ignoring
// case; when several keys match, the last one written wins.
const ojson* Field(const ojson& obj, std::string_view name) {
  const ojson* found = nullptr;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (EqualFold(it.key(), name)) found = &it.value();
  }
  return found;
}

std::unexpected<Error> Bad(std::string_view what, std::string_view path, std::string_view expected, const ojson& got) {
  return MakeError(ErrorCode::kParse, "{}: field {}: expected {}, got {}", what, path, expected, TypeName(got));
}

Result<ojson> ParseBody(std::string_view body, std::string_view what) {
  ojson v = ojson::parse(body, nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded()) {
    // Parse again with exceptions only to learn where it broke.
    try {
      [[maybe_unused]] const ojson again = ojson::parse(body);
    } catch (const ojson::parse_error& e) {
      return MakeError(ErrorCode::kParse, "{}: not JSON: {} (send the body kube-scheduler's extender protocol defines)", what, e.what());
    }
    return MakeError(ErrorCode::kParse, "{}: not JSON", what);
  }
  if (!v.is_object() && !v.is_null()) {
    return MakeError(ErrorCode::kParse, "{}: expected a JSON object, got {}", what, TypeName(v));
  }
  return v;
}

// An object (a Kubernetes object or list) or null.
Result<std::optional<ojson>> GetObject(const ojson& obj, std::string_view name, std::string_view what, std::string_view kind) {
  const ojson* f = obj.is_object() ? Field(obj, name) : nullptr;
  if (f == nullptr || f->is_null()) return std::optional<ojson>();
  if (!f->is_object()) return Bad(what, name, fmt::format("an object ({}) or null", kind), *f);
  return std::optional<ojson>(*f);
}

Result<std::string> GetString(const ojson& obj, std::string_view name, std::string_view what, std::string_view path) {
  const ojson* f = obj.is_object() ? Field(obj, name) : nullptr;
  if (f == nullptr || f->is_null()) return std::string();
  if (!f->is_string()) return Bad(what, path, "a string", *f);
  return f->get<std::string>();
}

Result<int64_t> GetInt(const ojson& obj, std::string_view name, std::string_view what, std::string_view path) {
  const ojson* f = obj.is_object() ? Field(obj, name) : nullptr;
  if (f == nullptr || f->is_null()) return int64_t{0};
  if (f->is_number_integer() && !f->is_number_unsigned()) return f->get<int64_t>();
  if (f->is_number_unsigned() && f->get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return static_cast<int64_t>(f->get<uint64_t>());
  }
  return Bad(what, path, "an integer within int64", *f);
}

Result<std::optional<std::vector<std::string>>> GetStrings(const ojson& obj, std::string_view name, std::string_view what) {
  const ojson* f = obj.is_object() ? Field(obj, name) : nullptr;
  if (f == nullptr || f->is_null()) return std::optional<std::vector<std::string>>();
  if (!f->is_array()) return Bad(what, name, "an array of strings or null", *f);
  std::vector<std::string> out;
  for (size_t i = 0; i < f->size(); ++i) {
    const ojson& e = (*f)[i];
    if (e.is_null()) {
      out.emplace_back();
    } else if (e.is_string()) {
      out.push_back(e.get<std::string>());
    } else {
      return Bad(what, fmt::format("{}[{}]", name, i), "a string", e);
    }
  }
  return std::optional<std::vector<std::string>>(std::move(out));
}

Result<std::optional<FailedNodesMap>> GetFailed(const ojson& obj, std::string_view name, std::string_view what) {
  const ojson* f = obj.is_object() ? Field(obj, name) : nullptr;
  if (f == nullptr || f->is_null()) return std::optional<FailedNodesMap>();
  if (!f->is_object()) return Bad(what, name, "an object of node name to reason, or null", *f);
  FailedNodesMap out;
  for (auto it = f->begin(); it != f->end(); ++it) {
    if (it.value().is_null()) {
      out[it.key()] = "";
    } else if (it.value().is_string()) {
      out[it.key()] = it.value().get<std::string>();
    } else {
      return Bad(what, fmt::format("{}[\"{}\"]", name, it.key()), "a string", it.value());
    }
  }
  return std::optional<FailedNodesMap>(std::move(out));
}

using MetaMap = std::map<std::string, std::optional<MetaVictims>>;
using VictimsMap = std::map<std::string, std::optional<Victims>>;

// NodeNameToVictims and NodeNameToMetaVictims: node name -> {Pods, NumPDBViolations}
// or null, V being Victims or MetaVictims; `read_pod` reads one entry of Pods.
template <typename V, typename ReadPod>
Result<std::optional<std::map<std::string, std::optional<V>>>> GetVictimsMap(const ojson& obj, std::string_view name, std::string_view type,
                                                                            std::string_view pods_are, std::string_view what,
                                                                            const ReadPod& read_pod) {
  using Map = std::map<std::string, std::optional<V>>;
  const ojson* f = obj.is_object() ? Field(obj, name) : nullptr;
  if (f == nullptr || f->is_null()) return std::optional<Map>();
  if (!f->is_object()) return Bad(what, name, fmt::format("an object of node name to {}, or null", type), *f);
  Map out;
  for (auto it = f->begin(); it != f->end(); ++it) {
    const std::string path = fmt::format("{}[\"{}\"]", name, it.key());
    const ojson& v = it.value();
    if (v.is_null()) {
      out[it.key()] = std::nullopt;
      continue;
    }
    if (!v.is_object()) return Bad(what, path, "an object {\"Pods\": [...], \"NumPDBViolations\": n}", v);
    V victims;
    const ojson* pods = Field(v, "Pods");
    if (pods != nullptr && !pods->is_null()) {
      if (!pods->is_array()) return Bad(what, path + ".Pods", pods_are, *pods);
      victims.pods.emplace();
      for (size_t i = 0; i < pods->size(); ++i) {
        TIDAL_ASSIGN_OR_RETURN(auto pod, read_pod((*pods)[i], fmt::format("{}.Pods[{}]", path, i)));
        victims.pods->push_back(std::move(pod));
      }
    }
    TIDAL_ASSIGN_OR_RETURN(victims.num_pdb_violations, GetInt(v, "NumPDBViolations", what, path + ".NumPDBViolations"));
    out[it.key()] = std::move(victims);
  }
  return std::optional<Map>(std::move(out));
}

Result<std::optional<MetaMap>> GetMetaVictims(const ojson& obj, std::string_view what) {
  return GetVictimsMap<MetaVictims>(obj, "NodeNameToMetaVictims", "MetaVictims", "an array of {\"UID\": ...}", what,
                                    [&](const ojson& p, const std::string& path) -> Result<MetaPod> {
                                      if (!p.is_object()) return Bad(what, path, "an object {\"UID\": ...}", p);
                                      TIDAL_ASSIGN_OR_RETURN(std::string uid, GetString(p, "UID", what, path + ".UID"));
                                      return MetaPod{std::move(uid)};
                                    });
}

Result<std::optional<VictimsMap>> GetVictims(const ojson& obj, std::string_view what) {
  return GetVictimsMap<Victims>(obj, "NodeNameToVictims", "Victims", "an array of v1.Pod", what,
                                [&](const ojson& p, const std::string& path) -> Result<ojson> {
                                  if (!p.is_object() && !p.is_null()) return Bad(what, path, "a v1.Pod object", p);
                                  return p;
                                });
}

ojson Nullable(const std::optional<ojson>& v) { return v ? *v : ojson(nullptr); }

ojson StringsJson(const std::optional<std::vector<std::string>>& v) {
  if (!v) return nullptr;
  ojson a = ojson::array();
  for (const std::string& s : *v) a.push_back(s);
  return a;
}

ojson FailedJson(const std::optional<FailedNodesMap>& v) {
  if (!v) return nullptr;
  ojson o = ojson::object();
  for (const auto& [k, r] : *v) o[k] = r;  // std::map: sorted, as Go writes maps
  return o;
}

ojson MetaJson(const std::optional<MetaMap>& v) {
  if (!v) return nullptr;
  ojson o = ojson::object();
  for (const auto& [node, mv] : *v) {
    if (!mv) {
      o[node] = nullptr;
      continue;
    }
    ojson m = ojson::object();
    if (mv->pods) {
      m["Pods"] = ojson::array();
      for (const MetaPod& p : *mv->pods) m["Pods"].push_back(ojson{{"UID", p.uid}});
    } else {
      m["Pods"] = nullptr;
    }
    m["NumPDBViolations"] = mv->num_pdb_violations;
    o[node] = std::move(m);
  }
  return o;
}

}  // namespace

Result<ExtenderArgs> ParseExtenderArgs(std::string_view body, std::string_view what) {
  TIDAL_ASSIGN_OR_RETURN(ojson v, ParseBody(body, what));
  ExtenderArgs a;
  TIDAL_ASSIGN_OR_RETURN(a.pod, GetObject(v, "Pod", what, "a v1.Pod"));
  TIDAL_ASSIGN_OR_RETURN(a.nodes, GetObject(v, "Nodes", what, "a v1.NodeList"));
  TIDAL_ASSIGN_OR_RETURN(a.node_names, GetStrings(v, "NodeNames", what));
  return a;
}

Result<ExtenderFilterResult> ParseExtenderFilterResult(std::string_view body) {
  constexpr std::string_view what = "ExtenderFilterResult";
  TIDAL_ASSIGN_OR_RETURN(ojson v, ParseBody(body, what));
  ExtenderFilterResult r;
  TIDAL_ASSIGN_OR_RETURN(r.nodes, GetObject(v, "Nodes", what, "a v1.NodeList"));
  TIDAL_ASSIGN_OR_RETURN(r.node_names, GetStrings(v, "NodeNames", what));
  TIDAL_ASSIGN_OR_RETURN(r.failed_nodes, GetFailed(v, "FailedNodes", what));
  TIDAL_ASSIGN_OR_RETURN(r.failed_and_unresolvable_nodes, GetFailed(v, "FailedAndUnresolvableNodes", what));
  TIDAL_ASSIGN_OR_RETURN(r.error, GetString(v, "Error", what, "Error"));
  return r;
}

Result<HostPriority> ParseHostPriority(std::string_view body) {
  constexpr std::string_view what = "HostPriority";
  TIDAL_ASSIGN_OR_RETURN(ojson v, ParseBody(body, what));
  HostPriority h;
  TIDAL_ASSIGN_OR_RETURN(h.host, GetString(v, "Host", what, "Host"));
  TIDAL_ASSIGN_OR_RETURN(h.score, GetInt(v, "Score", what, "Score"));
  return h;
}

Result<HostPriorityList> ParseHostPriorityList(std::string_view body) {
  constexpr std::string_view what = "HostPriorityList";
  ojson v = ojson::parse(body, nullptr, false);
  if (v.is_discarded()) return MakeError(ErrorCode::kParse, "{}: not JSON", what);
  if (v.is_null()) return HostPriorityList();
  if (!v.is_array()) return MakeError(ErrorCode::kParse, "{}: expected an array of {{\"Host\", \"Score\"}}, got {}", what, TypeName(v));
  std::vector<HostPriority> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string path = fmt::format("[{}]", i);
    const ojson& e = v[i];
    if (!e.is_object() && !e.is_null()) return Bad(what, path, "an object {\"Host\", \"Score\"}", e);
    HostPriority h;
    TIDAL_ASSIGN_OR_RETURN(h.host, GetString(e, "Host", what, path + ".Host"));
    TIDAL_ASSIGN_OR_RETURN(h.score, GetInt(e, "Score", what, path + ".Score"));
    out.push_back(std::move(h));
  }
  return HostPriorityList(std::move(out));
}

Result<ExtenderBindingArgs> ParseExtenderBindingArgs(std::string_view body) {
  constexpr std::string_view what = "ExtenderBindingArgs";
  TIDAL_ASSIGN_OR_RETURN(ojson v, ParseBody(body, what));
  ExtenderBindingArgs a;
  TIDAL_ASSIGN_OR_RETURN(a.pod_name, GetString(v, "PodName", what, "PodName"));
  TIDAL_ASSIGN_OR_RETURN(a.pod_namespace, GetString(v, "PodNamespace", what, "PodNamespace"));
  TIDAL_ASSIGN_OR_RETURN(a.pod_uid, GetString(v, "PodUID", what, "PodUID"));
  TIDAL_ASSIGN_OR_RETURN(a.node, GetString(v, "Node", what, "Node"));
  return a;
}

Result<ExtenderBindingResult> ParseExtenderBindingResult(std::string_view body) {
  constexpr std::string_view what = "ExtenderBindingResult";
  TIDAL_ASSIGN_OR_RETURN(ojson v, ParseBody(body, what));
  ExtenderBindingResult r;
  TIDAL_ASSIGN_OR_RETURN(r.error, GetString(v, "Error", what, "Error"));
  return r;
}

Result<ExtenderPreemptionArgs> ParseExtenderPreemptionArgs(std::string_view body) {
  constexpr std::string_view what = "ExtenderPreemptionArgs";
  TIDAL_ASSIGN_OR_RETURN(ojson v, ParseBody(body, what));
  ExtenderPreemptionArgs a;
  TIDAL_ASSIGN_OR_RETURN(a.pod, GetObject(v, "Pod", what, "a v1.Pod"));
  TIDAL_ASSIGN_OR_RETURN(a.node_name_to_victims, GetVictims(v, what));
  TIDAL_ASSIGN_OR_RETURN(a.node_name_to_meta_victims, GetMetaVictims(v, what));
  return a;
}

Result<ExtenderPreemptionResult> ParseExtenderPreemptionResult(std::string_view body) {
  constexpr std::string_view what = "ExtenderPreemptionResult";
  TIDAL_ASSIGN_OR_RETURN(ojson v, ParseBody(body, what));
  ExtenderPreemptionResult r;
  TIDAL_ASSIGN_OR_RETURN(r.node_name_to_meta_victims, GetMetaVictims(v, what));
  return r;
}

std::string Encode(const ExtenderArgs& v) {
  ojson o = ojson::object();
  o["Pod"] = Nullable(v.pod);
  o["Nodes"] = Nullable(v.nodes);
  o["NodeNames"] = StringsJson(v.node_names);
  return GoJson(o);
}

std::string Encode(const ExtenderFilterResult& v) {
  ojson o = ojson::object();
  o["Nodes"] = Nullable(v.nodes);
  o["NodeNames"] = StringsJson(v.node_names);
  o["FailedNodes"] = FailedJson(v.failed_nodes);
  o["FailedAndUnresolvableNodes"] = FailedJson(v.failed_and_unresolvable_nodes);
  o["Error"] = v.error;
  return GoJson(o);
}

std::string Encode(const HostPriority& v) { return GoJson(ojson{{"Host", v.host}, {"Score", v.score}}); }

std::string Encode(const HostPriorityList& v) {
  if (!v) return "null";
  ojson a = ojson::array();
  for (const HostPriority& h : *v) a.push_back(ojson{{"Host", h.host}, {"Score", h.score}});
  return GoJson(a);
}

std::string Encode(const ExtenderBindingArgs& v) {
  return GoJson(ojson{{"PodName", v.pod_name}, {"PodNamespace", v.pod_namespace}, {"PodUID", v.pod_uid}, {"Node", v.node}});
}

std::string Encode(const ExtenderBindingResult& v) { return GoJson(ojson{{"Error", v.error}}); }

std::string Encode(const ExtenderPreemptionArgs& v) {
  ojson o = ojson::object();
  o["Pod"] = Nullable(v.pod);
  if (v.node_name_to_victims) {
    ojson m = ojson::object();
    for (const auto& [node, vic] : *v.node_name_to_victims) {
      if (!vic) {
        m[node] = nullptr;
        continue;
      }
      ojson e = ojson::object();
      if (vic->pods) {
        e["Pods"] = ojson::array();
        for (const ojson& p : *vic->pods) e["Pods"].push_back(p);
      } else {
        e["Pods"] = nullptr;
      }
      e["NumPDBViolations"] = vic->num_pdb_violations;
      m[node] = std::move(e);
    }
    o["NodeNameToVictims"] = std::move(m);
  } else {
    o["NodeNameToVictims"] = nullptr;
  }
  o["NodeNameToMetaVictims"] = MetaJson(v.node_name_to_meta_victims);
  return GoJson(o);
}

std::string Encode(const ExtenderPreemptionResult& v) {
  ojson o = ojson::object();
  o["NodeNameToMetaVictims"] = MetaJson(v.node_name_to_meta_victims);
  return GoJson(o);
}

Result<std::vector<std::string>> NodeListNames(const ojson& node_list) {
  std::vector<std::string> out;
  const ojson* items = node_list.is_object() ? Field(node_list, "items") : nullptr;
  if (items == nullptr || items->is_null()) return out;
  if (!items->is_array()) return MakeError(ErrorCode::kParse, "Nodes.items: expected an array of v1.Node, got {}", TypeName(*items));
  for (size_t i = 0; i < items->size(); ++i) {
    const ojson& n = (*items)[i];
    const ojson* meta = n.is_object() ? Field(n, "metadata") : nullptr;
    const ojson* name = meta != nullptr && meta->is_object() ? Field(*meta, "name") : nullptr;
    if (name == nullptr || !name->is_string() || name->get_ref<const std::string&>().empty()) {
      return MakeError(ErrorCode::kParse, "Nodes.items[{}]: a node without metadata.name", i);
    }
    out.push_back(name->get<std::string>());
  }
  return out;
}

}  // namespace tidal::k8s
