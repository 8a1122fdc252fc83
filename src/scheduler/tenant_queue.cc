#include "scheduler/tenant_queue.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "framework/gang.h"
#include "scheduler/preemption.h"

namespace tidal {

using tenancy::TenantId;
using tenancy::Tier;

Result<TenantOrder> ParseTenantOrder(std::string_view name) {
  if (name == "fifo") return TenantOrder::kFifo;
  if (name == "fair-share") return TenantOrder::kFairShare;
  if (name == "slurm-multifactor") return TenantOrder::kSlurmMultifactor;
  if (name == "kueue") return TenantOrder::kKueue;
  if (name == "las") return TenantOrder::kLas;
  return MakeError(ErrorCode::kInvalidArgument, "unknown queue order '{}'; choose fifo, fair-share, slurm-multifactor, kueue or las",
                   name);
}

Result<TenantQueueOptions> TenantQueueOptionsFor(QueuePolicy policy) {
  TenantQueueOptions o;
  switch (policy) {
    case QueuePolicy::kStaticPartitions:
      o.order = TenantOrder::kFifo;
      return o;
    case QueuePolicy::kSlurmMultifactor:
      o.order = TenantOrder::kSlurmMultifactor;
      o.quotas = false;
      return o;
    case QueuePolicy::kKueue:
      o.order = TenantOrder::kKueue;
      o.backfill = false;
      o.reclaim = true;
      o.priority_preemption = true;
      return o;
    case QueuePolicy::kLas:
      o.order = TenantOrder::kLas;
      o.quotas = false;
      o.backfill = false;
      o.priority_preemption = true;
      return o;
    case QueuePolicy::kTidal:
      o.order = TenantOrder::kFairShare;
      o.reclaim = true;
      o.priority_preemption = true;
      o.las_on_borrowed = true;
      o.reclaim_slowdown_max = 1.3;
      return o;
    case QueuePolicy::kFifo:
    case QueuePolicy::kFifoBackfill:
      break;
  }
  return MakeError(ErrorCode::kInvalidArgument, "queue policy '{}' runs on the FIFO queue, not the tenant queue",
                   QueuePolicyName(policy));
}

bool NeedsTenants(QueuePolicy policy) { return UsesTenantQueue(policy) && policy != QueuePolicy::kLas; }

TenantQueue::TenantQueue(Scheduler& scheduler, std::shared_ptr<const tenancy::TenantTree> tree, TenantQueueOptions options)
    : scheduler_(&scheduler), tree_(std::move(tree)), options_(std::move(options)) {
  if (tree_) {
    usage_ = *tree_;
    meter_.emplace(*tree_, options_.half_life_s);
    gpu_res_ = tree_->resource("gpu");
    leaves_ = tree_->Leaves();
    const size_t cells = static_cast<size_t>(tree_->size()) * static_cast<size_t>(tree_->num_resources());
    held_all_.assign(cells, 0);
    held_free_.assign(cells, 0);
    freed_.assign(cells, 0);
  }
  if (!tree_) options_.quotas = false;
}

std::unique_ptr<WorkQueue> TenantQueue::Fork(Scheduler& scheduler, const JobLookup& jobs) const {
  std::unique_ptr<TenantQueue> f(new TenantQueue(*this));
  f->scheduler_ = &scheduler;
  f->run_time_ = nullptr;
  auto remap = [&](const Job* j) {
    const Job* n = j != nullptr ? jobs(j->id) : nullptr;
    return n != nullptr ? n : j;
  };
  for (auto& [id, e] : f->entries_) {
    const Job* n = remap(e.job);
    if (*n->duration_s != *e.job->duration_s) {
      // Keep the work done (base seconds before the current run, which is
      // the checkpointed work); what is left and the run's end follow.
      const int64_t done = *e.job->duration_s - e.remaining_s;
      e.remaining_s = std::max<int64_t>(0, *n->duration_s - done);
      if (e.running) e.end_s = e.start_s + RunSeconds(e);
    }
    e.job = e.request.job = n;
  }
  // The copies' pointers into entries_ point at the original's entries.
  auto entry = [&](const Entry* old) { return &f->entries_.at(old->job->id); };
  for (Entry*& p : f->waiting_) p = entry(p);
  for (auto& group : f->waiting_by_quota_)
    for (Keyed& k : group) k = f->ListedOf(*entry(k.e));  // its job, and so its run, may be the fork's
  for (Entry*& p : f->running_list_) p = entry(p);
  for (auto& [shape, w] : f->shapes_) w.request.job = remap(w.request.job);
  f->head_ = remap(head_);
  return f;
}

int64_t TenantQueue::RunEnd(JobId job) const {
  auto it = entries_.find(job);
  return it != entries_.end() && it->second.running ? it->second.end_s : -1;
}

int64_t TenantQueue::RunTimeAtLeast(JobId job, int64_t now) const {
  auto it = entries_.find(job);
  if (it == entries_.end()) return 0;
  const Entry& e = it->second;
  const int64_t done = *e.job->duration_s - e.remaining_s;  // checkpointed, before the current run
  if (!e.running) return e.restarts > 0 ? done + 1 : 0;  // a preempted job had work left (remaining >= 1)
  const int64_t useful = std::max<int64_t>(0, now - e.start_s - (e.restarts > 0 ? options_.restart_penalty_s : 0));
  return done + static_cast<int64_t>(std::floor(static_cast<double>(useful) / std::max(1e-9, e.stretch))) + 1;
}

TenantId TenantQueue::tenant_of(const Job& job) const {
  auto it = entries_.find(job.id);
  return it == entries_.end() ? tenancy::kNoTenant : it->second.tenant;
}

const Job* TenantQueue::head() const {
  if (head_ == nullptr) return nullptr;
  auto it = entries_.find(head_->id);
  return it != entries_.end() && !it->second.running ? head_ : nullptr;
}

int64_t TenantQueue::reservation_s() const { return head() != nullptr ? head_reservation_ : kNoReservation; }

std::vector<BlockingCause> TenantQueue::Explain(const Job& job) {
  ExplainContext ctx;
  if (tree_ && options_.quotas) {
    ctx.usage = &usage_;
    ctx.tenant = tree_->Find(job.group);
  }
  ctx.reserved_for = head();
  const int64_t res = reservation_s();
  ctx.reservation_s = res == kNoReservation ? -1 : res;
  return ExplainPending(*scheduler_, job, ctx);
}

void TenantQueue::AddShape(const Entry& e) {
  auto [it, inserted] = shapes_.try_emplace(e.shape, WaitingShape{e.request, 0});
  ++it->second.count;
  if (inserted) ++shapes_version_;
  ++waiting_by_shape_[static_cast<size_t>(e.shape_id)];
  waiting_gpu_[e.tenant].insert(e.request.job->TotalGpuMilli());
}

void TenantQueue::RemoveShape(const Entry& e) {
  auto& w = waiting_gpu_[e.tenant];
  w.erase(w.find(e.request.job->TotalGpuMilli()));
  --waiting_by_shape_[static_cast<size_t>(e.shape_id)];
  auto it = shapes_.find(e.shape);
  if (it == shapes_.end()) return;
  if (--it->second.count == 0) {
    shapes_.erase(it);
    ++shapes_version_;
  } else if (it->second.request.job == e.job) {
    for (const Entry* x : waiting_) {
      if (x->job != e.job && x->shape == e.shape) {
        it->second.request = x->request;
        break;
      }
    }
  }
}

Status TenantQueue::Push(const Job& job, std::vector<UnresolvableJob>& unresolvable) {
  if (!job.duration_s) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "job '{}' ({}) has no duration; a queue needs each job's run time to know when it ends", job.name,
                     job.source);
  }
  if (entries_.contains(job.id)) {
    return MakeError(ErrorCode::kInvalidArgument, "job id {} ('{}', {}) is already queued or running", job.id, job.name, job.source);
  }
  auto request = ResolveRequest(job, scheduler_->cluster().models());
  if (!request) {
    unresolvable.push_back({&job, request.error().message});
    return Ok();
  }
  Entry e{.job = &job, .request = std::move(*request)};
  e.shape = JobShape::Of(e.request);
  if (tree_) {
    e.tenant = tree_->Find(job.group);
    if (e.tenant == tenancy::kNoTenant || !tree_->is_leaf(e.tenant)) {
      return MakeError(ErrorCode::kNotFound,
                       "job '{}' ({}) belongs to tenant '{}', which is {} in the tenants file; add it (or a 'groups:' "
                       "alias) as a leaf tenant",
                       job.name, job.source, job.group, e.tenant == tenancy::kNoTenant ? "not" : "not a leaf");
    }
    e.tier = tree_->spec(e.tenant).tier;
    if (e.tier == Tier::kStandard && static_cast<size_t>(e.tenant) < demoted_.size() &&
        demoted_[static_cast<size_t>(e.tenant)])
      e.tier = Tier::kSpot;
    const std::string& model = job.gpu_spec.size() == 1 ? job.gpu_spec.front() : std::string();
    for (tenancy::ResourceId r = 0; r < tree_->num_resources(); ++r) {
      const std::string& name = tree_->resource_name(r);
      int64_t v = 0;
      if (name == "gpu") v = job.TotalGpuMilli();
      else if (name == "cpu") v = job.cpu_milli;
      else if (name == "memory") v = job.memory_mib;
      else if (!model.empty() && name == "gpu/" + model) v = job.TotalGpuMilli();
      if (v != 0) e.quota.push_back({r, v});
    }
    if (options_.quotas) {
      for (const auto& [r, v] : e.quota) {
        const bool guaranteed = e.tier == Tier::kGuaranteed;
        const int64_t most = guaranteed ? tree_->subtree(e.tenant, r) : tree_->PotentialAvailable(e.tenant, r);
        if (v > most) {
          unresolvable.push_back({&job, fmt::format("quota: tenant '{}' can never hold {} {} ({} is {}); raise its quota "
                                                    "or shrink the job",
                                                    tree_->name(e.tenant), v, tree_->resource_name(r),
                                                    guaranteed ? "a guaranteed tenant runs within its floor, which"
                                                               : "its floor plus what it may borrow",
                                                    most)});
          return Ok();
        }
      }
    }
  }
  auto [sid, added] = shape_ids_.try_emplace(e.shape, static_cast<int32_t>(shape_ids_.size()));
  e.shape_id = sid->second;
  if (added) {
    unfit_.push_back(0);
    waiting_by_shape_.push_back(0);
  }
  const auto [quota, new_quota] = quota_ids_.try_emplace({e.tenant, e.quota}, static_cast<int32_t>(quota_ids_.size()));
  if (new_quota) quota_keys_.push_back(quota->first);
  e.quota_id = quota->second;
  if (verdicts_.size() < quota_ids_.size()) verdicts_.resize(quota_ids_.size());
  if (waiting_by_quota_.size() < quota_ids_.size()) waiting_by_quota_.resize(quota_ids_.size());
  e.seq = next_seq_++;
  e.remaining_s = *job.duration_s;
  auto [it, _] = entries_.emplace(job.id, std::move(e));
  it->second.waiting_since = job.submit_time_s.value_or(0);
  waiting_.push_back(&it->second);
  ListWaiting(it->second);
  AddShape(it->second);
  return Ok();
}

