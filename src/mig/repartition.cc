#include "mig/repartition.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tidal::mig {
namespace {

std::unexpected<Error> Bad(std::string message) { return std::unexpected(Error{ErrorCode::kInvalidArgument, std::move(message)}); }

bool InRange(const Geometry& g, int profile) { return profile >= 0 && profile < static_cast<int>(g.profiles.size()); }

bool ByStart(const Instance& a, const Instance& b) { return a.start != b.start ? a.start < b.start : a.profile < b.profile; }

// What the cache of EnumerateLayouts is keyed on: everything CanAdd reads.
std::string CacheKey(const Geometry& g, DriverCaps caps) {
  std::string key = fmt::format("{}|{}", g.model, caps.allow_4g_with_3g);
  for (const Profile& p : g.profiles)
    key += fmt::format("|{},{},{},{},{},{}", p.name, p.compute, p.memory_slices, p.media, p.max_instances, fmt::join(p.starts, ","));
  return key;
}

// Depth-first over the (start, profile) candidates in ascending order, each
// taken or not, so every layout comes out once and already normalized.
void Extend(const Geometry& g, DriverCaps caps, const std::vector<Instance>& candidates, size_t from, Layout& layout,
            std::vector<Layout>& out) {
  out.push_back(layout);
  for (size_t j = from; j < candidates.size(); ++j) {
    if (!Fits(g, layout, candidates[j], caps)) continue;
    layout.instances.push_back(candidates[j]);
    Extend(g, caps, candidates, j + 1, layout, out);
    layout.instances.pop_back();
  }
}

std::string CountsText(const Geometry& g, std::span<const int> counts) {
  std::vector<std::string> parts;
  for (size_t p = 0; p < counts.size(); ++p)
    if (counts[p] != 0) parts.push_back(fmt::format("{}: {}", p < g.profiles.size() ? g.profiles[p].name : fmt::format("#{}", p), counts[p]));
  return fmt::format("{{{}}}", fmt::join(parts, ", "));
}

bool CostLess(double a, double b) { return a < b - 1e-9 * std::max({1.0, std::abs(a), std::abs(b)}); }

Status CheckOptions(const RepartitionOptions& o) {
  if (!std::isfinite(o.reconfig_s) || o.reconfig_s < 0)
    return Bad(fmt::format("reconfig_s {} must be a finite number of seconds >= 0", o.reconfig_s));
  if (!std::isfinite(o.free_instance_cost) || o.free_instance_cost < 0)
    return Bad(fmt::format("free_instance_cost {} must be finite and >= 0", o.free_instance_cost));
  return {};
}

// The current instances sorted by start, after checking they form a valid
// layout and carry usable costs.
Result<std::vector<InstanceState>> CheckCurrent(const Geometry& g, std::span<const InstanceState> current,
                                                const RepartitionOptions& o) {
  TIDAL_RETURN_IF_ERROR(CheckOptions(o));
  std::vector<InstanceState> sorted(current.begin(), current.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const InstanceState& a, const InstanceState& b) { return ByStart(a.instance, b.instance); });
  Layout layout;
  for (const InstanceState& s : sorted) {
    layout.instances.push_back(s.instance);
    if (s.owner != 0 && (!std::isfinite(s.disruption_cost) || s.disruption_cost < 0))
      return Bad(fmt::format("current instance of owner {}: disruption_cost {} must be finite and >= 0", s.owner, s.disruption_cost));
  }
  if (Status st = ValidateLayout(g, layout, o.caps); !st)
    return Bad(fmt::format("current layout '{}' on {} is not valid: {}", FormatLayout(g, layout), g.model, st.error().message));
  return sorted;
}

bool Contains(const Layout& layout, const Instance& in) {
  return std::find(layout.instances.begin(), layout.instances.end(), in) != layout.instances.end();
}

// The plan from `sorted` (current, by start) to `target` (normalized).
// `vacate`, an instance both have, is destroyed and created again anyway (its
// occupant leaves; the newcomer gets a fresh GPU instance).
RepartitionPlan Diff(const std::vector<InstanceState>& sorted, const Layout& target, const RepartitionOptions& o,
                     std::optional<Instance> vacate = std::nullopt) {
  RepartitionPlan plan;
  plan.target = target;
  Layout now;
  for (const InstanceState& s : sorted) {
    now.instances.push_back(s.instance);
    if (Contains(target, s.instance) && s.instance != vacate) {
      plan.keep.push_back(s.instance);
      continue;
    }
    plan.destroy.push_back(s.instance);
    if (s.owner != 0) {
      plan.disrupted.push_back(s.owner);
      plan.cost += s.disruption_cost;
    } else {
      plan.cost += o.free_instance_cost;
    }
  }
  for (const Instance& t : target.instances)
    if (!Contains(now, t) || t == vacate) plan.create.push_back(t);
  plan.seconds_unavailable = plan.destroy.empty() && plan.create.empty() ? 0 : o.reconfig_s;
  return plan;
}

