#include "adapters/k8s/objects.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "topology/builder.h"
#include "topology/readers/k8s_labels.h"

namespace tidal::k8s {
namespace {

constexpr int64_t kMaxQuantity = int64_t{1} << 62;

std::unexpected<Error> BadQuantity(std::string_view text, std::string_view why) {
  return MakeError(ErrorCode::kParse,
                   "quantity '{}': {}; a quantity is a number with an optional suffix: 500m, 4, 1.5, 32Gi, 64G, 2e3", text, why);
}

const ojson* At(const ojson& o, std::string_view key) {
  if (!o.is_object()) return nullptr;
  auto it = o.find(key);
  return it == o.end() || it->is_null() ? nullptr : &*it;
}

Result<std::string> StringAt(const ojson& o, std::string_view key, std::string_view where) {
  const ojson* v = At(o, key);
  if (v == nullptr) return std::string();
  if (!v->is_string()) return MakeError(ErrorCode::kParse, "{}: {} must be a string", where, key);
  return v->get<std::string>();
}

// Adds one resource list (requests or limits) into `out`, per resource.
Status AddResources(const ojson& list, std::map<std::string, int64_t>& out, std::string_view where) {
  if (!list.is_object()) return MakeError(ErrorCode::kParse, "{}: expected a map of resource name to quantity", where);
  for (auto it = list.begin(); it != list.end(); ++it) {
    const std::string& name = it.key();
    std::string text;
    if (it->is_string()) {
      text = it->get<std::string>();
    } else if (it->is_number_integer()) {
      text = it->dump();  // Go's Quantity also reads a bare JSON number
    } else {
      return MakeError(ErrorCode::kParse, "{}[{}]: expected a quantity string, got {}", where, name, it->dump());
    }
    Result<int64_t> q = name == "memory" || name == "ephemeral-storage" ? QuantityMib(text)
                        : name == "cpu"                                 ? QuantityMilli(text)
                                                                        : ParseQuantity(text);
    if (!q) return MakeError(ErrorCode::kParse, "{}[{}]: {}", where, name, q.error().message);
    out[name] += *q;
  }
  return Ok();
}

// A container's effective request: requests, with limits filling what
// requests leave out (Kubernetes defaults a missing request to its limit).
Result<std::map<std::string, int64_t>> ContainerRequest(const ojson& c, std::string_view where) {
  std::map<std::string, int64_t> req, lim;
  const ojson* res = At(c, "resources");
  if (res == nullptr) return req;
  if (const ojson* r = At(*res, "requests")) TIDAL_RETURN_IF_ERROR(AddResources(*r, req, fmt::format("{}.resources.requests", where)));
  if (const ojson* l = At(*res, "limits")) TIDAL_RETURN_IF_ERROR(AddResources(*l, lim, fmt::format("{}.resources.limits", where)));
  for (const auto& [k, v] : lim) req.try_emplace(k, v);
  return req;
}

Result<int64_t> IntLabel(const std::map<std::string, std::string>& m, const std::string& key, int64_t lo, int64_t hi, std::string_view where) {
  auto it = m.find(key);
  if (it == m.end()) return int64_t{-1};
  int64_t v = 0;
  auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc() || p != it->second.data() + it->second.size() || v < lo || v > hi) {
    return MakeError(ErrorCode::kParse, "{}: {}='{}' must be a whole number in [{}, {}]", where, key, it->second, lo, hi);
  }
  return v;
}

Result<std::map<std::string, std::string>> StringMap(const ojson& meta, std::string_view key, std::string_view where) {
  std::map<std::string, std::string> out;
  const ojson* m = At(meta, key);
  if (m == nullptr) return out;
  if (!m->is_object()) return MakeError(ErrorCode::kParse, "{}: metadata.{} must be a map of strings", where, key);
  for (auto it = m->begin(); it != m->end(); ++it) {
    if (!it->is_string()) return MakeError(ErrorCode::kParse, "{}: metadata.{}[{}] must be a string", where, key, it.key());
    out[it.key()] = it->get<std::string>();
  }
  return out;
}

}  // namespace

