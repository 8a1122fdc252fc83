// The scheduler-extender wire format of kube-scheduler (k8s.io/kube-scheduler
// extender/v1): the bodies kube-scheduler POSTs to an extender's filter,
// prioritize, preempt and bind verbs, and the answers it reads back.
//
// The Go types carry no json tags, so every field is always written, under
// its Go name (PascalCase); nil pointers, slices and maps are null; map keys
// are sorted. Go's decoder matches field names case-insensitively and ignores
// unknown fields: so do these parsers. Pods and Nodes are kept as the JSON
// objects they came as (tidal reads the few fields it needs with
// objects.h), so a filter answer hands kube-scheduler back exactly the node
// objects it sent. Encoding a parsed value gives the bytes Go would write
// (tested byte for byte on upstream's own compatibility strings, in
// ../shared/fixtures/k8s-extender).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/k8s/go_json.h"
#include "common/result.h"

namespace tidal::k8s {

// extender/v1 MaxExtenderPriority: scores are in [0, 10].
inline constexpr int64_t kMaxExtenderPriority = 10;

// ExtenderArgs: the body of filter and prioritize. With nodeCacheCapable the
// scheduler sends NodeNames, else the whole NodeList in Nodes.
struct ExtenderArgs {
  std::optional<ojson> pod;                              // a v1.Pod
  std::optional<ojson> nodes;                            // a v1.NodeList
  std::optional<std::vector<std::string>> node_names;
};

using FailedNodesMap = std::map<std::string, std::string>;

struct ExtenderFilterResult {
  std::optional<ojson> nodes;  // a v1.NodeList
  std::optional<std::vector<std::string>> node_names;
  std::optional<FailedNodesMap> failed_nodes;
  std::optional<FailedNodesMap> failed_and_unresolvable_nodes;
  std::string error;
};

struct HostPriority {
  std::string host;
  int64_t score = 0;
  bool operator==(const HostPriority&) const = default;
};
using HostPriorityList = std::optional<std::vector<HostPriority>>;

struct ExtenderBindingArgs {
  std::string pod_name;
  std::string pod_namespace;
  std::string pod_uid;
  std::string node;
};

struct ExtenderBindingResult {
  std::string error;
};

struct MetaPod {
  std::string uid;
};

struct MetaVictims {
  std::optional<std::vector<MetaPod>> pods;
  int64_t num_pdb_violations = 0;
};

struct Victims {
  std::optional<std::vector<ojson>> pods;  // v1.Pod objects (null entries kept)
  int64_t num_pdb_violations = 0;
};

struct ExtenderPreemptionArgs {
  std::optional<ojson> pod;
  // nullopt map = null; a node mapped to nullopt = null victims.
  std::optional<std::map<std::string, std::optional<Victims>>> node_name_to_victims;
  std::optional<std::map<std::string, std::optional<MetaVictims>>> node_name_to_meta_victims;
};

struct ExtenderPreemptionResult {
  std::optional<std::map<std::string, std::optional<MetaVictims>>> node_name_to_meta_victims;
};

// Parsers: `what` names the body in messages ("filter request"). An error
// names the field (Go's path: Nodes.items[2], NodeNameToMetaVictims["n1"].Pods[0].UID)
// and what was expected.
Result<ExtenderArgs> ParseExtenderArgs(std::string_view body, std::string_view what = "ExtenderArgs");
Result<ExtenderFilterResult> ParseExtenderFilterResult(std::string_view body);
Result<HostPriority> ParseHostPriority(std::string_view body);
Result<HostPriorityList> ParseHostPriorityList(std::string_view body);
Result<ExtenderBindingArgs> ParseExtenderBindingArgs(std::string_view body);
Result<ExtenderBindingResult> ParseExtenderBindingResult(std::string_view body);
Result<ExtenderPreemptionArgs> ParseExtenderPreemptionArgs(std::string_view body);
Result<ExtenderPreemptionResult> ParseExtenderPreemptionResult(std::string_view body);

std::string Encode(const ExtenderArgs& v);
std::string Encode(const ExtenderFilterResult& v);
std::string Encode(const HostPriority& v);
std::string Encode(const HostPriorityList& v);
std::string Encode(const ExtenderBindingArgs& v);
std::string Encode(const ExtenderBindingResult& v);
std::string Encode(const ExtenderPreemptionArgs& v);
std::string Encode(const ExtenderPreemptionResult& v);

// The node names of a NodeList (items[].metadata.name), in order.
Result<std::vector<std::string>> NodeListNames(const ojson& node_list);

}  // namespace tidal::k8s
