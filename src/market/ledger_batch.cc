#include "market/ledger_batch.h"

#include <algorithm>
#include <bit>
#include <utility>

#include "market/ledger_rows.h"

namespace tidal::market {
namespace {

using R = TransferResult;
namespace tf = transfer_flags;
namespace af = account_flags;

constexpr std::size_t kMaxIdLength = 256;

bool IsPost(const Transfer& t) { return (t.flags & tf::kPostPending) != 0; }
bool IsVoid(const Transfer& t) { return (t.flags & tf::kVoidPending) != 0; }
bool IsPending(const Transfer& t) { return (t.flags & tf::kPending) != 0; }
bool IsLinked(const Transfer& t) { return (t.flags & tf::kLinked) != 0; }

// The first field in which a retried request differs from the recorded one, or
// empty. A post or void is recorded with the hold's accounts and, for a void,
// the amount it released; a request that left those out (empty / 0) matches.
std::string DifferentField(const Transfer& req, const Transfer& rec) {
  const bool hold_op = IsPost(rec) || IsVoid(rec);
  if (req.flags != rec.flags) return "flags";
  if (req.debit != rec.debit && !(hold_op && req.debit.empty())) return "debit";
  if (req.credit != rec.credit && !(hold_op && req.credit.empty())) return "credit";
  if (req.amount != rec.amount && !(IsVoid(rec) && req.amount == 0)) return "amount";
  if (req.pending_id != rec.pending_id) return "pending_id";
  if (req.timeout_s != rec.timeout_s) return "timeout";
  if (req.code != rec.code) return "code";
  if (req.reference != rec.reference) return "reference";
  if (req.reason != rec.reason) return "reason";
  return {};
}

// a += d without overflow; false when it would overflow.
bool Add(Micros& a, Micros d) { return !__builtin_add_overflow(a, d, &a); }

}  // namespace

template <class Map, class Log>
void Batch::Save(Map& map, std::string_view key, Log& log) {
  auto it = map.find(key);
  log.emplace_back(std::string(key), it == map.end() ? std::nullopt : std::make_optional(it->second));
}

void Batch::Rollback() {
  auto restore = [](auto& map, auto& log) {
    for (auto it = log.rbegin(); it != log.rend(); ++it) {
      if (it->second) map.insert_or_assign(it->first, std::move(*it->second));
      else if (auto found = map.find(it->first); found != map.end()) map.erase(found);
    }
  };
  restore(state_.accounts, undo_->accounts);
  restore(state_.holds, undo_->holds);
  restore(state_.created, undo_->created);
  restore(state_.reversed, undo_->reversed);
  state_.next_seq = undo_->next_seq;
}

Result<LedgerMemo> LedgerMemo::Load(store::Tx& tx) {
  LedgerMemo m;
  TIDAL_ASSIGN_OR_RETURN(std::vector<Account> accounts, rows::LoadAccounts(tx));
  for (Account& a : accounts) m.accounts.emplace(a.name, std::move(a));
  TIDAL_ASSIGN_OR_RETURN(std::vector<Hold> holds, rows::LoadHolds(tx, /*open_only=*/false));
  for (Hold& h : holds) m.holds.emplace(h.id, std::move(h));
  TIDAL_RETURN_IF_ERROR(rows::ForEachTransfer(tx, [&](const TransferRecord& r) -> Status {
    m.id_hashes.insert(LedgerMemo::IdHash(r.transfer.id));
    return Ok();
  }));
  TIDAL_ASSIGN_OR_RETURN(std::int64_t max_seq, rows::MaxSeq(tx));
  m.next_seq = max_seq + 1;
  return m;
}

void Batch::Commit(LedgerMemo& memo) const {
  for (const auto& [name, a] : state_.accounts)
    if (a) memo.accounts.insert_or_assign(name, *a);
  for (const auto& [id, h] : state_.holds)
    if (h) memo.holds.insert_or_assign(id, *h);
  for (const auto& [id, rec] : state_.created)
    if (rec.seq > 0) memo.id_hashes.insert(LedgerMemo::IdHash(id));
  if (seq_loaded_) memo.next_seq = state_.next_seq;
}

std::vector<TransferRecord*> Batch::NewRecords() {
  std::vector<TransferRecord*> out;
  out.reserve(state_.created.size());
  for (auto& [id, rec] : state_.created)
    if (rec.seq > 0) out.push_back(&rec);  // not loaded from the store
  std::ranges::sort(out, {}, &TransferRecord::seq);
  return out;
}

void Batch::CommitUnwritten(LedgerMemo& memo) && {
  Commit(memo);
  LedgerMemo::Unwritten& u = memo.unwritten;
  for (TransferRecord* rec : NewRecords()) u.records.push_back(std::move(*rec));
  for (const auto& [name, a] : state_.accounts)
    if (a) u.accounts.insert_or_assign(name, *a);
  for (const auto& [id, h] : state_.holds)
    if (h) u.holds.insert(memo.holds.find(id)->first);  // Commit put it there
}

Result<const TransferRecord*> Batch::Existing(std::string_view id) {
  if (auto it = state_.created.find(id); it != state_.created.end()) return &it->second;
  if (memo_ && !memo_->MayHoldId(id)) return static_cast<const TransferRecord*>(nullptr);
  TIDAL_ASSIGN_OR_RETURN(store::Tx* tx, Tx());
  TIDAL_ASSIGN_OR_RETURN(std::optional<TransferRecord> stored, rows::LoadTransfer(*tx, id));
  if (!stored) return static_cast<const TransferRecord*>(nullptr);
  // Cache it: later lookups in this batch are free and see the same record.
  auto [it, _] = state_.created.emplace(std::string(id), std::move(*stored));
  it->second.seq = -it->second.seq;  // negative: stored before, not written again
  return &it->second;
}

Result<Account*> Batch::AccountRef(std::string_view name) {
  auto it = state_.accounts.find(name);
  if (it == state_.accounts.end()) {
    std::optional<Account> a;
    if (memo_) {
      if (auto m = memo_->accounts.find(name); m != memo_->accounts.end()) a = m->second;
    } else {
      TIDAL_ASSIGN_OR_RETURN(store::Tx* tx, Tx());
      TIDAL_ASSIGN_OR_RETURN(a, rows::LoadAccount(*tx, name));
    }
    it = state_.accounts.emplace(std::string(name), std::move(a)).first;
  }
  if (undo_) undo_->accounts.emplace_back(it->first, std::make_optional(it->second));  // the caller may change it
  return it->second ? &*it->second : nullptr;
}

Result<Hold*> Batch::HoldRef(std::string_view id) {
  auto it = state_.holds.find(id);
  if (it == state_.holds.end()) {
    std::optional<Hold> h;
    if (memo_) {
      if (auto m = memo_->holds.find(id); m != memo_->holds.end()) h = m->second;
    } else {
      TIDAL_ASSIGN_OR_RETURN(store::Tx* tx, Tx());
      TIDAL_ASSIGN_OR_RETURN(h, rows::LoadHold(*tx, id));
    }
    it = state_.holds.emplace(std::string(id), std::move(h)).first;
  }
  if (undo_) undo_->holds.emplace_back(it->first, std::make_optional(it->second));  // the caller may change it
  return it->second ? &*it->second : nullptr;
}

Result<Micros> Batch::Reversed(std::string_view id) {
  auto it = state_.reversed.find(id);
  if (it == state_.reversed.end()) {
    TIDAL_ASSIGN_OR_RETURN(store::Tx* tx, Tx());
    TIDAL_ASSIGN_OR_RETURN(Micros stored, rows::ReversedAmount(*tx, id));
    it = state_.reversed.emplace(std::string(id), stored).first;
  }
  return it->second;
}

void Batch::Record(Transfer t, TransferResult r, TransferOutcome& out) {
  out.result = r;
  if (t.id.empty() || t.id.size() > kMaxIdLength) return;  // cannot be recorded under its id
  std::string id = t.id;
  TransferRecord rec{.seq = state_.next_seq++, .transfer = std::move(t), .result = r};
  out.seq = rec.seq;
  if (undo_) Save(state_.created, id, undo_->created);
  state_.created.insert_or_assign(std::move(id), std::move(rec));
}

Result<TransferOutcome> Batch::One(const Transfer& t, bool expiry) {
  TransferOutcome out;
  last_was_prior_ = false;
  auto reject = [&](TransferResult r) -> Result<TransferOutcome> {
    Record(t, r, out);
    return out;
  };
  if (t.id.empty()) return TransferOutcome{.result = R::kIdMustNotBeEmpty};
  if (t.id.size() > kMaxIdLength) return TransferOutcome{.result = R::kIdTooLong};

  TIDAL_ASSIGN_OR_RETURN(const TransferRecord* prior, Existing(t.id));
  last_was_prior_ = prior != nullptr;
  if (prior) {
    out.seq = prior->seq < 0 ? -prior->seq : prior->seq;
    if (std::string f = DifferentField(t, prior->transfer); !f.empty()) {
      out.result = R::kExistsWithDifferentFields;
      out.field = std::move(f);
    } else if (prior->result == R::kOk) {
      out.result = R::kExists;
    } else {
      out.result = prior->result;  // the original rejection, as first answered
      out.field = prior->result_field;
    }
    return out;
  }

  if ((t.flags & ~tf::kAll) != 0) return reject(R::kReservedFlag);
  if (std::popcount(t.flags & (tf::kPending | tf::kPostPending | tf::kVoidPending)) > 1)
    return reject(R::kFlagsAreMutuallyExclusive);
  if (t.code.empty()) return reject(R::kCodeMustNotBeEmpty);
  if (t.code == kCodeExpiry && !expiry) return reject(R::kCodeReserved);
  if (t.timeout_s < 0) return reject(R::kTimeoutMustNotBeNegative);
  if (t.timeout_s > 0 && !IsPending(t)) return reject(R::kTimeoutReservedForPendingTransfer);

  Transfer rec = t;  // what is recorded: hold operations carry the hold's accounts
  if (IsPost(t) || IsVoid(t)) {
    if (t.pending_id.empty()) return reject(R::kPendingIdMustNotBeEmpty);
    if (t.pending_id == t.id) return reject(R::kPendingIdMustBeDifferent);
    TIDAL_ASSIGN_OR_RETURN(Hold* hold, HoldRef(t.pending_id));
    if (!hold) return reject(R::kPendingTransferNotFound);
    if (!t.debit.empty() && t.debit != hold->debit) return reject(R::kPendingTransferHasDifferentDebit);
    if (!t.credit.empty() && t.credit != hold->credit) return reject(R::kPendingTransferHasDifferentCredit);
    if (hold->state == HoldState::kPosted) return reject(R::kPendingTransferAlreadyPosted);
    if (hold->state == HoldState::kVoided) return reject(R::kPendingTransferAlreadyVoided);
    if (hold->state == HoldState::kExpired) return reject(R::kPendingTransferExpired);
    if (!expiry && hold->expires_us > 0 && t.at_us >= hold->expires_us)
      return reject(R::kPendingTransferExpired);
    Micros moved = t.amount;
    if (IsPost(t)) {
      if (t.amount <= 0) return reject(R::kAmountMustBePositive);
      if (t.amount > hold->remaining) return reject(R::kExceedsPendingTransferAmount);
    } else {
      if (t.amount != 0 && t.amount != hold->remaining) return reject(R::kAmountMustBeZeroOrRemaining);
      moved = hold->remaining;
    }
    TIDAL_ASSIGN_OR_RETURN(Account* debit, AccountRef(hold->debit));
    TIDAL_ASSIGN_OR_RETURN(Account* credit, AccountRef(hold->credit));
    if (!debit) return reject(R::kDebitAccountNotFound);
    if (!credit) return reject(R::kCreditAccountNotFound);
    rec.debit = hold->debit;
    rec.credit = hold->credit;
    rec.amount = moved;
    // Moving from pending to posted cannot overflow more than the hold did,
    // nor break a budget: the hold was checked when it was placed.
    debit->debits_pending -= moved;
    credit->credits_pending -= moved;
    if (IsPost(t)) {
      if (!Add(debit->debits_posted, moved)) return reject(R::kOverflowsDebits);
      if (!Add(credit->credits_posted, moved)) return reject(R::kOverflowsCredits);
    }
    hold->remaining -= moved;
    if (IsVoid(t)) hold->state = expiry ? HoldState::kExpired : HoldState::kVoided;
    else if (hold->remaining == 0) hold->state = HoldState::kPosted;
    Record(std::move(rec), R::kOk, out);
    return out;
  }

  if (!t.pending_id.empty()) return reject(R::kPendingIdMustBeEmpty);
  if (t.amount <= 0) return reject(R::kAmountMustBePositive);
  if (t.debit == t.credit) return reject(R::kAccountsMustBeDifferent);
  TIDAL_ASSIGN_OR_RETURN(Account* debit, AccountRef(t.debit));
  if (!debit) return reject(R::kDebitAccountNotFound);
  TIDAL_ASSIGN_OR_RETURN(Account* credit, AccountRef(t.credit));
  if (!credit) return reject(R::kCreditAccountNotFound);
  const bool treasury = t.debit == kTreasury || t.credit == kTreasury;
  if (t.code == kCodeGrant && (t.debit != kTreasury || IsPending(t))) return reject(R::kGrantMustDebitTreasury);
  if (treasury && t.code != kCodeGrant && t.code != kCodeReversal) return reject(R::kTreasuryOnlyForGrants);
  if (t.code == kCodeReversal) {
    if (IsPending(t)) return reject(R::kReversalMustSwapAccounts);
    TIDAL_ASSIGN_OR_RETURN(const TransferRecord* orig, Existing(t.reference));
    if (!orig || orig->result != R::kOk || IsPending(orig->transfer) || IsVoid(orig->transfer))
      return reject(R::kReversedTransferNotFound);
    if (orig->transfer.debit != t.credit || orig->transfer.credit != t.debit)
      return reject(R::kReversalMustSwapAccounts);
    TIDAL_ASSIGN_OR_RETURN(Micros already, Reversed(t.reference));
    if (t.amount > orig->transfer.amount - already) return reject(R::kReversalExceedsOriginal);
  }

  // Overflow, then budgets (TigerBeetle's order), on copies so that a
  // rejection leaves the accounts as they were.
  Account d = *debit;
  Account c = *credit;
  Micros& d_side = IsPending(t) ? d.debits_pending : d.debits_posted;
  Micros& c_side = IsPending(t) ? c.credits_pending : c.credits_posted;
  Micros d_total = d.debits_pending;  // pending + posted + amount, before the amount lands
  Micros c_total = c.credits_pending;
  if (!Add(d_total, d.debits_posted) || !Add(d_total, t.amount) || !Add(d_side, t.amount))
    return reject(R::kOverflowsDebits);
  if (!Add(c_total, c.credits_posted) || !Add(c_total, t.amount) || !Add(c_side, t.amount))
    return reject(R::kOverflowsCredits);
  if ((d.flags & af::kDebitsMustNotExceedCredits) && d_total > d.credits_posted) return reject(R::kExceedsCredits);
  if ((c.flags & af::kCreditsMustNotExceedDebits) && c_total > c.debits_posted) return reject(R::kExceedsDebits);
  *debit = std::move(d);
  *credit = std::move(c);
  if (IsPending(t)) {
    Micros expires = 0;
    if (t.timeout_s > 0 &&
        (__builtin_mul_overflow(t.timeout_s, std::int64_t{1'000'000}, &expires) ||
         !Add(expires, t.at_us)))
      expires = INT64_MAX;
    if (undo_) Save(state_.holds, t.id, undo_->holds);
    state_.holds.insert_or_assign(t.id, Hold{.id = t.id,
                                             .debit = t.debit,
                                             .credit = t.credit,
                                             .amount = t.amount,
                                             .remaining = t.amount,
                                             .state = HoldState::kPending,
                                             .expires_us = expires});
  }
  if (t.code == kCodeReversal) {
    if (undo_) Save(state_.reversed, t.reference, undo_->reversed);
    state_.reversed[t.reference] += t.amount;
  }
  Record(std::move(rec), R::kOk, out);
  return out;
}

Result<std::vector<TransferOutcome>> Batch::Apply(std::span<const Transfer> transfers, bool expiry) {
  if (!seq_loaded_) {
    if (memo_) {
      state_.next_seq = memo_->next_seq;
    } else {
      TIDAL_ASSIGN_OR_RETURN(store::Tx* tx, Tx());
      TIDAL_ASSIGN_OR_RETURN(std::int64_t max_seq, rows::MaxSeq(*tx));
      state_.next_seq = max_seq + 1;
    }
    seq_loaded_ = true;
  }
  std::vector<TransferOutcome> out(transfers.size());
  std::size_t i = 0;
  while (i < transfers.size()) {
    // The chain [i, end]: linked events up to and including the first unlinked.
    std::size_t end = i;
    while (end < transfers.size() && IsLinked(transfers[end])) ++end;
    const bool open = end == transfers.size();
    if (open) --end;
    if (end == i && !open) {
      TIDAL_ASSIGN_OR_RETURN(out[i], One(transfers[i], expiry));
      ++i;
      continue;
    }
    undo_.emplace();
    undo_->next_seq = state_.next_seq;
    std::vector<bool> prior(end - i + 1);
    std::optional<std::size_t> failed;
    for (std::size_t k = i; k <= end; ++k) {
      auto one = One(transfers[k], expiry);
      if (!one) {
        undo_.reset();
        return std::unexpected(one.error());
      }
      out[k] = std::move(*one);
      prior[k - i] = last_was_prior_;
      if (!failed && !last_was_prior_ && !out[k].ok()) failed = k;
    }
    Undo undo = std::move(*undo_);
    undo_.reset();
    const auto n_prior = std::count(prior.begin(), prior.end(), true);
    if (!open && n_prior == static_cast<std::ptrdiff_t>(prior.size())) {
      i = end + 1;  // a retried chain: every event answers as it did first
      continue;
    }
    if (open && !failed) failed = end;
    // A chain that mixes earlier records with new events was not sent as it
    // first committed (chains commit whole), so it fails like any other.
    if (!failed && n_prior > 0)
      for (std::size_t k = i; k <= end && !failed; ++k)
        if (prior[k - i]) failed = k;
    if (failed) {
      undo_ = std::move(undo);
      Rollback();
      undo_.reset();
      for (std::size_t k = i; k <= end; ++k) {
        if (prior[k - i]) continue;  // an earlier record keeps its answer
        TransferResult r = R::kLinkedEventFailed;
        if (k == *failed) r = out[k].ok() ? R::kLinkedEventChainOpen : out[k].result;
        out[k] = TransferOutcome{};
        Record(transfers[k], r, out[k]);
      }
    }
    i = end + 1;
  }
  return out;
}

Status Batch::Flush() {
  TIDAL_ASSIGN_OR_RETURN(store::Tx* tx, Tx());
  for (const TransferRecord* rec : NewRecords()) TIDAL_RETURN_IF_ERROR(rows::InsertTransfer(*tx, *rec));
  for (const auto& [name, a] : state_.accounts)
    if (a) TIDAL_RETURN_IF_ERROR(rows::UpdateAccountBalances(*tx, *a));
  for (const auto& [id, h] : state_.holds)
    if (h) TIDAL_RETURN_IF_ERROR(rows::UpsertHold(*tx, *h));
  return Ok();
}

Result<store::Tx*> Batch::Tx() {
  if (tx_) return tx_;
  return MakeError(ErrorCode::kInternal,
                   "ledger: a write-behind batch needed to read the store (a retried id or a reversal "
                   "should have written the group first); this is a bug in tidal, please report it");
}

}  // namespace tidal::market
