#include "shm/path_choice.h"

#include <algorithm>

namespace tandem {

double PathChooser::best(int k, bool direct) const {
  const Class& c = classes_[k];
  const int p = direct ? 1 : 0;
  double b = 0;
  // The least of the last samples: one preemption does not decide.
  for (int i = 0; i < std::min(c.calls[p] - 1, kSamples); ++i)
    b = b == 0 ? c.recent[p][i] : std::min(b, c.recent[p][i]);
  return b;
}

void PathChooser::set(int k, bool direct) {
  const uint64_t bit = uint64_t{1} << k;
  choices_ = direct ? (choices_ | bit) : (choices_ & ~bit);
}

void PathChooser::record(int k, bool direct, double ns_per_byte) {
  if (k < 0 || k >= kClasses) return;
  Class& c = classes_[k];
  const int p = direct ? 1 : 0;
  if (c.calls[p]++ > 0) c.recent[p][(c.calls[p] - 2) % kSamples] = ns_per_byte;
  // Until both paths have their samples, take turns (the warm-up call
  // counts as a turn, its time as nothing); once each has one, a path
  // kClearly slower is not sampled further: exploring costs most where
  // the paths differ most, and the rechecks look at it again.
  const double d = best(k, true), st = best(k, false);
  const bool clear = d > 0 && st > 0 && (d > st * kClearly || st > d * kClearly);
  const bool direct_short = c.calls[1] < kSamples + 1, staged_short = c.calls[0] < kSamples + 1;
  if (!clear && (direct_short || staged_short)) {
    if (direct_short != staged_short) set(k, direct_short);
    else if (c.calls[1] != c.calls[0]) set(k, c.calls[1] < c.calls[0]);
    else set(k, !direct);
    return;
  }
  const bool now = (choices_ >> k) & 1;
  const double mine = best(k, now), other = best(k, !now);
  bool take = now;
  if (other < mine * kMargin) take = !now;
  if (take != now) {
    c.since_recheck = 0;
    set(k, take);
    return;
  }
  // The other path once in a while: its samples may be from another time.
  // The call after the recheck comes back here and chooses again.
  if (++c.since_recheck >= kRecheck - 1) {
    c.since_recheck = 0;
    set(k, !now);
    return;
  }
  set(k, now);
}

}  // namespace tandem
