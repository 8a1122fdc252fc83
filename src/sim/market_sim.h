// The market in the simulator: the same ledger, prices and zombie detector the
// daemon will run, driven by the replay's virtual clock (docs/market.md,
// "The market in the simulator").
//
// Per run of a job: at its start a hold for its expected cost (planned run
// time x the price it locks), posted interval by interval as it runs and
// voided when it ends; a run inside its tenant's floor pays the fixed in-floor
// rate, a borrowing run the floating standard price (protected for the
// protection window), a run of a tenant over budget the spot price. A
// borrowing run's charge is split: the lenders' share goes to the tenants
// whose floors are idle at that moment, in proportion to their idle floor
// (owed once the charge is paid; escrowed in @lending-pool and paid to each
// lender once per metering interval). A
// borrowing run preempted before it is done is compensated for the work it
// lost. A run whose work is done but which keeps its GPUs (a zombie) is fed
// idle samples; the detector notifies, charges rising keep fees and reclaims
// it; fees of a reclaimed borrowing run go to the lenders of its capacity.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "market/hoarding.h"
#include "market/ledger.h"
#include "market/market_config.h"
#include "market/pricing.h"
#include "store/store.h"
#include "tenancy/tenant_tree.h"
#include "workload/job.h"

namespace tidal::sim {

// Which jobs turn zombie — hold their GPUs idle after their work ends — and for
// how long: a seeded share of jobs, each with a tail drawn log-uniformly in
// [min_tail_s, max_tail_s] (docs/market.md says why that shape).
struct HoardingScenario {
  double share = 0;  // 0: no zombies
  int64_t min_tail_s = 3600;
  int64_t max_tail_s = 48 * 3600;
  uint64_t seed = 1;
  // The tail of `job` (0 when it is not a zombie); deterministic in (seed, id).
  int64_t TailOf(JobId job) const;
  Status Validate() const;
};

// "SHARE[:MIN_S:MAX_S[:SEED]]", e.g. "0.1" or "0.1:3600:172800:7".
Result<HoardingScenario> ParseHoarding(std::string_view text);

struct MarketSimOptions {
  market::MarketConfig config;
  // The store the ledger is kept in; empty: a private in-memory SQLite store.
  // The simulation is its only writer while it runs (LedgerOptions::sole_writer):
  // never a store a daemon or another process writes.
  std::string store_url;
  int64_t meter_interval_s = 3600;
  int64_t sample_interval_s = 300;  // telemetry samples of zombies
  // Each tenant's grant (its budget for the replay) = factor x its floor's
  // GPU-hours over the replay's span x the in-floor rate.
  double budget_factor = 1.5;
  // Per business group (leaf tenant name): its own factor instead of
  // budget_factor (an SLA with a larger or smaller budget). A name that is no
  // leaf tenant is an error.
  std::map<std::string, double> budget_factor_by_tenant;
  std::string gpu_model = "*";  // the pool's model in the price book
};

struct TenantMarketResult {
  std::string name;
  market::Micros granted = 0;
  market::Micros spent = 0;             // charges posted (all tiers)
  market::Micros lending_credits = 0;   // received for idle floor others used
  market::Micros hoarding_fees = 0;     // paid
  market::Micros reclaim_credits = 0;   // received: fees of reclaimed zombies on its floor
  market::Micros compensation = 0;      // received for recalled (preempted) borrowing runs
  market::Micros balance = 0;           // at the end, from the ledger
  double unpaid_gpu_hours = 0;          // GPU-hours its budget could not pay
  int64_t runs_in_floor = 0, runs_borrowed = 0, runs_spot = 0;
  bool over_budget = false;
};

struct MarketSimResult {
  std::vector<TenantMarketResult> tenants;
  market::CheckReport check;
  market::Micros revenue = 0;  // @revenue at the end
  market::Micros penalties = 0;
  double multiplier_min = 0, multiplier_max = 0, multiplier_mean = 0;  // announced, over the replay
  int64_t price_periods = 0;
  int64_t zombies_notified = 0, zombies_reclaimed = 0;
  int64_t refused = 0;  // transfers the ledger refused (budgets)
};

// The "market" object of the queue JSON: money as credit strings (six
// decimals) and as integer micro-credits (`_micros`).
nlohmann::json MarketSimJson(const MarketSimResult& r);

class MarketSim {
 public:
  static Result<std::unique_ptr<MarketSim>> Make(const MarketSimOptions& options, const tenancy::TenantTree& tree,
                                                 int64_t total_milli, int64_t t0, int64_t span_s);

