// The ledger: tidal's double-entry book of credits, after TigerBeetle's design
// (docs/market.md, "Ledger"). Money is integer micro-credits. Every movement is
// a transfer from one account (debit) to another (credit) with a client-chosen
// idempotency id, a code saying why and a reference saying for what (a job id,
// a lease id). Nothing is updated or deleted: a correction is a reversing
// transfer. Balances are kept per account and are, by invariant, the sum of the
// account's entries — Check() replays every entry to prove it.
//
// Differences from TigerBeetle, on purpose:
//  - ids and account names are strings (job ids and tenant names are);
//  - a pending transfer (a hold) may be posted several times, each post moving
//    part of what is held, until nothing remains or it is voided or expires —
//    the market meters a running job's hold interval by interval;
//  - a rejected transfer is recorded with its result, so a retry of the same id
//    always returns the original result (as Stripe's idempotency keys do),
//    not only a retry of a transfer that succeeded.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "store/store.h"

namespace tidal::market {

using Micros = std::int64_t;  // 1 credit = 1,000,000 micro-credits

// System accounts, created by Ledger::Open.
inline constexpr std::string_view kTreasury = "@treasury";  // the only source of grants
inline constexpr std::string_view kRevenue = "@revenue";
inline constexpr std::string_view kLendingPool = "@lending-pool";
inline constexpr std::string_view kPenalties = "@penalties";

// Transfer codes the ledger itself gives meaning to; any other non-empty code
// (charge, lending_credit, recall_compensation, hoarding_fee, ...) is recorded
// as given.
inline constexpr std::string_view kCodeGrant = "grant";        // debit must be @treasury
inline constexpr std::string_view kCodeReversal = "reversal";  // reference = reversed id
inline constexpr std::string_view kCodeExpiry = "expiry";      // the ledger's own hold expiry

enum class AccountKind { kTenant, kSystem };
const char* AccountKindName(AccountKind kind);

namespace account_flags {
// The account may not spend more than it was credited: debits_posted +
// debits_pending + amount <= credits_posted. Tenants get it (their balance is
// their budget); the treasury does not.
inline constexpr std::uint32_t kDebitsMustNotExceedCredits = 1u << 0;
inline constexpr std::uint32_t kCreditsMustNotExceedDebits = 1u << 1;
inline constexpr std::uint32_t kAll = kDebitsMustNotExceedCredits | kCreditsMustNotExceedDebits;
}  // namespace account_flags

struct AccountSpec {
  std::string name;
  AccountKind kind = AccountKind::kTenant;
  std::uint32_t flags = account_flags::kDebitsMustNotExceedCredits;
};

struct Account {
  std::string name;
  AccountKind kind = AccountKind::kTenant;
  std::uint32_t flags = 0;
  Micros debits_pending = 0;
  Micros debits_posted = 0;
  Micros credits_pending = 0;
  Micros credits_posted = 0;
  std::int64_t created_seq = 0;

