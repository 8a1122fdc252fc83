#include "framework/fragmentation.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace tidal {

int64_t NodeFreeState::TotalGpuLeft() const {
  int64_t t = 0;
  for (int i = 0; i < gpu_count; ++i) t += gpu_left[static_cast<size_t>(i)];
  return t;
}

NodeFreeState NodeFreeState::FromCluster(const ClusterState& c, NodeId n) {
  NodeFreeState s;
  s.cpu_left = c.cpu_free(n);
  s.model = c.gpu_model(n);
  auto free = c.gpu_free(n);
  s.gpu_count = static_cast<int32_t>(std::min<size_t>(free.size(), kMaxGpus));
  std::copy_n(free.begin(), s.gpu_count, s.gpu_left.begin());
  return s;
}

NodeFreeState Subtract(const NodeFreeState& s, int64_t cpu, std::span<const int32_t> take) {
  NodeFreeState out = s;
  out.cpu_left -= cpu;
  for (size_t i = 0; i < take.size() && i < static_cast<size_t>(s.gpu_count); ++i) out.gpu_left[i] -= take[i];
  return out;
}

Result<std::vector<TypicalPod>> BuildTypicalPods(const std::vector<Job>& jobs,
                                                 const GpuModelRegistry& models,
                                                 TypicalPodOptions options) {
  // Shape key in FGD's PodResource order: MilliCpu, MilliGpu, GpuNumber, GpuType.
  using Shape = std::tuple<int64_t, int32_t, int32_t, std::string>;
  std::map<Shape, int64_t> counts;
  int64_t total = 0;
  for (const Job& j : jobs) {
    if (!options.include_cpu_pods && j.num_gpu == 0) continue;
    std::string spec;
    for (const auto& m : j.gpu_spec) spec += (spec.empty() ? "" : "|") + m;
    ++counts[{j.cpu_milli, j.gpu_milli, j.num_gpu, spec}];
    ++total;
  }
  if (total == 0) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "cannot derive typical pods from an empty workload; give a pod list with pods");
  }
  std::vector<std::pair<Shape, int64_t>> sorted(counts.begin(), counts.end());
  // Most frequent first; among equal counts the "larger" shape first (FGD sorts
  // ascending by (count, shape) and reverses).
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    if (a.second != b.second) return a.second > b.second;
    return a.first > b.first;
  });
  const double expected = options.popularity_threshold * static_cast<double>(total);
  double cum = 0;
  size_t take = 0;
  while (cum < expected && take < sorted.size()) cum += static_cast<double>(sorted[take++].second);
  std::vector<TypicalPod> out;
  out.reserve(take);
  for (size_t i = 0; i < take; ++i) {
    const auto& [shape, count] = sorted[i];
    TypicalPod t;
    std::tie(t.cpu_milli, t.gpu_milli, t.num_gpu, t.gpu_spec) = shape;
    if (!t.gpu_spec.empty()) {
      size_t start = 0;
      while (start <= t.gpu_spec.size()) {
        size_t bar = t.gpu_spec.find('|', start);
        if (bar == std::string::npos) bar = t.gpu_spec.size();
        // A model no node has can never be satisfied; it stays in the spec
        // (so the pod reads as "no access" everywhere) rather than vanishing.
        if (bar > start) t.resolved.allowed.push_back(models.Find(t.gpu_spec.substr(start, bar - start)));
        start = bar + 1;
      }
    }
    t.popularity = static_cast<double>(count) / cum;
    out.push_back(std::move(t));
  }
  return out;
}

FragmentationModel::FragmentationModel(std::vector<TypicalPod> typical) : typical_(std::move(typical)) {}

size_t FragmentationModel::KeyHash::operator()(const Key& k) const {
  uint64_t h = static_cast<uint64_t>(k.cpu_left) * 0x9E3779B97F4A7C15ULL ^ static_cast<uint64_t>(k.model_and_count);
  for (int16_t v : k.sorted) h = (h ^ static_cast<uint16_t>(v)) * 0x100000001B3ULL;
  return static_cast<size_t>(h ^ (h >> 29));
}

double FragmentationModel::NodeFragMilli(const NodeFreeState& s) {
  Key k{s.cpu_left, (int32_t{s.model} << 16) | s.gpu_count, {}};
  for (int i = 0; i < s.gpu_count; ++i) k.sorted[static_cast<size_t>(i)] = static_cast<int16_t>(s.gpu_left[static_cast<size_t>(i)]);
  std::sort(k.sorted.begin(), k.sorted.begin() + s.gpu_count, std::greater<>());
  if (auto it = memo_.find(k); it != memo_.end()) return it->second;
  const double v = Compute(s);
  memo_.emplace(k, v);
  return v;
}

double FragmentationModel::Compute(const NodeFreeState& s) const {
  const int64_t total = s.TotalGpuLeft();
  double frag = 0;
  for (const TypicalPod& t : typical_) {
    if (t.gpu_milli == 0) {  // a CPU pod cannot use any idle GPU
      frag += t.popularity * static_cast<double>(total);
      continue;
    }
    // Model constraint: a node without GPUs has no model and matches nothing
    // constrained; an unconstrained pod reaches every node.
    if (!t.resolved.allowed.empty() && (s.model == kNoGpuModel || !t.resolved.Allows(s.model))) {
      frag += t.popularity * static_cast<double>(total);
      continue;
    }
    int fit = 0;
    int64_t below = 0;  // idle milli on devices too small for this pod
    for (int i = 0; i < s.gpu_count; ++i) {
      const int32_t left = s.gpu_left[static_cast<size_t>(i)];
      if (left >= t.gpu_milli) {
        ++fit;
      } else {
        below += left;
      }
    }
    const bool gpu_ok = fit >= t.num_gpu && t.num_gpu > 0;
    const bool cpu_ok = s.cpu_left >= t.cpu_milli;
    if (gpu_ok && cpu_ok) {
      frag += t.popularity * static_cast<double>(below);  // only the too-small devices
    } else {
      frag += t.popularity * static_cast<double>(total);
    }
  }
  return frag;
}

}  // namespace tidal
