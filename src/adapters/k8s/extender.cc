#include "adapters/k8s/extender.h"

#include <set>

#include <fmt/format.h>

namespace tidal::k8s {

Result<std::vector<std::string>> Candidates(const ExtenderArgs& args) {
  if (args.node_names) return *args.node_names;
  if (args.nodes) return NodeListNames(*args.nodes);
  return std::vector<std::string>{};
}

ExtenderFilterResult Extender::Filter(const ExtenderArgs& args, int64_t now_s) {
  ExtenderFilterResult r;
  if (!args.pod) {
    r.error = "tidal: the filter request has no Pod";
    return r;
  }
  Result<PodInfo> pod = ReadPod(*args.pod);
  if (!pod) {
    r.error = fmt::format("tidal: {}", pod.error().message);
    return r;
  }
  Result<std::vector<std::string>> candidates = Candidates(args);
  if (!candidates) {
    r.error = fmt::format("tidal: {}", candidates.error().message);
    return r;
  }
  const PodScheduler::Decision d = core_.Decide(*pod, *candidates, now_s);
  const std::string chosen = d.node ? core_.scheduler().cluster().node_name(*d.node) : "";
  std::set<std::string> pass;
  FailedNodesMap failed, unresolvable;
  for (const std::string& n : *candidates) {
    if (d.passthrough || n == chosen) {
      pass.insert(n);
    } else if (d.unresolvable) {
      unresolvable[n] = d.why;
    } else {
      failed[n] = d.why;
    }
  }
  if (args.node_names) {
    r.node_names.emplace();
    for (const std::string& n : *candidates) {
      if (pass.contains(n)) r.node_names->push_back(n);
    }
  } else if (args.nodes) {
    ojson list = *args.nodes;
    auto items = list.find("items");
    if (items != list.end() && items->is_array()) {
      ojson kept = ojson::array();
      for (const ojson& item : *items) {
        if (pass.contains(item["metadata"]["name"].get<std::string>())) kept.push_back(item);  // names checked by Candidates
      }
      *items = std::move(kept);
    }
    r.nodes = std::move(list);
  }
  r.failed_nodes = std::move(failed);
  if (!unresolvable.empty()) r.failed_and_unresolvable_nodes = std::move(unresolvable);
  return r;
}

Result<HostPriorityList> Extender::Prioritize(const ExtenderArgs& args, int64_t now_s) {
  if (!args.pod) return MakeError(ErrorCode::kInvalidArgument, "the prioritize request has no Pod");
  TIDAL_ASSIGN_OR_RETURN(PodInfo pod, ReadPod(*args.pod));
  TIDAL_ASSIGN_OR_RETURN(std::vector<std::string> candidates, Candidates(args));
  const PodScheduler::Decision d = core_.Decide(pod, candidates, now_s);
  const std::string chosen = d.node ? core_.scheduler().cluster().node_name(*d.node) : "";
  std::vector<HostPriority> out;
  for (const std::string& n : candidates) out.push_back({.host = n, .score = n == chosen ? kMaxExtenderPriority : 0});
  return HostPriorityList(std::move(out));
}

ExtenderBindingResult Extender::Bind(const ExtenderBindingArgs& args, int64_t now_s) {
  const std::string held = core_.SlotOf(args.pod_uid);
  if (held.empty()) {
    return {fmt::format("tidal: no reservation for pod {}/{} (uid {}); tidal's filter verb must run first, or the reservation expired",
                        args.pod_namespace, args.pod_name, args.pod_uid)};
  }
  if (held != args.node) {
    return {fmt::format("tidal: pod {}/{} is reserved on node {}, not {}", args.pod_namespace, args.pod_name, held, args.node)};
  }
  if (core_.IsBound(args.pod_uid)) return {};  // bound already: kube-scheduler retried
  if (Status s = bind_(args); !s) {
    return {fmt::format("tidal: binding pod {}/{} to {}: {}", args.pod_namespace, args.pod_name, args.node, s.error().message)};
  }
  core_.MarkHeldBound(args.pod_uid, args.node, now_s);
  return {};
}

Result<ExtenderPreemptionResult> Extender::Preempt(const ExtenderPreemptionArgs& args, int64_t now_s) {
  if (!args.pod) return MakeError(ErrorCode::kInvalidArgument, "the preempt request has no Pod");
  TIDAL_ASSIGN_OR_RETURN(PodInfo preemptor, ReadPod(*args.pod));
  // The proposal as node -> victim UIDs, whichever form kube-scheduler sent
  // (meta victims with nodeCacheCapable, whole pods without).
  std::map<std::string, MetaVictims> proposal;
  if (args.node_name_to_meta_victims) {
    for (const auto& [node, mv] : *args.node_name_to_meta_victims) proposal[node] = mv.value_or(MetaVictims{});
  } else if (args.node_name_to_victims) {
    for (const auto& [node, v] : *args.node_name_to_victims) {
      MetaVictims mv;
      if (v && v->pods) {
        mv.pods.emplace();
        for (const ojson& p : *v->pods) {
          TIDAL_ASSIGN_OR_RETURN(PodInfo victim, ReadPod(p));
          mv.pods->push_back({victim.uid});
        }
      }
      mv.num_pdb_violations = v ? v->num_pdb_violations : 0;
      proposal[node] = std::move(mv);
    }
  }
  ExtenderPreemptionResult r;
  r.node_name_to_meta_victims.emplace();
  for (auto& [node, mv] : proposal) {
    bool ok = true;
    for (const MetaPod& victim : mv.pods.value_or(std::vector<MetaPod>{})) ok = ok && core_.MayPreempt(preemptor, victim.uid, now_s);
    if (ok) (*r.node_name_to_meta_victims)[node] = std::move(mv);
  }
  return r;
}

}  // namespace tidal::k8s
