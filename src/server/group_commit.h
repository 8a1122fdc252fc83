// Group commit: many threads' small writes in one durable transaction. The
// first caller to find no commit running becomes the leader, takes every
// write queued so far, runs them in one Store::Write and wakes the others;
// callers that arrive meanwhile queue for the next one. A durable commit
// (an fsync) then serves a whole batch of API submissions, which is what
// makes ~1k durable submissions/s possible on one disk. If the batch's
// transaction fails, each write is retried alone, so one bad write cannot
// fail its neighbours.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>

#include "common/result.h"
#include "store/store.h"

namespace tidal::server {

class GroupCommit {
 public:
  explicit GroupCommit(store::Store& store) : store_(store) {}
  // Runs fn inside a write transaction shared with other callers; returns
  // once that transaction committed (Ok) or fn's own error. fn may run
  // more than once (store retries, the solo retry): keep its effects in the
  // transaction and its outputs overwritten on each run.
  Status Run(const std::function<Status(store::Tx&)>& fn);

 private:
  struct Item {
    const std::function<Status(store::Tx&)>* fn = nullptr;
    Status result = Ok();
    bool done = false;
  };
  store::Store& store_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item*> queue_;
  bool leader_ = false;
};

}  // namespace tidal::server
