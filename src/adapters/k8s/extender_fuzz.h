// The body of the extender fuzz target (extender_fuzz.cc, libFuzzer), shared
// with extender_wire_test, which runs it over mutated upstream fixtures under
// g++ in CI. One input is tried as every body kube-scheduler sends or reads
// (the eight extender types), as a Pod and a NodeList for tidal's readers,
// and as a watch stream from the API server.
// Checks: nothing crashes; every refusal has a message; what parses encodes
// to bytes that parse back to the same encoding (Go's encoder is a fixpoint).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "adapters/k8s/extender_wire.h"
#include "adapters/k8s/kube_client.h"
#include "adapters/k8s/objects.h"

namespace tidal::k8s {

inline void FuzzCheck(bool ok, const char* what, std::string_view input) {
  if (ok) return;
  std::fprintf(stderr, "extender fuzz: %s fails for input of %zu bytes: '%.*s'\n", what, input.size(),
               static_cast<int>(input.size() > 400 ? 400 : input.size()), input.data());
  std::abort();
}

template <typename T>
int FuzzOne(std::string_view input, Result<T> (*parse)(std::string_view)) {
  Result<T> once = parse(input);
  if (!once) {
    FuzzCheck(!once.error().message.empty(), "refusals have a message", input);
    return 0;
  }
  const std::string bytes = Encode(*once);
  Result<T> twice = parse(bytes);
  FuzzCheck(twice.has_value(), "an encoding parses", input);
  FuzzCheck(Encode(*twice) == bytes, "an encoding parses back to itself", input);
  return 1;
}

inline Result<ExtenderArgs> ParseArgs(std::string_view s) { return ParseExtenderArgs(s); }

// Returns how many of the eight types accepted the input.
inline int FuzzExtender(std::string_view input) {
  int accepted = FuzzOne(input, &ParseArgs) + FuzzOne(input, &ParseExtenderFilterResult) + FuzzOne(input, &ParseHostPriority) +
                 FuzzOne(input, &ParseHostPriorityList) + FuzzOne(input, &ParseExtenderBindingArgs) +
                 FuzzOne(input, &ParseExtenderBindingResult) + FuzzOne(input, &ParseExtenderPreemptionArgs) +
                 FuzzOne(input, &ParseExtenderPreemptionResult);
  if (auto args = ParseExtenderArgs(input); args) {
    if (args->pod) {
      auto pod = ReadPod(*args->pod);
      FuzzCheck(pod.has_value() || !pod.error().message.empty(), "pod refusals have a message", input);
      if (pod) FuzzCheck(pod->gpus >= 0 && pod->cpu_milli >= 0 && pod->memory_mib >= 0 && pod->gang_size >= 1, "pod requests in range", input);
    }
    if (args->nodes) {
      auto names = NodeListNames(*args->nodes);
      auto nodes = ImportNodes(*args->nodes, "fuzz");
      FuzzCheck(nodes.has_value() || !nodes.error().message.empty(), "node list refusals have a message", input);
      if (nodes && names) FuzzCheck(nodes->nodes.size() == names->size(), "every node imported", input);
    }
  }
  WatchDecoder d;
  bool stop = false;
  Status s = d.Feed(input, [](const WatchEvent& e) { return !e.type.empty() || e.object.is_object(); }, &stop);
  FuzzCheck(s.has_value() || !s.error().message.empty(), "watch refusals have a message", input);
  return accepted;
}

}  // namespace tidal::k8s
