#include "sim/market_sim.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <numeric>
#include <string>

#include <fmt/ranges.h>

#include "common/rng.h"

namespace tidal::sim {
namespace {

using market::Micros;
using market::Tier;
using market::Transfer;
namespace tf = market::transfer_flags;

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
constexpr double kActive = 0.7;  // a working job's GPU activity (above any idle threshold)

}  // namespace

int64_t HoardingScenario::TailOf(JobId job) const {
  if (share <= 0) return 0;
  Rng rng(seed * 0x9E3779B97F4A7C15ull ^ (static_cast<uint64_t>(job) + 0x5bd1e995ull));
  if (rng.UniformDouble() >= share) return 0;
  const double lo = std::log(static_cast<double>(min_tail_s));
  const double hi = std::log(static_cast<double>(max_tail_s));
  return static_cast<int64_t>(std::llround(std::exp(lo + (hi - lo) * rng.UniformDouble())));
}

Status HoardingScenario::Validate() const {
  if (!(share >= 0 && share <= 1))
    return MakeError(ErrorCode::kInvalidArgument, "hoarding share {} must be in [0, 1]", share);
  if (min_tail_s < 1 || max_tail_s < min_tail_s)
    return MakeError(ErrorCode::kInvalidArgument,
                     "hoarding tail [{}, {}] s: give 1 <= min <= max (seconds a zombie keeps its GPUs)", min_tail_s,
                     max_tail_s);
  return Ok();
}

Result<HoardingScenario> ParseHoarding(std::string_view text) {
  HoardingScenario h;
  std::vector<std::string> parts;
  size_t pos = 0;
  while (true) {
    const size_t colon = text.find(':', pos);
    parts.emplace_back(text.substr(pos, colon == std::string_view::npos ? std::string_view::npos : colon - pos));
    if (colon == std::string_view::npos) break;
    pos = colon + 1;
  }
  auto bad = [&](std::string_view why) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "--hoarding '{}': {}; write SHARE[:MIN_S:MAX_S[:SEED]], e.g. 0.1 or 0.1:3600:172800", text, why);
  };
  if (parts.size() != 1 && parts.size() != 3 && parts.size() != 4) return bad("give 1, 3 or 4 fields");
  try {
    size_t used = 0;
    h.share = std::stod(parts[0], &used);
    if (used != parts[0].size()) return bad("the share is not a number");
    if (parts.size() >= 3) {
      h.min_tail_s = std::stoll(parts[1], &used);
      if (used != parts[1].size()) return bad("MIN_S is not a whole number of seconds");
      h.max_tail_s = std::stoll(parts[2], &used);
      if (used != parts[2].size()) return bad("MAX_S is not a whole number of seconds");
    }
    if (parts.size() == 4) {
      h.seed = std::stoull(parts[3], &used);
      if (used != parts[3].size()) return bad("SEED is not a whole number");
    }
  } catch (const std::exception&) {
    return bad("a field is not a number");
  }
  TIDAL_RETURN_IF_ERROR(h.Validate());
  return h;
}

