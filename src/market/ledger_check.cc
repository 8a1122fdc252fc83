// Ledger::Check: replays every accepted transfer from an empty book, with code
// written apart from the batch logic it checks, and compares the result with
// what the store holds.
#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "market/ledger.h"
#include "market/ledger_batch.h"
#include "market/ledger_rows.h"

namespace tidal::market {
namespace {

namespace tf = transfer_flags;
namespace af = account_flags;

constexpr std::size_t kMaxViolations = 100;

struct Book {
  std::map<std::string, Account, std::less<>> accounts;
  std::unordered_map<std::string, Hold, LedgerMemo::NameHash, std::equal_to<>> holds;  // reported in id order
  std::vector<std::string>* violations;

  template <typename... Args>
  void Violation(fmt::format_string<Args...> f, Args&&... args) {
    if (violations->size() < kMaxViolations) violations->push_back(fmt::format(f, std::forward<Args>(args)...));
  }

  Account* Find(std::string_view name, std::int64_t seq) {
    auto it = accounts.find(name);
    if (it == accounts.end()) {
      Violation("transfer #{} names account '{}', which does not exist", seq, name);
      return nullptr;
    }
    return &it->second;
  }

  void Budget(const Account& a, std::int64_t seq) {
    if ((a.flags & af::kDebitsMustNotExceedCredits) && a.debits_posted + a.debits_pending > a.credits_posted)
      Violation("after transfer #{} account '{}' spends more than it has: debits {} + pending {} > credits {}",
                seq, a.name, a.debits_posted, a.debits_pending, a.credits_posted);
    if ((a.flags & af::kCreditsMustNotExceedDebits) && a.credits_posted + a.credits_pending > a.debits_posted)
      Violation("after transfer #{} account '{}' is credited beyond its debits", seq, a.name);
  }

