#include "runtime/runtime.h"

#include <algorithm>

#include "common/errors.h"

namespace tandem::runtime {

std::shared_ptr<HandleState> Runtime::enqueue(const std::vector<TensorArg>& tensors,
                                              const OpArgs& args) {
  auto set = sets_.find(args.process_set);
  if (!set)
    throw InvalidArgument("process set " + std::to_string(args.process_set) +
                          " does not exist (add it with tandem_add_process_set)");
  std::vector<Request> requests = make_requests(tensors, args, *set, rank_);
  {
    std::lock_guard<std::mutex> lock(join_mu_);
    if (join_handle_ && args.process_set == TANDEM_GLOBAL_PROCESS_SET)
      throw InvalidArgument(requests.front().name +
                            ": this rank has called join; enqueue "
                            "nothing more until the join completes");
  }
  std::shared_ptr<HandleState> handle;
  {
    std::lock_guard<std::mutex> lock(set->mu);
    throw_if_broken();
    check_names_free(requests, *set);
    handle = handles_.create(static_cast<int>(requests.size()));
    for (size_t i = 0; i < requests.size(); ++i) {
      TensorEntry e;
      e.request = std::move(requests[i]);
      e.input = tensors[i].input;
      e.output = tensors[i].output;
      e.stream = tensors[i].stream;
      e.handle = handle;
      e.index = static_cast<int>(i);
      if (straggler_on()) e.enqueued = std::chrono::steady_clock::now();
      set->add_locked(std::move(e));
    }
  }
  wake();
  return handle;
}

std::shared_ptr<HandleState> Runtime::join() {
  std::shared_ptr<HandleState> h;
  {
    std::lock_guard<std::mutex> lock(join_mu_);
    throw_if_broken();
    if (join_handle_) throw InvalidArgument("join: this rank is already joining");
    join_handle_ = h = handles_.create(1);
  }
  wake();
  return h;
}

int Runtime::wait_internal(const std::shared_ptr<HandleState>& h) {
  {
    BlockedWaiter blocked(*this, *h);
    h->wait();
  }
  int result = h->int_result();
  tandem_result_t code = h->result();
  std::string error = h->error();
  handles_.release(h->id());
  if (code == TANDEM_SUCCESS) return result;
  throw_error(code, error);
}

int Runtime::add_process_set(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  if (ranks.empty()) throw InvalidArgument("add_process_set: no ranks given");
  if (std::adjacent_find(ranks.begin(), ranks.end()) != ranks.end())
    throw InvalidArgument("add_process_set: rank " +
                          std::to_string(*std::adjacent_find(ranks.begin(), ranks.end())) +
                          " is listed twice");
  if (ranks.front() < 0 || ranks.back() >= size_)
    throw InvalidArgument("add_process_set: ranks must lie in 0.." + std::to_string(size_ - 1));
  Request q;
  q.type = OpType::kAddProcessSet;
  q.shape.assign(ranks.begin(), ranks.end());
  return negotiate_internal(std::move(q));
}

void Runtime::remove_process_set(int id) {
  if (id == TANDEM_GLOBAL_PROCESS_SET)
    throw InvalidArgument("remove_process_set: the global process set (0) cannot be removed");
  if (!sets_.find(id))
    throw InvalidArgument("remove_process_set: process set " + std::to_string(id) +
                          " does not exist");
  Request q;
  q.type = OpType::kRemoveProcessSet;
  q.root = id;
  negotiate_internal(std::move(q));
}

// Process set changes are negotiated on the global set like tensors, so
// that every rank applies them at the same point (run_internal).
int Runtime::negotiate_internal(Request q) {
  q.name = "tandem:process_set_op#" + std::to_string(internal_seq_++);
  auto set = sets_.find(TANDEM_GLOBAL_PROCESS_SET);
  std::shared_ptr<HandleState> h;
  {
    std::lock_guard<std::mutex> lock(set->mu);
    throw_if_broken();
    h = handles_.create(1);
    TensorEntry e;
    e.request = std::move(q);
    e.handle = h;
    set->add_locked(std::move(e));
  }
  wake();
  return wait_internal(h);
}

std::vector<int> Runtime::process_set_ranks(int id) const {
  auto set = sets_.find(id);
  if (!set) throw InvalidArgument("process set " + std::to_string(id) + " does not exist");
  return set->global_ranks();
}

}  // namespace tandem::runtime