Result<int64_t> ParseQuantity(std::string_view text, int64_t scale) {
  // Quantities with a binary (power-of-two) scale reach here as scale < 0:
  // -20 means "divide by 2^20" (MiB). See QuantityMib.
  std::string_view s = text;
  if (s.empty()) return BadQuantity(text, "it is empty");
  bool negative = false;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  uint64_t mantissa = 0;
  int digits = 0, frac = 0;
  bool dot = false, any = false, dropped = false;
  size_t i = 0;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '.') {
      if (dot) return BadQuantity(text, "two decimal points");
      dot = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    any = true;
    if (mantissa == 0 && c == '0') {
      if (dot) ++frac;
      continue;  // leading zeros carry no digits
    }
    if (digits >= 18) {
      // Beyond 18 significant digits: integer digits scale, fraction digits are dropped (rounded up below).
      if (!dot) return BadQuantity(text, "too many digits");
      dropped |= c != '0';  // fraction digits past 18 significant ones: kept only as "round up"
      continue;
    }
    mantissa = mantissa * 10 + static_cast<uint64_t>(c - '0');
    ++digits;
    if (dot) ++frac;
  }
  if (!any) return BadQuantity(text, "no digits");
  if (dropped) mantissa += 1;  // a request is rounded up, never down
  std::string_view suffix = s.substr(i);
  int e10 = -frac, e2 = 0;
  if (suffix.empty()) {
  } else if (suffix == "m") {
    e10 -= 3;
  } else if (suffix == "k") {
    e10 += 3;
  } else if (suffix == "M") {
    e10 += 6;
  } else if (suffix == "G") {
    e10 += 9;
  } else if (suffix == "T") {
    e10 += 12;
  } else if (suffix == "P") {
    e10 += 15;
  } else if (suffix == "E") {
    e10 += 18;
  } else if (suffix.size() == 2 && suffix[1] == 'i' && std::string_view("KMGTPE").find(suffix[0]) != std::string_view::npos) {
    e2 += 10 * (1 + static_cast<int>(std::string_view("KMGTPE").find(suffix[0])));
  } else if (suffix[0] == 'e' || suffix[0] == 'E') {
    std::string_view ex = suffix.substr(1);
    int sign = 1;
    if (!ex.empty() && (ex[0] == '+' || ex[0] == '-')) {
      sign = ex[0] == '-' ? -1 : 1;
      ex.remove_prefix(1);
    }
    int e = 0;
    auto [p, ec] = std::from_chars(ex.data(), ex.data() + ex.size(), e);
    if (ex.empty() || ec != std::errc() || p != ex.data() + ex.size() || e > 1000) return BadQuantity(text, "a bad exponent");
    e10 += sign * e;
  } else {
    return BadQuantity(text, fmt::format("unknown suffix '{}'", suffix));
  }
  if (negative && mantissa != 0) return BadQuantity(text, "a request cannot be negative");
  if (scale > 0) {
    int64_t sc = scale;
    while (sc % 10 == 0 && sc > 1) {
      sc /= 10;
      ++e10;
    }
    if (sc != 1) return MakeError(ErrorCode::kInternal, "ParseQuantity: scale {} is not a power of ten", scale);
  } else {
    e2 += static_cast<int>(scale);
  }
  if (mantissa == 0) return int64_t{0};
  const long double approx = static_cast<long double>(mantissa) * std::pow(10.0L, e10) * std::pow(2.0L, e2);
  if (approx > static_cast<long double>(kMaxQuantity)) return BadQuantity(text, "too large");
  __extension__ typedef unsigned __int128 u128;
  u128 num = mantissa, den = 1;
  if (e10 >= 0) {
    for (int k = 0; k < e10; ++k) num *= 10;
  } else if (e10 < -36) {
    return int64_t{1};  // a positive amount far below one unit rounds up to one
  } else {
    for (int k = 0; k < -e10; ++k) den *= 10;
  }
  if (e2 >= 0) {
    num <<= e2;
  } else {
    if (-e2 > 60) return int64_t{1};
    den <<= -e2;
  }
  return static_cast<int64_t>((num + den - 1) / den);
}

Result<int64_t> QuantityMib(std::string_view text) { return ParseQuantity(text, -20); }
Result<int64_t> QuantityMilli(std::string_view text) { return ParseQuantity(text, 1000); }

std::string PodInfo::UnitKey() const { return gang.empty() ? "pod:" + uid : namespace_ + "/" + gang; }