  // Posted balance, credit-normal (a tenant's credits).
  Micros balance() const { return credits_posted - debits_posted; }
  // What the account may still spend: its balance less what holds reserve.
  Micros available() const { return credits_posted - debits_posted - debits_pending; }
  bool operator==(const Account&) const = default;
};

namespace transfer_flags {
inline constexpr std::uint32_t kLinked = 1u << 0;       // succeeds or fails with the next one
inline constexpr std::uint32_t kPending = 1u << 1;      // a hold: reserves, moves nothing yet
inline constexpr std::uint32_t kPostPending = 1u << 2;  // moves `amount` of hold `pending_id`
inline constexpr std::uint32_t kVoidPending = 1u << 3;  // releases what hold `pending_id` still holds
inline constexpr std::uint32_t kAll = kLinked | kPending | kPostPending | kVoidPending;
}  // namespace transfer_flags

struct Transfer {
  std::string id;          // idempotency id, unique for ever
  std::string debit;       // account paying; for post/void: empty or the hold's
  std::string credit;      // account paid;   for post/void: empty or the hold's
  Micros amount = 0;       // > 0; a void's is 0 or exactly what the hold still holds
  std::uint32_t flags = 0;
  std::string pending_id;  // the hold a post or void acts on
  std::int64_t timeout_s = 0;  // a hold expires timeout_s after at_us (0: never)
  std::string code;        // why
  std::string reference;   // for what: job id, lease id, the reversed transfer's id
  std::string reason;      // free reason code, e.g. for a reversal
  std::int64_t at_us = 0;  // the caller's clock; not part of the idempotency comparison
  bool operator==(const Transfer&) const = default;
};

enum class TransferResult {
  kOk,
  kExists,  // the same id with the same fields was created before
  kExistsWithDifferentFields,  // TransferOutcome::field names the first that differs
  kLinkedEventFailed,
  kLinkedEventChainOpen,
  kIdMustNotBeEmpty,
  kIdTooLong,
  kReservedFlag,
  kFlagsAreMutuallyExclusive,
  kCodeMustNotBeEmpty,
  kCodeReserved,  // "expiry" is the ledger's own
  kAmountMustBePositive,
  kAmountMustBeZeroOrRemaining,
  kAccountsMustBeDifferent,
  kPendingIdMustBeEmpty,
  kPendingIdMustNotBeEmpty,
  kPendingIdMustBeDifferent,
  kTimeoutReservedForPendingTransfer,
  kTimeoutMustNotBeNegative,
  kDebitAccountNotFound,
  kCreditAccountNotFound,
  kPendingTransferNotFound,
  kPendingTransferHasDifferentDebit,
  kPendingTransferHasDifferentCredit,
  kPendingTransferAlreadyPosted,
  kPendingTransferAlreadyVoided,
  kPendingTransferExpired,
  kExceedsPendingTransferAmount,
  kGrantMustDebitTreasury,
  kTreasuryOnlyForGrants,
  kReversedTransferNotFound,
  kReversalMustSwapAccounts,
  kReversalExceedsOriginal,
  kOverflowsDebits,
  kOverflowsCredits,
  kExceedsCredits,  // a budget: the debit account would spend more than it has
  kExceedsDebits,
};
// snake_case name, e.g. "exceeds_credits"; for kExistsWithDifferentFields with a
// field, "exists_with_different_<field>".
std::string TransferResultName(TransferResult result, std::string_view field = {});
std::optional<TransferResult> ParseTransferResult(std::string_view name, std::string* field = nullptr);

struct TransferOutcome {
  TransferResult result = TransferResult::kOk;
  std::string field;      // for kExistsWithDifferentFields
  std::int64_t seq = 0;   // the recorded transfer's position (0 when not recorded)
  bool ok() const { return result == TransferResult::kOk; }
  bool succeeded() const;  // ok, or exists with an original result of ok
  std::string name() const { return TransferResultName(result, field); }
};

// A transfer as recorded: the request, its position, its effective amount and
// its result (rejected requests are recorded too; they move nothing).
struct TransferRecord {
  std::int64_t seq = 0;
  Transfer transfer;
  TransferResult result = TransferResult::kOk;
  std::string result_field;
};

enum class HoldState { kPending, kPosted, kVoided, kExpired };
const char* HoldStateName(HoldState state);

struct Hold {
  std::string id;
  std::string debit;
  std::string credit;
  Micros amount = 0;     // held at the start
  Micros remaining = 0;  // still held
  HoldState state = HoldState::kPending;
  std::int64_t expires_us = 0;  // 0: never
  bool operator==(const Hold&) const = default;
};

struct StatementLine {
  TransferRecord record;
  Micros delta = 0;    // effect on the account's posted balance
  Micros balance = 0;  // posted balance after this entry
};

// What Check() found. `violations` lists every broken invariant, first first.
struct CheckReport {
  std::int64_t accounts = 0;
  std::int64_t transfers = 0;   // recorded, accepted
  std::int64_t rejected = 0;    // recorded, rejected
  std::int64_t open_holds = 0;
  Micros grants = 0;            // net of reversed grants
  Micros tenant_balances = 0;   // sum of every non-treasury account's balance
  std::vector<std::string> violations;
  bool ok() const { return violations.empty(); }
};

struct LedgerOptions {
  // This Ledger is the store's only writer for as long as it is open (the
  // simulator's private store; never a daemon's, which other processes and
  // the HTTP server share): it keeps every account, every hold and the ids
  // of every recorded transfer in memory and reads them from there instead
  // of the store. The store stays the record: every batch is written as
  // always, and the memory follows only what a committed batch wrote.
  bool sole_writer = false;
  // With sole_writer, > 0: batches are decided in memory and their records
  // reach the store in groups of at least this many transfers, one store
  // transaction per group, instead of one transaction per batch (0). Any
  // other call — a read (Check, GetTransfer, Statement, ...), CreateAccount,
  // ExpireHolds, a batch that retries a recorded id or reverses a transfer —
  // and Sync() write the group first, so what the store holds is never read
  // stale. What is not written yet dies with the process, and once a group
  // fails to be written the ledger refuses every later call: for the
  // simulator's private in-memory store only, whose records die with it
  // anyway (docs/market.md, "The market in the simulator").
  std::size_t write_behind = 0;
};

struct LedgerMemo;  // ledger_batch.h

class Ledger {
 public:
  // Opens the ledger kept in `store` and makes sure the system accounts exist.
  static Result<Ledger> Open(store::Store& store, LedgerOptions options = {});

