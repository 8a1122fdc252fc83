// What API reads see: an immutable picture of the daemon taken after each
// scheduling batch and swapped in whole (readers hold a shared_ptr, so a
// read never blocks a cycle and never sees half a batch).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "market/pricing.h"
#include "workload/job.h"

namespace tidal::server {

struct JobView {
  JobId id = 0;
  std::string name, tenant, source = "api", state = "accepted";
  int32_t gpus = 0, gpu_milli = 1000;
  std::vector<std::string> gpu_model;
  std::string tier;
  int32_t priority = 0;
  int64_t estimated_runtime_s = 0;
  int64_t submitted_at = 0;
  std::optional<int64_t> started_at, ended_at;
  nlohmann::json placement = nlohmann::json::array();  // [{"node", "gpus": [...]}]
  int32_t preemptions = 0;
  bool cancel_requested = false;
  std::string reason;

  nlohmann::json ToJson() const;
  bool live() const { return state == "accepted" || state == "pending" || state == "running"; }
};

struct TenantView {
  std::string name, parent, tier;
  double floor_gpus = 0, in_use_gpus = 0, borrowed_gpus = 0, lent_gpus = 0;
  int64_t pending_jobs = 0, running_jobs = 0;
  std::optional<std::string> balance;  // credits, when the market keeps an account
  nlohmann::json ToJson() const;
};

struct NodeView {
  std::string name, gpu_model;
  int32_t gpus = 0, gpus_free = 0;
  double gpus_allocated = 0;
  std::vector<std::string> domains;  // enclosing switch domains, innermost first
  bool drained = false;              // cordoned by an operator: no new work
  std::string drain_reason;
};

struct DomainView {
  int32_t id = 0, parent = -1;
  std::string name, level;
  int64_t gpus = 0;
  double gpus_allocated = 0;
  int64_t gpus_fragmented = 0;
};

struct Price {
  std::string gpu_model, tier;
  double per_gpu_hour = 0;         // credits (for the metric)
  std::string per_gpu_hour_text;   // exact, six decimals (for the API)
};

struct Snapshot {
  int64_t now = 0;
  double speed = 1;
  uint64_t batches = 0;
  int64_t nodes = 0, gpus = 0;
  double gpus_allocated = 0, allocation_ratio = 0, fragmentation_ratio = 0;
  int64_t pending = 0, running = 0;
  std::vector<JobView> jobs;  // the live ones, the most recently ended and the accepted; newest first (submitted_at, id)
  std::vector<std::string> json;  // jobs[i].ToJson().dump(), made when the job changed (lists send these)
  std::unordered_map<JobId, size_t> index;
  std::map<std::pair<std::string, std::string>, int64_t> pending_by_reason;  // (tenant, reason)
  std::vector<TenantView> tenants;
  std::vector<NodeView> node_views;
  std::vector<std::string> levels;
  std::vector<DomainView> domains;
  std::vector<Price> prices;                        // in force now, by model and tier
  std::vector<market::PriceHistory> price_history;  // every pool's announcements

  const JobView* Find(JobId id) const {
    auto it = index.find(id);
    return it == index.end() ? nullptr : &jobs[it->second];
  }
};

}  // namespace tidal::server