size_t Changes(const RepartitionPlan& p) { return p.destroy.size() + p.create.size(); }

bool Lower(const std::vector<Instance>& a, const std::vector<Instance>& b) {
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(), ByStart);
}

// Whether a is preferred to b: (busy disrupted at all, if asked), cost, fewest
// changes, the lowest starts of the created instances, then of the target (a
// total order: distinct targets always differ somewhere).
bool Better(const RepartitionPlan& a, const RepartitionPlan& b, bool busy_first) {
  if (busy_first && a.disrupted.empty() != b.disrupted.empty()) return a.disrupted.empty();
  if (CostLess(a.cost, b.cost)) return true;
  if (CostLess(b.cost, a.cost)) return false;
  if (Changes(a) != Changes(b)) return Changes(a) < Changes(b);
  if (a.create != b.create) return Lower(a.create, b.create);
  return Lower(a.target.instances, b.target.instances);
}

void Consider(std::optional<RepartitionPlan>& best, RepartitionPlan plan, bool busy_first) {
  if (!best || Better(plan, *best, busy_first)) best = std::move(plan);
}

// Why no layout has exactly these counts: the first rule they break.
std::string WhyNoLayout(const Geometry& g, std::span<const int> counts, DriverCaps caps) {
  int compute = 0, memory = 0;
  bool has3 = false, has4 = false;
  for (size_t i = 0; i < counts.size(); ++i) {
    const Profile& p = g.profiles[i];
    if (counts[i] > p.max_instances)
      return fmt::format("at most {} {} instance{} per GPU{}", p.max_instances, p.name, p.max_instances == 1 ? "" : "s",
                         p.max_instances == 1 ? fmt::format(" (two {} cannot share a GPU)", p.name) : "");
    compute += counts[i] * p.compute;
    memory += counts[i] * p.memory_slices;
    has3 = has3 || (counts[i] > 0 && p.compute == 3);
    has4 = has4 || (counts[i] > 0 && p.compute == 4);
  }
  if (memory > kMemorySlices) return fmt::format("they need {} memory slices and a GPU has {}", memory, kMemorySlices);
  if (compute > kComputeSlices) return fmt::format("they need {} compute slices and a GPU has {}", compute, kComputeSlices);
  if (has3 && has4 && !caps.allow_4g_with_3g) return "4g and 3g instances together need a newer driver (allow_4g_with_3g is off)";
  return "no placement fits: each profile may start only at its own memory slices (nvidia-smi mig -lgipp)";
}

}  // namespace

const std::vector<Layout>& EnumerateLayouts(const Geometry& g, DriverCaps caps) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<const std::vector<Layout>>> cache;
  const std::string key = CacheKey(g, caps);
  std::lock_guard lock(mu);
  auto& slot = cache[key];
  if (!slot) {
    std::vector<Instance> candidates;
    for (int p = 0; p < static_cast<int>(g.profiles.size()); ++p)
      for (int start : g.profile(p).starts) candidates.push_back(Instance{p, start});
    std::sort(candidates.begin(), candidates.end(), ByStart);
    candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
    auto all = std::make_unique<std::vector<Layout>>();
    Layout scratch;
    Extend(g, caps, candidates, 0, scratch, *all);
    slot = std::move(all);
  }
  return *slot;
}

Result<RepartitionPlan> PlanRepartition(const Geometry& g, std::span<const InstanceState> current, std::span<const int> wanted_counts,
                                        const RepartitionOptions& options) {
  TIDAL_ASSIGN_OR_RETURN(const std::vector<InstanceState> sorted, CheckCurrent(g, current, options));
  if (wanted_counts.size() > g.profiles.size())
    return Bad(fmt::format("wanted counts name profile index {}, but {} has profiles 0-{}", wanted_counts.size() - 1, g.model,
                           g.profiles.size() - 1));
  for (size_t i = 0; i < wanted_counts.size(); ++i)
    if (wanted_counts[i] < 0) return Bad(fmt::format("wanted {} {} instances: a count cannot be negative", wanted_counts[i], g.profiles[i].name));
  std::vector<int> want(g.profiles.size(), 0);
  std::copy(wanted_counts.begin(), wanted_counts.end(), want.begin());
  std::optional<RepartitionPlan> best;
  for (const Layout& layout : EnumerateLayouts(g, options.caps)) {
    std::vector<int> have(g.profiles.size(), 0);
    for (const Instance& in : layout.instances) ++have[static_cast<size_t>(in.profile)];
    if (have == want) Consider(best, Diff(sorted, layout, options), /*busy_first=*/false);
  }
  if (!best)
    return Bad(fmt::format("wanted {} fits no MIG layout of {}: {}", CountsText(g, want), g.model, WhyNoLayout(g, want, options.caps)));
  return *std::move(best);
}

