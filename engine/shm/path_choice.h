// Which node-local allreduce, staged or direct (single copy), each size
// takes: chosen from the node's own calls while the job runs, not once.
//
// What a kernel copy costs against a memcpy differs by host, either way,
// and on one host by size and by mode: on one VM the direct allreduce was
// the slower one from 16 KiB to 4 MiB at 2 ranks; on another (a larger L2
// and more bandwidth per core) it was as fast up to 4 MiB and the faster
// one at 16 MiB in place, while out of place at 16 MiB it was the slower
// one (docs/engine.md, "Single copy"). A setup measurement at one size
// cannot see that. So local rank 0 times its own calls, per power-of-two
// size class and path, and the node takes in each class the path whose
// last samples were faster, trying the other one now and then, since what
// was slower a while ago may not be now (a neighbour's memory traffic, a
// VM's bandwidth phase).
//
// The choice is a bitmap in the segment (ControlBlock::direct_classes),
// written by local rank 0 only between an allreduce's first and last
// barrier and read by every rank before its first arrival, as the staged
// step is (ShmGroup::decide_step), so every rank takes the same path in
// every call. Only the size decides the class: it is the same on every
// rank, where in place or not need not be.
#pragma once

#include <cstdint>

namespace tandem {

class PathChooser {
 public:
  static constexpr int kClasses = 64;
  // Timed samples per path before a class chooses by time; each path's
  // first call in a class is not one (pages backed, caches cold).
  static constexpr int kSamples = 3;
  // One path this much slower than the other after a sample each: settled.
  static constexpr double kClearly = 1.25;
  // In a settled class one call in kRecheck takes the other path.
  static constexpr int kRecheck = 32;
  // The other path must be this much faster to take over: two samples
  // closer than 3% are the same speed on a shared machine.
  static constexpr double kMargin = 0.97;

  // Bit k of `initial`: class k starts direct (until both paths are timed).
  explicit PathChooser(uint64_t initial) : choices_(initial) {}

  // The class of an allreduce of `bytes` (> 0): floor(log2(bytes)).
  static int size_class(uint64_t bytes) { return 63 - __builtin_clzll(bytes); }

  // A call of class k took ns_per_byte on the direct path (or the staged
  // one); updates what class k takes next.
  void record(int k, bool direct, double ns_per_byte);

  // Bit k: class k takes the direct path.
  uint64_t choices() const { return choices_; }

  // The class's best recent time per byte on a path (0: none yet).
  double best(int k, bool direct) const;

 private:
  struct Class {
    int calls[2] = {0, 0};  // by path (0 staged, 1 direct), warm-up call included
    double recent[2][kSamples] = {};
    int since_recheck = 0;
  };
  void set(int k, bool direct);

  Class classes_[kClasses];
  uint64_t choices_;
};

}  // namespace tandem