TenantQueue::Keyed TenantQueue::ListedOf(Entry& e) const {
  return {.key = FifoKey(e), .e = &e, .planned_run = e.job->PlannedRun(e.remaining_s), .shape_id = e.shape_id,
          .quota_id = e.quota_id, .priority = e.job->priority, .num_gpu = e.request.num_gpu(), .tenant = e.tenant,
          .tier = e.tier, .single_node = e.job->single_node};
}

void TenantQueue::ListWaiting(Entry& e) {
  auto& group = waiting_by_quota_[static_cast<size_t>(e.quota_id)];
  Keyed k = ListedOf(e);
  auto pos = std::upper_bound(group.begin(), group.end(), k.key, [](const OrderKey& key, const Keyed& x) { return key < x.key; });
  group.insert(pos, std::move(k));
}

void TenantQueue::UnlistWaiting(Entry& e) {
  auto& group = waiting_by_quota_[static_cast<size_t>(e.quota_id)];
  const OrderKey k = FifoKey(e);
  auto pos = std::lower_bound(group.begin(), group.end(), k, [](const Keyed& x, const OrderKey& key) { return x.key < key; });
  if (pos != group.end() && pos->e == &e) group.erase(pos);
}

void TenantQueue::DropWaiting(Entry& e) {
  auto pos = std::lower_bound(waiting_.begin(), waiting_.end(), e.seq, [](const Entry* x, uint64_t s) { return x->seq < s; });
  if (pos != waiting_.end() && *pos == &e) waiting_.erase(pos);
  UnlistWaiting(e);
}

void TenantQueue::DropWaiting(std::span<Entry* const> drop) {
  if (drop.size() <= 1) {
    for (Entry* e : drop) DropWaiting(*e);
    return;
  }
  std::vector<int32_t> groups;
  for (Entry* e : drop) {
    e->dropping = true;
    groups.push_back(e->quota_id);
  }
  std::ranges::sort(groups);
  groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  std::erase_if(waiting_, [](const Entry* x) { return x->dropping; });
  for (int32_t q : groups)
    std::erase_if(waiting_by_quota_[static_cast<size_t>(q)], [](const Keyed& k) { return k.e->dropping; });
  for (Entry* e : drop) e->dropping = false;
}

void TenantQueue::DemoteToSpot(tenancy::TenantId tenant) {
  if (!tree_ || tenant == tenancy::kNoTenant || tree_->spec(tenant).tier != Tier::kStandard) return;
  if (demoted_.size() < static_cast<size_t>(tree_->size())) demoted_.resize(static_cast<size_t>(tree_->size()), false);
  if (demoted_[static_cast<size_t>(tenant)]) return;
  demoted_[static_cast<size_t>(tenant)] = true;
  for (Entry* e : waiting_)
    if (e->tenant == tenant && e->tier == Tier::kStandard) e->tier = Tier::kSpot;
  for (auto& group : waiting_by_quota_)
    for (Keyed& k : group)
      if (k.tenant == tenant) k.tier = k.e->tier;
  std::fill(unfit_.begin(), unfit_.end(), 0);  // what fits may have changed
}

Status TenantQueue::SetTree(std::shared_ptr<const tenancy::TenantTree> tree) {
  if (!tree_ || !tree) return MakeError(ErrorCode::kFailedPrecondition, "this queue runs without a tenant tree");
  if (tree->size() != tree_->size() || tree->num_resources() != tree_->num_resources()) {
    return MakeError(ErrorCode::kInvalidArgument, "the new tenant tree has {} tenants and {} resources, the queue's {} and {}",
                     tree->size(), tree->num_resources(), tree_->size(), tree_->num_resources());
  }
  for (tenancy::TenantId t = 0; t < tree->size(); ++t) {
    if (tree->name(t) != tree_->name(t) || tree->parent(t) != tree_->parent(t)) {
      return MakeError(ErrorCode::kInvalidArgument, "the new tenant tree differs in tenant #{} ('{}', was '{}'); only quotas may change",
                       t, tree->name(t), tree_->name(t));
    }
  }
  for (tenancy::ResourceId r = 0; r < tree->num_resources(); ++r) {
    if (tree->resource_name(r) != tree_->resource_name(r)) {
      return MakeError(ErrorCode::kInvalidArgument, "the new tenant tree numbers resource '{}' differently", tree->resource_name(r));
    }
  }
  tree_ = std::move(tree);
  usage_ = *tree_;
  ++usage_epoch_;
  for (const auto& [id, e] : entries_)
    if (e.running) usage_.Add(e.tenant, e.quota);
  meter_->SetShares(*tree_);
  std::fill(unfit_.begin(), unfit_.end(), 0);  // what fits may have changed
  return Ok();
}

