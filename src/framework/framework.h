// The scheduling cycle: given a job, run the profile's plugins over the
// cluster and return a placement — without changing the cluster. Binding is
// the scheduler's job, so the same cycle can serve simulation, the daemon and
// "what-if" preemption checks on a copy.
//
// Cycle for a single-node job: Filter every node -> PreScore -> Score ->
// Normalize -> weighted sum -> pick the best node -> DeviceSelect on that node.
// Ties between equally scored nodes go to the node with the lowest priority
// rank when ranks are set (a fixed order packs ties onto the same nodes — the
// FGD simulator's patched kube-scheduler picks the lexicographically smallest
// node name, and names carry a per-run random prefix, so its ranks are a
// seeded random permutation), otherwise uniformly at random (stock
// kube-scheduler's reservoir sampling). A job that may span nodes and does not fit on one
// goes to the profile's GangPlace plugin; a MIG job (Job::mig_profile) to
// its MigPlace plugin.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "framework/plugin.h"

namespace tidal {

struct WeightedScore {
  ScorePlugin* plugin = nullptr;
  int64_t weight = 1;
};

// A named set of plugins. The profile owns them; the lists hold borrowed
// pointers into `owned`, in the order they run.
struct Profile {
  std::string name;
  std::vector<std::unique_ptr<Plugin>> owned;
  std::vector<FilterPlugin*> filters;
  std::vector<WeightedScore> scores;
  DeviceSelectPlugin* device_select = nullptr;
  std::vector<ReservePlugin*> reserves;
  GangPlacePlugin* gang = nullptr;
  MigPlacePlugin* mig = nullptr;  // MIG jobs (Job::mig_profile) go here

  template <typename T, typename... Args>
  T* Own(Args&&... args) {
    auto p = std::make_unique<T>(std::forward<Args>(args)...);
    T* raw = p.get();
    owned.push_back(std::move(p));
    return raw;
  }
  // Removes a plugin from every extension point by name (it stays owned).
  bool Disable(std::string_view plugin_name);
};

// Per-plugin cost, accumulated per cycle (not per call, which would cost more
// than many plugins themselves).
struct PluginTiming {
  std::string name;
  int64_t cycles = 0;
  std::chrono::nanoseconds total{0};
};

class Framework {
 public:
  explicit Framework(Profile profile) : profile_(std::move(profile)) {}

  const Profile& profile() const { return profile_; }
  Profile& mutable_profile() { return profile_; }

  // kUnschedulable: does not fit now; kUnresolvable: can never fit on this
  // cluster as asked (the message says why).
  Result<Placement> Schedule(const CycleContext& ctx, const PodRequest& pod);

  // Lets reserve plugins observe a bind/unbind that the scheduler applied.
  void NotifyBound(const ClusterState& cluster, const Job& job, const Placement& p);
  void NotifyUnbound(const ClusterState& cluster, const Job& job, const Placement& p);

  std::vector<PluginTiming> Timings() const;

  // rank[node] orders nodes for tie-breaking (lower wins); empty = random.
  void SetNodePriority(std::vector<uint32_t> rank) { node_rank_ = std::move(rank); }
  const std::vector<uint32_t>& node_priority() const { return node_rank_; }

 private:
  Result<Placement> ScheduleOnOneNode(const CycleContext& ctx, const PodRequest& pod);
  std::unexpected<Error> NoFit(const CycleContext& ctx, const PodRequest& pod) const;
  Result<Placement> ScheduleMig(const CycleContext& ctx, const PodRequest& pod);
  void Time(const Plugin* p, std::chrono::steady_clock::time_point start);

  Profile profile_;
  // Scratch reused across cycles: no allocation per decision.
  std::vector<NodeId> feasible_;
  std::vector<int64_t> total_, scratch_;
  std::vector<NodeId> best_;
  std::unordered_map<const Plugin*, PluginTiming> timing_;
  std::vector<uint32_t> node_rank_;
};

}  // namespace tidal
