#include "adapters/k8s/gate_controller.h"

#include <fmt/format.h>

namespace tidal::k8s {
namespace {

constexpr size_t kMaxProblems = 200;

const ojson* Path(const ojson& v, std::initializer_list<const char*> keys) {
  const ojson* cur = &v;
  for (const char* k : keys) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(k);
    if (it == cur->end() || it->is_null()) return nullptr;
    cur = &*it;
  }
  return cur;
}

int GateIndex(const ojson& pod) {
  const ojson* gates = Path(pod, {"spec", "schedulingGates"});
  if (gates == nullptr || !gates->is_array()) return -1;
  for (size_t i = 0; i < gates->size(); ++i) {
    const ojson& g = (*gates)[i];
    if (g.is_object() && g.contains("name") && g["name"] == kAdmissionGate) return static_cast<int>(i);
  }
  return -1;
}

std::string PodPath(const PodInfo& p) { return fmt::format("/api/v1/namespaces/{}/pods/{}", p.namespace_, p.name); }

std::string Phase(const ojson& pod) {
  const ojson* ph = Path(pod, {"status", "phase"});
  return ph != nullptr && ph->is_string() ? ph->get<std::string>() : "";
}

std::string ResourceVersion(const ojson& obj) {
  const ojson* rv = Path(obj, {"metadata", "resourceVersion"});
  return rv != nullptr && rv->is_string() ? rv->get<std::string>() : "";
}

}  // namespace

Result<ojson> AdmitPatch(const ojson& pod, const std::string& node) {
  const int gate = GateIndex(pod);
  if (gate < 0) return MakeError(ErrorCode::kFailedPrecondition, "the pod has no {} gate", kAdmissionGate);
  const ojson field = {{"key", "metadata.name"}, {"operator", "In"}, {"values", ojson::array({node})}};
  const ojson term = {{"matchFields", ojson::array({field})}};
  const ojson required = {{"nodeSelectorTerms", ojson::array({term})}};
  ojson ops = ojson::array();
  const std::string rv = ResourceVersion(pod);
  if (!rv.empty()) ops.push_back({{"op", "test"}, {"path", "/metadata/resourceVersion"}, {"value", rv}});
  const ojson* affinity = Path(pod, {"spec", "affinity"});
  const ojson* node_affinity = affinity != nullptr ? Path(*affinity, {"nodeAffinity"}) : nullptr;
  const ojson* req = node_affinity != nullptr ? Path(*node_affinity, {"requiredDuringSchedulingIgnoredDuringExecution"}) : nullptr;
  const ojson* terms = req != nullptr ? Path(*req, {"nodeSelectorTerms"}) : nullptr;
  if (affinity == nullptr) {
    ops.push_back({{"op", "add"}, {"path", "/spec/affinity"}, {"value", {{"nodeAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution", required}}}}}});
  } else if (node_affinity == nullptr) {
    ops.push_back({{"op", "add"}, {"path", "/spec/affinity/nodeAffinity"}, {"value", {{"requiredDuringSchedulingIgnoredDuringExecution", required}}}});
  } else if (req == nullptr) {
    ops.push_back({{"op", "add"}, {"path", "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution"}, {"value", required}});
  } else if (terms == nullptr || !terms->is_array() || terms->empty()) {
    ops.push_back({{"op", "add"}, {"path", "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms"},
                   {"value", ojson::array({term})}});
  } else {
    // Terms are ORed: the node must be required in every one of them.
    for (size_t i = 0; i < terms->size(); ++i) {
      const std::string base = fmt::format("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/{}", i);
      const ojson* mf = Path((*terms)[i], {"matchFields"});
      if (mf != nullptr && mf->is_array()) {
        ops.push_back({{"op", "add"}, {"path", base + "/matchFields/-"}, {"value", field}});
      } else {
        ops.push_back({{"op", "add"}, {"path", base + "/matchFields"}, {"value", ojson::array({field})}});
      }
    }
  }
  ops.push_back({{"op", "test"}, {"path", fmt::format("/spec/schedulingGates/{}/name", gate)}, {"value", kAdmissionGate}});
  ops.push_back({{"op", "remove"}, {"path", fmt::format("/spec/schedulingGates/{}", gate)}});
  return ops;
}