void TenantQueue::UnlistRunning(Entry& e) {
  const RunningHot& h = running_hot_[e.running_index];
  attained_all_.Remove(h.attained_gpu_s, h.start_s, h.gpus);
  if (h.tier != Tier::kGuaranteed) attained_not_guaranteed_.Remove(h.attained_gpu_s, h.start_s, h.gpus);
  Entry* last = running_list_.back();
  running_list_[e.running_index] = last;
  running_hot_[e.running_index] = running_hot_.back();
  last->running_index = e.running_index;
  running_list_.pop_back();
  running_hot_.pop_back();
}

void TenantQueue::Account(Entry& e, int sign) {
  auto& prios = running_priorities_[e.tenant];
  if (sign > 0) prios.insert(e.job->priority);
  else prios.erase(prios.find(e.job->priority));
  if (e.tier == Tier::kSpot) spot_running_ += sign;
  if (!tree_) return;
  ++usage_epoch_;
  if (static_cast<size_t>(e.tenant) >= tenant_usage_stamp_.size())
    tenant_usage_stamp_.resize(static_cast<size_t>(e.tenant) + 1, 0);
  ++tenant_usage_stamp_[static_cast<size_t>(e.tenant)];
  if (sign > 0) usage_.Add(e.tenant, e.quota);
  else usage_.Remove(e.tenant, e.quota);
  const size_t row = static_cast<size_t>(e.tenant) * static_cast<size_t>(usage_.num_resources());
  for (const auto& [r, amount] : e.quota) {
    held_all_[row + static_cast<size_t>(r)] += sign * amount;
    if (e.tier != Tier::kGuaranteed) held_free_[row + static_cast<size_t>(r)] += sign * amount;
  }
  meter_->AddRate(e.tenant, sign * static_cast<double>(e.request.job->TotalGpuMilli()) / kMilliPerGpu);
}

Status TenantQueue::Withdraw(JobId job) {
  auto it = entries_.find(job);
  if (it == entries_.end() || it->second.running) {
    return MakeError(ErrorCode::kNotFound, "job {} is not waiting in the queue; a running job is ended, not withdrawn", job);
  }
  Entry* e = &it->second;
  DropWaiting(*e);
  RemoveShape(*e);
  if (head_ == e->job) {
    head_ = nullptr;
    head_reservation_ = kNoReservation;
  }
  entries_.erase(it);
  return Ok();
}

Status TenantQueue::CutRun(JobId job, int64_t now) {
  auto it = entries_.find(job);
  if (it == entries_.end() || !it->second.running) {
    return MakeError(ErrorCode::kNotFound, "job {} is not running; its run cannot end early", job);
  }
  Entry& e = it->second;
  if (now < e.start_s) {
    return MakeError(ErrorCode::kInvalidArgument, "job {} started at {}; its run cannot end before that ({})", job, e.start_s, now);
  }
  e.end_s = std::min(e.end_s, now);
  return Ok();
}

Status TenantQueue::Finish(const Job& job) {
  auto it = entries_.find(job.id);
  if (it == entries_.end() || !it->second.running) {
    return MakeError(ErrorCode::kNotFound, "job '{}' ({}) is not running; it cannot finish", job.name, job.source);
  }
  Entry& e = it->second;
  if (meter_) meter_->Advance(e.end_s);
  TIDAL_RETURN_IF_ERROR(scheduler_->Release(job));
  Account(e, -1);
  running_.erase({e.planned_end_s, job.id});
  UnlistRunning(e);
  entries_.erase(it);
  std::fill(unfit_.begin(), unfit_.end(), 0);  // capacity grew
  return Ok();
}

int32_t TenantQueue::LasQueue(const Entry& e, int64_t now) const {
  int64_t attained = e.attained_gpu_s;
  if (e.running) attained += (now - e.start_s) * GpusOf(e);
  if (!e.running && options_.las_starvation > 0 && e.executed_s > 0 &&
      static_cast<double>(now - e.waiting_since) >= options_.las_starvation * static_cast<double>(e.executed_s)) {
    return 0;
  }
  return LasQueueOf(attained);
}

int32_t TenantQueue::LasQueueOf(int64_t attained_gpu_s) const {
  int32_t q = 0;
  for (int64_t limit : options_.las_limits_gpu_s) {
    if (attained_gpu_s < limit) break;
    ++q;
  }
  return q;
}

TenantQueue::OrderKey TenantQueue::GroupKey(int32_t quota_id, TenantId tenant) const {
  OrderKey k;
  switch (options_.order) {
    case TenantOrder::kFairShare:
      if (tree_) {
        k.cls = options_.floor_first && !FitsOwn(quota_id) ? 1 : 0;
        k.value = meter_->NormalizedUsageOverShare(tenant);
      }
      break;
    case TenantOrder::kSlurmMultifactor:
      k.value = tree_ ? meter_->SlurmFactor(tenant) : 1;
      break;
    case TenantOrder::kKueue:
      if (tree_) k.cls = FitsOwn(quota_id) ? 0 : 1;
      break;
    case TenantOrder::kFifo:
    case TenantOrder::kLas:
      break;
  }
  return k;
}

TenantQueue::OrderKey TenantQueue::EntryKey(const OrderKey& group, OrderKey fifo, const Entry& e, int64_t now,
                                            int32_t las_queue) const {
  OrderKey k = fifo;
  switch (options_.order) {
    case TenantOrder::kFifo:
      break;
    case TenantOrder::kFairShare:
      k.cls = group.cls;
      k.value = group.value;
      if (options_.las_on_borrowed) k.cls = k.cls * 1024 + las_queue;
      break;
    case TenantOrder::kSlurmMultifactor: {
      const double age = std::min(1.0, static_cast<double>(now - e.job->submit_time_s.value_or(now)) /
                                           static_cast<double>(std::max<int64_t>(1, options_.slurm_max_age_s)));
      k.value = -(options_.slurm_weight_fairshare * group.value + options_.slurm_weight_age * age);
      k.priority = 0;
      break;
    }
    case TenantOrder::kKueue:
      k.cls = group.cls;
      break;
    case TenantOrder::kLas:
      k.cls = las_queue;
      k.priority = 0;
      break;
  }
  return k;
}

bool TenantQueue::KeyReadsLasQueue() const {
  return options_.order == TenantOrder::kLas || (options_.order == TenantOrder::kFairShare && options_.las_on_borrowed);
}

TenantQueue::OrderKey TenantQueue::KeyOf(const Entry& e, int64_t now) const {
  return EntryKey(GroupKey(e.quota_id, e.tenant), FifoKey(e), e, now, KeyReadsLasQueue() ? LasQueue(e, now) : 0);
}

TenantQueue::QuotaVerdict& TenantQueue::VerdictOf(int32_t quota_id) const {
  QuotaVerdict& v = verdicts_[static_cast<size_t>(quota_id)];
  if (v.epoch != usage_epoch_) v = {.epoch = usage_epoch_};  // the usage changed: ask again
  return v;
}