Result<std::unique_ptr<MarketSim>> MarketSim::Make(const MarketSimOptions& options, const tenancy::TenantTree& tree,
                                                   int64_t total_milli, int64_t t0, int64_t span_s) {
  std::unique_ptr<MarketSim> m(new MarketSim(options, tree));
  if (options.meter_interval_s < 1 || options.sample_interval_s < 1)
    return MakeError(ErrorCode::kInvalidArgument, "market meter and sample intervals must be >= 1 s");
  auto bad_factor = [](double f) { return !std::isfinite(f) || f < 0 || f > 1e6; };
  if (bad_factor(options.budget_factor))
    return MakeError(ErrorCode::kInvalidArgument, "budget factor {} must be a number in [0, 1e6]", options.budget_factor);
  for (const auto& [name, f] : options.budget_factor_by_tenant) {
    const tenancy::TenantId t = tree.Find(name);
    if (t == tenancy::kNoTenant || !tree.is_leaf(t)) {
      std::vector<std::string> leaves;
      for (tenancy::TenantId l : tree.Leaves()) leaves.push_back(tree.name(l));
      return MakeError(ErrorCode::kNotFound, "a budget is given for business group '{}', which is not a leaf tenant (they are: {})",
                       name, fmt::join(leaves, ", "));
    }
    if (bad_factor(f))
      return MakeError(ErrorCode::kInvalidArgument, "the budget factor {} of '{}' must be a number in [0, 1e6]", f, name);
  }
  store::OpenOptions so;
  so.durable = false;  // a replay's ledger is rebuilt by running it again
  TIDAL_ASSIGN_OR_RETURN(m->store_,
                         store::OpenStore(options.store_url.empty() ? "sqlite::memory:" : options.store_url, so));
  // The simulator's store is its own while it runs: the ledger may read
  // accounts and holds from memory, and a private in-memory store, whose
  // records die with the run anyway, takes them in groups of kWriteBehind
  // transfers (one store transaction per group, not per pass; Finish's
  // Check writes the last group). A named store gets every batch at once.
  constexpr std::size_t kWriteBehind = 4096;
  TIDAL_ASSIGN_OR_RETURN(market::Ledger ledger,
                         market::Ledger::Open(*m->store_, {.sole_writer = true,
                                                           .write_behind = options.store_url.empty() ? kWriteBehind : 0}));
  m->ledger_.emplace(std::move(ledger));
  TIDAL_ASSIGN_OR_RETURN(market::DynamicPricer pricer,
                         market::DynamicPricer::Make(options.gpu_model, options.config.book, options.config.curve,
                                                     options.config.pricer, t0));
  m->pricer_.emplace(std::move(pricer));
  TIDAL_RETURN_IF_ERROR(m->pricer_->AdvanceTo(t0));
  TIDAL_ASSIGN_OR_RETURN(Micros in_floor_rate, options.config.book.InFloorRate(options.gpu_model));

  const size_t n = static_cast<size_t>(tree.size());
  m->floor_milli_.assign(n, 0);
  m->usage_milli_.assign(n, 0);
  m->over_budget_.assign(n, false);
  m->owed_.assign(n, 0);
  m->reclaim_owed_.assign(n, 0);
  m->results_.resize(n);
  std::vector<Transfer> grants;
  const std::optional<tenancy::ResourceId> gpu = tree.resource("gpu");
  for (tenancy::TenantId t = 0; t < tree.size(); ++t) {
    m->results_[static_cast<size_t>(t)].name = tree.spec(t).name;
    if (!tree.is_leaf(t)) continue;
    m->leaves_.push_back(t);
    m->floor_milli_[static_cast<size_t>(t)] = gpu ? tree.nominal(t, *gpu) : 0;
    TIDAL_RETURN_IF_ERROR(m->ledger_->CreateAccount({.name = tree.spec(t).name}));
    const auto own = options.budget_factor_by_tenant.find(tree.spec(t).name);
    const double factor = own != options.budget_factor_by_tenant.end() ? own->second : options.budget_factor;
    const double gpu_hours =
        static_cast<double>(m->floor_milli_[static_cast<size_t>(t)]) / 1000.0 * static_cast<double>(span_s) / 3600.0;
    const Micros grant =
        static_cast<Micros>(std::llround(factor * gpu_hours * static_cast<double>(in_floor_rate)));
    m->results_[static_cast<size_t>(t)].granted = grant;
    if (grant > 0)
      grants.push_back(Transfer{.id = "grant:" + tree.spec(t).name, .debit = std::string(market::kTreasury),
                                .credit = tree.spec(t).name, .amount = grant,
                                .code = std::string(market::kCodeGrant), .reference = "replay budget"});
  }
  TIDAL_ASSIGN_OR_RETURN(auto out, m->ledger_->CreateTransfers(grants));
  for (const auto& o : out)
    if (!o.succeeded()) return MakeError(ErrorCode::kInternal, "a budget grant was refused: {}", o.name());
  m->total_milli_ = total_milli;
  m->now_ = t0;
  m->next_meter_ = t0 + options.meter_interval_s;
  return m;
}

const std::string& MarketSim::Name(tenancy::TenantId t) const { return results_[static_cast<size_t>(t)].name; }