Result<PodInfo> ReadPod(const ojson& pod) {
  if (!pod.is_object()) return MakeError(ErrorCode::kParse, "Pod: expected a v1.Pod object");
  PodInfo p;
  const ojson* meta = At(pod, "metadata");
  if (meta == nullptr || !meta->is_object()) return MakeError(ErrorCode::kParse, "Pod: no metadata (name, namespace, uid)");
  TIDAL_ASSIGN_OR_RETURN(p.name, StringAt(*meta, "name", "Pod.metadata"));
  if (p.name.empty()) return MakeError(ErrorCode::kParse, "Pod: metadata.name is missing");
  const std::string where = fmt::format("pod '{}'", p.name);
  TIDAL_ASSIGN_OR_RETURN(p.namespace_, StringAt(*meta, "namespace", where));
  if (p.namespace_.empty()) p.namespace_ = "default";
  TIDAL_ASSIGN_OR_RETURN(p.uid, StringAt(*meta, "uid", where));
  if (p.uid.empty()) return MakeError(ErrorCode::kParse, "{}: metadata.uid is missing (tidal tracks pods by UID)", where);
  TIDAL_ASSIGN_OR_RETURN(auto labels, StringMap(*meta, "labels", where));
  TIDAL_ASSIGN_OR_RETURN(auto annotations, StringMap(*meta, "annotations", where));

  const ojson* spec = At(pod, "spec");
  std::map<std::string, int64_t> total;
  if (spec != nullptr) {
    if (!spec->is_object()) return MakeError(ErrorCode::kParse, "{}: spec must be an object", where);
    TIDAL_ASSIGN_OR_RETURN(p.node_name, StringAt(*spec, "nodeName", where));
    if (const ojson* pr = At(*spec, "priority")) {
      if (!pr->is_number_integer() || pr->get<int64_t>() < std::numeric_limits<int32_t>::min() ||
          pr->get<int64_t>() > std::numeric_limits<int32_t>::max()) {
        return MakeError(ErrorCode::kParse, "{}: spec.priority must be a 32-bit integer", where);
      }
      p.priority = static_cast<int32_t>(pr->get<int64_t>());
    }
    if (const ojson* cs = At(*spec, "containers")) {
      if (!cs->is_array()) return MakeError(ErrorCode::kParse, "{}: spec.containers must be a list", where);
      for (size_t i = 0; i < cs->size(); ++i) {
        TIDAL_ASSIGN_OR_RETURN(auto r, ContainerRequest((*cs)[i], fmt::format("{}: spec.containers[{}]", where, i)));
        for (const auto& [k, v] : r) total[k] += v;
      }
    }
    if (const ojson* cs = At(*spec, "initContainers")) {
      if (!cs->is_array()) return MakeError(ErrorCode::kParse, "{}: spec.initContainers must be a list", where);
      for (size_t i = 0; i < cs->size(); ++i) {
        TIDAL_ASSIGN_OR_RETURN(auto r, ContainerRequest((*cs)[i], fmt::format("{}: spec.initContainers[{}]", where, i)));
        for (const auto& [k, v] : r) total[k] = std::max(total[k], v);
      }
    }
    if (const ojson* oh = At(*spec, "overhead")) {
      std::map<std::string, int64_t> o;
      TIDAL_RETURN_IF_ERROR(AddResources(*oh, o, fmt::format("{}: spec.overhead", where)));
      for (const auto& [k, v] : o) total[k] += v;
    }
  }
  p.cpu_milli = total["cpu"];
  p.memory_mib = total["memory"];
  const int64_t gpus = total[std::string(kGpuResource)];
  if (gpus > 4096) return MakeError(ErrorCode::kParse, "{}: asks for {} nvidia.com/gpu; at most 4096 per pod", where, gpus);
  p.gpus = static_cast<int32_t>(gpus);

  TIDAL_ASSIGN_OR_RETURN(int64_t milli, IntLabel(annotations, "tidal.io/gpu-milli", 1, 1000, where));
  if (milli > 0) {
    if (p.gpus != 1) return MakeError(ErrorCode::kParse, "{}: tidal.io/gpu-milli shares one GPU; the pod must ask nvidia.com/gpu: 1", where);
    p.gpu_milli = static_cast<int32_t>(milli);
  }
  TIDAL_ASSIGN_OR_RETURN(int64_t min_run, IntLabel(annotations, "tidal.io/min-runtime-s", 0, int64_t{1} << 40, where));
  p.min_runtime_s = std::max<int64_t>(0, min_run);
  if (auto it = labels.find("tidal.io/qos"); it != labels.end()) {
    if (it->second != "guaranteed" && it->second != "standard" && it->second != "spot") {
      return MakeError(ErrorCode::kParse, "{}: label tidal.io/qos='{}' must be guaranteed, standard or spot", where, it->second);
    }
    p.tier = it->second;
  }
  if (auto it = labels.find("tidal.io/gang"); it != labels.end()) {
    p.gang = it->second;
    if (p.gang.empty()) return MakeError(ErrorCode::kParse, "{}: label tidal.io/gang is empty; name the gang", where);
    TIDAL_ASSIGN_OR_RETURN(int64_t size, IntLabel(labels, "tidal.io/gang-size", 1, 4096, where));
    if (size < 0) return MakeError(ErrorCode::kParse, "{}: in gang '{}' but no tidal.io/gang-size label (how many pods the gang has)", where, p.gang);
    p.gang_size = static_cast<int32_t>(size);
    if (p.gpu_milli < kMilliPerGpu) return MakeError(ErrorCode::kParse, "{}: a gang's pods take whole GPUs (drop tidal.io/gpu-milli)", where);
  }
  return p;
}

