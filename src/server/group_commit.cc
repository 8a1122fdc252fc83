#include "server/group_commit.h"

#include <vector>

namespace tidal::server {

Status GroupCommit::Run(const std::function<Status(store::Tx&)>& fn) {
  Item me{.fn = &fn};
  std::unique_lock lock(mu_);
  queue_.push_back(&me);
  while (!me.done) {
    if (leader_) {
      cv_.wait(lock);
      continue;
    }
    leader_ = true;
    std::vector<Item*> batch(queue_.begin(), queue_.end());
    queue_.clear();
    lock.unlock();
    Status all = store_.Write([&](store::Tx& tx) -> Status {
      for (Item* it : batch) {
        it->result = (*it->fn)(tx);
        if (!it->result) return it->result;
      }
      return Ok();
    });
    if (!all && batch.size() > 1) {
      for (Item* it : batch) {
        Status solo = store_.Write([&](store::Tx& tx) { return it->result = (*it->fn)(tx); });
        if (!solo) it->result = solo;
      }
    } else if (!all) {
      batch.front()->result = all;
    }
    lock.lock();
    for (Item* it : batch) it->done = true;
    leader_ = false;
    cv_.notify_all();
  }
  return me.result;
}

}  // namespace tidal::server