Status MarketSim::Apply(std::vector<Transfer> chain, bool* ok) {
  TIDAL_ASSIGN_OR_RETURN(auto out, ledger_->CreateTransfers(chain));
  bool all = true;
  for (const auto& o : out) all = all && o.succeeded();
  if (!all) ++refused_;
  if (ok) *ok = all;
  return Ok();
}

Status MarketSim::Start(JobId job, tenancy::TenantId tenant, int64_t milli, int64_t now, int64_t planned_end,
                        bool borrowed) {
  const StartRequest one{.job = job, .tenant = tenant, .milli = milli, .planned_end = planned_end, .borrowed = borrowed};
  return StartMany(now, std::span(&one, 1));
}

Status MarketSim::StartMany(int64_t now, std::span<const StartRequest> starts) {
  TIDAL_RETURN_IF_ERROR(pricer_->AdvanceTo(now));
  // Holds not yet sent, and whose tenant has one among them.
  std::vector<Transfer> holds;
  std::vector<JobId> held;
  std::vector<uint8_t> pending(results_.size(), 0);
  auto flush = [&]() -> Status {
    if (holds.empty()) return Ok();
    // Unlinked: the ledger applies each on its own, in order, as one call each.
    TIDAL_ASSIGN_OR_RETURN(auto out, ledger_->CreateTransfers(holds));
    for (size_t k = 0; k < holds.size(); ++k) {
      Run& r = runs_.at(held[k]);
      if (out[k].succeeded()) {
        r.hold = holds[k].id;
        r.held_left = holds[k].amount;
      } else {
        ++refused_;
        // It cannot cover its run: over budget, so its later borrowing runs are spot.
        over_budget_[static_cast<size_t>(r.tenant)] = true;
        results_[static_cast<size_t>(r.tenant)].over_budget = true;
      }
    }
    holds.clear();
    held.clear();
    std::fill(pending.begin(), pending.end(), 0);
    return Ok();
  };
  for (const StartRequest& s : starts) {
    const auto t = static_cast<size_t>(s.tenant);
    if (runs_.contains(s.job))
      return MakeError(ErrorCode::kInternal, "market: job {} starts at {} but is running already; stop its run first",
                       s.job, now);
    if (s.borrowed && pending[t]) TIDAL_RETURN_IF_ERROR(flush());
    Run r{.id = fmt::format("job{}.{}", s.job, ++run_count_[s.job]), .job = s.job, .tenant = s.tenant, .milli = s.milli,
          .metered_to = now, .borrowed = s.borrowed};
    TenantMarketResult& res = results_[t];
    // A run in its tenant's floor pays the fixed in-floor rate, over budget or
    // not (TierUnderBudget: the floor is the tenant's by right); a borrowing run
    // pays the floating standard price, or the spot price once over budget.
    if (!s.borrowed) {
      r.tier = Tier::kGuaranteed;
      ++res.runs_in_floor;
    } else if (over_budget_[t]) {
      r.tier = Tier::kSpot;
      ++res.runs_spot;
    } else {
      r.tier = Tier::kStandard;
      ++res.runs_borrowed;
    }
    TIDAL_ASSIGN_OR_RETURN(r.lock, market::Lock(pricer_->history(), r.tier, now, options_.config.pricer.protection_s));
    // The hold: the planned run at the price locked now (an estimate; metering
    // charges what the run really costs, and a run past its hold pays the rest
    // as plain charges).
    TIDAL_ASSIGN_OR_RETURN(Micros expected,
                           market::ChargeForInterval(s.milli, std::max<int64_t>(1, s.planned_end - now), r.lock.ceiling));
    if (expected > 0) {
      holds.push_back(Transfer{.id = RunId(r), .debit = Name(s.tenant), .credit = std::string(market::kRevenue),
                               .amount = expected, .flags = tf::kPending, .code = "hold",
                               .reference = fmt::format("job {}", s.job), .at_us = now * 1'000'000});
      held.push_back(s.job);
      pending[t] = 1;
    }
    runs_[s.job] = std::move(r);
  }
  return flush();
}

