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

int64_t StrandedTracker::NodeStranded(const ClusterState& c, NodeId n) const {
  const int64_t idle = c.gpu_milli_free(n);
  if (idle == 0) return 0;
  // The smallest per-device request of any shape that can use this node:
  // every device with at least that much free is usable by someone. The
  // shapes come fewest milli-GPU first, so the first usable one is it.
  int32_t min_milli = kMilliPerGpu + 1;
  for (const Usable& s : by_milli_) {
    const PodRequest& pod = *s.pod;
    bool usable = c.cpu_free(n) >= pod.cpu_milli() && c.memory_free(n) >= pod.memory_mib() && devices::GpuFits(c, pod, n);
    if (!usable && s.gang_fits) usable = c.free_whole_gpus(n) > 0 && pod.gpu_spec.Allows(c.gpu_model(n));
    if (usable) {
      min_milli = s.gpu_milli;
      break;
    }
  }
  int64_t usable = 0;
  for (int32_t f : c.gpu_free(n))
    if (f >= min_milli) usable += f;
  return idle - usable;
}

int64_t StrandedTracker::Compute(const ClusterState& c, const std::map<JobShape, WaitingShape>& shapes,
                                 uint64_t shapes_version) {
  const auto nodes = static_cast<size_t>(c.num_nodes());
  if (version_.size() != nodes || instance_ != c.instance_id()) {  // another cluster: start over
    version_.assign(nodes, kUnread);
    stranded_.assign(nodes, 0);
    whole_counted_.assign(nodes, 0);
    whole_by_model_.assign(c.models().size() + 1, 0);
    whole_total_ = 0;
    instance_ = c.instance_id();
    have_shapes_version_ = false;
  }
  if (whole_by_model_.size() < c.models().size() + 1) whole_by_model_.resize(c.models().size() + 1, 0);
  // One read of every node's version: the nodes that changed since the last
  // call, and the whole free GPUs per model brought up to date from them (a
  // node's free GPUs move only with its version).
  changed_.clear();
  for (NodeId n = 0; n < c.num_nodes(); ++n) {
    const auto k = static_cast<size_t>(n);
    if (version_[k] == c.version(n)) continue;
    changed_.push_back(n);
    version_[k] = c.version(n);
    const int32_t whole = c.gpu_model(n) == kNoGpuModel ? 0 : c.free_whole_gpus(n);
    if (const int32_t delta = whole - whole_counted_[k]; delta != 0) {
      whole_by_model_[static_cast<size_t>(c.gpu_model(n) + 1)] += delta;
      whole_total_ += delta;
      whole_counted_[k] = whole;
    }
  }
  // Which waiting gangs could be placed now, from whole free GPUs per model.
  gang_fits_.clear();
  for (const auto& [shape, w] : shapes) {
    bool fits = false;
    if (!shape.single_node && shape.num_gpu > 0 && shape.gpu_milli == kMilliPerGpu) {
      int64_t whole = whole_total_;
      if (!w.request.gpu_spec.allowed.empty()) {
        whole = 0;
        for (GpuModelId m : w.request.gpu_spec.allowed) whole += whole_by_model_[static_cast<size_t>(m + 1)];
      }
      fits = whole >= shape.num_gpu;
    }
    gang_fits_.push_back(fits);
  }
  if (!have_shapes_version_ || shapes_version != shapes_version_ || &shapes != shapes_ || gang_fits_ != last_gang_fits_) {
    last_gang_fits_ = gang_fits_;
    shapes_version_ = shapes_version;
    shapes_ = &shapes;
    have_shapes_version_ = true;
    by_milli_.clear();
    size_t i = 0;
    for (const auto& [shape, w] : shapes) {
      const bool fits = gang_fits_[i++] != 0;
      if (shape.num_gpu > 0) by_milli_.push_back({shape.gpu_milli, &w.request, fits});
    }
    std::stable_sort(by_milli_.begin(), by_milli_.end(), [](const Usable& a, const Usable& b) { return a.gpu_milli < b.gpu_milli; });
    total_ = 0;
    for (NodeId n = 0; n < c.num_nodes(); ++n) total_ += stranded_[static_cast<size_t>(n)] = NodeStranded(c, n);
    return total_;
  }
  for (NodeId n : changed_) {
    const int64_t v = NodeStranded(c, n);
    total_ += v - stranded_[static_cast<size_t>(n)];
    stranded_[static_cast<size_t>(n)] = v;
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
