// Set operations on sorted, unique CPU and node lists (internal to isolation).
#pragma once

#include <algorithm>
#include <iterator>
#include <vector>

namespace tidal::isolation {

inline std::vector<int> Union(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

inline std::vector<int> Minus(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

inline std::vector<int> Intersection(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

}  // namespace tidal::isolation