  void Apply(const TransferRecord& r, Micros& grants) {
    const Transfer& t = r.transfer;
    const std::int64_t seq = r.seq;
    if (t.debit == t.credit) Violation("transfer #{} '{}' debits and credits the same account", seq, t.id);
    if (t.amount < 0 || (t.amount == 0 && (t.flags & tf::kVoidPending) == 0))
      Violation("transfer #{} '{}' has amount {}", seq, t.id, t.amount);
    Account* d = Find(t.debit, seq);
    Account* c = Find(t.credit, seq);
    if (!d || !c) return;
    const bool treasury = t.debit == kTreasury || t.credit == kTreasury;
    if (treasury && !(t.code == kCodeGrant && t.debit == kTreasury) && t.code != kCodeReversal)
      Violation("transfer #{} '{}' moves treasury credits with code '{}' (only grants may)", seq, t.id, t.code);
    // Credits in circulation: what left the treasury (grants, and reversals
    // of reversed grants) less what returned to it (reversed grants).
    if (t.debit == kTreasury && (t.flags & tf::kPending) == 0) grants += t.amount;
    if (t.credit == kTreasury && (t.flags & tf::kPending) == 0) grants -= t.amount;
    if (t.flags & tf::kPending) {
      d->debits_pending += t.amount;
      c->credits_pending += t.amount;
      Micros expires = 0;
      if (t.timeout_s > 0 && (__builtin_mul_overflow(t.timeout_s, Micros{1'000'000}, &expires) ||
                              __builtin_add_overflow(expires, t.at_us, &expires)))
        expires = INT64_MAX;
      holds[t.id] = Hold{.id = t.id, .debit = t.debit, .credit = t.credit, .amount = t.amount,
                         .remaining = t.amount, .state = HoldState::kPending, .expires_us = expires};
    } else if (t.flags & (tf::kPostPending | tf::kVoidPending)) {
      auto it = holds.find(t.pending_id);
      if (it == holds.end()) {
        Violation("transfer #{} '{}' acts on hold '{}', which was never placed", seq, t.id, t.pending_id);
        return;
      }
      Hold& h = it->second;
      if (h.state != HoldState::kPending)
        Violation("transfer #{} '{}' acts on hold '{}', which is {}", seq, t.id, h.id, HoldStateName(h.state));
      if (h.debit != t.debit || h.credit != t.credit)
        Violation("transfer #{} '{}' moves between other accounts than its hold '{}'", seq, t.id, h.id);
      const bool post = (t.flags & tf::kPostPending) != 0;
      if (post ? t.amount > h.remaining : t.amount != h.remaining)
        Violation("transfer #{} '{}' {} {} of hold '{}', which holds {}", seq, t.id, post ? "posts" : "releases",
                  t.amount, h.id, h.remaining);
      d->debits_pending -= t.amount;
      c->credits_pending -= t.amount;
      if (post) {
        d->debits_posted += t.amount;
        c->credits_posted += t.amount;
      }
      h.remaining -= t.amount;
      if (!post) h.state = t.code == kCodeExpiry ? HoldState::kExpired : HoldState::kVoided;
      else if (h.remaining == 0) h.state = HoldState::kPosted;
    } else {
      d->debits_posted += t.amount;
      c->credits_posted += t.amount;
    }
    Budget(*d, seq);
    Budget(*c, seq);
  }
};

}  // namespace

Result<CheckReport> Ledger::Check() const {
  CheckReport report;
  TIDAL_RETURN_IF_ERROR(Sync());
  TIDAL_RETURN_IF_ERROR(store_->Read([&](store::Tx& tx) -> Status {
    report = CheckReport{};
    TIDAL_ASSIGN_OR_RETURN(std::vector<Account> stored, rows::LoadAccounts(tx));
    TIDAL_ASSIGN_OR_RETURN(std::vector<Hold> holds, rows::LoadHolds(tx, /*open_only=*/false));
    Book book{.violations = &report.violations};
    for (const Account& a : stored)
      book.accounts[a.name] = Account{.name = a.name, .kind = a.kind, .flags = a.flags, .created_seq = a.created_seq};
    if (!book.accounts.contains(kTreasury)) book.Violation("the treasury account {} is missing", kTreasury);
    TIDAL_RETURN_IF_ERROR(rows::ForEachTransfer(tx, [&](const TransferRecord& r) -> Status {
      if (r.result != TransferResult::kOk) {
        ++report.rejected;
        return Ok();
      }
      ++report.transfers;
      book.Apply(r, report.grants);
      return Ok();
    }));
    report.accounts = static_cast<std::int64_t>(stored.size());
    Micros total = 0;
    Micros pending_debits = 0;
    Micros pending_credits = 0;
    for (const Account& a : stored) {
      const Account& want = book.accounts[a.name];
      if (a != want)
        book.Violation(
            "account '{}' holds debits {}/{} credits {}/{} (posted/pending), its entries sum to {}/{} and {}/{}",
            a.name, a.debits_posted, a.debits_pending, a.credits_posted, a.credits_pending, want.debits_posted,
            want.debits_pending, want.credits_posted, want.credits_pending);
      total += a.balance();
      if (a.name != kTreasury) report.tenant_balances += a.balance();
      pending_debits += a.debits_pending;
      pending_credits += a.credits_pending;
    }
    if (total != 0) book.Violation("the balances of all accounts sum to {}, not 0 (double entry broken)", total);
    if (pending_debits != pending_credits)
      book.Violation("pending debits {} differ from pending credits {}", pending_debits, pending_credits);
    if (report.tenant_balances != report.grants)
      book.Violation("the balances outside the treasury sum to {}, but grants total {}", report.tenant_balances,
                     report.grants);
    std::unordered_set<std::string_view> stored_holds;
    for (const Hold& h : holds) {
      stored_holds.insert(h.id);
      if (h.state == HoldState::kPending) ++report.open_holds;
      auto it = book.holds.find(h.id);
      if (it == book.holds.end()) book.Violation("hold '{}' has no pending transfer", h.id);
      else if (!(it->second == h))
        book.Violation("hold '{}' is {} with {} of {} left, its transfers say {} with {} left", h.id,
                       HoldStateName(h.state), h.remaining, h.amount, HoldStateName(it->second.state),
                       it->second.remaining);
    }
    std::vector<std::string_view> unrecorded;
    for (const auto& [id, h] : book.holds)
      if (!stored_holds.contains(id)) unrecorded.push_back(id);
    std::ranges::sort(unrecorded);
    for (std::string_view id : unrecorded) book.Violation("pending transfer '{}' has no hold record", id);
    return Ok();
  }));
  return report;
}

}  // namespace tidal::market