bool TenantQueue::FitsOwn(int32_t quota_id) const {
  QuotaVerdict& v = VerdictOf(quota_id);
  if (v.fits_own < 0) {
    const auto& [tenant, quota] = quota_keys_[static_cast<size_t>(quota_id)];
    v.fits_own = usage_.FitsOwnQuota(tenant, quota) ? 1 : 0;
  }
  return v.fits_own == 1;
}

bool TenantQueue::FitsQuota(int32_t quota_id) const {
  QuotaVerdict& v = VerdictOf(quota_id);
  if (v.fits < 0) {
    const auto& [tenant, quota] = quota_keys_[static_cast<size_t>(quota_id)];
    v.fits = usage_.Fits(tenant, quota) ? 1 : 0;
  }
  return v.fits == 1;
}

bool TenantQueue::AdmitsNow(int32_t quota_id, Tier tier) const {
  if (!options_.quotas) return true;
  if (tier == Tier::kGuaranteed) return FitsOwn(quota_id);
  return FitsQuota(quota_id);
}

bool TenantQueue::AdmitsNow(const Entry& e) const { return AdmitsNow(e.quota_id, e.tier); }

bool TenantQueue::AdmitsWithout(const Entry& e, std::span<const int32_t> stopped_quotas) {
  if (AdmitsNow(e)) return true;
  // Summed per tenant first (the tree's usage moves the same whether a
  // tenant's jobs leave one by one or together), then removed and added
  // back exactly (integers); the verdicts cached for the lowered usage are
  // dropped by the epoch bumps. A victim search calls this with every
  // eligible running job, so the jobs are counted per interned quota (one
  // tenant and request) and the sums kept in flat buffers reused between
  // calls, all zero outside this function.
  if (freed_count_.size() < quota_keys_.size()) freed_count_.resize(quota_keys_.size(), 0);
  freed_quotas_.clear();
  for (int32_t q : stopped_quotas)
    if (freed_count_[static_cast<size_t>(q)]++ == 0) freed_quotas_.push_back(q);
  const size_t nr = static_cast<size_t>(usage_.num_resources());
  freed_tenants_.clear();
  for (int32_t q : freed_quotas_) {
    const auto& [t, request] = quota_keys_[static_cast<size_t>(q)];
    const int64_t n = std::exchange(freed_count_[static_cast<size_t>(q)], 0);
    int64_t* row = &freed_[static_cast<size_t>(t) * nr];
    for (const auto& [r, amount] : request) row[static_cast<size_t>(r)] += n * amount;
    freed_tenants_.push_back(t);
  }
  std::sort(freed_tenants_.begin(), freed_tenants_.end());
  freed_tenants_.erase(std::unique(freed_tenants_.begin(), freed_tenants_.end()), freed_tenants_.end());
  return AdmitsWithFreed(e);
}

bool TenantQueue::AdmitsWithoutAny(const Entry& e, bool las, bool prio, bool reclaim, bool las_borrowed) {
  if (AdmitsNow(e)) return true;
  const size_t nr = static_cast<size_t>(usage_.num_resources());
  freed_tenants_.clear();
  for (TenantId t : leaves_) {  // jobs run in leaves only (Push)
    const bool own = t == e.tenant;
    const std::vector<int64_t>* held = nullptr;
    if (las || (own && prio)) held = &held_all_;
    else if (las_borrowed || (!own && reclaim)) held = &held_free_;
    if (held == nullptr) continue;
    const size_t row = static_cast<size_t>(t) * nr;
    bool any = false;
    for (size_t r = 0; r < nr; ++r) any = (freed_[row + r] = (*held)[row + r]) != 0 || any;
    if (any) freed_tenants_.push_back(t);
  }
  return AdmitsWithFreed(e);
}

bool TenantQueue::AdmitsWithFreed(const Entry& e) {
  const size_t nr = static_cast<size_t>(usage_.num_resources());
  auto request_of = [&](TenantId t) -> const tenancy::QuotaRequest& {
    freed_request_.clear();
    const int64_t* row = &freed_[static_cast<size_t>(t) * nr];
    for (size_t r = 0; r < nr; ++r)
      if (row[r] != 0) freed_request_.emplace_back(static_cast<tenancy::ResourceId>(r), row[r]);
    return freed_request_;
  };
  ++usage_epoch_;
  for (TenantId t : freed_tenants_) usage_.Remove(t, request_of(t));
  const bool fits = AdmitsNow(e);
  for (TenantId t : freed_tenants_) {
    usage_.Add(t, request_of(t));
    std::fill_n(freed_.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(t) * nr), nr, 0);
  }
  ++usage_epoch_;
  return fits;
}

bool TenantQueue::OthersHoldFloor(TenantId tenant) const {
  if (!gpu_res_) return false;
  const ClusterState& c = scheduler_->cluster();
  // Others hold more than the capacity outside its floor (a floor above the
  // cluster's size counts as the whole cluster).
  const int64_t total = c.total_gpu_milli();
  const int64_t others = c.total_gpu_milli_allocated() - usage_.usage(tenant, *gpu_res_);
  return others > std::max<int64_t>(0, total - usage_.subtree(tenant, *gpu_res_));
}

bool TenantQueue::ReclaimRight(int32_t quota_id, Tier tier) const {
  return options_.reclaim && options_.quotas && tier != Tier::kSpot && FitsOwn(quota_id);
}

int64_t TenantQueue::RunSeconds(const Entry& e) const {
  const int64_t run = static_cast<int64_t>(std::ceil(static_cast<double>(e.remaining_s) * e.stretch - 1e-9));
  return run + (e.restarts > 0 ? options_.restart_penalty_s : 0);
}

void TenantQueue::Start(Entry& e, const Placement& p, int64_t now, QueuePass& pass) {
  const int64_t full = run_time_ ? run_time_(*e.job, p) : *e.job->duration_s;
  e.stretch = *e.job->duration_s > 0 ? static_cast<double>(full) / static_cast<double>(*e.job->duration_s) : 1;
  const int64_t run = RunSeconds(e);
  e.running = true;
  e.start_s = now;
  e.end_s = now + run;
  // Reservations plan with the estimated end (a user's estimate is >= the run).
  e.planned_end_s = now + std::max(run, e.job->PlannedRun(run));
  e.committed_domain.reset();
  running_.insert({e.planned_end_s, e.job->id});
  e.running_index = running_list_.size();
  running_list_.push_back(&e);
  running_hot_.push_back({.start_s = now, .attained_gpu_s = e.attained_gpu_s, .gpus = static_cast<int32_t>(GpusOf(e)),
                          .priority = e.job->priority, .tenant = e.tenant, .tier = e.tier, .quota_id = e.quota_id});
  const RunningHot& h = running_hot_.back();
  attained_all_.Add(h.attained_gpu_s, h.start_s, h.gpus);
  if (h.tier != Tier::kGuaranteed) attained_not_guaranteed_.Add(h.attained_gpu_s, h.start_s, h.gpus);
  Account(e, +1);
  pass.started.push_back(e.job);
  pass.ends.push_back(e.end_s);
}

int64_t TenantQueue::LostIfPreempted(const Entry& v, int64_t now, int64_t notice_s, int64_t* saved_run_s) const {
  const int64_t elapsed = now - v.start_s;
  const int64_t penalty = v.restarts > 0 ? options_.restart_penalty_s : 0;
  const int64_t useful = std::max<int64_t>(0, elapsed - penalty);
  if (notice_s >= 0) {
    if (saved_run_s) *saved_run_s = useful;
    return (elapsed - useful + notice_s + options_.restart_penalty_s) * GpusOf(v);
  }
  const int64_t interval = std::max<int64_t>(1, options_.checkpoint_interval_s);
  const int64_t saved = useful / interval * interval;
  if (saved_run_s) *saved_run_s = saved;
  return (elapsed - saved + options_.restart_penalty_s) * GpusOf(v);
}

