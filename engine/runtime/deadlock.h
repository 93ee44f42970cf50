// Deadlock of diverged ranks: every rank involved waits for a collective
// that another rank involved will never start, because that rank itself
// waits for something else (rank 0 in `barrier`, rank 1 in `allgather 'x'`;
// auto-generated names that drifted apart). Horovod waits forever and warns
// about a stall; the runtime fails such a job at once, on every rank, with
// one message that says what each rank waits in.
//
// What a rank says (CycleMessage::waits, on the global set): a rank is
// blocked when at least one of its threads is inside a wait on a handle
// (tandem_handle_wait, which the Python binding's synchronize uses, or a
// process-set change), its threads have been waiting (one at least, all
// the time) for TANDEM_DEADLOCK_CHECK_SECONDS, nothing was enqueued on it in
// that time, and everything it enqueued has been announced. Only then does it list
// what it waits for: each operation (process set, type, name) with the
// ranks of that set that have not enqueued it (nor joined), as its
// coordinator knows them after the last round. A rank that is busy (in
// the framework, a data loader, a checkpoint) sends nothing and counts as
// able to go on.
//
// The verdict (find_deadlock), the same on every rank because every rank
// feeds it the same messages: a rank can go on if it is not blocked, or if
// one of the operations it waits for misses only ranks that can go on (they
// may still enqueue it). What is left once nothing more can be added can
// never go on: a deadlock, whatever the other ranks do. A merely slow rank
// (checkpointing for ten minutes while the others wait in an allreduce) is
// not blocked, so the ranks that wait for it can go on: only the stall
// warning applies there. The runtime fails the job only when two
// consecutive rounds find the same deadlock (a thread that enqueues right
// after its rank's message was built is seen by then).
//
// Assumption, documented in docs/runtime.md: a thread that waits on a handle
// is the one that would enqueue what the rank does next. A program where
// one thread waits while another thread of the same rank, still busy for
// longer than the check time, will enqueue the collective the peers wait
// for, turns detection off with TANDEM_DEADLOCK_CHECK_SECONDS=0.
#pragma once

#include <string>
#include <vector>

#include "runtime/cycle_message.h"

namespace tandem::runtime {

struct DeadlockVerdict {
  std::vector<int> ranks;  // global ranks that can never go on (ascending)
  std::string message;     // names what each of them waits in
  bool found() const { return !ranks.empty(); }
  bool operator==(const DeadlockVerdict& o) const {
    return ranks == o.ranks && message == o.message;
  }
};

// waits_by_rank[r]: what global rank r waits in (empty: not blocked).
DeadlockVerdict find_deadlock(const std::vector<std::vector<Wait>>& waits_by_rank);

// "allgather 'x'", "barrier", "join", "add_process_set" for a Wait.
std::string describe_wait(const Wait& w);

}  // namespace tandem::runtime
