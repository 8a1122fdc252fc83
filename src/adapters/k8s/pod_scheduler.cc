#include "adapters/k8s/pod_scheduler.h"

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

std::unique_ptr<Job> UnitJob(const PodInfo& pod, JobId id, int32_t pods, int64_t now_s) {
  auto job = std::make_unique<Job>();
  job->id = id;
  job->name = pod.UnitKey();
  job->source = fmt::format("pod {}/{}", pod.namespace_, pod.name);
  job->cpu_milli = pod.cpu_milli * pods;
  job->memory_mib = pod.memory_mib * pods;
  job->num_gpu = pod.gpus * pods;
  job->gpu_milli = pod.gpu_milli;
  job->single_node = pods == 1;
  job->group = pod.namespace_;
  job->priority = pod.priority;
  job->submit_time_s = now_s;
  return job;
}

}  // namespace

PodScheduler::PodScheduler(Scheduler scheduler, int64_t reservation_ttl_s) : scheduler_(std::move(scheduler)), ttl_s_(reservation_ttl_s) {}

void PodScheduler::Release(Unit& u) {
  for (const std::string& uid : u.owner) {
    if (!uid.empty()) unit_of_pod_.erase(uid);
  }
  (void)scheduler_.Release(*u.job);
}

void PodScheduler::Expire(int64_t now_s) {
  for (auto it = units_.begin(); it != units_.end();) {
    Unit& u = it->second;
    const bool any_bound = std::any_of(u.bound_at.begin(), u.bound_at.end(), [](int64_t t) { return t >= 0; });
    if (!any_bound && now_s - u.reserved_at > ttl_s_) {
      Release(u);
      it = units_.erase(it);
    } else {
      ++it;
    }
  }
}

Result<Placement> PodScheduler::TryOn(const Job& job, const std::vector<uint8_t>& allowed) {
  // The other nodes are cordoned for this one decision (a cordon keeps what
  // runs there; it only stops new work).
  const ClusterState& c = scheduler_.cluster();
  std::vector<NodeId> masked;
  for (NodeId n = 0; n < c.num_nodes(); ++n) {
    if (!allowed[static_cast<size_t>(n)] && !c.cordoned(n) && scheduler_.Cordon(n)) masked.push_back(n);
  }
  Result<Placement> placed = scheduler_.TrySchedule(job);
  for (NodeId n : masked) (void)scheduler_.Uncordon(n);
  return placed;
}

Result<PodScheduler::Unit*> PodScheduler::AddUnit(std::string key, const PodInfo& pod, std::unique_ptr<Job> job, Placement placement,
                                                  std::vector<NodeId> slots, int64_t now_s) {
  TIDAL_RETURN_IF_ERROR(scheduler_.Bind(*job, std::move(placement)));
  Unit u{.key = std::move(key),
         .job = std::move(job),
         .gpus_per_pod = pod.gpus,
         .tier = pod.tier,
         .priority = pod.priority,
         .min_runtime_s = pod.min_runtime_s,
         .reserved_at = now_s,
         .slots = std::move(slots)};
  u.owner.assign(u.slots.size(), "");
  u.bound_at.assign(u.slots.size(), -1);
  auto [it, inserted] = units_.emplace(u.key, std::move(u));
  return &it->second;
}