std::vector<std::pair<tenancy::TenantId, Micros>> MarketSim::Lenders(Micros amount) const {
  std::vector<std::pair<tenancy::TenantId, Micros>> out;
  int64_t idle_total = 0;
  for (tenancy::TenantId t : leaves_)
    idle_total += std::max<int64_t>(0, floor_milli_[static_cast<size_t>(t)] - usage_milli_[static_cast<size_t>(t)]);
  if (idle_total == 0 || amount <= 0) return out;
  // Largest remainder, so the parts sum to `amount` exactly.
  std::vector<std::pair<__int128, tenancy::TenantId>> rem;
  Micros given = 0;
  for (tenancy::TenantId t : leaves_) {
    const int64_t idle =
        std::max<int64_t>(0, floor_milli_[static_cast<size_t>(t)] - usage_milli_[static_cast<size_t>(t)]);
    if (idle == 0) continue;
    const __int128 num = static_cast<__int128>(amount) * idle;
    const Micros part = static_cast<Micros>(num / idle_total);
    out.push_back({t, part});
    rem.push_back({num % idle_total, t});
    given += part;
  }
  std::stable_sort(rem.begin(), rem.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t k = 0; given < amount && k < rem.size(); ++k, ++given)
    for (auto& [t, part] : out)
      if (t == rem[k].second) ++part;
  return out;
}

Result<MarketSim::MeterStep> MarketSim::PrepareMeter(Run& r, int64_t to) {
  MeterStep step;
  if (to <= r.metered_to) return step;
  TIDAL_RETURN_IF_ERROR(pricer_->AdvanceTo(to));
  TIDAL_ASSIGN_OR_RETURN(market::Metered m, market::MeterInterval(pricer_->history(), r.tier,
                                                                  r.tier == Tier::kGuaranteed ? nullptr : &r.lock,
                                                                  r.milli, r.metered_to, to));
  step.run = &r;
  step.from = r.metered_to;
  step.to = to;
  r.metered_to = to;
  if (m.total <= 0) return step;
  step.total = m.total;
  // Time first: the ledger's id index then grows at its end, as the
  // transfers do (ids of one run's steps, run first, landed all over the
  // index: a B-tree insert in its middle and its page splits were a fifth of
  // a market side's time). A run meters up to a time once (to > metered_to).
  const std::string id = fmt::format("m{:010}.{}.", to, RunId(r));
  step.from_hold = std::min(m.total, r.held_left);
  if (step.from_hold > 0)
    step.chain.push_back(Transfer{.id = id + "p", .amount = step.from_hold, .flags = tf::kPostPending, .pending_id = r.hold,
                                  .code = "charge", .at_us = to * 1'000'000});
  if (m.total > step.from_hold)
    step.chain.push_back(Transfer{.id = id + "c", .debit = Name(r.tenant), .credit = std::string(market::kRevenue),
                                  .amount = m.total - step.from_hold, .code = "charge",
                                  .reference = fmt::format("job {}", r.job), .at_us = to * 1'000'000});
  // A borrowing run's charge: the lenders' share to the tenants whose floor
  // is idle, owed once the charge is paid (SettleMeter) and paid at the next
  // metering tick (PayLenders): no charge, no share.
  if (r.tier == Tier::kStandard && r.borrowed) {
    TIDAL_ASSIGN_OR_RETURN(market::LendingSplit split,
                           market::SplitBorrowedCharge(m.total, options_.config.lender_share_ppm));
    step.lenders = Lenders(split.to_lender);
  }
  for (size_t k = 0; k + 1 < step.chain.size(); ++k) step.chain[k].flags |= tf::kLinked;
  return step;
}

void MarketSim::SettleMeter(const MeterStep& step, bool ok) {
  Run& r = *step.run;
  TenantMarketResult& res = results_[static_cast<size_t>(r.tenant)];
  if (ok) {
    r.held_left -= step.from_hold;
    res.spent += step.total;
    for (const auto& [t, part] : step.lenders) owed_[static_cast<size_t>(t)] += part;
  } else {
    // Its budget cannot pay: the GPU-hours ran unpaid, and it drops to spot.
    res.unpaid_gpu_hours += static_cast<double>(r.milli) / 1000.0 * static_cast<double>(step.to - step.from) / 3600.0;
    over_budget_[static_cast<size_t>(r.tenant)] = true;
    res.over_budget = true;
  }
}

