#include "scheduler/attained_bound.h"

#include <algorithm>

namespace tidal {

void AttainedBound::Add(int64_t attained_gpu_s, int64_t start_s, int32_t gpus) {
  auto it = std::find_if(by_gpus_.begin(), by_gpus_.end(), [&](const auto& x) { return x.first == gpus; });
  if (it == by_gpus_.end()) {
    by_gpus_.emplace_back(gpus, std::multiset<int64_t>{});
    it = by_gpus_.end() - 1;
  }
  it->second.insert(attained_gpu_s - start_s * gpus);
}

void AttainedBound::Remove(int64_t attained_gpu_s, int64_t start_s, int32_t gpus) {
  auto it = std::find_if(by_gpus_.begin(), by_gpus_.end(), [&](const auto& x) { return x.first == gpus; });
  if (it == by_gpus_.end()) return;
  auto key = it->second.find(attained_gpu_s - start_s * gpus);
  if (key == it->second.end()) return;
  it->second.erase(key);
  if (it->second.empty()) by_gpus_.erase(it);
}

int64_t AttainedBound::MaxAt(int64_t now) const {
  int64_t most = kNone;
  for (const auto& [gpus, keys] : by_gpus_) most = std::max(most, *keys.rbegin() + now * gpus);
  return most;
}

}  // namespace tidal