  // Creates accounts; an account that exists with the same kind and flags is
  // "exists", with different ones an error. Names: 1-128 printable ASCII
  // characters without spaces; names starting with '@' are system accounts.
  Status CreateAccount(const AccountSpec& spec);

  // Applies `batch` in order in one store transaction and returns one outcome
  // per transfer. Store failures (I/O, a lost connection) are the Error; the
  // per-transfer results say what the ledger decided.
  Result<std::vector<TransferOutcome>> CreateTransfers(std::span<const Transfer> batch);
  Result<TransferOutcome> CreateTransfer(const Transfer& transfer);

  // Voids, as transfers with code "expiry" and id "expire:<hold>", every hold
  // whose expiry is at or before now_us. Returns how many expired.
  Result<int> ExpireHolds(std::int64_t now_us);

  Result<std::optional<Account>> GetAccount(std::string_view name) const;
  Result<std::vector<Account>> Accounts() const;
  Result<std::optional<TransferRecord>> GetTransfer(std::string_view id) const;
  Result<std::optional<Hold>> GetHold(std::string_view id) const;
  Result<std::vector<Hold>> OpenHolds() const;
  // The account's accepted entries in ledger order, with the running balance.
  Result<std::vector<StatementLine>> Statement(std::string_view account) const;

  // Replays every recorded transfer from an empty book and compares: every
  // cached balance equals the sum of its entries, every hold equals its
  // pending/post/void history, budgets held at every step, only grants touch
  // the treasury, and the sum of all non-treasury balances equals the grants.
  Result<CheckReport> Check() const;

  // LedgerOptions::write_behind: writes every decided batch not in the store
  // yet. Without write_behind there is nothing to write.
  Status Sync() const;

  store::Store& store() const { return *store_; }

 private:
  explicit Ledger(store::Store& store) : store_(&store) {}
  store::Store* store_;
  std::shared_ptr<LedgerMemo> memo_;  // with LedgerOptions::sole_writer; shared by copies
  // After a write: a committed batch (if any) goes into the memo; a failed
  // write drops the memo (the ledger reads the store from then on).
  Status Committed(Status written, const std::optional<class Batch>& batch);
};

// Validates an account or hold name; returns why not, or empty.
std::string InvalidAccountName(std::string_view name);

}  // namespace tidal::market