Status MarketSim::MeterAll(int64_t to) {
  // Every run's chain in one ledger batch: the ledger applies a batch in
  // order, chain by chain (a linked chain succeeds or fails whole), exactly
  // as one call per run would, in one store transaction instead of many.
  std::vector<MeterStep> steps;
  std::vector<Transfer> batch;
  for (auto& [job, r] : runs_) {
    TIDAL_ASSIGN_OR_RETURN(MeterStep step, PrepareMeter(r, to));
    if (step.chain.empty()) continue;
    // Moved: the chain keeps its length, which settles the outcomes below.
    batch.insert(batch.end(), std::make_move_iterator(step.chain.begin()), std::make_move_iterator(step.chain.end()));
    steps.push_back(std::move(step));
  }
  if (batch.empty()) return Ok();
  TIDAL_ASSIGN_OR_RETURN(auto out, ledger_->CreateTransfers(batch));
  size_t at = 0;
  for (const MeterStep& step : steps) {
    bool ok = true;
    for (size_t k = 0; k < step.chain.size(); ++k) ok = ok && out[at + k].succeeded();
    at += step.chain.size();
    if (!ok) ++refused_;
    SettleMeter(step, ok);
  }
  return Ok();
}

Status MarketSim::PayLenders(int64_t at) {
  // The interval's shares go from @revenue into escrow in @lending-pool in
  // one transfer, and the pool pays each lender what it is owed, linked
  // (one transfer per lender per interval, not one per lender per run, and
  // one escrow per interval, not one per borrowing run's charge).
  std::vector<Transfer> chain;
  Micros escrow = 0;
  for (tenancy::TenantId t : leaves_) escrow += owed_[static_cast<size_t>(t)];
  if (escrow > 0)
    chain.push_back(Transfer{.id = fmt::format("lend{}.escrow", payouts_), .debit = std::string(market::kRevenue),
                             .credit = std::string(market::kLendingPool), .amount = escrow, .flags = tf::kLinked,
                             .code = "lending_share", .reference = "lenders' share of the interval's borrowing charges",
                             .at_us = at * 1'000'000});
  for (tenancy::TenantId t : leaves_)
    if (const Micros part = owed_[static_cast<size_t>(t)]; part > 0)
      chain.push_back(Transfer{.id = fmt::format("lend{}.{}", payouts_, t), .debit = std::string(market::kLendingPool),
                               .credit = Name(t), .amount = part, .flags = tf::kLinked, .code = "lending_credit",
                               .reference = "lenders' share of the interval's borrowing charges",
                               .at_us = at * 1'000'000});
  // And the fees of the interval's reclaimed zombies on borrowed capacity,
  // one transfer per lender.
  for (tenancy::TenantId t : leaves_)
    if (const Micros part = reclaim_owed_[static_cast<size_t>(t)]; part > 0)
      chain.push_back(Transfer{.id = fmt::format("lend{}.reclaim{}", payouts_, t),
                               .debit = std::string(market::kPenalties), .credit = Name(t), .amount = part,
                               .flags = tf::kLinked, .code = "reclaim_credit",
                               .reference = "fees of the interval's reclaimed zombies on borrowed capacity",
                               .at_us = at * 1'000'000});
  if (chain.empty()) return Ok();
  chain.back().flags &= ~tf::kLinked;
  ++payouts_;
  bool ok = false;
  TIDAL_RETURN_IF_ERROR(Apply(std::move(chain), &ok));
  // @revenue holds every paid charge, the shares included, and @penalties
  // every paid fee.
  if (!ok) return MakeError(ErrorCode::kInternal, "market: the lenders' credits could not be paid");
  for (tenancy::TenantId t : leaves_) {
    results_[static_cast<size_t>(t)].lending_credits += std::exchange(owed_[static_cast<size_t>(t)], 0);
    results_[static_cast<size_t>(t)].reclaim_credits += std::exchange(reclaim_owed_[static_cast<size_t>(t)], 0);
  }
  return Ok();
}