GateController::GateController(KubeClient& api, PodScheduler& core, std::mutex& mu, std::function<int64_t()> clock)
    : api_(api), core_(core), mu_(mu), clock_(std::move(clock)) {}

void GateController::Problem(std::string message) {
  problems_.push_back(std::move(message));
  if (problems_.size() > kMaxProblems) problems_.erase(problems_.begin());
}

size_t GateController::num_gated() const {
  size_t n = 0;
  for (const auto& [key, pods] : gated_) n += pods.size();
  return n;
}

void GateController::OnPod(std::string_view type, const ojson& pod) {
  auto info = ReadPod(pod);
  if (!info) {
    if (GateIndex(pod) >= 0) Problem(fmt::format("a gated pod tidal cannot read stays gated: {}", info.error().message));
    return;
  }
  const std::string phase = Phase(pod);
  const bool gone = type == "DELETED" || phase == "Succeeded" || phase == "Failed";
  // The gated pods of a unit are keyed by the unit, so drop the pod from
  // wherever it was first.
  for (auto it = gated_.begin(); it != gated_.end();) {
    it->second.erase(info->uid);
    it = it->second.empty() ? gated_.erase(it) : std::next(it);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (gone) {
    core_.Forget(info->uid);
    why_.erase(info->uid);
    return;
  }
  if (GateIndex(pod) >= 0) {
    gated_[info->UnitKey()][info->uid] = pod;
    return;
  }
  why_.erase(info->uid);
  if (!info->node_name.empty()) {
    if (Status s = core_.MarkBound(*info, info->node_name, clock_()); !s) Problem(s.error().message);
  }
}

void GateController::SetWhyPending(const ojson& pod, const std::string& why) {
  auto info = ReadPod(pod);
  if (!info) return;
  if (auto it = why_.find(info->uid); it != why_.end() && it->second == why) return;
  const ojson patch = {{"metadata", {{"annotations", {{std::string(kWhyPendingAnnotation), why}}}}}};
  auto r = api_.Patch(PodPath(*info), patch, "application/merge-patch+json");
  if (!r) {
    Problem(r.error().message);
    return;
  }
  why_[info->uid] = why;
}

int GateController::Admit() {
  int admitted = 0;
  std::vector<std::string> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const ClusterState& c = core_.scheduler().cluster();
    for (NodeId n = 0; n < c.num_nodes(); ++n) all.push_back(c.node_name(n));
  }
  for (auto& [key, pods] : gated_) {
    std::vector<std::pair<PodInfo, const ojson*>> members;
    for (const auto& [uid, pod] : pods) {
      auto info = ReadPod(pod);
      if (info) members.emplace_back(std::move(*info), &pod);
    }
    if (members.empty()) continue;
    const int32_t size = members.front().first.gang_size;
    // A unit some of whose pods hold slots was placed already (a patch of
    // one of its pods failed, or tidal restarted mid-admission): its other
    // pods are admitted to their slots without waiting for the rest.
    bool placed = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& m : members) placed = placed || !core_.SlotOf(m.first.uid).empty();
    }
    if (!placed && static_cast<int32_t>(members.size()) < size) {
      const std::string why = fmt::format("tidal: waiting for the gang's pods: {} of {} exist", members.size(), size);
      for (const auto& m : members) SetWhyPending(*m.second, why);
      continue;
    }
    // All pods present: place the unit (the first Decide places it whole)
    // and give each pod its slot.
    std::vector<std::pair<const ojson*, std::string>> pinned;
    std::string why;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& [info, pod] : members) {
        const PodScheduler::Decision d = core_.Decide(info, all, clock_());
        if (d.passthrough) {
          why = "";  // a gated pod asking no GPU: nothing for tidal to place; admit it anywhere
          pinned.emplace_back(pod, "");
          continue;
        }
        if (!d.node) {
          why = d.why;
          break;
        }
        pinned.emplace_back(pod, core_.scheduler().cluster().node_name(*d.node));
      }
    }
    if (!why.empty()) {
      for (const auto& m : members) SetWhyPending(*m.second, why);
      continue;
    }
    std::vector<std::string> done;
    for (const auto& [pod, node] : pinned) {
      auto info = ReadPod(*pod);
      Result<ojson> patch = node.empty() ? [&]() -> Result<ojson> {
        const int gate = GateIndex(*pod);
        return ojson::array({{{"op", "test"}, {"path", fmt::format("/spec/schedulingGates/{}/name", gate)}, {"value", kAdmissionGate}},
                             {{"op", "remove"}, {"path", fmt::format("/spec/schedulingGates/{}", gate)}}});
      }()
                                         : AdmitPatch(*pod, node);
      if (!patch) {
        Problem(fmt::format("pod {}/{}: {}", info->namespace_, info->name, patch.error().message));
        continue;
      }
      auto r = api_.Patch(PodPath(*info), *patch, "application/json-patch+json");
      if (!r) {
        // Still gated: the next pass (after the watch brings the pod's new
        // version) patches again; its slot is held for it meanwhile.
        Problem(fmt::format("admitting pod {}/{} to {}: {}", info->namespace_, info->name, node, r.error().message));
        continue;
      }
      ++admitted;
      why_.erase(info->uid);
      done.push_back(info->uid);
    }
    for (const std::string& uid : done) pods.erase(uid);  // the watch brings them back ungated
  }
  std::erase_if(gated_, [](const auto& kv) { return kv.second.empty(); });
  return admitted;
}

