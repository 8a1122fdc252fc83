// Volcano HyperNodes -> topology (topology.volcano.sh/v1alpha1, the API in
// volcano-sh/apis pkg/apis/topology/v1alpha1/hypernode_types.go): each
// HyperNode is one switch domain; spec.tier 1 is nearest the nodes; members
// are Nodes or lower-tier HyperNodes, chosen by exactMatch.name,
// regexMatch.pattern (Go's regexp.MatchString: unanchored) or
// labelMatch.matchLabels (Node members only).
//
// tidal's writer adds annotations that make the round trip exact:
// tidal.io/level (block, leaf, ...), tidal.io/nvlink ("true") and tidal.io/name
// (the domain's name where it is not a valid object name). Without them the
// level is inferred from the height above the hosts.
#include <regex>
#include <set>

#include <fmt/format.h>

#include "topology/builder.h"
#include "topology/readers/k8s_objects.h"

namespace tidal::topo::k8s {
namespace {

// "^name$" with only escaped metacharacters: the exact-name form tidal writes
// for node names too long for exactMatch. Returns the name, or nullopt.
std::optional<std::string> LiteralPattern(std::string_view p) {
  if (p.size() < 3 || p.front() != '^' || p.back() != '$') return std::nullopt;
  std::string out;
  for (size_t i = 1; i + 1 < p.size(); ++i) {
    const char ch = p[i];
    if (ch == '\\') {
      if (i + 2 >= p.size()) return std::nullopt;
      const char e = p[++i];
      if (std::isalnum(static_cast<unsigned char>(e))) return std::nullopt;  // \d, \w ... are classes
      out.push_back(e);
    } else if (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '/' || ch == ':') {
      out.push_back(ch);
    } else {
      return std::nullopt;
    }
  }
  return out;
}

Result<std::vector<std::string>> MatchNames(const std::string& pattern, const std::vector<std::string>& names, const std::string& at) {
  if (pattern.size() > 1024) {
    return MakeError(ErrorCode::kParse, "{}: regexMatch pattern of {} characters; at most 1024", at, pattern.size());
  }
  std::vector<std::string> out;
  try {
    const std::regex re(pattern, std::regex::ECMAScript);
    for (const auto& n : names)
      if (std::regex_search(n, re)) out.push_back(n);
  } catch (const std::exception& e) {
    return MakeError(ErrorCode::kParse, "{}: regexMatch pattern '{}' is not a regular expression tidal can use ({})", at, pattern,
                     e.what());
  }
  return out;
}

}  // namespace

Result<Topology> BuildFromHyperNodes(const Objects& o, const std::vector<HostLayout>& layouts, std::vector<std::string> notes,
                                     const std::string& source) {
  std::map<std::string, const HyperNode*> by_name;
  std::map<std::string, std::string> shown;  // HyperNode name -> domain name
  std::map<std::string, std::string> shown_by;
  std::vector<std::string> hn_names;
  for (const HyperNode& h : o.hypernodes) {
    by_name[h.name] = &h;
    hn_names.push_back(h.name);
    auto a = h.annotations.find("tidal.io/name");
    const std::string name = a != h.annotations.end() && !a->second.empty() ? a->second : h.name;
    if (auto [it, inserted] = shown_by.emplace(name, h.where); !inserted) {
      return MakeError(ErrorCode::kParse, "{}: HyperNode '{}' is named '{}' (annotation tidal.io/name), as is another at {}", h.where,
                       h.name, name, it->second);
    }
    shown[h.name] = name;
  }
  std::vector<std::string> node_names;
  for (const Node& n : o.nodes) node_names.push_back(n.name);

  FabricGraph g(source);
  for (const HyperNode& h : o.hypernodes) {
    const std::string at = fmt::format("{}: HyperNode '{}'", h.where, h.name);
    std::optional<Level> level;
    if (auto a = h.annotations.find("tidal.io/level"); a != h.annotations.end()) {
      auto l = ParseLevel(a->second);
      if (!l || LevelIndex(*l) <= LevelIndex(Level::kNode)) {
        return MakeError(ErrorCode::kParse, "{}: annotation tidal.io/level = '{}' is not block, leaf, spine, core or zone", at, a->second);
      }
      level = *l;
    }
    bool nvlink = false;
    if (auto a = h.annotations.find("tidal.io/nvlink"); a != h.annotations.end()) {
      if (a->second != "true" && a->second != "false") {
        return MakeError(ErrorCode::kParse, "{}: annotation tidal.io/nvlink must be true or false", at);
      }
      nvlink = a->second == "true";
    }
    TIDAL_RETURN_IF_ERROR(g.AddSwitch(shown[h.name], level, h.where, {}, nvlink));
  }
  for (size_t i = 0; i < o.nodes.size(); ++i) TIDAL_RETURN_IF_ERROR(g.AddHost(o.nodes[i].name, o.nodes[i].where, layouts[i]));

  std::set<std::string> placed;
  std::vector<std::string> empty_selectors, members_only;
  for (const HyperNode& h : o.hypernodes) {
    for (size_t k = 0; k < h.members.size(); ++k) {
      const HyperNodeMember& m = h.members[k];
      const std::string at = fmt::format("{}: HyperNode '{}': member {}", h.where, h.name, k + 1);
      std::vector<std::string> targets;
      std::optional<std::string> literal = m.kind == HyperNodeMember::Kind::kExact   ? std::optional(m.value)
                                           : m.kind == HyperNodeMember::Kind::kRegex ? LiteralPattern(m.value)
                                                                                     : std::nullopt;
      if (literal) {
        targets.push_back(*literal);
      } else if (m.kind == HyperNodeMember::Kind::kLabels) {
        if (m.hypernode) return MakeError(ErrorCode::kParse, "{}: labelMatch selects Nodes only (Volcano's MemberSelector)", at);
        if (o.nodes.empty()) {
          return MakeError(ErrorCode::kParse,
                           "{}: labelMatch needs the nodes' labels; put the Node objects (kubectl get nodes -o yaml) in the same file", at);
        }
        for (const Node& n : o.nodes) {
          bool all = true;
          for (const auto& [lk, lv] : m.match_labels) {
            auto it = n.labels.find(lk);
            all = all && it != n.labels.end() && it->second == lv;
          }
          if (all) targets.push_back(n.name);
        }
      } else {
        if (!m.hypernode && o.nodes.empty()) {
          return MakeError(ErrorCode::kParse,
                           "{}: regexMatch '{}' needs the node names; put the Node objects (kubectl get nodes -o yaml) in the same file",
                           at, m.value);
        }
        TIDAL_ASSIGN_OR_RETURN(targets, MatchNames(m.value, m.hypernode ? hn_names : node_names, at));
      }
      if (targets.empty()) empty_selectors.push_back(fmt::format("{} member {}", h.name, k + 1));
      for (const std::string& t : targets) {
        if (m.hypernode) {
          auto c = by_name.find(t);
          if (c == by_name.end()) {
            return MakeError(ErrorCode::kParse, "{}: HyperNode '{}' is not in the input; add it or fix the name", at, t);
          }
          if (c->second->tier >= h.tier) {
            return MakeError(ErrorCode::kParse, "{}: lists HyperNode '{}' of tier {} from tier {}; a member's tier must be lower", at, t,
                             c->second->tier, h.tier);
          }
          g.Connect(shown[h.name], shown[t], at);
        } else {
          if (by_name.contains(t)) {
            return MakeError(ErrorCode::kParse, "{}: '{}' is a HyperNode but the member's type is Node; use type: HyperNode", at, t);
          }
          if (!g.HasHost(t)) {
            TIDAL_RETURN_IF_ERROR(g.AddHost(t, at));
            members_only.push_back(t);
          }
          g.Connect(shown[h.name], t, at);
          placed.insert(t);
        }
      }
    }
  }
  if (!empty_selectors.empty()) {
    notes.push_back(fmt::format("{} HyperNode member selector(s) match nothing: {}", empty_selectors.size(), NameList(empty_selectors)));
  }
  if (!members_only.empty()) {
    notes.push_back(fmt::format("{} node(s) are known only as HyperNode members ({}), so their GPU counts are unknown", members_only.size(),
                                NameList(members_only)));
  }
  std::vector<std::string> lonely;
  for (const Node& n : o.nodes)
    if (!placed.contains(n.name)) lonely.push_back(n.name);
  if (!lonely.empty()) {
    notes.push_back(fmt::format("{} node(s) are in no HyperNode ({}); they sit directly under the root", lonely.size(), NameList(lonely)));
  }
  for (auto& note : notes) g.AddNote(std::move(note));
  return std::move(g).Build();
}

}  // namespace tidal::topo::k8s
