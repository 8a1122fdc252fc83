// A seeded, synthetic stream of ledger operations — grants, charges, holds with
// and without timeouts, partial posts, voids, linked charge + lending-credit
// pairs, tenant-to-tenant transfers, reversals, expiry sweeps and small batches
// — for the crash test and the benchmark. Operation i depends only on (seed, i),
// never on earlier results, so a run that is killed and resumed asks exactly
// what an uninterrupted run asks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "market/ledger.h"

namespace tidal::market {

struct LedgerOp {
  enum class Kind { kTransfers, kExpire };
  Kind kind = Kind::kTransfers;
  std::vector<Transfer> transfers;  // kTransfers: one CreateTransfers call
  std::int64_t now_us = 0;          // kExpire: the sweep's clock
};

class LedgerWorkload {
 public:
  LedgerWorkload(std::uint64_t seed, int tenants);
  // Tenant accounts the operations use ("t0", "t1", ...).
  std::vector<AccountSpec> Accounts() const;
  LedgerOp Op(std::int64_t i) const;
  // Only charges (tenant -> revenue), for throughput measurement.
  Transfer Charge(std::int64_t i) const;

 private:
  std::string Tenant(std::uint64_t k) const;
  Transfer Single(std::int64_t i, std::uint64_t salt) const;
  std::uint64_t seed_;
  int tenants_;
};

// One line of a run's result log: the op's answer, e.g. "ok,exists" or
// "expired=3". Retries compare against it with SameAnswer.
std::string Answer(const std::vector<TransferOutcome>& outcomes);
// True when `retry` is what a retry of a request first answered `first` must
// say: "ok" becomes "exists", anything else stays as it was.
bool SameAnswer(const std::string& first, const std::string& retry);

}  // namespace tidal::market