Result<ImportedNodes> ImportNodes(const ojson& node_list, const std::string& source) {
  ImportedNodes out;
  const ojson* items = At(node_list, "items");
  if (items == nullptr || !items->is_array() || items->empty()) {
    return MakeError(ErrorCode::kParse, "{}: no nodes (expected a NodeList with items, `kubectl get nodes -o json`)", source);
  }
  // Typed lists on the wire (what kube-scheduler sends) carry no kind on
  // the list or its items; the topology reader wants kubectl's shape.
  ojson typed = node_list;
  if (!typed.contains("kind")) typed["kind"] = "NodeList";
  if (!typed.contains("apiVersion")) typed["apiVersion"] = "v1";
  for (ojson& item : typed["items"]) {
    if (item.is_object() && !item.contains("kind")) item["kind"] = "Node";
    if (item.is_object() && !item.contains("apiVersion")) item["apiVersion"] = "v1";
  }
  TIDAL_ASSIGN_OR_RETURN(topo::Topology t, topo::ReadK8sNodeLabels(typed.dump(), source));
  out.notes = t.notes();
  std::vector<topo::NodeGpus> gpus;
  for (size_t i = 0; i < items->size(); ++i) {
    const ojson& n = (*items)[i];
    const std::string where = fmt::format("{}: items[{}]", source, i);
    const ojson* meta = At(n, "metadata");
    if (meta == nullptr) return MakeError(ErrorCode::kParse, "{}: a node without metadata", where);
    TIDAL_ASSIGN_OR_RETURN(std::string name, StringAt(*meta, "name", where));
    if (name.empty()) return MakeError(ErrorCode::kParse, "{}: a node without metadata.name", where);
    const std::string at = fmt::format("{} (node '{}')", where, name);
    std::map<std::string, int64_t> alloc;
    const ojson* status = At(n, "status");
    const ojson* a = status != nullptr ? At(*status, "allocatable") : nullptr;
    if (a == nullptr && status != nullptr) a = At(*status, "capacity");
    if (a != nullptr) TIDAL_RETURN_IF_ERROR(AddResources(*a, alloc, at + " status.allocatable"));
    NodeSpec spec{.name = name, .cpu_milli = alloc["cpu"], .memory_mib = alloc["memory"]};
    const std::optional<int32_t> h = t.FindHost(name);
    const topo::HostLayout* layout = h ? &t.layout(*h) : nullptr;
    int64_t count = alloc[std::string(kGpuResource)];
    if (layout != nullptr && layout->gpus >= 0) count = layout->gpus;
    spec.gpu_count = static_cast<int32_t>(std::min<int64_t>(count, 4096));
    if (spec.gpu_count > 0) {
      spec.gpu_model = layout != nullptr && !layout->gpu_model.empty() ? layout->gpu_model : "GPU";
      if (spec.gpu_model == "GPU") {
        out.notes.push_back(fmt::format("{}: no nvidia.com/gpu.product label; its GPUs are of model 'GPU'", at));
      }
    }
    if (const ojson* sp = At(n, "spec"); sp != nullptr && At(*sp, "unschedulable") != nullptr && (*sp)["unschedulable"].is_boolean() &&
                                         (*sp)["unschedulable"].get<bool>()) {
      out.unschedulable.push_back(name);
    }
    gpus.push_back({.name = name, .gpus = spec.gpu_count, .gpu_model = spec.gpu_model});
    out.nodes.push_back(std::move(spec));
  }
  TIDAL_ASSIGN_OR_RETURN(topo::Topology m, topo::Materialize(t, gpus));
  out.topology = std::make_shared<const topo::Topology>(std::move(m));
  return out;
}

}  // namespace tidal::k8s