Result<PodScheduler::Unit*> PodScheduler::Place(const PodInfo& pod, const std::vector<std::string>& candidates, int64_t now_s) {
  const ClusterState& c = scheduler_.cluster();
  std::unique_ptr<Job> job = UnitJob(pod, next_job_++, pod.gang_size, now_s);
  std::vector<uint8_t> offered(static_cast<size_t>(c.num_nodes()), 0);
  for (const std::string& name : candidates) {
    if (auto n = c.FindNode(name)) offered[static_cast<size_t>(*n)] = 1;
  }
  scheduler_.set_now(now_s);
  Result<Placement> placed = TryOn(*job, offered);
  if (!placed) return std::unexpected(placed.error());

  // One slot per pod: every node's share must be whole pods.
  std::vector<NodeId> slots;
  for (const NodeAssignment& a : placed->assignments) {
    const auto g = static_cast<int32_t>(a.gpus.size());
    if (g % pod.gpus != 0) {
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
  return AddUnit(pod.UnitKey(), pod, std::move(job), std::move(*placed), std::move(slots), now_s);
}

PodScheduler::Decision PodScheduler::Decide(const PodInfo& pod, const std::vector<std::string>& candidates, int64_t now_s) {
  if (pod.gpus == 0) return {.passthrough = true};
  Expire(now_s);
  const ClusterState& c = scheduler_.cluster();
  Unit* u = nullptr;
  if (auto held = unit_of_pod_.find(pod.uid); held != unit_of_pod_.end()) {
    u = &units_.at(held->second);
  } else if (auto it = units_.find(pod.UnitKey()); it != units_.end()) {
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
      return {.unresolvable = placed.error().code == ErrorCode::kUnresolvable, .why = fmt::format("tidal: {}", placed.error().message)};
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

Status PodScheduler::MarkBound(const PodInfo& pod, const std::string& node, int64_t now_s) {
  if (pod.gpus == 0) return Ok();
  const ClusterState& c = scheduler_.cluster();
  const std::optional<NodeId> n = c.FindNode(node);
  if (!n) return MakeError(ErrorCode::kNotFound, "pod {}/{} is bound to node '{}', which tidal does not know; restart tidal with the current node list", pod.namespace_, pod.name, node);
  if (MarkHeldBound(pod.uid, node, now_s)) return Ok();
  // Bound elsewhere than tidal held (someone bound it by hand): the API
  // server is the truth; take the pod where it runs.
  Forget(pod.uid);
  // A pod of a unit with a free slot on that node takes it.
  if (auto it = units_.find(pod.UnitKey()); it != units_.end() && it->second.gpus_per_pod == pod.gpus) {
    Unit& u = it->second;
    for (size_t i = 0; i < u.owner.size(); ++i) {
      if (u.owner[i].empty() && u.slots[i] == *n) {
        u.owner[i] = pod.uid;
        u.bound_at[i] = now_s;
        unit_of_pod_[pod.uid] = u.key;
        return Ok();
      }
    }
  }
  // Adopt it alone where it runs.
  PodInfo alone = pod;
  alone.gang.clear();
  alone.gang_size = 1;
  if (units_.contains(alone.UnitKey())) return Ok();
  std::vector<uint8_t> only(static_cast<size_t>(c.num_nodes()), 0);
  only[static_cast<size_t>(*n)] = 1;
  const bool was_cordoned = c.cordoned(*n);
  if (was_cordoned) (void)scheduler_.Uncordon(*n);  // it runs there whatever the cordon says
  std::unique_ptr<Job> job = UnitJob(alone, next_job_++, 1, now_s);
  Result<Placement> placed = TryOn(*job, only);
  if (was_cordoned) (void)scheduler_.Cordon(*n);
  if (!placed) {
    return MakeError(ErrorCode::kFailedPrecondition, "pod {}/{} runs on {}, where tidal sees no room for it ({}); tidal's view of {} is behind",
                     pod.namespace_, pod.name, node, placed.error().message, node);
  }
  TIDAL_ASSIGN_OR_RETURN(Unit * u, AddUnit(alone.UnitKey(), pod, std::move(job), std::move(*placed), {*n}, now_s));
  u->owner = {pod.uid};
  u->bound_at = {now_s};
  unit_of_pod_[pod.uid] = u->key;
  return Ok();
}

bool PodScheduler::MarkHeldBound(const std::string& uid, const std::string& node, int64_t now_s) {
  auto held = unit_of_pod_.find(uid);
  if (held == unit_of_pod_.end()) return false;
  Unit& u = units_.at(held->second);
  for (size_t i = 0; i < u.owner.size(); ++i) {
    if (u.owner[i] == uid && scheduler_.cluster().node_name(u.slots[i]) == node) {
      if (u.bound_at[i] < 0) u.bound_at[i] = now_s;
      return true;
    }
  }
  return false;
}

void PodScheduler::Forget(const std::string& uid) {
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
  if (std::all_of(u->second.owner.begin(), u->second.owner.end(), [](const std::string& o) { return o.empty(); })) {
    Release(u->second);
    units_.erase(u);
  }
}

const PodScheduler::Unit* PodScheduler::UnitOf(const std::string& uid, size_t* slot) const {
  auto it = unit_of_pod_.find(uid);
  if (it == unit_of_pod_.end()) return nullptr;
  const Unit& u = units_.at(it->second);
  for (size_t i = 0; i < u.owner.size(); ++i) {
    if (u.owner[i] == uid) {
      *slot = i;
      return &u;
    }
  }
  return nullptr;
}

bool PodScheduler::MayPreempt(const PodInfo& preemptor, const std::string& victim_uid, int64_t now_s) const {
  size_t slot = 0;
  const Unit* u = UnitOf(victim_uid, &slot);
  if (u == nullptr) return true;  // not a pod tidal placed: kube-scheduler's judgement stands
  const int64_t bound = u->bound_at[slot];
  return preemptor.tier != "spot" && u->tier != "guaranteed" && u->priority < preemptor.priority &&
         !(bound >= 0 && now_s - bound < u->min_runtime_s);
}

std::string PodScheduler::SlotOf(const std::string& uid) const {
  size_t slot = 0;
  const Unit* u = UnitOf(uid, &slot);
  return u == nullptr ? "" : scheduler_.cluster().node_name(u->slots[slot]);
}

bool PodScheduler::IsBound(const std::string& uid) const {
  size_t slot = 0;
  const Unit* u = UnitOf(uid, &slot);
  return u != nullptr && u->bound_at[slot] >= 0;
}

Status PodScheduler::Cordon(const std::string& node) {
  auto n = scheduler_.cluster().FindNode(node);
  if (!n) return MakeError(ErrorCode::kNotFound, "no node '{}'", node);
  if (scheduler_.cluster().cordoned(*n)) return Ok();
  return scheduler_.Cordon(*n);
}

Status PodScheduler::Uncordon(const std::string& node) {
  auto n = scheduler_.cluster().FindNode(node);
  if (!n) return MakeError(ErrorCode::kNotFound, "no node '{}'", node);
  if (!scheduler_.cluster().cordoned(*n)) return Ok();
  return scheduler_.Uncordon(*n);
}

}  // namespace tidal::k8s
