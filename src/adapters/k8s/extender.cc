#include "adapters/k8s/extender.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace tidal::k8s {
namespace {

std::string NodeNames(const ClusterState& c, const std::vector<NodeId>& nodes) {
  std::set<std::string> names;
  for (NodeId n : nodes) names.insert(c.node_name(n));
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

Result<std::vector<std::string>> Candidates(const ExtenderArgs& args) {
  if (args.node_names) return *args.node_names;
  if (args.nodes) return NodeListNames(*args.nodes);
  return std::vector<std::string>{};
}

Extender::Extender(Scheduler scheduler, ExtenderOptions options, BindFn bind)
    : scheduler_(std::move(scheduler)), options_(options), bind_(std::move(bind)) {}

void Extender::Release(Unit& u) {
  for (const std::string& uid : u.owner) {
    if (!uid.empty()) unit_of_pod_.erase(uid);
  }
  (void)scheduler_.Release(*u.job);
}

void Extender::Expire(int64_t now_s) {
  for (auto it = units_.begin(); it != units_.end();) {
    Unit& u = it->second;
    const bool any_bound = std::any_of(u.bound_at.begin(), u.bound_at.end(), [](int64_t t) { return t >= 0; });
    if (!any_bound && now_s - u.reserved_at > options_.reservation_ttl_s) {
      Release(u);
      it = units_.erase(it);
    } else {
      ++it;
    }
  }
}

Result<Extender::Unit*> Extender::Place(const PodInfo& pod, const std::vector<std::string>& candidates, int64_t now_s) {
  const ClusterState& c = scheduler_.cluster();
  auto job = std::make_unique<Job>();
  job->id = next_job_++;
  job->name = pod.UnitKey();
  job->source = fmt::format("pod {}/{}", pod.namespace_, pod.name);
  job->cpu_milli = pod.cpu_milli * pod.gang_size;
  job->memory_mib = pod.memory_mib * pod.gang_size;
  job->num_gpu = pod.gpus * pod.gang_size;
  job->gpu_milli = pod.gpu_milli;
  job->single_node = pod.gang_size == 1;
  job->group = pod.namespace_;
  job->priority = pod.priority;
  job->submit_time_s = now_s;

  // Only the candidates kube-scheduler offers: the others are cordoned for
  // this one decision (a cordon holds what runs there; it only stops new work).
  std::vector<uint8_t> offered(static_cast<size_t>(c.num_nodes()), 0);
  for (const std::string& name : candidates) {
    if (auto n = c.FindNode(name)) offered[static_cast<size_t>(*n)] = 1;
  }
  std::vector<NodeId> masked;
  for (NodeId n = 0; n < c.num_nodes(); ++n) {
    if (!offered[static_cast<size_t>(n)] && !c.cordoned(n) && scheduler_.Cordon(n)) masked.push_back(n);
  }
  scheduler_.set_now(now_s);
  Result<Placement> placed = scheduler_.TrySchedule(*job);
  for (NodeId n : masked) (void)scheduler_.Uncordon(n);
  if (!placed) return std::unexpected(placed.error());

  // One slot per pod: every node's share must be whole pods.
  std::vector<NodeId> slots;
  for (const NodeAssignment& a : placed->assignments) {
    const int32_t g = static_cast<int32_t>(a.gpus.size());
    if (pod.gpus == 0 || g % pod.gpus != 0) {
      return MakeError(ErrorCode::kUnschedulable,
                       "tidal's placement puts {} GPUs of gang {} on node {}, not a whole number of pods of {} GPUs; waiting for "
                       "whole nodes",
                       g, pod.UnitKey(), c.node_name(a.node), pod.gpus);
    }
    for (int32_t k = 0; k < g / pod.gpus; ++k) slots.push_back(a.node);
  }
  if (static_cast<int32_t>(slots.size()) != pod.gang_size) {
    return MakeError(ErrorCode::kInternal, "placement of {} has {} pod slots for {} pods", pod.UnitKey(), slots.size(), pod.gang_size);
  }
  TIDAL_RETURN_IF_ERROR(scheduler_.Bind(*job, std::move(*placed)));
  Unit u;
  u.key = pod.UnitKey();
  u.job = std::move(job);
  u.gpus_per_pod = pod.gpus;
  u.tier = pod.tier;
  u.priority = pod.priority;
  u.min_runtime_s = pod.min_runtime_s;
  u.reserved_at = now_s;
  u.slots = std::move(slots);
  u.owner.assign(u.slots.size(), "");
  u.bound_at.assign(u.slots.size(), -1);
  auto [it, inserted] = units_.emplace(u.key, std::move(u));
  return &it->second;
}

Extender::Decision Extender::Decide(const PodInfo& pod, const std::vector<std::string>& candidates, int64_t now_s) {
  if (pod.gpus == 0) return {.passthrough = true};
  Expire(now_s);
  const ClusterState& c = scheduler_.cluster();
  Unit* u = nullptr;
  if (auto it = units_.find(pod.UnitKey()); it != units_.end()) {
    u = &it->second;
    if (u->gpus_per_pod != pod.gpus || static_cast<int32_t>(u->slots.size()) != pod.gang_size) {
      return {.unresolvable = true,
              .why = fmt::format("pod {}/{} asks {} GPUs in a gang of {}, but gang {} was placed as {} pods of {} GPUs; every pod of a "
                                 "gang must ask the same",
                                 pod.namespace_, pod.name, pod.gpus, pod.gang_size, pod.UnitKey(), u->slots.size(), u->gpus_per_pod)};
    }
  } else {
    Result<Unit*> placed = Place(pod, candidates, now_s);
    if (!placed) {
      const bool never = placed.error().code == ErrorCode::kUnresolvable;
      return {.unresolvable = never, .why = fmt::format("tidal: {}", placed.error().message)};
    }
    u = *placed;
  }
  // The pod's slot: the one it holds, else a free one on an offered node,
  // else any free one.
  const std::set<std::string> offered(candidates.begin(), candidates.end());
  int slot = -1;
  for (size_t i = 0; i < u->owner.size(); ++i) {
    if (u->owner[i] == pod.uid) slot = static_cast<int>(i);
  }
  for (int pass = 0; pass < 2 && slot < 0; ++pass) {
    for (size_t i = 0; i < u->owner.size() && slot < 0; ++i) {
      if (u->owner[i].empty() && (pass == 1 || offered.contains(c.node_name(u->slots[i])))) slot = static_cast<int>(i);
    }
  }
  if (slot < 0) {
    return {.unresolvable = true,
            .why = fmt::format("gang {} has {} pods already (tidal.io/gang-size); this one is extra", pod.UnitKey(), u->slots.size())};
  }
  u->owner[static_cast<size_t>(slot)] = pod.uid;
  unit_of_pod_[pod.uid] = u->key;
  const NodeId node = u->slots[static_cast<size_t>(slot)];
  if (!offered.contains(c.node_name(node))) {
    return {.why = fmt::format("tidal holds node {} for this pod (unit {} on {}), which kube-scheduler's own filters ruled out",
                               c.node_name(node), u->key, NodeNames(c, u->slots))};
  }
  return {.node = node, .why = fmt::format("tidal placed this pod on {} (unit {} on {})", c.node_name(node), u->key, NodeNames(c, u->slots))};
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
  const Decision d = Decide(*pod, *candidates, now_s);
  std::set<std::string> pass;
  FailedNodesMap failed, unresolvable;
  for (const std::string& n : *candidates) {
    if (d.passthrough || (d.node && scheduler_.cluster().node_name(*d.node) == n)) {
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
    ojson kept = ojson::array();
    auto items = list.find("items");
    if (items != list.end() && items->is_array()) {
      for (const ojson& item : *items) {
        const std::string name = item["metadata"]["name"].get<std::string>();  // checked by Candidates
        if (pass.contains(name)) kept.push_back(item);
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
  const Decision d = Decide(pod, candidates, now_s);
  std::vector<HostPriority> out;
  for (const std::string& n : candidates) {
    const bool chosen = d.node && scheduler_.cluster().node_name(*d.node) == n;
    out.push_back({.host = n, .score = chosen ? kMaxExtenderPriority : 0});
  }
  return HostPriorityList(std::move(out));
}

ExtenderBindingResult Extender::Bind(const ExtenderBindingArgs& args, int64_t now_s) {
  auto it = unit_of_pod_.find(args.pod_uid);
  if (it == unit_of_pod_.end()) {
    return {fmt::format("tidal: no reservation for pod {}/{} (uid {}); tidal's filter verb must run first, or the reservation expired",
                        args.pod_namespace, args.pod_name, args.pod_uid)};
  }
  Unit& u = units_.at(it->second);
  size_t slot = 0;
  while (slot < u.owner.size() && u.owner[slot] != args.pod_uid) ++slot;
  const std::string& held = scheduler_.cluster().node_name(u.slots[slot]);
  if (held != args.node) {
    return {fmt::format("tidal: pod {}/{} is reserved on node {}, not {}", args.pod_namespace, args.pod_name, held, args.node)};
  }
  if (u.bound_at[slot] >= 0) return {};  // bound already: kube-scheduler retried
  if (Status s = bind_(args); !s) return {fmt::format("tidal: binding pod {}/{} to {}: {}", args.pod_namespace, args.pod_name, args.node, s.error().message)};
  u.bound_at[slot] = now_s;
  return {};
}

Result<ExtenderPreemptionResult> Extender::Preempt(const ExtenderPreemptionArgs& args, int64_t now_s) {
  if (!args.pod) return MakeError(ErrorCode::kInvalidArgument, "the preempt request has no Pod");
  TIDAL_ASSIGN_OR_RETURN(PodInfo preemptor, ReadPod(*args.pod));
  // The proposal as node -> victim UIDs (whichever form kube-scheduler sent).
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
    for (const MetaPod& victim : mv.pods.value_or(std::vector<MetaPod>{})) {
      auto it = unit_of_pod_.find(victim.uid);
      if (it == unit_of_pod_.end()) continue;  // not a pod tidal placed: kube-scheduler's judgement stands
      const Unit& u = units_.at(it->second);
      size_t slot = 0;
      while (slot < u.owner.size() && u.owner[slot] != victim.uid) ++slot;
      const int64_t bound = u.bound_at[slot];
      if (preemptor.tier == "spot" || u.tier == "guaranteed" || u.priority >= preemptor.priority ||
          (bound >= 0 && now_s - bound < u.min_runtime_s)) {
        ok = false;
        break;
      }
    }
    if (ok) (*r.node_name_to_meta_victims)[node] = std::move(mv);
  }
  return r;
}

void Extender::Forget(const std::string& uid) {
  auto it = unit_of_pod_.find(uid);
  if (it == unit_of_pod_.end()) return;
  auto u = units_.find(it->second);
  unit_of_pod_.erase(it);
  if (u == units_.end()) return;
  for (size_t i = 0; i < u->second.owner.size(); ++i) {
    if (u->second.owner[i] == uid) {
      u->second.owner[i].clear();
      u->second.bound_at[i] = -1;
    }
  }
  const bool empty = std::all_of(u->second.owner.begin(), u->second.owner.end(), [](const std::string& o) { return o.empty(); });
  if (empty) {
    Release(u->second);
    units_.erase(u);
  }
}

std::string Extender::SlotOf(const std::string& uid) const {
  auto it = unit_of_pod_.find(uid);
  if (it == unit_of_pod_.end()) return "";
  const Unit& u = units_.at(it->second);
  for (size_t i = 0; i < u.owner.size(); ++i) {
    if (u.owner[i] == uid) return scheduler_.cluster().node_name(u.slots[i]);
  }
  return "";
}

}  // namespace tidal::k8s
