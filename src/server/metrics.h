// Prometheus metrics of the daemon, in the text exposition format (base
// units, _total counters, kube-scheduler and Kueue naming). Counters and
// histograms are updated by the scheduling thread and the HTTP threads;
// gauges are read from the snapshot at scrape time. Checked with
// Prometheus' own parser (promtool check metrics) in server_http_test.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "server/snapshot.h"

namespace tidal::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}
  void Observe(double v);
  // The exposition lines of `name` (with `labels`, "" or `a="b"`).
  void Render(std::string& out, const std::string& name) const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics {
 public:
  Metrics();
  // Schedule attempts (see docs/server.md for what counts as one).
  std::atomic<int64_t> scheduled{0}, unschedulable{0}, errors{0};
  std::atomic<int64_t> preempted_reclaim{0}, preempted_priority{0}, preempted_spot{0};
  std::atomic<int64_t> submitted{0}, cancelled{0};
  Histogram cycle_seconds;
  Histogram admission_wait_seconds;
  void CountRequest(const std::string& method, int status);

  // The whole exposition.
  std::string Render(const Snapshot& s, const std::vector<Price>& prices, int64_t reconciled) const;

 private:
  // Requests by method (GET, POST, DELETE, other) and status (100..599):
  // lock-free counters, since every request counts itself.
  static constexpr int kMethods = 4, kStatuses = 500;
  std::array<std::atomic<int64_t>, kMethods * kStatuses> requests_{};
};

// A label value escaped for the exposition format.
std::string EscapeLabel(const std::string& v);

}  // namespace tidal::server
