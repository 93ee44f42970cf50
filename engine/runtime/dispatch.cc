#include "runtime/runtime.h"

#include <pthread.h>
#include <sched.h>

#include "common/errors.h"
#include "runtime/executor.h"
#include "runtime/fusion_plan.h"

namespace tandem::runtime {

namespace {
// Threads inherit their creator's scheduling policy, and NCCL and the CUDA
// runtime start their helper threads (NCCL's network proxies) from the
// thread that first calls them: this one. They must not inherit
// SCHED_BATCH, whose wake-ups never preempt: a proxy thread's are latency.
class DefaultScheduling {
 public:
  DefaultScheduling() {
    sched_param p{};
    if (pthread_getschedparam(pthread_self(), &policy_, &p) == 0 && policy_ == SCHED_BATCH) {
      sched_param normal{};
      switched_ = pthread_setschedparam(pthread_self(), SCHED_OTHER, &normal) == 0;
    }
  }
  ~DefaultScheduling() {
    sched_param p{};
    if (switched_) pthread_setschedparam(pthread_self(), policy_, &p);
  }
  DefaultScheduling(const DefaultScheduling&) = delete;
  DefaultScheduling& operator=(const DefaultScheduling&) = delete;

 private:
  int policy_ = SCHED_OTHER;
  bool switched_ = false;
};
}  // namespace

void Runtime::execute(ProcessSet& set, std::vector<Response>& responses) {
  if (responses.empty()) return;
  counters_.add(Counter::kResponses, responses.size());
  const int me = set.set_rank_of(rank_);
  // This rank's entries, found once; the map's nodes stay put while API
  // threads add other names, and are removed only here.
  std::vector<TensorEntry*> entries(responses.size(), nullptr);
  {
    std::lock_guard<std::mutex> lock(set.mu);
    for (size_t i = 0; i < responses.size(); ++i) {
      if (responses[i].kind != Response::Kind::kTensor) continue;
      auto it = set.pending.find(responses[i].name);
      if (it != set.pending.end()) entries[i] = &it->second;
    }
  }
  // Handles done in the current batch, announced together (handle.h); also
  // when a collective throws, so that no waiter misses its wake-up. The
  // batch's entries leave the pending table first (under one lock), so that
  // a woken framework can enqueue the same names again at once.
  struct Done {
    ProcessSet& set;
    std::vector<const std::string*> names;  // of entries still in set.pending
    std::vector<std::shared_ptr<HandleState>> handles;
    void publish() {
      if (!names.empty()) {
        std::lock_guard<std::mutex> lock(set.mu);
        for (const std::string* name : names) set.pending.erase(*name);
        names.clear();
      }
      // Last enqueued first: a framework waits on its handles in the order
      // it enqueued them, so the one it sleeps on is published last and it
      // wakes once to find the rest done, instead of once per handle.
      for (auto h = handles.rbegin(); h != handles.rend(); ++h) (*h)->publish();
      handles.clear();
    }
    ~Done() { publish(); }
  } done{set, {}, {}};
  done.names.reserve(responses.size());
  auto publish = [&] { done.publish(); };
  auto finish = [&](size_t i, tandem_result_t code, const std::string& error, TensorOutput out = {},
                    std::vector<int64_t> splits = {}, int value = -1) {
    if (!entries[i]) return;
    std::shared_ptr<HandleState> h = entries[i]->handle;
    int index = entries[i]->index;
    done.names.push_back(&responses[i].name);
    entries[i] = nullptr;
    if (!splits.empty()) h->set_received_splits(std::move(splits));
    if (value >= 0) h->set_int_result(value);
    if (h->complete_one_quietly(index, code, error, std::move(out)))
      done.handles.push_back(std::move(h));
  };
  for (size_t i = 0; i < responses.size(); ++i) {
    if (!entries[i]) continue;
    timeline_.end(responses[i].name);  // NEGOTIATE
    if (responses[i].error.empty()) timeline_.begin(responses[i].name, "QUEUE");
  }

  ExecContext ctx{set.data_path(), timeline_, counters_, me, set.global_ranks()};
  for (const Batch& b : plan_fusion(responses, tuned_.fusion_threshold_bytes)) {
    publish();  // the previous batch's
    Response& lead = responses[b.members.front()];
    const size_t i0 = b.members.front();
    if (lead.kind == Response::Kind::kJoin) {
      std::shared_ptr<HandleState> h;
      {
        std::lock_guard<std::mutex> lock(join_mu_);
        h.swap(join_handle_);
      }
      if (h) {
        h->set_int_result(lead.last_joined_rank);
        h->complete_one(0, TANDEM_SUCCESS, "");
      }
      continue;
    }
    if (!lead.error.empty()) {
      counters_.add(Counter::kMismatches);
      report(log::Level::kDebug, lead.error, __LINE__);
      finish(i0, lead.error_code, lead.error);
      continue;
    }
    counters_.add(Counter::kBatches);
    if (lead.kind == Response::Kind::kTensor && lead.first().device != TANDEM_DEVICE_CPU) {
      std::vector<const Response*> members;
      std::vector<TensorEntry*> mine;
      for (size_t m : b.members) {
        members.push_back(&responses[m]);
        mine.push_back(entries[m]);
      }
      auto results = run_on_device(ctx, set.id(), members, mine);
      for (size_t k = 0; k < b.members.size(); ++k)
        finish(b.members[k], results[k].code, results[k].error, std::move(results[k].output),
               std::move(results[k].splits));
      continue;
    }
    switch (lead.type) {
      case OpType::kAllreduce: {
        std::vector<const Response*> members;
        std::vector<TensorEntry*> mine;
        for (size_t m : b.members) {
          members.push_back(&responses[m]);
          mine.push_back(entries[m]);
        }
        if (b.members.size() > 1) {
          counters_.add(Counter::kFusedBatches);
          counters_.add(Counter::kFusedTensors, b.members.size());
        }
        run_allreduce_batch(ctx, members, mine, b.bytes);
        for (size_t m : b.members) finish(m, TANDEM_SUCCESS, "");
        break;
      }
      case OpType::kBarrier:
        timeline_.end(lead.name);
        finish(i0, TANDEM_SUCCESS, "");
        break;
      case OpType::kAddProcessSet:
      case OpType::kRemoveProcessSet: {
        timeline_.end(lead.name);
        int value = -1;
        std::string error;
        try {
          run_internal(lead);
          value = lead.last_joined_rank;
        } catch (const InvalidArgument& e) { error = e.what(); }
        finish(i0, error.empty() ? TANDEM_SUCCESS : TANDEM_ERR_INVALID_ARGUMENT, error, {}, {},
               value);
        break;
      }
      default: {
        if (!entries[i0]) break;  // (joined ranks get an error response instead)
        TensorOutput out;
        std::vector<int64_t> splits;
        run_single(ctx, lead, *entries[i0], &out, &splits);
        finish(i0, TANDEM_SUCCESS, "", std::move(out), std::move(splits));
        break;
      }
    }
  }
}

// Process set changes run on this thread, at the same point of the global
// set's order on every rank, so the data path's create() (a collective over
// the world) never interleaves with a cycle.
void Runtime::run_internal(Response& r) {
  if (r.type == OpType::kAddProcessSet) {
    std::vector<int> ranks(r.first().shape.begin(), r.first().shape.end());
    r.last_joined_rank = sets_.add(ranks);
    return;
  }
  const int id = r.first().root;
  std::shared_ptr<ProcessSet> victim = sets_.remove(id);
  if (device_) device_->remove_process_set(id);
  ProcessSet::Pending orphans;
  {
    std::lock_guard<std::mutex> lock(victim->mu);
    orphans.swap(victim->pending);
    victim->fresh.clear();
  }
  for (auto& [name, e] : orphans)
    e.handle->complete_one(e.index, TANDEM_ERR_ABORTED,
                           std::string(op_type_name(e.request.type)) + " '" + name +
                               "': process set " + std::to_string(id) + " was removed");
  r.last_joined_rank = 0;
}

std::vector<DevicePath::Result> Runtime::run_on_device(
    ExecContext& ctx, int set_id, const std::vector<const Response*>& responses,
    const std::vector<TensorEntry*>& entries) {
  if (device_) {
    DefaultScheduling normal;
    return device_->run(ctx, set_id, responses, entries);
  }
  // Same answer on every rank (the runtime is built the same way everywhere).
  std::vector<DevicePath::Result> out(responses.size());
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].code = TANDEM_ERR_UNSUPPORTED;
    out[i].error = std::string(op_type_name(responses[i]->type)) + " '" + responses[i]->name +
                   "': device " + std::to_string(responses[i]->first().device) +
                   " is a GPU and this runtime has no GPU path; copy the tensor to the CPU";
  }
  return out;
}

}  // namespace tandem::runtime
