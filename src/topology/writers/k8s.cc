// Kubernetes topology writers. Sources for the shapes written:
//  * Kueue Topology: kubernetes-sigs/kueue apis/kueue/v1beta1/topology_types.go
//    (spec.levels[].nodeLabel, 1-16 levels, unique, kubernetes.io/hostname
//    only last). v1beta1 is served from Kueue v0.12 on (v1beta2, the same
//    shape, only by the newest releases, which still serve v1beta1).
//  * KAI Topology: kai-scheduler/KAI-Scheduler pkg/apis/kai/v1alpha1/
//    topology_types.go (the same levels; the optional per-level alias of recent
//    releases is not written, so older releases accept the file too).
//  * Volcano HyperNode: volcano-sh/apis pkg/apis/topology/v1alpha1/
//    hypernode_types.go (spec.tier, spec.members[].type Node|HyperNode,
//    selector exactMatch.name | regexMatch.pattern).
//
// Level labels are tidal's own keys, tidal.io/topology-<level>, not the
// cloud's or topograph's: those are written by their owners (the cloud
// controller, topograph's k8s engine, GFD), and applying tidal's values over
// them would fight those controllers. One key per tidal level keeps levels
// unambiguous when read back (readers/k8s_labels.cc maps them exactly).
//
// Names must be valid Kubernetes names: node names (DNS-1123 subdomains)
// are required as they are, since tidal cannot rename a machine; domain names
// that are not valid label values / object names are rewritten (and the
// rewrite is listed in a comment, or kept in the tidal.io/name annotation).
#include "topology/writers/k8s.h"

#include <map>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace tidal::topo {
namespace {

bool IsAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }
bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// Kubernetes' IsDNS1123Subdomain: node and object names.
bool IsDnsSubdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (IsLowerAlnum(c)) continue;
    if (c != '-' && c != '.') return false;
    if (i == 0 || i + 1 == s.size()) return false;
    if (c == '.' && (!IsLowerAlnum(s[i - 1]) || !IsLowerAlnum(s[i + 1]))) return false;
  }
  return true;
}