Result<RepartitionPlan> PlanRepartitionTo(const Geometry& g, std::span<const InstanceState> current, const Layout& target,
                                          const RepartitionOptions& options) {
  TIDAL_ASSIGN_OR_RETURN(const std::vector<InstanceState> sorted, CheckCurrent(g, current, options));
  Layout normalized = target;
  Normalize(normalized);
  if (Status st = ValidateLayout(g, normalized, options.caps); !st)
    return Bad(fmt::format("target layout '{}' on {} is not valid: {}", FormatLayout(g, normalized), g.model, st.error().message));
  return Diff(sorted, normalized, options);
}

RepartitionPlan PlanClearAndApply(const Geometry& g, std::span<const InstanceState> current, const Layout& target,
                                  const RepartitionOptions& options) {
  (void)g;
  std::vector<InstanceState> sorted(current.begin(), current.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const InstanceState& a, const InstanceState& b) { return ByStart(a.instance, b.instance); });
  Layout now, normalized = target;
  for (const InstanceState& s : sorted) now.instances.push_back(s.instance);
  Normalize(normalized);
  // mig-parted compares profile counts (types.MigConfig.Equals) and skips the
  // GPU when they match, whatever the placements.
  std::map<int, int> have, want;
  for (const Instance& in : now.instances) ++have[in.profile];
  for (const Instance& in : normalized.instances) ++want[in.profile];
  if (have == want) return Diff(sorted, now, options);
  RepartitionPlan plan;
  plan.target = normalized;
  plan.destroy = now.instances;
  plan.create = normalized.instances;
  for (const InstanceState& s : sorted) {
    if (s.owner != 0) plan.disrupted.push_back(s.owner);
    plan.cost += s.owner != 0 ? s.disruption_cost : options.free_instance_cost;
  }
  plan.seconds_unavailable = options.reconfig_s;
  return plan;
}

Result<RepartitionPlan> PlanMakeRoom(const Geometry& g, std::span<const InstanceState> current, int profile,
                                     const RepartitionOptions& options) {
  TIDAL_ASSIGN_OR_RETURN(const std::vector<InstanceState> sorted, CheckCurrent(g, current, options));
  if (!InRange(g, profile))
    return Bad(fmt::format("profile index {} is out of range: {} has profiles 0-{}", profile, g.model, g.profiles.size() - 1));
  Layout busy;
  for (const InstanceState& s : sorted)
    if (s.owner != 0) busy.instances.push_back(s.instance);
  // Room: an instance of `profile` in the target that no occupant keeps: a
  // kept free one, a new one, or a busy one vacated (destroyed and created).
  std::optional<RepartitionPlan> best;
  for (const Layout& layout : EnumerateLayouts(g, options.caps)) {
    std::vector<Instance> held;
    bool room = false;
    for (const Instance& in : layout.instances) {
      if (in.profile != profile) continue;
      if (Contains(busy, in)) {
        held.push_back(in);
      } else {
        room = true;
      }
    }
    if (room) {
      Consider(best, Diff(sorted, layout, options), /*busy_first=*/true);
      continue;
    }
    for (const Instance& in : held) Consider(best, Diff(sorted, layout, options, in), /*busy_first=*/true);
  }
  if (!best) return Bad(fmt::format("{} fits no layout of {}, not even on an empty GPU", g.profile(profile).name, g.model));
  return *std::move(best);
}

uint32_t ChangedMemoryMask(const Geometry& g, const RepartitionPlan& plan) {
  uint32_t mask = 0;
  for (const auto* list : {&plan.destroy, &plan.create})
    for (const Instance& in : *list) {
      if (!InRange(g, in.profile) || in.start < 0 || in.start >= kMemorySlices) continue;
      const int size = std::clamp(g.profile(in.profile).memory_slices, 0, kMemorySlices);
      mask |= ((1u << size) - 1u) << in.start;
    }
  return mask & ((1u << kMemorySlices) - 1u);
}

}  // namespace tidal::mig
