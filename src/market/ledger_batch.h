// One batch of transfers applied inside one store transaction: the ledger's
// rules (validation, idempotency, holds, budgets, linked chains) over a working
// copy of the accounts and holds it touches, written back at the end.
// Internal to the ledger.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "market/ledger.h"
#include "store/store.h"

namespace tidal::market {

// LedgerOptions::sole_writer: what the store holds, as of the last committed
// batch — every account, every hold, every recorded transfer's id, and the
// next sequence number.
struct LedgerMemo {
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  // Looked up by name or id only (never listed in order): hashed.
  std::unordered_map<std::string, Account, NameHash, std::equal_to<>> accounts;
  std::unordered_map<std::string, Hold, NameHash, std::equal_to<>> holds;
  // The recorded transfers' ids, as 64-bit hashes: a miss means "not
  // recorded" for sure; a hit means "maybe" (another id may share the hash,
  // about once in 10^10 for a million ids), and the batch reads the store to
  // know. Keeping the ids themselves cost a string per transfer.
  std::unordered_set<std::uint64_t> id_hashes;
  static std::uint64_t IdHash(std::string_view id) noexcept { return std::hash<std::string_view>{}(id); }
  bool MayHoldId(std::string_view id) const { return id_hashes.contains(IdHash(id)); }
  std::int64_t next_seq = 1;
  // LedgerOptions::write_behind: what batches decided that the store does not
  // hold yet (the memory above already does), written by Ledger::Sync.
  struct Unwritten {
    std::vector<TransferRecord> records;
    std::map<std::string, Account, std::less<>> accounts;  // as they are now
    // The holds changed, by id: keys of `holds` above (an entry there never
    // moves nor goes), whose latest state is written.
    std::unordered_set<std::string_view> holds;
    bool empty() const { return records.empty() && accounts.empty() && holds.empty(); }
  };
  std::size_t write_behind = 0;
  Unwritten unwritten;
  std::string broken;  // why a group could not be written; the ledger refuses calls
  // Reads them all from the store.
  static Result<LedgerMemo> Load(store::Tx& tx);
};

class Batch {
 public:
  // `memo` (may be null): read accounts, holds and ids from it, not the store.
  // `tx` null: a write-behind batch, which must need no store read (the
  // caller makes sure: no retried id, no reversal); if it does, Apply fails.
  explicit Batch(store::Tx* tx, const LedgerMemo* memo = nullptr) : tx_(tx), memo_(memo) {}

  // Applies `transfers` in order; linked chains succeed or fail together.
  // `expiry` marks the ledger's own hold-expiry voids (code "expiry").
  Result<std::vector<TransferOutcome>> Apply(std::span<const Transfer> transfers, bool expiry = false);
  // Writes every new record and every changed account and hold.
  Status Flush();
  // After the store committed the flushed batch: `memo` takes what it wrote.
  void Commit(LedgerMemo& memo) const;
  // A write-behind batch, applied without a store: `memo` takes what it
  // decided, and memo.unwritten what Flush would have written (the records
  // move there: the batch is spent).
  void CommitUnwritten(LedgerMemo& memo) &&;

 private:
  template <class V>
  using ById = std::unordered_map<std::string, V, LedgerMemo::NameHash, std::equal_to<>>;
  struct State {
    ById<std::optional<Account>> accounts;
    ById<std::optional<Hold>> holds;
    ById<TransferRecord> created;  // this batch's records (written in seq order)
    ById<Micros> reversed;         // reversed amount by id
    std::int64_t next_seq = 0;
  };

  // A linked chain's undo log: the entries it may change, as they were
  // before (nullopt: absent), restored in reverse order if the chain fails.
  // Copying the whole state per chain made a batch quadratic.
  struct Undo {
    std::vector<std::pair<std::string, std::optional<std::optional<Account>>>> accounts;
    std::vector<std::pair<std::string, std::optional<std::optional<Hold>>>> holds;
    std::vector<std::pair<std::string, std::optional<TransferRecord>>> created;
    std::vector<std::pair<std::string, std::optional<Micros>>> reversed;
    std::int64_t next_seq = 0;
  };
  template <class Map, class Log>
  void Save(Map& map, std::string_view key, Log& log);
  void Rollback();

  // Outcome of one transfer; applies its effect to state_ when ok.
  Result<TransferOutcome> One(const Transfer& t, bool expiry);
  // The stored or created record with this id, if any.
  Result<const TransferRecord*> Existing(std::string_view id);
  Result<Account*> AccountRef(std::string_view name);
  Result<Hold*> HoldRef(std::string_view id);
  Result<Micros> Reversed(std::string_view id);
  void Record(Transfer t, TransferResult r, TransferOutcome& out);  // t: copied or moved in

  // This batch's new records (not those loaded from the store), in seq order.
  std::vector<TransferRecord*> NewRecords();

  // The store transaction, or an error when there is none (write-behind).
  Result<store::Tx*> Tx();

  store::Tx* tx_;
  const LedgerMemo* memo_;
  State state_;
  bool seq_loaded_ = false;
  bool last_was_prior_ = false;  // One() answered from an earlier record
  std::optional<Undo> undo_;     // inside a linked chain
};

}  // namespace tidal::market
