// Pieces both backends share; not part of the store's interface.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "common/result.h"
#include "store/store.h"

namespace tidal::store::internal {

// The first words of a statement, whitespace collapsed, for messages:
// "INSERT INTO ledger_transfers (seq, id, ...".
std::string SqlHead(std::string_view sql);

// Sleeps before retry number `attempt` (0-based): exponential from 1 ms, capped
// at 100 ms, with jitter so that two retrying writers drift apart.
void Backoff(int attempt);

// Heterogeneous lookup for the statement caches: find(string_view) without
// building a std::string per call.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

// One transaction at a time per Store object: other threads wait; a Write or
// Read called from inside fn on the same Store is an error, not a deadlock.
class TxGate {
 public:
  class Held {
   public:
    explicit Held(TxGate& gate) : gate_(gate), lock_(gate.mutex_) { gate_.owner_.store(std::this_thread::get_id()); }
    ~Held() { gate_.owner_.store(std::thread::id()); }
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;

   private:
    TxGate& gate_;
    std::unique_lock<std::mutex> lock_;
  };
  bool HeldByThisThread() const { return owner_.load() == std::this_thread::get_id(); }

 private:
  std::mutex mutex_;
  std::atomic<std::thread::id> owner_{};
};

// The error for a Write/Read started from inside another on the same Store.
Error NestedTransactionError(std::string_view display_url);

// A Store that can also run fn in a transaction holding the store's migration
// lock from its first statement, so that two processes opening a new store at
// once do not both migrate it (SQLite: BEGIN IMMEDIATE; PostgreSQL: READ
// COMMITTED plus a transaction-scoped advisory lock, so that each statement
// sees what the previous lock holder committed).
class MigratingStore : public Store {
 public:
  virtual Status WriteExclusive(const std::function<Status(Tx&)>& fn) = 0;
};

}  // namespace tidal::store::internal
