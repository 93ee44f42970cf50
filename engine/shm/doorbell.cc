#include "shm/doorbell.h"

#include "shm/futex.h"

namespace tandem {

Doorbell::Doorbell(ControlBlock* control, int local_rank, int local_size)
    : control_(control), me_(local_rank), n_(local_size) {}

uint64_t Doorbell::requested() const {
  return control_->rounds_requested.load(std::memory_order_seq_cst);
}

namespace {
// Raises the monotone maximum; whether this call did.
bool raise(std::atomic<uint64_t>& requested, uint64_t round) {
  uint64_t seen = requested.load(std::memory_order_seq_cst);
  while (seen < round && !requested.compare_exchange_weak(seen, round, std::memory_order_seq_cst)) {
  }
  return seen < round;
}
}  // namespace

bool Doorbell::request(uint64_t round) {
  const bool raised = raise(control_->rounds_requested, round);
  for (int r = 0; r < n_; ++r)
    if (r != me_) ring(r);
  return raised;
}

void Doorbell::relay(uint64_t round) {
  raise(control_->rounds_requested, round);
  for (int r = 0; r < n_; ++r) ring(r);
}

void Doorbell::poke() { ring(me_); }

// The store of what the waiter checks (rounds_requested, or the caller's
// ready state) comes before this load of `sleeping`, and the waiter sets
// `sleeping` before it checks: one of the two sees the other (seq_cst), and
// the bumped word makes a futex_wait that raced with us return at once.
void Doorbell::ring(int rank) {
  DoorbellSlot& s = control_->doorbells[rank];
  if (s.sleeping.load(std::memory_order_seq_cst) == 0) return;
  s.word.fetch_add(1, std::memory_order_seq_cst);
  futex_wake(&s.word);
}

bool Doorbell::wait(uint64_t done, std::chrono::steady_clock::time_point until,
                    const std::function<bool()>& ready) {
  DoorbellSlot& s = control_->doorbells[me_];
  for (;;) {
    const uint32_t w = s.word.load(std::memory_order_seq_cst);
    s.sleeping.store(1, std::memory_order_seq_cst);
    const bool asked = requested() > done;
    if (asked || ready()) {
      s.sleeping.store(0, std::memory_order_seq_cst);
      return asked;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) {
      s.sleeping.store(0, std::memory_order_seq_cst);
      return false;
    }
    futex_wait(&s.word, w, std::chrono::duration_cast<std::chrono::nanoseconds>(until - now));
    s.sleeping.store(0, std::memory_order_seq_cst);
  }
}

}  // namespace tandem