Status MarketSim::Idle(JobId job, int64_t now) {
  auto it = runs_.find(job);
  if (it == runs_.end()) return MakeError(ErrorCode::kInternal, "market: job {} idles but does not run", job);
  TIDAL_ASSIGN_OR_RETURN(market::ZombieDetector d, market::ZombieDetector::Make(options_.config.hoarding, it->second.milli));
  it->second.zombie.emplace(std::move(d));
  if (zombies_.contains(job)) due_.erase({it->second.next_sample, job});
  it->second.next_sample = now;
  zombies_.insert(job);
  due_.insert({now, job});
  return Ok();
}

Status MarketSim::Stop(JobId job, int64_t now, bool preempted, int64_t lost_gpu_s) {
  const StopRequest one{.job = job, .preempted = preempted, .lost_gpu_s = lost_gpu_s};
  return StopMany(now, std::span(&one, 1));
}

Result<MarketSim::StopPlan> MarketSim::PrepareStop(const StopRequest& s, int64_t now, std::vector<Transfer>& batch) {
  auto it = runs_.find(s.job);
  if (it == runs_.end()) return MakeError(ErrorCode::kInternal, "market: job {} stops but does not run", s.job);
  Run& r = it->second;
  // The last charge, the release of what the hold has left and a recall's
  // compensation go to the ledger in one batch: it applies them in order,
  // each on its own, exactly as three calls would. Only when the charge
  // would post the whole rest of the hold does the release wait for its
  // outcome (posted whole: nothing to release; refused: all of it).
  StopPlan plan{.run = it};
  TIDAL_ASSIGN_OR_RETURN(plan.step, PrepareMeter(r, now));
  plan.release = Transfer{.id = RunId(r) + ".void", .flags = tf::kVoidPending, .pending_id = r.hold,
                          .code = "release", .at_us = now * 1'000'000};
  plan.holds = !r.hold.empty() && r.held_left > 0;
  plan.release_now = plan.holds && (plan.step.chain.empty() || plan.step.from_hold < r.held_left);
  batch.insert(batch.end(), std::make_move_iterator(plan.step.chain.begin()),
               std::make_move_iterator(plan.step.chain.end()));  // its length stays: SettleStop reads it
  if (plan.release_now) batch.push_back(plan.release);
  if (s.preempted && r.borrowed && s.lost_gpu_s > 0) {
    TIDAL_ASSIGN_OR_RETURN(Micros price, market::LockedPrice(pricer_->history(), r.lock, now));
    TIDAL_ASSIGN_OR_RETURN(plan.comp, market::RecallCompensation(1000, s.lost_gpu_s, price,
                                                                 options_.config.recall_compensation_ppm));
  }
  if (plan.comp > 0)
    batch.push_back(Transfer{.id = RunId(r) + ".comp", .debit = std::string(market::kRevenue),
                             .credit = Name(r.tenant), .amount = plan.comp, .code = "recall_compensation",
                             .reference = fmt::format("job {}", s.job), .at_us = now * 1'000'000});
  return plan;
}

Status MarketSim::SettleStop(StopPlan& plan, const std::vector<market::TransferOutcome>& out, size_t& at) {
  Run& r = plan.run->second;
  auto next_ok = [&](size_t n) {
    bool ok = true;
    for (size_t k = 0; k < n; ++k) ok = ok && out[at + k].succeeded();
    at += n;
    if (!ok) ++refused_;
    return ok;
  };
  if (!plan.step.chain.empty()) SettleMeter(plan.step, next_ok(plan.step.chain.size()));
  if (plan.release_now) next_ok(1);
  if (plan.comp > 0 && next_ok(1)) results_[static_cast<size_t>(r.tenant)].compensation += plan.comp;
  if (plan.holds && !plan.release_now && r.held_left > 0) TIDAL_RETURN_IF_ERROR(Apply({plan.release}));
  if (zombies_.erase(r.job) > 0) due_.erase({r.next_sample, r.job});
  runs_.erase(plan.run);
  return Ok();
}