  // A run starts at `now` on `milli` milli-GPU, planned to end at planned_end.
  // `borrowed`: with it its tenant runs above its floor.
  Status Start(JobId job, tenancy::TenantId tenant, int64_t milli, int64_t now, int64_t planned_end, bool borrowed);
  struct StartRequest {
    JobId job = 0;
    tenancy::TenantId tenant = tenancy::kNoTenant;
    int64_t milli = 0;
    int64_t planned_end = 0;
    bool borrowed = false;
  };
  // The runs a pass starts at `now`, in order: exactly as one Start each,
  // with their holds in as few ledger batches as that allows (a failed hold
  // puts its tenant over budget, which decides the tier of the tenant's
  // next borrowing start: such a start waits for the holds before it).
  Status StartMany(int64_t now, std::span<const StartRequest> starts);
  // The run's work is done at `now` but it keeps its GPUs: a zombie from here.
  Status Idle(JobId job, int64_t now);
  // The run ends: metered to `now`, its hold released. `preempted` with the
  // GPU-seconds it lost: a borrowing run is compensated.
  Status Stop(JobId job, int64_t now, bool preempted, int64_t lost_gpu_s);
  struct StopRequest {
    JobId job = 0;
    bool preempted = false;
    int64_t lost_gpu_s = 0;
  };
  // The runs that end at `now`, in order: exactly as one Stop each, their
  // transfers in as few ledger batches as that allows (a stop whose release
  // waits for its charge's outcome closes a batch).
  Status StopMany(int64_t now, std::span<const StopRequest> stops);
  // Moves the market's clock to `now`: prices, metering and zombie samples of
  // every boundary up to it, with the usage of the last Observe (which held
  // until now). Returns the zombies the detector reclaims (the caller ends
  // them now). Call it before the finishes and the pass at `now`.
  Result<std::vector<JobId>> Advance(int64_t now);
  // The allocation after the pass at `now`: in all and per tenant (milli-GPU).
  Status Observe(int64_t now, int64_t allocated_milli, const std::vector<int64_t>& usage_milli);
  // The next moment the market wants to be advanced to (a sample of a zombie
  // or a meter boundary while something runs); INT64_MAX when none.
  int64_t NextWake() const;
  bool OverBudget(tenancy::TenantId tenant) const { return over_budget_.at(static_cast<size_t>(tenant)); }

  Result<MarketSimResult> Finish();

 private:
  struct Run {
    std::string id;  // "job<id>.<run>": its hold's and its transfers' ids start so
    JobId job = 0;
    tenancy::TenantId tenant = tenancy::kNoTenant;
    int64_t milli = 0;
    int64_t metered_to = 0;
    market::Tier tier = market::Tier::kStandard;
    market::PriceLock lock;
    bool borrowed = false;
    std::string hold;  // the hold's id, "" when none could be placed
    market::Micros held_left = 0;
    std::optional<market::ZombieDetector> zombie;
    int64_t next_sample = 0;
    market::Micros fees = 0;
  };

  MarketSim(const MarketSimOptions& o, const tenancy::TenantTree& tree) : options_(o), tree_(&tree) {}
  // One run's charge for [metered_to, to]: the transfer chain, then what
  // its outcome settles in the results.
  struct MeterStep {
    Run* run = nullptr;
    int64_t from = 0, to = 0;
    market::Micros total = 0, from_hold = 0;
    std::vector<market::Transfer> chain;
    std::vector<std::pair<tenancy::TenantId, market::Micros>> lenders;
  };
  Result<MeterStep> PrepareMeter(Run& run, int64_t to);
  // A stop's transfers (StopMany): its last charge, the release of its hold
  // now or after the charge, and a recall's compensation.
  struct StopPlan {
    std::map<JobId, Run>::iterator run;
    MeterStep step;
    market::Transfer release;
    bool holds = false, release_now = false;
    market::Micros comp = 0;
  };
  Result<StopPlan> PrepareStop(const StopRequest& s, int64_t now, std::vector<market::Transfer>& batch);
  // Settles a stop from its outcomes (consumed from `at`) and ends the run.
  Status SettleStop(StopPlan& plan, const std::vector<market::TransferOutcome>& out, size_t& at);
  void SettleMeter(const MeterStep& step, bool ok);
  // Every open run metered to `to` in one ledger batch.
  Status MeterAll(int64_t to);
  // The lending pool pays each lender what its charges escrowed since the last payout.
  Status PayLenders(int64_t at);
  Result<std::vector<JobId>> SampleZombies(int64_t upto);
  // Splits `amount` over the tenants with idle floor, in proportion to it.
  std::vector<std::pair<tenancy::TenantId, market::Micros>> Lenders(market::Micros amount) const;
  Status Apply(std::vector<market::Transfer> chain, bool* ok = nullptr);
  static const std::string& RunId(const Run& r) { return r.id; }
  const std::string& Name(tenancy::TenantId t) const;

  MarketSimOptions options_;
  const tenancy::TenantTree* tree_;
  std::unique_ptr<store::Store> store_;
  std::optional<market::Ledger> ledger_;
  std::optional<market::DynamicPricer> pricer_;
  std::vector<tenancy::TenantId> leaves_;
  std::vector<int64_t> floor_milli_;   // by tenant id
  std::vector<int64_t> usage_milli_;   // by tenant id, at the last Advance
  std::vector<bool> over_budget_;
  std::vector<market::Micros> owed_;  // by tenant id: lenders' shares of paid charges, not yet paid
  std::vector<market::Micros> reclaim_owed_;  // by tenant id: reclaimed zombies' fees owed to lenders, not yet paid
  int64_t payouts_ = 0;
  std::vector<TenantMarketResult> results_;  // by tenant id
  std::map<JobId, Run> runs_;
  std::set<JobId> zombies_;  // runs with a zombie detector, in job order as runs_
  // (next sample, job) of the zombies not reclaimed yet: what is due is
  // found without walking every zombie at every event.
  std::set<std::pair<int64_t, JobId>> due_;
  std::map<JobId, int32_t> run_count_;  // runs started per job, for ids
  int64_t now_ = 0;
  int64_t next_meter_ = 0;
  int64_t notified_ = 0, reclaimed_ = 0, refused_ = 0;
  int64_t total_milli_ = 0;
};

}  // namespace tidal::sim