Status GateController::SyncNodes() {
  TIDAL_ASSIGN_OR_RETURN(ojson nodes, api_.Get("/api/v1/nodes"));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (nodes.contains("items") && nodes["items"].is_array()) {
      for (const ojson& n : nodes["items"]) {
        const ojson* name = Path(n, {"metadata", "name"});
        if (name == nullptr || !name->is_string()) continue;
        const ojson* u = Path(n, {"spec", "unschedulable"});
        const bool cordon = u != nullptr && u->is_boolean() && u->get<bool>();
        Status s = cordon ? core_.Cordon(name->get<std::string>()) : core_.Uncordon(name->get<std::string>());
        // A node that joined after tidal started: said once, not at every poll.
        if (!s && unknown_nodes_.insert(name->get<std::string>()).second) {
          Problem(fmt::format("node {} joined after tidal started; tidal places only on the nodes it started with: restart `tidal k8s "
                              "run` to use it",
                              name->get<std::string>()));
        }
      }
    }
  }
  return Ok();
}

Status GateController::Sync() {
  TIDAL_RETURN_IF_ERROR(SyncNodes());
  TIDAL_ASSIGN_OR_RETURN(ojson list, api_.Get("/api/v1/pods"));
  resource_version_ = ResourceVersion(list);
  gated_.clear();
  if (list.contains("items") && list["items"].is_array()) {
    for (const ojson& pod : list["items"]) OnPod("ADDED", pod);
  }
  Admit();
  return Ok();
}

Status GateController::Run(const std::atomic<bool>& stop, int poll_s) {
  TIDAL_RETURN_IF_ERROR(Sync());
  while (!stop.load()) {
    bool relist = false;
    const std::string path = fmt::format("/api/v1/pods?watch=true&allowWatchBookmarks=true&timeoutSeconds={}&resourceVersion={}", poll_s,
                                         resource_version_);
    Status s = api_.Watch(
        path,
        [&](const WatchEvent& e) {
          if (e.type == "ERROR") {
            relist = true;  // 410 Gone (the version is too old) or another error: start again from a list
            return false;
          }
          if (std::string rv = ResourceVersion(e.object); !rv.empty()) resource_version_ = rv;
          if (e.type != "BOOKMARK") {
            OnPod(e.type, e.object);
            Admit();
          }
          return !stop.load();
        },
        poll_s + 5);
    if (!s) {
      Problem(s.error().message);
      relist = true;
    }
    if (relist && !stop.load()) {
      TIDAL_RETURN_IF_ERROR(Sync());
    } else if (Status n = SyncNodes(); !n) {
      Problem(n.error().message);
    }
    Admit();  // reservations may have expired, capacity freed, nodes come back
  }
  return Ok();
}

}  // namespace tidal::k8s
