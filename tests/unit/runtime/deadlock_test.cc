// Deadlock of diverged ranks (runtime/deadlock.h): the verdict on its own,
// then ranks as threads that wait on handles the way the C API and the
// Python binding do (through Runtime::BlockedWaiter). Positive cases fail
// every rank with one message naming each rank's wait; negative cases (a
// slow rank, a rank between two waits, join, a second thread that goes on)
// must complete. No test asserts a time: waits end at a generous deadline
// and only the outcome is checked.
#include <gtest/gtest.h>

#include <atomic>
#include <random>

#include "cluster.h"
#include "common/errors.h"
#include "runtime/deadlock.h"

namespace tandem::runtime::testing {
namespace {

using namespace std::chrono_literals;

Wait wait_in(int set, OpType type, const std::string& name, std::vector<int32_t> missing) {
  Wait w;
  w.set = set;
  w.type = static_cast<uint8_t>(type);
  w.name = name;
  w.missing = std::move(missing);
  return w;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// ------------------------------------------------------------------ verdict

TEST(DeadlockVerdict, TwoRanksInDifferentCollectives) {
  auto v = find_deadlock({{wait_in(0, OpType::kBarrier, "tandem:barrier", {1})},
                          {wait_in(0, OpType::kAllgather, "x", {0})}});
  EXPECT_EQ(v.ranks, (std::vector<int>{0, 1}));
  EXPECT_TRUE(
      contains(v.message, "rank 0 waits in barrier (process set 0), not yet started by rank 1"))
      << v.message;
  EXPECT_TRUE(contains(v.message,
                       "rank 1 waits in allgather 'x' (process set 0), not yet started by rank 0"))
      << v.message;
}

TEST(DeadlockVerdict, ARankThatIsNotBlockedCanStillUnblockTheOthers) {
  // Rank 0 is busy (a checkpoint): the others wait for it, nothing more.
  EXPECT_FALSE(find_deadlock({{},
                              {wait_in(0, OpType::kAllreduce, "g", {0})},
                              {wait_in(0, OpType::kAllreduce, "g", {0})}})
                   .found());
  // A chain that ends at a free rank.
  EXPECT_FALSE(find_deadlock({{wait_in(0, OpType::kAllreduce, "a", {1})},
                              {wait_in(0, OpType::kAllreduce, "b", {2})},
                              {}})
                   .found());
}

TEST(DeadlockVerdict, ACycleIsADeadlockWhateverTheFreeRanksDo) {
  auto v = find_deadlock(
      {{wait_in(1, OpType::kAllreduce, "a", {1})}, {wait_in(1, OpType::kAllreduce, "b", {0})}, {}});
  EXPECT_EQ(v.ranks, (std::vector<int>{0, 1}));
  EXPECT_TRUE(contains(v.message, "(process set 1)")) << v.message;
  // Waiting for a deadlocked rank is being deadlocked.
  v = find_deadlock({{wait_in(0, OpType::kAllreduce, "a", {1})},
                     {wait_in(0, OpType::kAllreduce, "b", {0})},
                     {wait_in(0, OpType::kAllreduce, "a", {1})}});
  EXPECT_EQ(v.ranks, (std::vector<int>{0, 1, 2}));
}

TEST(DeadlockVerdict, OneWaitThatCanGoOnIsEnough) {
  // Rank 0 has two threads waiting; one of them waits for a free rank.
  EXPECT_FALSE(find_deadlock({{wait_in(0, OpType::kAllreduce, "a", {1}),
                               wait_in(0, OpType::kAllreduce, "b", {2})},
                              {wait_in(0, OpType::kAllreduce, "c", {0})},
                              {}})
                   .found());
}

TEST(DeadlockVerdict, JoinAndGroupsAreNamed) {
  Wait join;
  join.type = Wait::kJoin;
  join.name = "join";
  join.missing = {1};
  Wait group = wait_in(0, OpType::kAllreduce, "grad.0", {0});
  group.more = 3;
  auto v = find_deadlock({{join}, {group}});
  EXPECT_TRUE(contains(v.message, "rank 0 waits in join (process set 0)")) << v.message;
  EXPECT_TRUE(contains(v.message, "allreduce 'grad.0' (and 3 more of its group)")) << v.message;
}

TEST(DeadlockVerdict, WaitsTravelInTheCycleMessage) {
  CycleMessage m;
  m.requests.push_back(Request{});
  m.requests.back().name = "r";
  Wait w = wait_in(2, OpType::kAlltoall, "name with spaces", {0, 3});
  w.more = 7;
  m.waits = {w, wait_in(0, OpType::kBarrier, "tandem:barrier", {})};
  CycleMessage back = CycleMessage::parse(m.serialize());
  ASSERT_EQ(back.waits.size(), 2u);
  EXPECT_TRUE(back.waits[0] == w);
  EXPECT_TRUE(back.waits[1] == m.waits[1]);
  // A round without waits costs no byte for them.
  CycleMessage plain;
  CycleMessage with;
  with.waits = {w};
  EXPECT_LT(plain.serialize().size(), with.serialize().size());
  EXPECT_TRUE(CycleMessage::parse(plain.serialize()).waits.empty());
}

// ------------------------------------------------------------------ runtime

Settings deadlock_settings(double check = 0.2) {
  Settings s = Cluster::test_settings();
  s.deadlock_check_seconds = check;
  return s;
}

// Waits the way tandem_handle_wait does (the rank counts as blocked), with
// a deadline so that a missed deadlock fails the test instead of hanging it.
tandem_result_t blocked_wait(Runtime& rt, const std::shared_ptr<HandleState>& h,
                             std::chrono::seconds limit = 60s) {
  Runtime::BlockedWaiter blocked(rt, *h);
  h->wait_until(std::chrono::steady_clock::now() + limit);
  return h->result();
}

struct Outcome {
  tandem_result_t code = TANDEM_ERR_IN_PROGRESS;
  std::string error;
};

TensorArg scalar(const std::string& name, float* v) { return tensor(name, v, v, {1}); }

OpArgs op(OpType type, int set = 0) {
  OpArgs a;
  a.type = type;
  a.process_set = set;
  return a;
}

void expect_deadlock_everywhere(const std::vector<Outcome>& out,
                                const std::vector<std::string>& parts) {
  for (size_t r = 0; r < out.size(); ++r) {
    EXPECT_EQ(out[r].code, TANDEM_ERR_ABORTED) << "rank " << r << ": " << out[r].error;
    EXPECT_EQ(out[r].error, out[0].error) << "rank " << r << ": one message on every rank";
    EXPECT_TRUE(contains(out[r].error, "deadlock")) << out[r].error;
    for (const auto& p : parts) EXPECT_TRUE(contains(out[r].error, p)) << out[r].error;
  }
}

TEST(Deadlock, RanksInDifferentCollectivesFailAtOnceOnEveryRank) {
  Cluster c(2, deadlock_settings());
  std::vector<Outcome> out(2);
  std::vector<std::string> later(2);
  c.each([&](int r, Runtime& rt) {
    std::vector<float> x(4, 1.0f);
    auto h = r == 0 ? rt.enqueue({tensor("tandem:barrier", nullptr, nullptr, {0}, TANDEM_UINT8)},
                                 op(OpType::kBarrier))
                    : rt.enqueue({tensor("x", x.data(), nullptr, {4})}, op(OpType::kAllgather));
    out[r].code = blocked_wait(rt, h);
    out[r].error = h->error();
    // The next call fails cleanly with the same message.
    float v = 1;
    try {
      rt.enqueue({scalar("after", &v)}, allreduce());
    } catch (const AbortedError& e) { later[r] = e.what(); }
  });
  expect_deadlock_everywhere(
      out, {"rank 0 waits in barrier (process set 0), not yet started by rank 1",
            "rank 1 waits in allgather 'x' (process set 0), not yet started by rank 0"});
  EXPECT_EQ(later[0], out[0].error);
  EXPECT_EQ(later[1], out[1].error);
}

TEST(Deadlock, NamesThatDriftedApartOnThreeRanks) {
  Cluster c(3, deadlock_settings());
  std::vector<Outcome> out(3);
  c.each([&](int r, Runtime& rt) {
    float v = 1;
    // Rank 2 made one call more before: its automatic name is one ahead.
    auto h = rt.enqueue({scalar(r == 2 ? "allreduce.8" : "allreduce.7", &v)}, allreduce());
    out[r].code = blocked_wait(rt, h);
    out[r].error = h->error();
  });
  // Ranks 0 and 2 alone close the cycle; rank 1 is named too when it was
  // already blocked as the verdict formed, which a loaded machine can delay
  // past it, so its line is not required.
  expect_deadlock_everywhere(
      out,
      {"rank 0 waits in allreduce 'allreduce.7'",
       "rank 2 waits in allreduce 'allreduce.8' (process set 0), not yet started by ranks 0,1"});
}

TEST(Deadlock, DriftInASteadyStateStepAnnouncedThroughTheCache) {
  // Three steps of 'a' then 'b' everywhere (both end up in the response
  // cache), then rank 1 skips 'a': both ranks wait in tensors announced by
  // cache bit, which the verdict must read as well as full requests.
  Cluster c(2, deadlock_settings());
  std::vector<Outcome> out(2);
  c.each([&](int r, Runtime& rt) {
    float a = 1, b = 1;
    for (int step = 0; step < 3; ++step) {
      auto ha = rt.enqueue({scalar("a", &a)}, allreduce());
      ASSERT_EQ(blocked_wait(rt, ha), TANDEM_SUCCESS);
      auto hb = rt.enqueue({scalar("b", &b)}, allreduce());
      ASSERT_EQ(blocked_wait(rt, hb), TANDEM_SUCCESS);
    }
    auto h = rt.enqueue({scalar(r == 0 ? "a" : "b", r == 0 ? &a : &b)}, allreduce());
    out[r].code = blocked_wait(rt, h);
    out[r].error = h->error();
  });
  EXPECT_GT(c.ranks[0]->counters().get(Counter::kCacheHits), 0u);
  expect_deadlock_everywhere(
      out, {"rank 0 waits in allreduce 'a' (process set 0), not yet started by rank 1",
            "rank 1 waits in allreduce 'b' (process set 0), not yet started by rank 0"});
}

TEST(Deadlock, ASlowRankIsNotADeadlockOnlyAStall) {
  Settings s = deadlock_settings();
  s.stall_check_seconds = 0.5;
  Cluster c(3, s);
  std::vector<Outcome> out(3);
  std::vector<float> v(3);
  c.each([&](int r, Runtime& rt) {
    // Rank 0 "checkpoints" for ten times the check time before it enqueues.
    if (r == 0) std::this_thread::sleep_for(2s);
    v[r] = static_cast<float>(r + 1);
    auto h = rt.enqueue({scalar("grad", &v[r])}, allreduce());
    out[r].code = blocked_wait(rt, h);
    out[r].error = h->error();
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(out[r].code, TANDEM_SUCCESS) << out[r].error;
    EXPECT_EQ(v[r], 6.0f);
  }
  bool warned = false;
  for (const auto& line : c.logs())
    warned = warned || contains(line, "'grad' was enqueued by rank(s) 1,2");
  EXPECT_TRUE(warned) << "the stall warning still applies";
}

TEST(Deadlock, ARankBetweenTwoWaitsOrSleepingBeforeOneIsNotBlocked) {
  // Steps of several tensors enqueued in random orders; on a random rank a
  // pause longer than the check time between the enqueues and the waits,
  // or between two waits. Nothing may fail.
  Cluster c(3, deadlock_settings(0.1));
  std::atomic<int> failures{0};
  std::string first;
  std::mutex mu;
  c.each([&](int r, Runtime& rt) {
    std::mt19937 rng(17 + r);
    for (int step = 0; step < 8; ++step) {
      std::vector<float> v(5, 1.0f);
      std::vector<int> order{0, 1, 2, 3, 4};
      std::shuffle(order.begin(), order.end(), rng);
      std::vector<std::shared_ptr<HandleState>> h(5);
      for (int t : order) h[t] = rt.enqueue({scalar("s" + std::to_string(t), &v[t])}, allreduce());
      const bool pause = static_cast<int>(rng() % 3) == r % 3;
      if (pause) std::this_thread::sleep_for(300ms);
      for (int t = 0; t < 5; ++t) {
        if (blocked_wait(rt, h[t]) != TANDEM_SUCCESS) {
          ++failures;
          std::lock_guard<std::mutex> lock(mu);
          if (first.empty()) first = h[t]->error();
        }
        if (pause && t == 2) std::this_thread::sleep_for(300ms);
      }
    }
  });
  EXPECT_EQ(failures.load(), 0) << first;
}

TEST(Deadlock, TwoThreadsWaitingOnOneRank) {
  // Rank 0 waits on 'x' in one thread and on 'y' in another; rank 1 is
  // busy, does 'y', is busy again, then does 'x'. Rank 0 stays blocked
  // throughout (first on both, then on 'x' alone) but rank 1 never is.
  Cluster c(2, deadlock_settings());
  std::vector<Outcome> x(2), y(2);
  c.each([&](int r, Runtime& rt) {
    float a = 1, b = 1;
    if (r == 0) {
      auto hx = rt.enqueue({scalar("x", &a)}, allreduce());
      auto hy = rt.enqueue({scalar("y", &b)}, allreduce());
      std::thread other([&] { y[r].code = blocked_wait(rt, hy); });
      x[r].code = blocked_wait(rt, hx);
      other.join();
    } else {
      std::this_thread::sleep_for(1s);
      auto hy = rt.enqueue({scalar("y", &b)}, allreduce());
      y[r].code = blocked_wait(rt, hy);
      std::this_thread::sleep_for(1s);
      auto hx = rt.enqueue({scalar("x", &a)}, allreduce());
      x[r].code = blocked_wait(rt, hx);
    }
    EXPECT_EQ(a, 2.0f);
    EXPECT_EQ(b, 2.0f);
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(x[r].code, TANDEM_SUCCESS) << r;
    EXPECT_EQ(y[r].code, TANDEM_SUCCESS) << r;
  }
}

TEST(Deadlock, ProcessSets) {
  // World of 3, set {0,1}. (a) Rank 0 waits in the set, ranks 1 and 2 in
  // the world: rank 1 never reaches the set's op, so nobody can go on.
  {
    Cluster c(3, deadlock_settings());
    std::vector<int> ids(3);
    c.each([&](int r, Runtime& rt) { ids[r] = rt.add_process_set({0, 1}); });
    ASSERT_EQ(ids[0], 1);
    std::vector<Outcome> out(3);
    c.each([&](int r, Runtime& rt) {
      float v = 1;
      auto h = r == 0 ? rt.enqueue({scalar("a", &v)}, allreduce(TANDEM_SUM, 1))
                      : rt.enqueue({scalar("g", &v)}, allreduce());
      out[r].code = blocked_wait(rt, h);
      out[r].error = h->error();
    });
    expect_deadlock_everywhere(
        out, {"rank 0 waits in allreduce 'a' (process set 1), not yet started by rank 1",
              "rank 2 waits in allreduce 'g' (process set 0), not yet started by rank 0"});
  }
  // (b) The set's two ranks wait in different ops of the set while rank 2,
  // outside it, is busy: a deadlock of the set. Rank 2's next call fails.
  {
    Cluster c(3, deadlock_settings());
    c.each([&](int, Runtime& rt) { rt.add_process_set({0, 1}); });
    std::vector<Outcome> out(3);
    c.each([&](int r, Runtime& rt) {
      float v = 1;
      if (r == 2) {
        std::this_thread::sleep_for(3s);
        try {
          auto h = rt.enqueue({scalar("late", &v)}, allreduce());
          out[r].code = blocked_wait(rt, h);
          out[r].error = h->error();
        } catch (const AbortedError& e) {
          out[r].code = TANDEM_ERR_ABORTED;
          out[r].error = e.what();
        }
        return;
      }
      auto h = rt.enqueue({scalar(r == 0 ? "a" : "b", &v)}, allreduce(TANDEM_SUM, 1));
      out[r].code = blocked_wait(rt, h);
      out[r].error = h->error();
    });
    expect_deadlock_everywhere(out, {"rank 0 waits in allreduce 'a' (process set 1)",
                                     "rank 1 waits in allreduce 'b' (process set 1)"});
  }
  // (c) Not a deadlock: rank 1 is busy, then does the set's op and the
  // world's; ranks 0 and 2 wait for it meanwhile.
  {
    Cluster c(3, deadlock_settings());
    c.each([&](int, Runtime& rt) { rt.add_process_set({0, 1}); });
    std::vector<Outcome> out(3), set_out(3);
    c.each([&](int r, Runtime& rt) {
      float v = 1, w = 1;
      if (r == 1) std::this_thread::sleep_for(1500ms);
      if (r != 2) {
        auto hs = rt.enqueue({scalar("a", &w)}, allreduce(TANDEM_SUM, 1));
        set_out[r].code = blocked_wait(rt, hs);
      } else {
        set_out[r].code = TANDEM_SUCCESS;
      }
      auto h = rt.enqueue({scalar("g", &v)}, allreduce());
      out[r].code = blocked_wait(rt, h);
      out[r].error = h->error();
    });
    for (int r = 0; r < 3; ++r) {
      EXPECT_EQ(set_out[r].code, TANDEM_SUCCESS) << r;
      EXPECT_EQ(out[r].code, TANDEM_SUCCESS) << r << ": " << out[r].error;
    }
  }
}

TEST(Deadlock, Join) {
  // Not a deadlock: rank 0 joins early and waits; the others keep stepping
  // (pausing longer than the check time), then join.
  {
    Cluster c(3, deadlock_settings());
    std::vector<Outcome> out(3);
    c.each([&](int r, Runtime& rt) {
      if (r > 0) {
        for (int step = 0; step < 3; ++step) {
          float v = 1;
          auto h = rt.enqueue({scalar("step", &v)}, allreduce());
          EXPECT_EQ(blocked_wait(rt, h), TANDEM_SUCCESS) << h->error();
          EXPECT_EQ(v, 2.0f);
          std::this_thread::sleep_for(400ms);
        }
      }
      auto j = rt.join();
      out[r].code = blocked_wait(rt, j);
      out[r].error = j->error();
    });
    for (int r = 0; r < 3; ++r) EXPECT_EQ(out[r].code, TANDEM_SUCCESS) << out[r].error;
  }
  // A deadlock with a joined rank: rank 0 waits in join; rank 1 in the set
  // {1,2}; rank 2 in the world's allreduce, which needs rank 1 (rank 0 has
  // joined and does not count).
  {
    Cluster c(3, deadlock_settings());
    c.each([&](int, Runtime& rt) { rt.add_process_set({1, 2}); });
    std::vector<Outcome> out(3);
    c.each([&](int r, Runtime& rt) {
      float v = 1;
      auto h = r == 0   ? rt.join()
               : r == 1 ? rt.enqueue({scalar("a", &v)}, allreduce(TANDEM_SUM, 1))
                        : rt.enqueue({scalar("g", &v)}, allreduce());
      out[r].code = blocked_wait(rt, h);
      out[r].error = h->error();
    });
    expect_deadlock_everywhere(
        out, {"rank 1 waits in allreduce 'a' (process set 1), not yet started by rank 2",
              "rank 2 waits in allreduce 'g' (process set 0), not yet started by rank 1"});
    // Rank 0 is named once it blocks in its join; the verdict may come
    // before that (its join already counts as started, so ranks 1 and 2 are
    // deadlocked either way): seen on a loaded machine.
    if (contains(out[0].error, "rank 0")) {
      EXPECT_TRUE(contains(out[0].error,
                           "rank 0 waits in join (process set 0), not yet started by ranks 1,2"))
          << out[0].error;
    }
  }
}

TEST(Deadlock, OffWithZeroTheRanksWaitAsInHorovod) {
  Cluster c(2, deadlock_settings(0));
  std::vector<tandem_result_t> code(2);
  std::vector<std::shared_ptr<HandleState>> h(2);
  std::vector<float> x(4, 1.0f);
  c.each([&](int r, Runtime& rt) {
    h[r] = r == 0 ? rt.enqueue({tensor("tandem:barrier", nullptr, nullptr, {0}, TANDEM_UINT8)},
                               op(OpType::kBarrier))
                  : rt.enqueue({tensor("x", x.data(), nullptr, {4})}, op(OpType::kAllgather));
    code[r] = blocked_wait(rt, h[r], 3s);
  });
  EXPECT_EQ(code[0], TANDEM_ERR_IN_PROGRESS);
  EXPECT_EQ(code[1], TANDEM_ERR_IN_PROGRESS);
  for (auto& rt : c.ranks) rt->stop();
  EXPECT_EQ(h[0]->result(), TANDEM_ERR_ABORTED);
}

}  // namespace
}  // namespace tandem::runtime::testing
