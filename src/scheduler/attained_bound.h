#pragma once

#include <cstdint>
#include <limits>
#include <set>
#include <utility>
#include <vector>

namespace tidal {

// The most GPU-seconds any running job has attained by a given time, read in
// a few steps rather than by a scan of the running jobs.
//
// A job that has attained `a` GPU-seconds before a run started at `s` on `g`
// GPUs has attained a + (t - s) * g by time t = (a - s * g) + t * g. Per GPU
// count the jobs differ only in a - s * g, so the most is, over the GPU
// counts held (a handful: 1, 2, 4, 8, ...), the largest such key plus t * g.
// The tenant queue's victim search asks it whether any running job is in a
// higher LAS queue than the waiting one before it scans them all.
class AttainedBound {
 public:
  static constexpr int64_t kNone = std::numeric_limits<int64_t>::min();

  void Add(int64_t attained_gpu_s, int64_t start_s, int32_t gpus);
  // Removes one job added with the same three values (it must be there).
  void Remove(int64_t attained_gpu_s, int64_t start_s, int32_t gpus);
  // The most a job held here has attained by `now` (no job: kNone).
  int64_t MaxAt(int64_t now) const;
  bool empty() const { return by_gpus_.empty(); }

 private:
  std::vector<std::pair<int32_t, std::multiset<int64_t>>> by_gpus_;  // GPU count -> keys a - s * g
};

}  // namespace tidal