// Kubernetes' IsValidLabelValue; also the name part of a qualified name
// (what Volcano's exactMatch.name must be) when non-empty.
bool IsLabelValue(std::string_view s) {
  if (s.size() > 63) return false;
  if (s.empty()) return true;
  if (!IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  for (char c : s)
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

// FNV-64a, written "x<16 hex>" as topograph does for values over 63
// characters (NVIDIA/topograph docs/reference/node-labels.md).
std::string HashName(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return fmt::format("x{:016x}", h);
}

// Valid names for every domain, unique within each group (a label key, or
// all HyperNodes): the name itself where valid, else its invalid characters
// as '-', else (too long, empty or clashing) the hash.
class Renamer {
 public:
  explicit Renamer(bool lower) : lower_(lower) {}
  std::string Name(const std::string& group, const std::string& name) {
    if (auto it = done_.find({group, name}); it != done_.end()) return it->second;
    std::string v = Valid(name) ? name : Sanitize(name);
    auto& used = used_[group];
    if (!Valid(v) || used.contains(v)) v = HashName(name);
    used.insert(v);
    done_[{group, name}] = v;
    if (v != name) renamed_.push_back({name, v});
    return v;
  }
  const std::vector<std::pair<std::string, std::string>>& renamed() const { return renamed_; }

 private:
  bool Valid(std::string_view s) const { return lower_ ? IsDnsSubdomain(s) && IsLabelValue(s) : IsLabelValue(s) && !s.empty(); }
  std::string Sanitize(std::string_view s) const {
    std::string out;
    for (char c : s) {
      char x = lower_ && c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
      const bool ok = lower_ ? IsLowerAlnum(x) || x == '-' : IsAlnum(x) || x == '-' || x == '_' || x == '.';
      out.push_back(ok ? x : '-');
    }
    while (!out.empty() && !IsAlnum(out.front())) out.erase(out.begin());
    while (!out.empty() && !IsAlnum(out.back())) out.pop_back();
    return out;
  }
  bool lower_;
  std::map<std::pair<std::string, std::string>, std::string> done_;
  std::map<std::string, std::set<std::string>> used_;
  std::vector<std::pair<std::string, std::string>> renamed_;
};

std::string LevelKey(Level l) { return fmt::format("tidal.io/topology-{}", LevelName(l)); }
constexpr const char* kNvlinkKey = "tidal.io/topology-block-nvlink";

// The switch levels present, innermost first.
std::vector<Level> SwitchLevels(const Topology& t) {
  std::vector<Level> out;
  for (Level l : t.levels())
    if (LevelIndex(l) > LevelIndex(Level::kNode)) out.push_back(l);
  return out;
}

Status CheckNodeNames(const Topology& t) {
  std::vector<std::string> bad;
  for (int32_t h = 0; h < t.num_hosts(); ++h) {
    const std::string& n = t.domain(t.host(h)).name;
    if (!IsDnsSubdomain(n)) bad.push_back(n);
  }
  if (bad.empty()) return Ok();
  std::string list;
  for (size_t i = 0; i < bad.size() && i < 5; ++i) list += (i ? ", " : "") + fmt::format("'{}'", bad[i]);
  if (bad.size() > 5) list += fmt::format(" and {} more", bad.size() - 5);
  return MakeError(ErrorCode::kInvalidArgument,
                   "{}: {} host name(s) are not valid Kubernetes node names ({}): a node name is lower-case letters, digits, '-' "
                   "and '.', at most 253 characters; use the names the nodes have in Kubernetes",
                   t.source(), bad.size(), list);
}

std::string Header(const Topology& t, std::string_view what) {
  return fmt::format("# {} written by tidal from {} ({} hosts).\n", what, t.source(), t.num_hosts());
}

// Kueue and KAI: one Topology object, then one Node object per host.
Result<std::string> WriteLabelLevels(const Topology& t, std::string_view api_version, std::string_view what) {
  TIDAL_RETURN_IF_ERROR(CheckNodeNames(t));
  const std::vector<Level> levels = SwitchLevels(t);
  Renamer names(false);
  std::string comments;
  std::vector<std::string> empty;
  for (Level l : levels)
    for (DomainId d : t.domains_at(l)) {
      if (t.hosts_under(d) == 0) {
        empty.push_back(t.domain(d).name);
      } else {
        names.Name(LevelKey(l), t.domain(d).name);
      }
    }
  std::string out = Header(t, what);
  out += "# Node labels tidal.io/topology-<level> hold each host's domains; label values are domain names.\n";
  {
    YAML::Emitter y;
    y << YAML::BeginMap;
    y << YAML::Key << "apiVersion" << YAML::Value << std::string(api_version);
    y << YAML::Key << "kind" << YAML::Value << "Topology";
    y << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap << YAML::Key << "name" << YAML::Value << "tidal" << YAML::EndMap;
    y << YAML::Key << "spec" << YAML::Value << YAML::BeginMap << YAML::Key << "levels" << YAML::Value << YAML::BeginSeq;
    for (auto it = levels.rbegin(); it != levels.rend(); ++it)
      y << YAML::BeginMap << YAML::Key << "nodeLabel" << YAML::Value << LevelKey(*it) << YAML::EndMap;
    y << YAML::BeginMap << YAML::Key << "nodeLabel" << YAML::Value << "kubernetes.io/hostname" << YAML::EndMap;
    y << YAML::EndSeq << YAML::EndMap << YAML::EndMap;
    out += fmt::format("---\n{}\n", y.c_str());
  }
  // After the Topology, so that the first lines still say what the file is (format detection reads 40).
  for (const auto& [from, to] : names.renamed()) out += fmt::format("# domain '{}' is labelled '{}' (not a valid label value)\n", from, to);
  if (!empty.empty()) {
    out += fmt::format("# {} domain(s) without hosts cannot be node labels and are left out: ", empty.size());
    for (size_t i = 0; i < empty.size() && i < 10; ++i) out += (i ? ", " : "") + empty[i];
    out += empty.size() > 10 ? fmt::format(" and {} more\n", empty.size() - 10) : "\n";
  }
  std::vector<std::string> long_names;
  for (int32_t h = 0; h < t.num_hosts(); ++h)
    if (!IsLabelValue(t.domain(t.host(h)).name)) long_names.push_back(t.domain(t.host(h)).name);
  if (!long_names.empty()) {
    out += fmt::format("# {} node name(s) are too long for a label value (e.g. {}); their kubernetes.io/hostname is left to the kubelet\n",
                       long_names.size(), long_names.front());
  }
  for (int32_t h = 0; h < t.num_hosts(); ++h) {
    const DomainId hd = t.host(h);
    const std::string& name = t.domain(hd).name;
    YAML::Emitter y;
    y << YAML::BeginMap;
    y << YAML::Key << "apiVersion" << YAML::Value << "v1";
    y << YAML::Key << "kind" << YAML::Value << "Node";
    y << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap;
    y << YAML::Key << "name" << YAML::Value << YAML::DoubleQuoted << name;
    y << YAML::Key << "labels" << YAML::Value << YAML::BeginMap;
    for (auto it = levels.rbegin(); it != levels.rend(); ++it) {
      const DomainId a = t.AncestorAt(hd, *it);
      if (a == kNoDomain) continue;  // a shallower branch: Kueue reads the missing level as ""
      y << YAML::Key << LevelKey(*it) << YAML::Value << YAML::DoubleQuoted << names.Name(LevelKey(*it), t.domain(a).name);
      if (*it == Level::kBlock && t.domain(a).nvlink) y << YAML::Key << kNvlinkKey << YAML::Value << YAML::DoubleQuoted << "true";
    }
    // The kubelet sets kubernetes.io/hostname itself; a name that cannot be a
    // label value is not one the kubelet set, so it is left to the kubelet.
    if (IsLabelValue(name)) y << YAML::Key << "kubernetes.io/hostname" << YAML::Value << YAML::DoubleQuoted << name;
    y << YAML::EndMap << YAML::EndMap << YAML::EndMap;
    out += fmt::format("---\n{}\n", y.c_str());
  }
  return out;
}

}  // namespace

Result<std::string> WriteKueueTopology(const Topology& t) {
  return WriteLabelLevels(t, "kueue.x-k8s.io/v1beta1", "Kueue Topology Aware Scheduling: a Topology and node labels");
}

Result<std::string> WriteKaiTopology(const Topology& t) {
  return WriteLabelLevels(t, "kai.scheduler/v1alpha1", "KAI scheduler topology: a Topology and node labels");
}

Result<std::string> WriteVolcanoHyperNodes(const Topology& t) {
  TIDAL_RETURN_IF_ERROR(CheckNodeNames(t));
  const std::vector<Level> levels = SwitchLevels(t);
  Renamer names(true);
  std::string out = Header(t, "Volcano HyperNodes");
  out += "# One HyperNode per switch domain; tier 1 is the level nearest the nodes. Annotations keep tidal's level and name.\n";
  std::vector<std::string> empty;
  for (size_t tier = 0; tier < levels.size(); ++tier) {
    for (DomainId d : t.domains_at(levels[tier])) {
      const Domain& x = t.domain(d);
      // Volcano requires at least one member; a domain without hosts has none that matter.
      if (t.hosts_under(d) == 0) {
        empty.push_back(x.name);
        continue;
      }
      const std::string name = names.Name("hypernode", x.name);
      YAML::Emitter y;
      y << YAML::BeginMap;
      y << YAML::Key << "apiVersion" << YAML::Value << "topology.volcano.sh/v1alpha1";
      y << YAML::Key << "kind" << YAML::Value << "HyperNode";
      y << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap;
      y << YAML::Key << "name" << YAML::Value << YAML::DoubleQuoted << name;
      y << YAML::Key << "annotations" << YAML::Value << YAML::BeginMap;
      y << YAML::Key << "tidal.io/level" << YAML::Value << std::string(LevelName(x.level));
      if (x.nvlink) y << YAML::Key << "tidal.io/nvlink" << YAML::Value << YAML::DoubleQuoted << "true";
      if (name != x.name) y << YAML::Key << "tidal.io/name" << YAML::Value << YAML::DoubleQuoted << x.name;
      y << YAML::EndMap << YAML::EndMap;
      y << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
      y << YAML::Key << "tier" << YAML::Value << static_cast<int>(tier + 1);
      y << YAML::Key << "members" << YAML::Value << YAML::BeginSeq;
      for (DomainId k : t.children(d)) {
        if (t.hosts_under(k) == 0) continue;
        const Domain& c = t.domain(k);
        const bool host = c.level == Level::kNode;
        y << YAML::BeginMap << YAML::Key << "type" << YAML::Value << (host ? "Node" : "HyperNode");
        y << YAML::Key << "selector" << YAML::Value << YAML::BeginMap;
        if (!host) {
          y << YAML::Key << "exactMatch" << YAML::Value << YAML::BeginMap << YAML::Key << "name" << YAML::Value << YAML::DoubleQuoted
            << names.Name("hypernode", c.name) << YAML::EndMap;
        } else if (IsLabelValue(c.name)) {
          y << YAML::Key << "exactMatch" << YAML::Value << YAML::BeginMap << YAML::Key << "name" << YAML::Value << YAML::DoubleQuoted
            << c.name << YAML::EndMap;
        } else {
          // exactMatch.name must be a qualified name (at most 63 characters);
          // longer node names are matched by an anchored literal pattern.
          std::string pattern = "^";
          for (char ch : c.name) pattern += ch == '.' ? std::string("\\.") : std::string(1, ch);
          y << YAML::Key << "regexMatch" << YAML::Value << YAML::BeginMap << YAML::Key << "pattern" << YAML::Value << YAML::DoubleQuoted
            << pattern + "$" << YAML::EndMap;
        }
        y << YAML::EndMap << YAML::EndMap;
      }
      y << YAML::EndSeq << YAML::EndMap << YAML::EndMap;
      out += fmt::format("---\n{}\n", y.c_str());
    }
  }
  if (!empty.empty()) {
    out += fmt::format("# {} domain(s) without hosts are left out (a HyperNode needs a member): ", empty.size());
    for (size_t i = 0; i < empty.size() && i < 10; ++i) out += (i ? ", " : "") + empty[i];
    out += empty.size() > 10 ? fmt::format(" and {} more\n", empty.size() - 10) : "\n";
  }
  if (levels.empty()) out += "# the topology has no switch domains, so there are no HyperNodes\n";
  return out;
}

}  // namespace tidal::topo
