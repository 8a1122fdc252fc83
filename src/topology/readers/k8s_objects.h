// Internal to the Kubernetes reader (k8s_labels.cc): the input shapes it
// accepts, reduced to the few fields topology needs. Parsing (k8s_objects.cc)
// is kept apart from interpretation (labels -> levels, HyperNodes -> tree) so
// every input shape feeds the same checks.
//
// Shapes: `kubectl get nodes -o json|yaml` (kind NodeList or List), single
// Node objects, one node's labels as a bare JSON/YAML mapping (`kubectl get
// node N -o json | jq .metadata.labels`), `kubectl get nodes --show-labels`
// text, and multi-document YAML (or concatenated JSON) streams mixing Node,
// HyperNode (topology.volcano.sh) and Topology (kueue.x-k8s.io, kai.scheduler)
// objects, which is what tidal's own writers emit.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "topology/topology.h"

namespace tidal::topo::k8s {

struct Node {
  std::string name;
  std::map<std::string, std::string> labels;  // sorted: every derived order is deterministic
  // status.capacity["nvidia.com/gpu"] of a full Node object. has_capacity: the
  // object had status.capacity at all (then a missing GPU entry means 0 GPUs).
  std::optional<int64_t> capacity_gpus;
  bool has_capacity = false;
  std::string where;  // "file:line" or "file: items[i]", for messages
};

struct HyperNodeMember {
  enum class Kind { kExact, kRegex, kLabels };
  bool hypernode = false;  // type HyperNode (else Node)
  Kind kind = Kind::kExact;
  std::string value;  // the name or the pattern
  std::map<std::string, std::string> match_labels;
};

struct HyperNode {
  std::string name;
  int tier = 0;
  std::vector<HyperNodeMember> members;
  std::map<std::string, std::string> annotations;
  std::string where;
};

// A Kueue or KAI Topology: the node label keys of its levels, outermost first.
struct TopologyObject {
  std::string api_version;
  std::string name;
  std::vector<std::string> levels;
  std::string where;
};

struct Objects {
  std::vector<Node> nodes;
  std::vector<HyperNode> hypernodes;
  std::vector<TopologyObject> topologies;
  std::vector<std::string> notes;
};

// Parses any accepted shape. Errors name the file (and line where the shape
// has lines), the object and the field.
Result<Objects> ParseObjects(std::string_view text, const std::string& source);

// k8s_hypernodes.cc: the switch tree from Volcano HyperNodes. Hosts are their
// Node members and every node in `objects.nodes` (layouts[i] is nodes[i]'s;
// other members get an unknown layout); `notes` are kept.
Result<Topology> BuildFromHyperNodes(const Objects& objects, const std::vector<HostLayout>& layouts, std::vector<std::string> notes,
                                     const std::string& source);

// "a, b, c and 4 more": names in messages and notes.
std::string NameList(const std::vector<std::string>& names, size_t n = 5);

}  // namespace tidal::topo::k8s