Status MarketSim::StopMany(int64_t now, std::span<const StopRequest> stops) {
  std::vector<StopPlan> plans;
  std::vector<Transfer> batch;
  auto flush = [&]() -> Status {
    std::vector<market::TransferOutcome> out;
    if (!batch.empty()) {
      TIDAL_ASSIGN_OR_RETURN(out, ledger_->CreateTransfers(batch));
    }
    size_t at = 0;
    for (StopPlan& plan : plans) TIDAL_RETURN_IF_ERROR(SettleStop(plan, out, at));
    plans.clear();
    batch.clear();
    return Ok();
  };
  std::set<JobId> seen;
  for (const StopRequest& s : stops) {
    if (!seen.insert(s.job).second) return MakeError(ErrorCode::kInternal, "market: job {} stops twice at {}", s.job, now);
    TIDAL_ASSIGN_OR_RETURN(StopPlan plan, PrepareStop(s, now, batch));
    const bool waits = plan.holds && !plan.release_now;  // its release follows its charge's outcome
    plans.push_back(std::move(plan));
    if (waits) TIDAL_RETURN_IF_ERROR(flush());
  }
  return flush();
}

Result<std::vector<JobId>> MarketSim::SampleZombies(int64_t upto) {
  std::vector<JobId> reclaim;
  // The zombies with a sample due, in job order (as a walk over every
  // zombie would take them: fees and reclaims keep their order).
  std::vector<JobId> ready;
  while (!due_.empty() && due_.begin()->first <= upto) {
    ready.push_back(due_.begin()->second);
    due_.erase(due_.begin());
  }
  std::sort(ready.begin(), ready.end());
  for (const JobId job : ready) {
    Run& r = runs_.at(job);
    while (r.next_sample <= upto && r.zombie->state() != market::ZombieState::kReclaimed) {
      TIDAL_ASSIGN_OR_RETURN(auto actions, r.zombie->Sample(r.next_sample, 0.0, 0.0, std::nan(""), std::nan("")));
      for (const market::HoardAction& a : actions) {
        if (a.kind == market::HoardActionKind::kNotify) ++notified_;
        if (a.kind == market::HoardActionKind::kFee && a.amount > 0) {
          bool ok = false;
          TIDAL_RETURN_IF_ERROR(Apply({Transfer{.id = fmt::format("{}.fee{}", RunId(r), a.step),
                                                .debit = Name(r.tenant), .credit = std::string(market::kPenalties),
                                                .amount = a.amount, .code = "hoarding_fee",
                                                .reference = fmt::format("job {}", job),
                                                .at_us = a.at_s * 1'000'000}},
                                      &ok));
          if (ok) {
            results_[static_cast<size_t>(r.tenant)].hoarding_fees += a.amount;
            r.fees += a.amount;
          }
        }
        if (a.kind == market::HoardActionKind::kReclaim) {
          ++reclaimed_;
          reclaim.push_back(job);
          // The fees of a zombie on borrowed capacity credit the lenders of
          // it (what @penalties holds of its paid fees), paid with the
          // lenders' shares at the next metering tick.
          if (r.borrowed && r.fees > 0)
            for (const auto& [t, part] : Lenders(r.fees)) reclaim_owed_[static_cast<size_t>(t)] += part;
        }
      }
      r.next_sample += options_.sample_interval_s;
    }
    if (r.zombie->state() != market::ZombieState::kReclaimed) due_.insert({r.next_sample, job});
  }
  return reclaim;
}

Result<std::vector<JobId>> MarketSim::Advance(int64_t now) {
  if (now < now_) return MakeError(ErrorCode::kInternal, "market clock went back from {} to {}", now_, now);
  while (next_meter_ <= now) {
    TIDAL_RETURN_IF_ERROR(MeterAll(next_meter_));
    TIDAL_RETURN_IF_ERROR(PayLenders(next_meter_));
    next_meter_ += options_.meter_interval_s;
  }
  TIDAL_ASSIGN_OR_RETURN(std::vector<JobId> reclaim, SampleZombies(now));
  now_ = now;
  return reclaim;
}

