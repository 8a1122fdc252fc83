#include "market/ledger.h"

#include <algorithm>
#include <array>
#include <utility>

#include "market/ledger_batch.h"
#include "market/ledger_rows.h"

namespace tidal::market {
namespace {

using R = TransferResult;

constexpr std::pair<R, std::string_view> kResultNames[] = {
    {R::kOk, "ok"},
    {R::kExists, "exists"},
    {R::kExistsWithDifferentFields, "exists_with_different_fields"},
    {R::kLinkedEventFailed, "linked_event_failed"},
    {R::kLinkedEventChainOpen, "linked_event_chain_open"},
    {R::kIdMustNotBeEmpty, "id_must_not_be_empty"},
    {R::kIdTooLong, "id_too_long"},
    {R::kReservedFlag, "reserved_flag"},
    {R::kFlagsAreMutuallyExclusive, "flags_are_mutually_exclusive"},
    {R::kCodeMustNotBeEmpty, "code_must_not_be_empty"},
    {R::kCodeReserved, "code_reserved"},
    {R::kAmountMustBePositive, "amount_must_be_positive"},
    {R::kAmountMustBeZeroOrRemaining, "amount_must_be_zero_or_remaining"},
    {R::kAccountsMustBeDifferent, "accounts_must_be_different"},
    {R::kPendingIdMustBeEmpty, "pending_id_must_be_empty"},
    {R::kPendingIdMustNotBeEmpty, "pending_id_must_not_be_empty"},
    {R::kPendingIdMustBeDifferent, "pending_id_must_be_different"},
    {R::kTimeoutReservedForPendingTransfer, "timeout_reserved_for_pending_transfer"},
    {R::kTimeoutMustNotBeNegative, "timeout_must_not_be_negative"},
    {R::kDebitAccountNotFound, "debit_account_not_found"},
    {R::kCreditAccountNotFound, "credit_account_not_found"},
    {R::kPendingTransferNotFound, "pending_transfer_not_found"},
    {R::kPendingTransferHasDifferentDebit, "pending_transfer_has_different_debit"},
    {R::kPendingTransferHasDifferentCredit, "pending_transfer_has_different_credit"},
    {R::kPendingTransferAlreadyPosted, "pending_transfer_already_posted"},
    {R::kPendingTransferAlreadyVoided, "pending_transfer_already_voided"},
    {R::kPendingTransferExpired, "pending_transfer_expired"},
    {R::kExceedsPendingTransferAmount, "exceeds_pending_transfer_amount"},
    {R::kGrantMustDebitTreasury, "grant_must_debit_treasury"},
    {R::kTreasuryOnlyForGrants, "treasury_only_for_grants"},
    {R::kReversedTransferNotFound, "reversed_transfer_not_found"},
    {R::kReversalMustSwapAccounts, "reversal_must_swap_accounts"},
    {R::kReversalExceedsOriginal, "reversal_exceeds_original"},
    {R::kOverflowsDebits, "overflows_debits"},
    {R::kOverflowsCredits, "overflows_credits"},
    {R::kExceedsCredits, "exceeds_credits"},
    {R::kExceedsDebits, "exceeds_debits"},
};

constexpr std::string_view kDifferentPrefix = "exists_with_different_";

const std::array<std::string_view, 4> kSystemAccounts = {kTreasury, kRevenue, kLendingPool, kPenalties};

}  // namespace

const char* AccountKindName(AccountKind kind) { return kind == AccountKind::kTenant ? "tenant" : "system"; }

const char* HoldStateName(HoldState state) {
  switch (state) {
    case HoldState::kPending: return "pending";
    case HoldState::kPosted: return "posted";
    case HoldState::kVoided: return "voided";
    case HoldState::kExpired: return "expired";
  }
  return "?";
}

std::string TransferResultName(TransferResult result, std::string_view field) {
  if (result == R::kExistsWithDifferentFields && !field.empty())
    return fmt::format("{}{}", kDifferentPrefix, field);
  for (const auto& [r, name] : kResultNames)
    if (r == result) return std::string(name);
  return "unknown";
}

std::optional<TransferResult> ParseTransferResult(std::string_view name, std::string* field) {
  for (const auto& [r, n] : kResultNames)
    if (n == name) return r;
  if (name.starts_with(kDifferentPrefix) && name.size() > kDifferentPrefix.size()) {
    if (field) *field = std::string(name.substr(kDifferentPrefix.size()));
    return R::kExistsWithDifferentFields;
  }
  return std::nullopt;
}

bool TransferOutcome::succeeded() const { return result == R::kOk || result == R::kExists; }

std::string InvalidAccountName(std::string_view name) {
  if (name.empty()) return "it is empty";
  if (name.size() > 128) return fmt::format("it is {} characters long (at most 128)", name.size());
  for (char c : name)
    if (c <= ' ' || c > '~')
      return fmt::format("it holds the character 0x{:02x} (use printable ASCII without spaces)",
                         static_cast<unsigned char>(c));
  return {};
}

Result<Ledger> Ledger::Open(store::Store& store, LedgerOptions options) {
  Ledger ledger(store);
  for (std::string_view name : kSystemAccounts) {
    const std::uint32_t flags = name == kTreasury ? 0 : account_flags::kDebitsMustNotExceedCredits;
    TIDAL_RETURN_IF_ERROR(
        ledger.CreateAccount({.name = std::string(name), .kind = AccountKind::kSystem, .flags = flags}));
  }
  if (options.write_behind > 0 && !options.sole_writer)
    return MakeError(ErrorCode::kInvalidArgument,
                     "ledger: write_behind needs sole_writer (only the store's sole writer may decide "
                     "transfers before the store holds them)");
  if (options.sole_writer) {
    LedgerMemo memo;
    TIDAL_RETURN_IF_ERROR(store.Read([&](store::Tx& tx) -> Status {
      TIDAL_ASSIGN_OR_RETURN(memo, LedgerMemo::Load(tx));
      return Ok();
    }));
    memo.write_behind = options.write_behind;
    ledger.memo_ = std::make_shared<LedgerMemo>(std::move(memo));
  }
  return ledger;
}

Status Ledger::CreateAccount(const AccountSpec& spec) {
  if (std::string why = InvalidAccountName(spec.name); !why.empty())
    return MakeError(ErrorCode::kInvalidArgument, "account name '{}' is not valid: {}", spec.name, why);
  const bool system_name = spec.name.front() == '@';
  if (system_name != (spec.kind == AccountKind::kSystem))
    return MakeError(ErrorCode::kInvalidArgument,
                     "account '{}': names starting with '@' are for system accounts, and only they; "
                     "choose a tenant name without the '@'",
                     spec.name);
  if ((spec.flags & ~account_flags::kAll) != 0)
    return MakeError(ErrorCode::kInvalidArgument, "account '{}': unknown flags 0x{:x}", spec.name, spec.flags);
  TIDAL_RETURN_IF_ERROR(Sync());
  std::optional<Account> created;
  TIDAL_RETURN_IF_ERROR(Committed(store_->Write([&](store::Tx& tx) -> Status {
    created.reset();
    TIDAL_ASSIGN_OR_RETURN(std::optional<Account> existing, rows::LoadAccount(tx, spec.name));
    if (existing) {
      if (existing->kind != spec.kind || existing->flags != spec.flags)
        return MakeError(ErrorCode::kFailedPrecondition,
                         "account '{}' exists already as a {} account with flags 0x{:x}, not {} with 0x{:x}",
                         spec.name, AccountKindName(existing->kind), existing->flags,
                         AccountKindName(spec.kind), spec.flags);
      return Ok();  // exists, identical
    }
    TIDAL_ASSIGN_OR_RETURN(std::int64_t seq, rows::MaxSeq(tx));
    created = Account{.name = spec.name, .kind = spec.kind, .flags = spec.flags, .created_seq = seq};
    return rows::InsertAccount(tx, *created);
  }), std::nullopt));
  if (memo_ && created) memo_->accounts.insert_or_assign(created->name, *created);
  return Ok();
}

Result<std::vector<TransferOutcome>> Ledger::CreateTransfers(std::span<const Transfer> batch) {
  std::vector<TransferOutcome> out;
  if (memo_ && memo_->write_behind > 0) {
    if (!memo_->broken.empty()) return std::unexpected(Sync().error());
    // Decided in memory unless the batch must read a record from the store:
    // a retried id (its original answer; or an id that only shares a
    // recorded one's hash) or a reversal (what it reverses and
    // what was reversed before). Those write the group first, then go the
    // store's way below.
    const bool reads = std::ranges::any_of(batch, [&](const Transfer& t) {
      return t.code == kCodeReversal || memo_->MayHoldId(t.id);
    });
    if (!reads) {
      Batch b(nullptr, memo_.get());
      TIDAL_ASSIGN_OR_RETURN(out, b.Apply(batch));
      std::move(b).CommitUnwritten(*memo_);
      if (memo_->unwritten.records.size() >= memo_->write_behind) TIDAL_RETURN_IF_ERROR(Sync());
      return out;
    }
    TIDAL_RETURN_IF_ERROR(Sync());
  }
  std::optional<Batch> b;
  TIDAL_RETURN_IF_ERROR(Committed(store_->Write([&](store::Tx& tx) -> Status {
    b.emplace(&tx, memo_.get());
    TIDAL_ASSIGN_OR_RETURN(out, b->Apply(batch));
    return b->Flush();
  }), b));
  return out;
}

Status Ledger::Sync() const {
  if (!memo_ || memo_->write_behind == 0) return Ok();
  LedgerMemo& m = *memo_;
  if (!m.broken.empty())
    return MakeError(ErrorCode::kFailedPrecondition,
                     "ledger: a group of decided transfers could not be written to the store ({}), so the "
                     "store is behind what this ledger answered; discard it and rerun",
                     m.broken);
  if (m.unwritten.empty()) return Ok();
  Status written = store_->Write([&](store::Tx& tx) -> Status {
    TIDAL_RETURN_IF_ERROR(rows::InsertTransfers(tx, m.unwritten.records));
    for (const auto& [name, a] : m.unwritten.accounts) TIDAL_RETURN_IF_ERROR(rows::UpdateAccountBalances(tx, a));
    std::vector<const Hold*> holds;
    holds.reserve(m.unwritten.holds.size());
    for (std::string_view id : m.unwritten.holds) holds.push_back(&m.holds.find(id)->second);
    std::ranges::sort(holds, {}, &Hold::id);  // one order, whatever the set's
    TIDAL_RETURN_IF_ERROR(rows::UpsertHolds(tx, holds));
    return Ok();
  });
  if (!written) {
    m.broken = written.error().ToString();
    return written;
  }
  m.unwritten = {};
  return Ok();
}

Status Ledger::Committed(Status written, const std::optional<Batch>& batch) {
  if (!written) {
    memo_.reset();  // what the store holds is not known for sure: read it from now on
    return written;
  }
  if (memo_ && batch) batch->Commit(*memo_);
  return written;
}

Result<TransferOutcome> Ledger::CreateTransfer(const Transfer& transfer) {
  TIDAL_ASSIGN_OR_RETURN(std::vector<TransferOutcome> out, CreateTransfers(std::span(&transfer, 1)));
  return out.front();
}

Result<int> Ledger::ExpireHolds(std::int64_t now_us) {
  TIDAL_RETURN_IF_ERROR(Sync());
  int expired = 0;
  std::optional<Batch> b;
  TIDAL_RETURN_IF_ERROR(Committed(store_->Write([&](store::Tx& tx) -> Status {
    expired = 0;
    TIDAL_ASSIGN_OR_RETURN(std::vector<std::string> ids, rows::ExpiredHoldIds(tx, now_us));
    std::vector<Transfer> voids;
    voids.reserve(ids.size());
    for (const std::string& id : ids)
      voids.push_back(Transfer{.id = "expire:" + id,
                               .flags = transfer_flags::kVoidPending,
                               .pending_id = id,
                               .code = std::string(kCodeExpiry),
                               .at_us = now_us});
    b.emplace(&tx, memo_.get());
    TIDAL_ASSIGN_OR_RETURN(std::vector<TransferOutcome> out, b->Apply(voids, /*expiry=*/true));
    for (const auto& o : out) {
      if (o.ok()) ++expired;
      else if (o.result != R::kExists)
        return MakeError(ErrorCode::kInternal, "expiring a hold failed: {}", o.name());
    }
    return b->Flush();
  }), b));
  return expired;
}

Result<std::optional<Account>> Ledger::GetAccount(std::string_view name) const {
  TIDAL_RETURN_IF_ERROR(Sync());
  std::optional<Account> out;
  TIDAL_RETURN_IF_ERROR(store_->Read([&](store::Tx& tx) -> Status {
    TIDAL_ASSIGN_OR_RETURN(out, rows::LoadAccount(tx, name));
    return Ok();
  }));
  return out;
}

Result<std::vector<Account>> Ledger::Accounts() const {
  TIDAL_RETURN_IF_ERROR(Sync());
  std::vector<Account> out;
  TIDAL_RETURN_IF_ERROR(store_->Read([&](store::Tx& tx) -> Status {
    TIDAL_ASSIGN_OR_RETURN(out, rows::LoadAccounts(tx));
    return Ok();
  }));
  return out;
}

Result<std::optional<TransferRecord>> Ledger::GetTransfer(std::string_view id) const {
  TIDAL_RETURN_IF_ERROR(Sync());
  std::optional<TransferRecord> out;
  TIDAL_RETURN_IF_ERROR(store_->Read([&](store::Tx& tx) -> Status {
    TIDAL_ASSIGN_OR_RETURN(out, rows::LoadTransfer(tx, id));
    return Ok();
  }));
  return out;
}

Result<std::optional<Hold>> Ledger::GetHold(std::string_view id) const {
  TIDAL_RETURN_IF_ERROR(Sync());
  std::optional<Hold> out;
  TIDAL_RETURN_IF_ERROR(store_->Read([&](store::Tx& tx) -> Status {
    TIDAL_ASSIGN_OR_RETURN(out, rows::LoadHold(tx, id));
    return Ok();
  }));
  return out;
}

Result<std::vector<Hold>> Ledger::OpenHolds() const {
  TIDAL_RETURN_IF_ERROR(Sync());
  std::vector<Hold> out;
  TIDAL_RETURN_IF_ERROR(store_->Read([&](store::Tx& tx) -> Status {
    TIDAL_ASSIGN_OR_RETURN(out, rows::LoadHolds(tx, /*open_only=*/true));
    return Ok();
  }));
  return out;
}

Result<std::vector<StatementLine>> Ledger::Statement(std::string_view account) const {
  TIDAL_RETURN_IF_ERROR(Sync());
  std::vector<StatementLine> out;
  TIDAL_RETURN_IF_ERROR(store_->Read([&](store::Tx& tx) -> Status {
    TIDAL_ASSIGN_OR_RETURN(std::optional<Account> a, rows::LoadAccount(tx, account));
    if (!a) return MakeError(ErrorCode::kNotFound, "no account '{}' (list them with `tidal market balance`)", account);
    TIDAL_ASSIGN_OR_RETURN(std::vector<TransferRecord> recs, rows::LoadAccountTransfers(tx, account));
    Micros balance = 0;
    for (TransferRecord& r : recs) {
      const Transfer& t = r.transfer;
      Micros delta = 0;
      const bool moves = (t.flags & (transfer_flags::kPending | transfer_flags::kVoidPending)) == 0;
      if (moves) delta = t.credit == account ? t.amount : -t.amount;
      balance += delta;
      out.push_back(StatementLine{.record = std::move(r), .delta = delta, .balance = balance});
    }
    return Ok();
  }));
  return out;
}

}  // namespace tidal::market