Status TenantQueue::Evict(Entry& v, int64_t now, const Job& by, int64_t notice_s, QueuePass& pass) {
  int64_t saved = 0;
  const int64_t lost = LostIfPreempted(v, now, notice_s, &saved);
  const int64_t done = static_cast<int64_t>(std::floor(static_cast<double>(saved) / std::max(1e-9, v.stretch)));
  v.remaining_s = std::max<int64_t>(1, v.remaining_s - done);
  v.attained_gpu_s += (now - v.start_s) * GpusOf(v);
  v.executed_s += now - v.start_s;
  v.running = false;
  ++v.restarts;
  v.waiting_since = now;
  running_.erase({v.planned_end_s, v.job->id});
  UnlistRunning(v);
  // Back in arrival order (it keeps its sequence number).
  auto pos = std::lower_bound(waiting_.begin(), waiting_.end(), v.seq, [](const Entry* x, uint64_t s) { return x->seq < s; });
  waiting_.insert(pos, &v);
  ListWaiting(v);
  AddShape(v);
  pass.preempted.push_back({v.job, lost, &by, notice_s >= 0});
  return Ok();
}

Result<bool> TenantQueue::TryPreempt(Entry& e, int64_t now, QueuePass& pass) {
  const bool reclaim = ReclaimRight(e);
  const bool floor_held = reclaim && OthersHoldFloor(e);
  const bool las = options_.order == TenantOrder::kLas && options_.priority_preemption;
  const bool prio = options_.priority_preemption && !las;
  const bool las_borrowed = options_.las_on_borrowed && options_.quotas && gpu_res_.has_value();
  if (!reclaim && !prio && !las && !las_borrowed) return false;
  // Cheap necessary conditions before a search over every running job:
  // reclaim and LAS-on-borrowed need a borrowing tenant (or a spot job),
  // priority a lower-priority job of its own tenant.
  const auto& prios = running_priorities_[e.tenant];
  const bool lower = prio && !prios.empty() && *prios.begin() < e.job->priority;
  if (!las) {
    bool borrower = spot_running_ > 0;
    if (!borrower && tree_ && gpu_res_) {
      for (TenantId t : leaves_) {
        if (usage_.usage(t, *gpu_res_) > usage_.subtree(t, *gpu_res_) && (las_borrowed || t != e.tenant)) {
          borrower = true;
          break;
        }
      }
    }
    if (!borrower && !lower) return false;
  }
  // Nor can a search start it when its quota would not admit it even with
  // every job any rule may take for it stopped (most searches end here);
  // the priority rule takes none when its tenant runs no lower priority.
  if (!AdmitsWithoutAny(e, las, lower, reclaim, las_borrowed)) return false;
  const int32_t my_queue = las || las_borrowed ? LasQueue(e, now) : 0;
  // Only the LAS rules can give a victim (no reclaim, no lower priority of
  // its own tenant running): they need a running job in a higher LAS queue.
  // A job's queue only rises with what it has attained, so the most any
  // running job has attained by now decides: when even that is in this
  // job's queue or below (most searches of LAS on borrowed quota), the scan
  // would find none.
  if ((las || las_borrowed) && !reclaim && !lower) {
    const AttainedBound& held = las ? attained_all_ : attained_not_guaranteed_;
    if (held.empty() || LasQueueOf(held.MaxAt(now)) <= my_queue) return false;
  }
  ++pass.victim_scans;
  // A victim's tenant must still be borrowing after the victims chosen
  // before it (a tenant at or below its floor is never a victim).
  std::vector<Entry*> cand_entries;
  auto still_borrowing = [&](const Entry& v, std::span<const size_t> chosen) {
    int64_t usage = usage_.usage(v.tenant, *gpu_res_);
    for (size_t i : chosen)
      if (cand_entries[i]->tenant == v.tenant) usage -= cand_entries[i]->request.job->TotalGpuMilli();
    return usage > usage_.subtree(v.tenant, *gpu_res_);
  };
  std::vector<Entry*> eligible;
  eligible_quotas_.clear();
  const int32_t my_priority = e.job->priority;
  for (size_t i = 0; i < running_hot_.size(); ++i) {
    const RunningHot& v = running_hot_[i];
    if (options_.min_run_s < 0 || now - v.start_s < options_.min_run_s) continue;
    if (v.start_s == now) continue;  // started in this pass (or this second): not a victim yet
    // Its LAS queue (LasQueue of a running job), only when a rule asks.
    auto queue = [&] { return LasQueueOf(v.attained_gpu_s + (now - v.start_s) * v.gpus); };
    bool ok = false;
    if (las) ok = queue() > my_queue;
    if (prio && v.tenant == e.tenant && v.priority < my_priority) ok = true;
    if (reclaim && v.tenant != e.tenant && v.tier != Tier::kGuaranteed) ok = true;
    // LAS on borrowed quota never overrides priority (no loop with it).
    if (!ok && las_borrowed && v.tier != Tier::kGuaranteed && v.priority <= my_priority && queue() > my_queue) ok = true;
    if (ok) {
      eligible.push_back(running_list_[i]);
      eligible_quotas_.push_back(v.quota_id);
    }
  }
  // A victim set is a subset of these, and stopping jobs only lowers usage:
  // if the quota would not admit the job with all of them stopped, no plan
  // can start it (the what-if below would fail on the quota every time).
  if (eligible.empty() || !AdmitsWithout(e, eligible_quotas_)) return false;
  std::vector<VictimCandidate> cands;
  const int64_t notice_s = NoticeFor(*e.job);
  for (Entry* vp : eligible) {
    const Placement* held = scheduler_->cluster().FindAllocation(vp->job->id);
    // A job on a drained node is no victim (PlanPreemption skips it too).
    if (held == nullptr || OnCordonedNode(scheduler_->cluster(), *held)) continue;
    cands.push_back({vp->job, LostIfPreempted(*vp, now, notice_s, nullptr), vp->tenant, held});
    cand_entries.push_back(vp);
  }
  if (cands.empty()) return false;
  // First the strict rule: a victim's tenant keeps at least its floor after
  // the victims (no tenant is pushed below its floor, so nothing it then
  // reclaims back can loop); only if that finds no plan, Kueue's rule: its
  // tenant is borrowing before the victim.
  bool strict = true;
  auto still_borrowing_after = [&](const Entry& v, std::span<const size_t> chosen) {
    if (!strict) return still_borrowing(v, chosen);
    int64_t usage = usage_.usage(v.tenant, *gpu_res_) - v.request.job->TotalGpuMilli();
    for (size_t i : chosen)
      if (cand_entries[i]->tenant == v.tenant) usage -= cand_entries[i]->request.job->TotalGpuMilli();
    return usage >= usage_.subtree(v.tenant, *gpu_res_);
  };
  auto admissible = [&](const VictimCandidate& c, std::span<const size_t> chosen) {
    const Entry& v = *cand_entries[static_cast<size_t>(&c - cands.data())];
    const bool other_reclaim = reclaim && v.tenant != e.tenant && v.tier != Tier::kGuaranteed;
    const bool own_prio = prio && v.tenant == e.tenant && v.job->priority < e.job->priority;
    const bool las_ok = las && LasQueue(v, now) > my_queue;
    if (own_prio || las_ok) return true;
    if (v.tier == Tier::kSpot && (other_reclaim || las_borrowed)) return true;
    const bool borrowed_las = las_borrowed && v.tier != Tier::kGuaranteed && v.job->priority <= e.job->priority &&
                              LasQueue(v, now) > my_queue;
    if (!(other_reclaim || borrowed_las) || !gpu_res_) return false;
    // Kueue's looser rule is for guarantees only: a victim taken by the
    // optional LAS-on-borrowed rule alone must leave its tenant at or above
    // its floor, or the tenant reclaims it straight back (a preemption loop).
    if (!other_reclaim && !strict) {
      int64_t usage = usage_.usage(v.tenant, *gpu_res_) - v.request.job->TotalGpuMilli();
      for (size_t i : chosen)
        if (cand_entries[i]->tenant == v.tenant) usage -= cand_entries[i]->request.job->TotalGpuMilli();
      return usage >= usage_.subtree(v.tenant, *gpu_res_);
    }
    return still_borrowing_after(v, chosen);
  };
  auto plan_once = [&]() {
    auto p = PlanPreemption(scheduler_->cluster(), e.request, cands, admissible, e.committed_domain);
    if (!p && e.committed_domain) {
      e.committed_domain.reset();  // the committed domain no longer works: choose again
      p = PlanPreemption(scheduler_->cluster(), e.request, cands, admissible, std::nullopt);
    }
    return p;
  };
  auto plan = plan_once();
  if (!plan) {
    strict = false;
    plan = plan_once();
  }
  if (!plan) return false;
  e.committed_domain = plan->domain;
  // What-if on the real placer: release the victims, try, restore on failure.
  ++pass.what_ifs;
  std::vector<std::pair<Entry*, Placement>> saved;
  for (size_t i : plan->victims) {
    Entry& v = *cand_entries[i];
    saved.push_back({&v, *scheduler_->cluster().FindAllocation(v.job->id)});
    TIDAL_RETURN_IF_ERROR(scheduler_->Release(*v.job));
    Account(v, -1);
  }
  Result<Placement> placed = MakeError(ErrorCode::kUnschedulable, "quota");
  if (AdmitsNow(e)) placed = scheduler_->TrySchedule(*e.job);
  if (!placed && placed.error().code == ErrorCode::kDeferred && floor_held) {
    // Reclaiming its floor, which others held in part: take the best
    // placement the room made for it allows.
    scheduler_->set_no_defer(true, options_.reclaim_slowdown_max);
    placed = scheduler_->TrySchedule(*e.job);
    scheduler_->set_no_defer(false);
  }
  if (!placed) {
    for (auto& [v, p] : saved) {
      TIDAL_RETURN_IF_ERROR(scheduler_->Bind(*v->job, std::move(p)));
      Account(*v, +1);
    }
    return false;
  }
  for (auto& [v, p] : saved) TIDAL_RETURN_IF_ERROR(Evict(*v, now, *e.job, notice_s, pass));
  TIDAL_RETURN_IF_ERROR(scheduler_->Bind(*e.job, std::move(*placed)));
  Start(e, *scheduler_->cluster().FindAllocation(e.job->id), now, pass);
  return true;
}

