#include "market/ledger_workload.h"

#include <algorithm>

#include "common/rng.h"

namespace tidal::market {
namespace {

constexpr Micros kC = 1'000'000;
constexpr std::int64_t kUsPerOp = 1000;  // the workload's clock: 1 ms per operation

std::uint64_t Mix(std::uint64_t seed, std::uint64_t i, std::uint64_t salt) {
  std::uint64_t x = seed ^ (i * 0x9E3779B97F4A7C15ull) ^ (salt * 0xD1B54A32D192ED03ull);
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::string OpId(std::int64_t i, std::uint64_t part) { return fmt::format("op{}.{}", i, part); }

}  // namespace

LedgerWorkload::LedgerWorkload(std::uint64_t seed, int tenants) : seed_(seed), tenants_(tenants) {}

std::string LedgerWorkload::Tenant(std::uint64_t k) const { return fmt::format("t{}", k % tenants_); }

std::vector<AccountSpec> LedgerWorkload::Accounts() const {
  std::vector<AccountSpec> out;
  for (int k = 0; k < tenants_; ++k) out.push_back({.name = Tenant(k)});
  return out;
}

Transfer LedgerWorkload::Charge(std::int64_t i) const {
  Rng rng(Mix(seed_, i, 99));
  return Transfer{.id = OpId(i, 0), .debit = Tenant(rng.Next()), .credit = std::string(kRevenue),
                  .amount = 1 + static_cast<Micros>(rng.Uniform(100)), .code = "charge",
                  .reference = fmt::format("job-{}", i), .at_us = i * kUsPerOp};
}

Transfer LedgerWorkload::Single(std::int64_t i, std::uint64_t salt) const {
  Rng rng(Mix(seed_, i, salt));
  const std::int64_t at = i * kUsPerOp;
  const std::string id = OpId(i, salt);
  const std::string a = Tenant(rng.Next());
  const std::uint64_t roll = rng.Uniform(100);
  // An earlier operation this one may refer to (a hold to post, a transfer to reverse).
  const std::int64_t j = std::max<std::int64_t>(0, i - 1 - static_cast<std::int64_t>(rng.Uniform(40)));
  if (roll < 4) {  // a top-up
    return Transfer{.id = id, .debit = std::string(kTreasury), .credit = a, .amount = 200 * kC,
                    .code = std::string(kCodeGrant), .at_us = at};
  }
  if (roll < 38) {  // a charge
    return Transfer{.id = id, .debit = a, .credit = std::string(kRevenue),
                    .amount = 10'000 + static_cast<Micros>(rng.Uniform(5 * kC)), .code = "charge",
                    .reference = fmt::format("job-{}", rng.Uniform(1000)), .at_us = at};
  }
  if (roll < 58) {  // a hold, a third of them with a timeout of 0.2-2 s of workload time
    return Transfer{.id = id, .debit = a, .credit = std::string(kRevenue),
                    .amount = kC + static_cast<Micros>(rng.Uniform(20 * kC)),
                    .flags = transfer_flags::kPending,
                    .timeout_s = rng.Uniform(3) == 0 ? 1 + static_cast<std::int64_t>(rng.Uniform(2)) : 0,
                    .code = "hold", .reference = fmt::format("job-{}", i), .at_us = at};
  }
  if (roll < 76) {  // a partial post of an earlier operation's hold (if it was one)
    return Transfer{.id = id, .amount = kC / 2 + static_cast<Micros>(rng.Uniform(8 * kC)),
                    .flags = transfer_flags::kPostPending, .pending_id = OpId(j, 0), .code = "charge",
                    .at_us = at};
  }
  if (roll < 86) {  // a void
    return Transfer{.id = id, .flags = transfer_flags::kVoidPending, .pending_id = OpId(j, 0),
                    .code = "release", .at_us = at};
  }
  if (roll < 93) {  // tenant to tenant
    return Transfer{.id = id, .debit = a, .credit = Tenant(rng.Next() + 1),
                    .amount = 1 + static_cast<Micros>(rng.Uniform(3 * kC)), .code = "transfer", .at_us = at};
  }
  // A reversal of an earlier operation's first transfer, for part of its amount.
  const LedgerOp earlier = Op(j);
  const Transfer orig = earlier.transfers.empty() ? Transfer{.id = OpId(j, 0)} : earlier.transfers.front();
  return Transfer{.id = id, .debit = orig.credit, .credit = orig.debit,
                  .amount = std::max<Micros>(1, orig.amount / 2), .code = std::string(kCodeReversal),
                  .reference = orig.id, .reason = "correction", .at_us = at};
}

LedgerOp LedgerWorkload::Op(std::int64_t i) const {
  LedgerOp op;
  const std::int64_t at = i * kUsPerOp;
  if (i < tenants_) {
    op.transfers.push_back(Transfer{.id = OpId(i, 0), .debit = std::string(kTreasury), .credit = Tenant(i),
                                    .amount = 1000 * kC, .code = std::string(kCodeGrant), .at_us = at});
    return op;
  }
  Rng rng(Mix(seed_, i, 7));
  const std::uint64_t roll = rng.Uniform(100);
  if (roll < 3) {
    op.kind = LedgerOp::Kind::kExpire;
    op.now_us = at;
  } else if (roll < 11) {  // a linked charge + lending credit: both or neither
    const std::string borrower = Tenant(rng.Next());
    const std::string lender = Tenant(rng.Next() + 1);
    const Micros charge = kC + static_cast<Micros>(rng.Uniform(10 * kC));
    op.transfers.push_back(Transfer{.id = OpId(i, 0), .debit = borrower, .credit = std::string(kRevenue),
                                    .amount = charge, .flags = transfer_flags::kLinked, .code = "charge",
                                    .reference = fmt::format("job-{}", i), .at_us = at});
    op.transfers.push_back(Transfer{.id = OpId(i, 1), .debit = std::string(kRevenue), .credit = lender,
                                    .amount = charge / 2, .code = "lending_credit",
                                    .reference = fmt::format("job-{}", i), .at_us = at});
  } else if (roll < 19) {  // a small unlinked batch
    const int n = 2 + static_cast<int>(rng.Uniform(7));
    for (int k = 0; k < n; ++k) op.transfers.push_back(Single(i, static_cast<std::uint64_t>(k)));
  } else {
    op.transfers.push_back(Single(i, 0));
  }
  return op;
}

std::string Answer(const std::vector<TransferOutcome>& outcomes) {
  std::string s;
  for (const auto& o : outcomes) {
    if (!s.empty()) s += ',';
    s += o.name();
  }
  return s;
}

bool SameAnswer(const std::string& first, const std::string& retry) {
  std::size_t a = 0;
  std::size_t b = 0;
  while (true) {
    const std::size_t ea = std::min(first.find(',', a), first.size());
    const std::size_t eb = std::min(retry.find(',', b), retry.size());
    const std::string_view x(first.data() + a, ea - a);
    const std::string_view y(retry.data() + b, eb - b);
    if (!(x == y || (x == "ok" && y == "exists"))) return false;
    const bool done_a = ea == first.size();
    const bool done_b = eb == retry.size();
    if (done_a || done_b) return done_a && done_b;
    a = ea + 1;
    b = eb + 1;
  }
}

}  // namespace tidal::market
