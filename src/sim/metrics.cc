#include "sim/metrics.h"

#include <algorithm>
#include <cmath>

#include "framework/devices.h"

namespace tidal::sim {

double Percentile(const std::vector<int64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double rank = q / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return static_cast<double>(sorted[lo]) + frac * static_cast<double>(sorted[hi] - sorted[lo]);
}

Summary Summarize(std::vector<int64_t> values) {
  Summary s;
  s.count = static_cast<int64_t>(values.size());
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  // Integer sum: exact and independent of order (seconds of a trace stay far
  // below 2^63 / job count).
  int64_t sum = 0;
  for (int64_t v : values) sum += v;
  s.mean = static_cast<double>(sum) / static_cast<double>(values.size());
  s.p50 = Percentile(values, 50);
  s.p95 = Percentile(values, 95);
  s.p99 = Percentile(values, 99);
  return s;
}

int64_t StrandedTracker::NodeStranded(const ClusterState& c, const std::map<JobShape, WaitingShape>& shapes,
                                      NodeId n) const {
  const int64_t idle = c.gpu_milli_free(n);
  if (idle == 0) return 0;
  // The smallest per-device request of any shape that can use this node:
  // every device with at least that much free is usable by someone.
  int32_t min_milli = kMilliPerGpu + 1;
  size_t i = 0;
  for (const auto& [shape, w] : shapes) {
    const bool gang_fits = gang_fits_[i++] != 0;
    if (shape.num_gpu == 0 || shape.gpu_milli >= min_milli) continue;
    const PodRequest& pod = w.request;
    bool usable = c.cpu_free(n) >= pod.cpu_milli() && c.memory_free(n) >= pod.memory_mib() &&
                  devices::GpuFits(c, pod, n);
    if (!usable && gang_fits) usable = c.free_whole_gpus(n) > 0 && pod.gpu_spec.Allows(c.gpu_model(n));
    if (usable) min_milli = shape.gpu_milli;
  }
  int64_t usable = 0;
  for (int32_t f : c.gpu_free(n))
    if (f >= min_milli) usable += f;
  return idle - usable;
}

int64_t StrandedTracker::Compute(const ClusterState& c, const std::map<JobShape, WaitingShape>& shapes,
                                 uint64_t shapes_version) {
  const auto nodes = static_cast<size_t>(c.num_nodes());
  // Which waiting gangs could be placed now, from whole free GPUs per model.
  whole_by_model_.assign(c.models().size() + 1, 0);
  int64_t whole_total = 0;
  for (NodeId n = 0; n < c.num_nodes(); ++n) {
    if (c.gpu_model(n) == kNoGpuModel) continue;
    whole_by_model_[static_cast<size_t>(c.gpu_model(n))] += c.free_whole_gpus(n);
    whole_total += c.free_whole_gpus(n);
  }
  gang_fits_.clear();
  for (const auto& [shape, w] : shapes) {
    bool fits = false;
    if (!shape.single_node && shape.num_gpu > 0 && shape.gpu_milli == kMilliPerGpu) {
      int64_t whole = whole_total;
      if (!w.request.gpu_spec.allowed.empty()) {
        whole = 0;
        for (GpuModelId m : w.request.gpu_spec.allowed) whole += whole_by_model_[static_cast<size_t>(m)];
      }
      fits = whole >= shape.num_gpu;
    }
    gang_fits_.push_back(fits);
  }
  if (!have_shapes_version_ || shapes_version != shapes_version_ || version_.size() != nodes ||
      gang_fits_ != last_gang_fits_) {
    last_gang_fits_ = gang_fits_;
    version_.assign(nodes, 0);
    stranded_.assign(nodes, 0);
    known_.assign(nodes, 0);
    total_ = 0;
    shapes_version_ = shapes_version;
    have_shapes_version_ = true;
  }
  for (NodeId n = 0; n < c.num_nodes(); ++n) {
    const auto k = static_cast<size_t>(n);
    if (known_[k] && version_[k] == c.version(n)) continue;
    const int64_t v = NodeStranded(c, shapes, n);
    total_ += v - stranded_[k];
    stranded_[k] = v;
    version_[k] = c.version(n);
    known_[k] = 1;
  }
  return total_;
}

StartEstimateError SummarizeStartEstimates(const std::vector<EstimatedStart>& estimates, int64_t sampled,
                                           int64_t started_at_once) {
  StartEstimateError e;
  e.sampled = sampled;
  e.started_at_once = started_at_once;
  e.samples = static_cast<int64_t>(estimates.size());
  if (estimates.empty()) return e;
  std::vector<int64_t> abs;
  double bias = 0;
  int64_t covered = 0;
  for (const EstimatedStart& x : estimates) {
    abs.push_back(std::abs(x.p50_s - x.actual_s));
    bias += static_cast<double>(x.p50_s - x.actual_s);
    covered += x.actual_s <= x.p90_s;
  }
  std::sort(abs.begin(), abs.end());
  const double n = static_cast<double>(estimates.size());
  e.p50 = Percentile(abs, 50);
  e.p90 = Percentile(abs, 90);
  double sum = 0;
  for (int64_t a : abs) sum += static_cast<double>(a);
  e.mean = sum / n;
  e.bias_mean = bias / n;
  e.coverage_p90 = static_cast<double>(covered) / n;
  return e;
}

}  // namespace tidal::sim