Result<QueuePass> TenantQueue::Schedule(int64_t now) {
  QueuePass pass;
  scheduler_->set_now(now);
  if (meter_) meter_->Advance(now);
  if (largest_node_gpus_ < 0) largest_node_gpus_ = gang::LargestNodeGpus(scheduler_->cluster());
  // Without preemption, when no waiting shape fits since the last release
  // nothing can start: skip the pass (the order and reservation are unchanged
  // in effect; the reserved job keeps its reservation).
  if (!options_.reclaim && !options_.priority_preemption && !waiting_.empty()) {
    bool any = false;
    for (size_t sid = 0; sid < unfit_.size() && !any; ++sid) any = waiting_by_shape_[sid] > 0 && !unfit_[sid];
    if (!any) return pass;
  }
  // The order is built group by group (a group is one tenant and quota
  // request, listed in FIFO key order): each group's keys are one run,
  // sorted only where not ascending already (within a group they mostly
  // are: one tenant's fair share and floor class; an entry in another LAS
  // queue, or another age under Slurm's order, may not be), and the runs
  // are merged. Keys are unique (seq), so this is the sorted order
  // whatever order the groups are read in.
  // Without preemption a pass only adds usage, so a job its quota does not
  // admit now is not admitted later in the pass: it is skipped, and its
  // group, whose verdict is the same for all of it, needs no place in the
  // order (static partitions' long queues hold thousands of jobs behind
  // full partitions).
  const bool preempts = options_.reclaim || options_.priority_preemption;
  auto less = [](const Keyed& a, const Keyed& b) { return a.key < b.key; };
  std::vector<Keyed> keyed;
  std::vector<std::pair<size_t, size_t>> runs;  // [begin, end) in keyed
  keyed.reserve(waiting_.size());
  const bool las = options_.order == TenantOrder::kLas || options_.las_on_borrowed;
  for (const auto& group : waiting_by_quota_) {
    if (group.empty() || (!preempts && !AdmitsNow(group.front().quota_id, group.front().tier))) continue;
    const size_t begin = keyed.size();
    keyed.insert(keyed.end(), group.begin(), group.end());
    if (options_.order != TenantOrder::kFifo || las) {
      // KeyOf, with what is the same for the whole group read once (its
      // tenant's usage and quota verdict) and each LAS queue once.
      const OrderKey part = GroupKey(group.front().quota_id, group.front().tenant);
      for (auto k = keyed.begin() + static_cast<std::ptrdiff_t>(begin); k != keyed.end(); ++k) {
        const int32_t q = las ? LasQueue(*k->e, now) : 0;
        if (las) k->las_queue = q;
        if (options_.order != TenantOrder::kFifo) k->key = EntryKey(part, k->key, *k->e, now, q);
      }
    }
    const auto first = keyed.begin() + static_cast<std::ptrdiff_t>(begin);
    if (!std::is_sorted(first, keyed.end(), less)) std::sort(first, keyed.end(), less);
    runs.push_back({begin, keyed.size()});
  }
  std::vector<Keyed> order;
  if (runs.size() <= 1) {
    order = std::move(keyed);
  } else {
    order.reserve(keyed.size());
    auto later = [&](const auto& a, const auto& b) { return keyed[b.first].key < keyed[a.first].key; };
    std::make_heap(runs.begin(), runs.end(), later);  // (next, end) of each run, the smallest next on top
    while (!runs.empty()) {
      std::pop_heap(runs.begin(), runs.end(), later);
      auto& [next, run_end] = runs.back();
      order.push_back(keyed[next]);
      if (++next < run_end) std::push_heap(runs.begin(), runs.end(), later);
      else runs.pop_back();
    }
  }

  head_ = nullptr;
  head_reservation_ = kNoReservation;
  BackfillReservation reservation;
  const Entry* holder = nullptr;
  // Shapes that did not fit since the last release (capacity only shrinks
  // between releases; a preemption is a release). Preemption searches that
  // found nothing are remembered for this pass only (new jobs start).
  std::vector<uint8_t>& unfit = unfit_;
  // Preemption searches that found nothing, by what decides the victims:
  // the shape, the tenant, the priority and the LAS queue.
  // Per (tenant, priority, LAS queue, one host or not): the fewest GPUs a
  // search found no victims for; a job asking as many or more is not
  // searched again in this pass (a larger request of the same standing
  // finds no victims either — a policy rule that keeps a pass at a few
  // searches per tenant, not one per waiting job).
  // Kept per tenant (index tenant + 1) in a short list: a pass records a
  // few, and reads them once per waiting job a quick skip looks at (20
  // million times in after's replay: a hash per read cost 3% of it).
  struct InVain {
    int32_t priority = 0, las_queue = 0;
    bool single_node = false;
    int32_t fewest_gpus = 0;
  };
  std::vector<std::vector<InVain>> in_vain_by_tenant;
  auto find_in_vain = [&](TenantId t, int32_t priority, int32_t las_queue, bool single_node) -> InVain* {
    const auto i = static_cast<size_t>(t + 1);
    if (i >= in_vain_by_tenant.size()) return nullptr;
    for (InVain& v : in_vain_by_tenant[i])
      if (v.priority == priority && v.las_queue == las_queue && v.single_node == single_node) return &v;
    return nullptr;
  };
  auto in_vain = [&](TenantId t, int32_t priority, int32_t las_queue, bool single_node, int32_t gpus) {
    const InVain* v = find_in_vain(t, priority, las_queue, single_node);
    return v != nullptr && gpus >= v->fewest_gpus;
  };
  auto searched_in_vain = [&](const Entry& x) {
    const auto i = static_cast<size_t>(x.tenant + 1);
    if (i >= in_vain_by_tenant.size() || in_vain_by_tenant[i].empty()) return false;
    return in_vain(x.tenant, x.job->priority, las ? LasQueue(x, now) : 0, x.job->single_node, x.request.num_gpu());
  };
  auto searched_in_vain_k = [&](const Keyed& k) {  // the same from the order's copy
    return in_vain(k.tenant, k.priority, k.las_queue, k.single_node, k.num_gpu);
  };
  // Searches not owed to a guarantee (priority, LAS on borrowed quota, a
  // reclaim while the floor is in fact free) are capped per pass: each one
  // may start a chain (its victims search in turn), and a pass must stay
  // short. Searches for a floor that others hold are never capped.
  int32_t optional_searches = 0;
  // A policy that never preempts skips the search (TryPreempt would find no
  // rule that allows a victim) and its bookkeeping.
  const bool can_preempt = preempts || options_.las_on_borrowed;
  auto may_search = [&](const Entry& x) {
    if (searched_in_vain(x)) return false;
    if (ReclaimRight(x) && OthersHoldFloor(x)) return true;
    return optional_searches++ < options_.max_optional_searches;
  };
  auto no_victims_for = [&](const Entry& x) {
    const int32_t queue = las ? LasQueue(x, now) : 0;
    if (InVain* v = find_in_vain(x.tenant, x.job->priority, queue, x.job->single_node)) {
      v->fewest_gpus = std::min(v->fewest_gpus, x.request.num_gpu());
      return;
    }
    const auto i = static_cast<size_t>(x.tenant + 1);
    if (i >= in_vain_by_tenant.size()) in_vain_by_tenant.resize(i + 1);
    in_vain_by_tenant[i].push_back({.priority = x.job->priority, .las_queue = queue, .single_node = x.job->single_node,
                                    .fewest_gpus = x.request.num_gpu()});
  };
  // Per shape, the shortest remaining run that was found to delay the
  // reserved job in this pass: as long or longer ones of that shape are
  // skipped without a placement attempt (a policy rule, as in JobQueue).
  std::vector<int64_t> delays_reserved(shape_ids_.size(), kNoReservation);
  std::vector<uint8_t> started(order.size(), 0);
  std::set<const Entry*> moved;
  const std::vector<uint64_t> stamps = tenant_usage_stamp_;  // as the keys were taken
  // FIFO keys (priority, arrival) never move.
  const bool keys_move = options_.order != TenantOrder::kFifo;
  auto usage_moved = [&](TenantId t) {
    const auto i = static_cast<size_t>(t);
    return keys_move && i < tenant_usage_stamp_.size() && tenant_usage_stamp_[i] != (i < stamps.size() ? stamps[i] : 0);
  };
  for (size_t i = 0; i < order.size(); ++i) {
    // Quick skips, from the order's copy alone, where the steps below would
    // change nothing (most of a long queue behind a full partition or an
    // unfit shape, and an inference service's replicas above its floor):
    // the key stands; the quota does not admit the job and it may not
    // search, or searched in vain; or it is admitted but would delay the
    // reserved job, or its shape did not fit, the head and the reservation
    // are taken and it may not search or searched in vain.
    if (const Keyed& k = order[i]; !(usage_moved(k.tenant) && !moved.contains(k.e))) {
      if (!AdmitsNow(k.quota_id, k.tier)) {
        if (!(ReclaimRight(k.quota_id, k.tier) || options_.priority_preemption) || searched_in_vain_k(k)) continue;
      } else {
        const bool owed = ReclaimRight(k.quota_id, k.tier) && OthersHoldFloor(k.tenant);
        if (holder != nullptr && reservation.time_s() != kNoReservation && !owed &&
            k.planned_run >= delays_reserved[k.shape_id])
          continue;
        if (unfit[k.shape_id] && !running_.empty() && head_ != nullptr && holder != nullptr &&
            (!can_preempt || searched_in_vain_k(k)))
          continue;
      }
    }
    Entry& e = *order[i].e;
    if (e.running) continue;  // started by an earlier step of this pass
    // Its key may have grown since the pass began (earlier starts filled its
    // tenant's floor): then it goes back to its place among the rest, once.
    // Only its own tenant's usage moves a key within a pass (KeyOf).
    if (usage_moved(e.tenant) && !moved.contains(&e)) {
      const OrderKey k = KeyOf(e, now);
      if (order[i].key < k) {
        moved.insert(&e);
        auto pos = std::upper_bound(order.begin() + static_cast<std::ptrdiff_t>(i) + 1, order.end(), k,
                                    [](const OrderKey& key, const Keyed& o) { return key < o.key; });
        const auto at = pos - order.begin();
        Keyed moved_k = ListedOf(e);
        moved_k.key = k;
        if (las) moved_k.las_queue = LasQueue(e, now);
        order.insert(pos, std::move(moved_k));
        started.insert(started.begin() + at, 0);
        continue;  // this slot stays 0: the entry is handled at its new place
      }
    }
    if (!AdmitsNow(e)) {
      // Quota: skipped, unless it reclaims its own floor from borrowers or
      // (priority) takes it from its own tenant's lower-priority jobs.
      if ((ReclaimRight(e) || options_.priority_preemption) && may_search(e)) {
        const size_t before = pass.preempted.size();
        TIDAL_ASSIGN_OR_RETURN(bool ok, TryPreempt(e, now, pass));
        if (ok) {
          started[i] = 1;
          if (pass.preempted.size() != before) std::fill(unfit.begin(), unfit.end(), 0);
          continue;
        }
        no_victims_for(e);
      }
      continue;
    }
    Result<const Placement*> bound = MakeError(ErrorCode::kUnschedulable, "did not fit earlier in this pass");
    const bool long_job = holder != nullptr && now + e.job->PlannedRun(static_cast<int64_t>(std::ceil(e.remaining_s * e.stretch))) >
                                                   reservation.time_s();
    // Guarantees outrank reservations: a job within its tenant's floor while
    // others hold part of it is not held back for the reserved job.
    const bool owed = ReclaimRight(e) && OthersHoldFloor(e);
    if (holder != nullptr && reservation.time_s() != kNoReservation && !owed) {
      if (e.job->PlannedRun(e.remaining_s) >= delays_reserved[e.shape_id]) continue;
    }
    if (!unfit[e.shape_id]) {
      if (long_job && reservation.fitting_nodes() > 0) scheduler_->set_reserved_nodes(reservation.fits());
      bound = scheduler_->ScheduleAndBind(*e.job);
      scheduler_->set_reserved_nodes({});
    }
    if (bound) {
      if (holder != nullptr && reservation.time_s() != kNoReservation && !owed) {
        const int64_t full = run_time_ ? run_time_(*e.job, **bound) : *e.job->duration_s;
        const double stretch = *e.job->duration_s > 0 ? static_cast<double>(full) / static_cast<double>(*e.job->duration_s) : 1;
        const int64_t run = static_cast<int64_t>(std::ceil(static_cast<double>(e.remaining_s) * stretch - 1e-9)) +
                            (e.restarts > 0 ? options_.restart_penalty_s : 0);
        if (now + e.job->PlannedRun(run) > reservation.time_s() && !reservation.Take(holder->request, **bound)) {
          TIDAL_RETURN_IF_ERROR(scheduler_->Release(*e.job));
          delays_reserved[e.shape_id] = std::min(delays_reserved[e.shape_id], e.job->PlannedRun(e.remaining_s));
          continue;  // it would delay the reserved job
        }
        ++pass.backfilled;
      }
      Start(e, **bound, now, pass);
      started[i] = 1;
      continue;
    }
    const ErrorCode code = bound.error().code;
    if (code == ErrorCode::kUnresolvable || (code == ErrorCode::kUnschedulable && running_.empty())) {
      pass.unresolvable.push_back(
          {e.job, code == ErrorCode::kUnresolvable
                      ? bound.error().message
                      : fmt::format("job '{}' ({}) does not fit even on the empty cluster ({}); shrink the request or "
                                    "add capacity",
                                    e.job->name, e.job->source, bound.error().message)});
      started[i] = 2;
      continue;
    }
    if (code != ErrorCode::kUnschedulable && code != ErrorCode::kDeferred) return std::unexpected(bound.error());
    if (code == ErrorCode::kUnschedulable) unfit[e.shape_id] = 1;
    if (can_preempt && may_search(e)) {
      const size_t before = pass.preempted.size();
      TIDAL_ASSIGN_OR_RETURN(bool ok, TryPreempt(e, now, pass));
      if (ok) {
        started[i] = 1;
        if (pass.preempted.size() != before) std::fill(unfit.begin(), unfit.end(), 0);
        continue;
      }
      no_victims_for(e);
    }
    if (code == ErrorCode::kDeferred && ReclaimRight(e) && OthersHoldFloor(e)) {
      // Within its tenant's floor while others hold part of it: it gets the
      // best placement there is now rather than waiting for a compact one.
      scheduler_->set_no_defer(true, options_.reclaim_slowdown_max);
      auto now_bound = scheduler_->ScheduleAndBind(*e.job);
      scheduler_->set_no_defer(false);
      if (now_bound) {
        Start(e, **now_bound, now, pass);
        started[i] = 1;
        continue;
      }
    }
    if (head_ == nullptr) head_ = e.job;  // the first job that cannot start
    if (holder == nullptr) {
      if (options_.backfill) {
        holder = &e;
        reservation.Compute(scheduler_->cluster(), running_, e.request, now,
                            {.compact = code == ErrorCode::kDeferred,
                             .gangs_gather = scheduler_->framework().profile().gang != nullptr,
                             .largest_node_gpus = largest_node_gpus_});
        head_reservation_ = reservation.time_s();
      } else if (options_.strict_fifo) {
        break;
      }
    }
  }
  // Drop started and unresolvable jobs from the waiting list (victims
  // evicted in this pass are in it already).
  std::vector<Entry*> dropped;
  for (size_t i = 0; i < order.size(); ++i)
    if (started[i] != 0) dropped.push_back(order[i].e);
  DropWaiting(dropped);
  for (size_t i = 0; i < order.size(); ++i) {
    if (started[i] == 0) continue;
    RemoveShape(*order[i].e);
    if (started[i] == 2) entries_.erase(order[i].e->job->id);
  }
  return pass;
}