Status MarketSim::Observe(int64_t now, int64_t allocated_milli, const std::vector<int64_t>& usage_milli) {
  usage_milli_ = usage_milli;
  usage_milli_.resize(floor_milli_.size(), 0);
  const double total = static_cast<double>(total_milli_);
  return pricer_->Observe(now, total > 0 ? std::min(1.0, static_cast<double>(allocated_milli) / total) : 0);
}

int64_t MarketSim::NextWake() const {
  int64_t wake = runs_.empty() ? kNever : next_meter_;
  if (!due_.empty()) wake = std::min(wake, due_.begin()->first);
  return wake;
}

Result<MarketSimResult> MarketSim::Finish() {
  MarketSimResult out;
  if (!runs_.empty()) return MakeError(ErrorCode::kInternal, "market: {} runs still open at the end", runs_.size());
  TIDAL_RETURN_IF_ERROR(PayLenders(now_));
  TIDAL_ASSIGN_OR_RETURN(out.check, ledger_->Check());
  for (tenancy::TenantId t : leaves_) {
    TenantMarketResult r = results_[static_cast<size_t>(t)];
    TIDAL_ASSIGN_OR_RETURN(auto acct, ledger_->GetAccount(r.name));
    if (acct) r.balance = acct->balance();
    out.tenants.push_back(std::move(r));
  }
  TIDAL_ASSIGN_OR_RETURN(auto rev, ledger_->GetAccount(market::kRevenue));
  TIDAL_ASSIGN_OR_RETURN(auto pen, ledger_->GetAccount(market::kPenalties));
  if (rev) out.revenue = rev->balance();
  if (pen) out.penalties = pen->balance();
  const auto& hist = pricer_->history().entries;
  if (!hist.empty()) {
    out.multiplier_min = 1e18;
    double sum = 0;
    for (const auto& a : hist) {
      const double m = static_cast<double>(a.multiplier_ppm) / 1e6;
      out.multiplier_min = std::min(out.multiplier_min, m);
      out.multiplier_max = std::max(out.multiplier_max, m);
      sum += m;
    }
    out.multiplier_mean = sum / static_cast<double>(hist.size());
    out.price_periods = static_cast<int64_t>(hist.size());
  }
  out.zombies_notified = notified_;
  out.zombies_reclaimed = reclaimed_;
  out.refused = refused_;
  return out;
}

nlohmann::json MarketSimJson(const MarketSimResult& r) {
  auto credits = [](Micros m) { return market::FormatCredits(m); };
  nlohmann::json per = nlohmann::json::object();
  for (const TenantMarketResult& t : r.tenants) {
    per[t.name] = {{"granted", credits(t.granted)},
                   {"spent", credits(t.spent)},
                   {"spent_micros", t.spent},
                   {"lending_credits", credits(t.lending_credits)},
                   {"lending_credits_micros", t.lending_credits},
                   {"hoarding_fees", credits(t.hoarding_fees)},
                   {"reclaim_credits", credits(t.reclaim_credits)},
                   {"recall_compensation", credits(t.compensation)},
                   {"balance", credits(t.balance)},
                   {"unpaid_gpu_hours", t.unpaid_gpu_hours},
                   {"runs_in_floor", t.runs_in_floor},
                   {"runs_borrowed", t.runs_borrowed},
                   {"runs_spot", t.runs_spot},
                   {"over_budget", t.over_budget}};
  }
  return {{"per_tenant", per},
          {"revenue", credits(r.revenue)},
          {"penalties", credits(r.penalties)},
          {"refused_transfers", r.refused},
          {"zombies_notified", r.zombies_notified},
          {"zombies_reclaimed", r.zombies_reclaimed},
          {"multiplier", {{"min", r.multiplier_min}, {"max", r.multiplier_max}, {"mean", r.multiplier_mean},
                          {"periods", r.price_periods}}},
          {"ledger_check",
           {{"ok", r.check.ok()},
            {"transfers", r.check.transfers},
            {"rejected", r.check.rejected},
            {"grants", credits(r.check.grants)},
            {"balances_outside_treasury", credits(r.check.tenant_balances)},
            {"sum_of_balances_equals_grants", r.check.tenant_balances == r.check.grants},
            {"violations", r.check.violations}}}};
}

}  // namespace tidal::sim