std::vector<TenantStatus> TenantQueue::TenantStatuses() const {
  std::vector<TenantStatus> out;
  if (!tree_ || !gpu_res_) return out;
  for (TenantId t : tree_->Leaves()) {
    TenantStatus s{.tenant = t,
                   .usage_gpu_milli = usage_.usage(t, *gpu_res_),
                   .floor_gpu_milli = usage_.subtree(t, *gpu_res_)};
    if (auto it = waiting_gpu_.find(t); it != waiting_gpu_.end() && !it->second.empty()) {
      s.waiting = static_cast<int64_t>(it->second.size());
      s.min_waiting_gpu_milli = *it->second.begin();
    }
    out.push_back(s);
  }
  return out;
}

Status TenantQueue::CheckInvariants() const {
  if (running_hot_.size() != running_list_.size()) return MakeError(ErrorCode::kInternal, "the running jobs' filter array lost step");
  for (size_t i = 0; i < running_list_.size(); ++i) {
    const Entry& v = *running_list_[i];
    const RunningHot& h = running_hot_[i];
    if (!v.running || v.running_index != i || h.start_s != v.start_s || h.attained_gpu_s != v.attained_gpu_s ||
        h.gpus != GpusOf(v) || h.priority != v.job->priority || h.tenant != v.tenant || h.tier != v.tier ||
        h.quota_id != v.quota_id)
      return MakeError(ErrorCode::kInternal, "running job '{}' differs from its filter entry", v.job->name);
  }
  // The attained bounds hold exactly the running jobs (read at time 0: keys only).
  int64_t most_all = AttainedBound::kNone, most_not_guaranteed = AttainedBound::kNone;
  for (const RunningHot& h : running_hot_) {
    const int64_t at0 = h.attained_gpu_s - h.start_s * h.gpus;
    most_all = std::max(most_all, at0);
    if (h.tier != Tier::kGuaranteed) most_not_guaranteed = std::max(most_not_guaranteed, at0);
  }
  if (attained_all_.MaxAt(0) != most_all || attained_not_guaranteed_.MaxAt(0) != most_not_guaranteed)
    return MakeError(ErrorCode::kInternal, "the running jobs' attained bound lost step");
  // The order of a pass is built from the groups: they list every waiting job once.
  size_t listed = 0;
  for (size_t g = 0; g < waiting_by_quota_.size(); ++g) {
    for (const Keyed& k : waiting_by_quota_[g]) {
      const Entry& e = *k.e;
      if (e.running || static_cast<size_t>(e.quota_id) != g)
        return MakeError(ErrorCode::kInternal, "waiting job '{}' is listed in the wrong quota group", e.job->name);
      const Keyed want = ListedOf(*k.e);
      if (!(k.key == want.key) || k.planned_run != want.planned_run || k.shape_id != want.shape_id ||
          k.priority != want.priority || k.num_gpu != want.num_gpu || k.las_queue != 0 || k.tenant != want.tenant ||
          k.tier != want.tier || k.single_node != want.single_node)
        return MakeError(ErrorCode::kInternal, "waiting job '{}' differs from its quota group's copy", e.job->name);
    }
    listed += waiting_by_quota_[g].size();
  }
  if (listed != waiting_.size())
    return MakeError(ErrorCode::kInternal, "{} jobs wait but the quota groups list {}", waiting_.size(), listed);
  if (!tree_) return Ok();
  tenancy::TenantTree fresh = *tree_;
  std::vector<int64_t> all(held_all_.size(), 0), free(held_free_.size(), 0);
  const size_t nr = static_cast<size_t>(tree_->num_resources());
  for (const auto& [id, e] : entries_) {
    if (!e.running) continue;
    fresh.Add(e.tenant, e.quota);
    for (const auto& [r, amount] : e.quota) {
      all[static_cast<size_t>(e.tenant) * nr + static_cast<size_t>(r)] += amount;
      if (e.tier != Tier::kGuaranteed) free[static_cast<size_t>(e.tenant) * nr + static_cast<size_t>(r)] += amount;
    }
  }
  if (all != held_all_ || free != held_free_)
    return MakeError(ErrorCode::kInternal, "the running jobs' requests per tenant drifted from their sums");
  if (fresh.raw_usage() != usage_.raw_usage()) {
    return MakeError(ErrorCode::kInternal, "quota usage drifted from the running jobs' requests");
  }
  if (usage_.RecountUsage() != usage_.raw_usage()) {
    return MakeError(ErrorCode::kInternal, "inner tenants' usage differs from the recount over the leaves");
  }
  return Ok();
}

}  // namespace tidal
