// The runtime's pure parts: messages, cache, fusion planning, settings,
// timeline, stall inspector.
#include <gtest/gtest.h>

#include <dirent.h>
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unistd.h>

#include "common/errors.h"
#include "runtime/coordinator.h"
#include "runtime/cycle_message.h"
#include "runtime/fusion_plan.h"
#include "runtime/response_cache.h"
#include "runtime/settings.h"
#include "runtime/stall_inspector.h"
#include "runtime/straggler.h"
#include "runtime/timeline.h"
#include "cluster.h"

namespace tandem::runtime {
namespace {

Request req(const std::string& name, int64_t n, int dtype = TANDEM_FLOAT32) {
  Request q;
  q.name = name;
  q.dtype = dtype;
  q.shape = {n};
  return q;
}

ResponseCache::Requests all(std::vector<Request> per_rank) {
  return std::make_shared<const std::vector<Request>>(std::move(per_rank));
}

TEST(CycleMessage, RoundTripsAndRejectsTruncation) {
  CycleMessage m;
  m.joined = true;
  Request q = req("layer/w:0", 12);
  q.type = OpType::kAlltoall;
  q.splits = {5, 7};
  q.prescale = 0.25;
  m.requests.push_back(q);
  set_bit(m.cache_bits, 70);
  set_bit(m.invalid_bits, 3);
  Bytes b = m.serialize();
  CycleMessage back = CycleMessage::parse(b);
  EXPECT_TRUE(back.joined);
  EXPECT_FALSE(back.shutdown);
  ASSERT_EQ(back.requests.size(), 1u);
  EXPECT_EQ(back.requests[0], q);
  EXPECT_TRUE(test_bit(back.cache_bits, 70));
  EXPECT_FALSE(test_bit(back.cache_bits, 69));
  EXPECT_TRUE(test_bit(back.invalid_bits, 3));
  b.pop_back();
  EXPECT_THROW(CycleMessage::parse(b), Error);
}

TEST(ResponseCache, HitStaleMissAndLruEviction) {
  ResponseCache c(2);
  c.put(all({req("a", 4), req("a", 4)}));
  c.put(all({req("b", 4), req("b", 4)}));
  EXPECT_EQ(c.lookup(req("a", 4), 1).state, ResponseCache::State::kHit);
  EXPECT_EQ(c.lookup(req("a", 5), 1).state, ResponseCache::State::kStale);
  EXPECT_EQ(c.lookup(req("z", 4), 1).state, ResponseCache::State::kMiss);
  size_t bit_a = c.lookup(req("a", 4), 0).bit;
  c.touch(bit_a);  // b is now least recently used
  c.put(all({req("c", 4), req("c", 4)}));
  EXPECT_EQ(c.lookup(req("b", 4), 0).state, ResponseCache::State::kMiss);
  EXPECT_EQ(c.lookup(req("a", 4), 0).state, ResponseCache::State::kHit);
  EXPECT_EQ(c.size(), 2u);
  ResponseCache off(0);
  off.put(all({req("a", 4)}));
  EXPECT_EQ(off.lookup(req("a", 4), 0).state, ResponseCache::State::kMiss);
}

// Each member's form of the round, combined as the data path's allreduce
// (MAX over bytes) does.
std::vector<uint8_t> reduce_max(const std::vector<std::vector<uint8_t>>& each) {
  std::vector<uint8_t> out = each.front();
  for (const auto& v : each)
    for (size_t i = 0; i < out.size(); ++i) out[i] = std::max(out[i], v[i]);
  return out;
}

TEST(BitRound, CarriesTheOrOfReadyAndOfMissingAndWhetherMessagesFollow) {
  std::vector<CycleMessage> m(3);
  for (int r = 0; r < 3; ++r) set_bit(m[r].cache_bits, 0);
  set_bit(m[0].cache_bits, 2);
  set_bit(m[2].cache_bits, 70);
  std::vector<std::vector<uint8_t>> each;
  for (const auto& x : m) each.push_back(encode_bit_round(x, 71, full_round_needed(x)));
  EXPECT_EQ(each[0].size(), 1u + 2 * 71);
  BitRound r = decode_bit_round(reduce_max(each), 71);
  EXPECT_FALSE(r.full);
  EXPECT_TRUE(test_bit(r.ready_somewhere, 0));
  EXPECT_FALSE(test_bit(r.missing_somewhere, 0));  // ready everywhere
  EXPECT_TRUE(test_bit(r.ready_somewhere, 2));
  EXPECT_TRUE(test_bit(r.missing_somewhere, 2));  // ready on rank 0 only
  EXPECT_TRUE(test_bit(r.ready_somewhere, 70));
  EXPECT_FALSE(test_bit(r.ready_somewhere, 1));
  // Anything beyond cache bits makes it a round of messages.
  m[1].requests.push_back(req("new", 3));
  EXPECT_TRUE(full_round_needed(m[1]));
  each[1] = encode_bit_round(m[1], 71, full_round_needed(m[1]));
  EXPECT_TRUE(decode_bit_round(reduce_max(each), 71).full);
  for (auto tweak :
       {+[](CycleMessage& x) { x.joined = true; }, +[](CycleMessage& x) { x.shutdown = true; },
        +[](CycleMessage& x) { set_bit(x.invalid_bits, 4); },
        +[](CycleMessage& x) { x.waits.push_back(Wait{}); }}) {
    CycleMessage x;
    EXPECT_FALSE(full_round_needed(x));
    tweak(x);
    EXPECT_TRUE(full_round_needed(x));
  }
  EXPECT_THROW(decode_bit_round(std::vector<uint8_t>(5), 71), Error);
}

// A round of bits decides what a round of the same members' messages
// decides; only who holds a partly ready entry is unknown afterwards, and
// after a while that asks for a round of messages.
TEST(BitRound, DecidesLikeTheMessagesAndLeavesPartlyReadyEntriesUnnamed) {
  const int n = 3;
  Coordinator by_messages({0, 1, 2}, 16), by_bits({0, 1, 2}, 16);
  const auto t0 = Coordinator::Clock::now();
  std::vector<CycleMessage> first(n);
  for (int r = 0; r < n; ++r)
    for (const char* name : {"a", "b", "c", "d"}) first[r].requests.push_back(req(name, 4));
  EXPECT_EQ(by_messages.decide(first, t0).size(), 4u);
  EXPECT_EQ(by_bits.decide(first, t0).size(), 4u);
  ASSERT_EQ(by_bits.cache().span(), 4u);
  // Next step: "a", "c" ready everywhere, "d" on ranks 0 and 2 only.
  std::vector<CycleMessage> step(n);
  for (int r = 0; r < n; ++r) {
    for (const char* name : {"a", "c"})
      set_bit(step[r].cache_bits, by_bits.cache().lookup(req(name, 4), r).bit);
    if (r != 1) set_bit(step[r].cache_bits, by_bits.cache().lookup(req("d", 4), r).bit);
  }
  const auto want = by_messages.decide(step, t0);
  std::vector<std::vector<uint8_t>> each;
  for (const auto& x : step) each.push_back(encode_bit_round(x, 4, full_round_needed(x)));
  const BitRound round = decode_bit_round(reduce_max(each), 4);
  ASSERT_FALSE(round.full);
  const auto got = by_bits.decide_bits(round.ready_somewhere, round.missing_somewhere, t0);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].name, want[i].name);
    EXPECT_EQ(got[i].cache_bit, want[i].cache_bit);
    EXPECT_EQ(got[i].present, want[i].present);
  }
  const size_t d = by_bits.cache().lookup(req("d", 4), 0).bit;
  ASSERT_TRUE(by_messages.missing_bit(d).has_value());
  EXPECT_EQ(*by_messages.missing_bit(d), std::vector<int>{1});
  EXPECT_EQ(by_messages.pending().size(), 1u);
  EXPECT_FALSE(by_bits.missing_bit(d).has_value());
  EXPECT_TRUE(by_bits.pending().empty());
  EXPECT_FALSE(
      by_bits.wants_details(t0 + std::chrono::milliseconds(400), std::chrono::milliseconds(500)));
  EXPECT_TRUE(
      by_bits.wants_details(t0 + std::chrono::milliseconds(500), std::chrono::milliseconds(500)));
  // The round of messages that follows names rank 1 again.
  by_bits.decide(step, t0 + std::chrono::milliseconds(500));
  ASSERT_TRUE(by_bits.missing_bit(d).has_value());
  EXPECT_EQ(*by_bits.missing_bit(d), std::vector<int>{1});
}

Response resp(const std::string& name, int64_t n, int dtype = TANDEM_FLOAT32) {
  Response r;
  r.name = name;
  r.requests = std::make_shared<const std::vector<Request>>(
      std::vector<Request>{req(name, n, dtype), req(name, n, dtype)});
  r.present = {true, true};
  return r;
}

TEST(FusionPlan, PacksCompatibleUpToThresholdWithLookAhead) {
  // 4-byte floats: 100 elements = 400 bytes.
  std::vector<Response> rs = {resp("a", 100),    resp("b", 100, TANDEM_FLOAT64),
                              resp("c", 100),    resp("d", 100),
                              resp("big", 1000), resp("e", 25, TANDEM_FLOAT64)};
  auto plan = plan_fusion(rs, 1000);
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_EQ(plan[0].members, (std::vector<size_t>{0, 2}));  // a + c; d no longer fits
  EXPECT_EQ(plan[0].bytes, 800u);
  EXPECT_EQ(plan[1].members, (std::vector<size_t>{1, 5}));  // float64 b + e
  EXPECT_EQ(plan[2].members, (std::vector<size_t>{3}));
  EXPECT_EQ(plan[3].members, (std::vector<size_t>{4}));  // larger than the threshold
  auto off = plan_fusion(rs, 0);
  EXPECT_EQ(off.size(), rs.size());
}

TEST(FusionPlan, NeverFusesDifferentOpsOrScales) {
  std::vector<Response> rs = {resp("a", 1), resp("b", 1), resp("c", 1)};
  auto with = [](const Response& r, auto change) {
    std::vector<Request> all = r.per_rank();
    for (Request& q : all) change(q);
    return std::make_shared<const std::vector<Request>>(std::move(all));
  };
  rs[1].requests = with(rs[1], [](Request& q) { q.op = TANDEM_MAX; });
  rs[2].requests = with(rs[2], [](Request& q) { q.postscale = 0.5; });
  EXPECT_EQ(plan_fusion(rs, 1 << 20).size(), 3u);
}

Settings::Getenv env(std::map<std::string, std::string> vars) {
  auto held = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [held](const char* n) -> const char* {
    auto it = held->find(n);
    return it == held->end() ? nullptr : it->second.c_str();
  };
}

TEST(Settings, DefaultsHorovodNamesAndStrictParsing) {
  Settings d = Settings::from_environment(env({}));
  EXPECT_EQ(d.fusion_threshold_bytes, 128u << 20);
  EXPECT_EQ(d.cache_capacity, 1024u);
  Settings h = Settings::from_environment(env({{"HOROVOD_FUSION_THRESHOLD", "1024"},
                                               {"HOROVOD_CYCLE_TIME", "2.5"},
                                               {"HOROVOD_CACHE_CAPACITY", "0"},
                                               {"TANDEM_TIMELINE", "/tmp/t.json"}}));
  EXPECT_EQ(h.fusion_threshold_bytes, 1024u);
  EXPECT_EQ(h.cycle_time_ms, 2.5);
  EXPECT_EQ(h.cache_capacity, 0u);
  EXPECT_EQ(h.timeline_path, "/tmp/t.json");
  for (auto bad : std::vector<std::pair<std::string, std::string>>{
           {"HOROVOD_FUSION_THRESHOLD", "64MB"},
           {"TANDEM_CYCLE_TIME", "-1"},
           {"TANDEM_CACHE_CAPACITY", "1e3"},
           {"HOROVOD_STALL_CHECK_TIME_SECONDS", "soon"},
           {"TANDEM_TIMELINE_MARK_CYCLES", "2"},
           {"TANDEM_CACHE_CAPACITY", "2000000"},
           {"TANDEM_FUSION_THRESHOLD", " 5"}}) {
    try {
      Settings::from_environment(env({bad}));
      ADD_FAILURE() << bad.first << "=" << bad.second << " was accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(bad.first + "='" + bad.second + "'"), std::string::npos)
          << e.what();
    }
  }
  // Empty is unset, as in every engine setting (common/settings.h).
  EXPECT_EQ(Settings::from_environment(env({{"TANDEM_CYCLE_TIME", ""}})).cycle_time_ms, 0.5);
  EXPECT_THROW(Settings::from_environment(
                   env({{"TANDEM_CACHE_CAPACITY", "5"}, {"HOROVOD_CACHE_CAPACITY", "6"}})),
               InvalidArgument);
}

TEST(Settings, DocsListEveryDeclaredSetting) {
  std::ifstream in(std::string(TANDEM_SOURCE_ROOT) + "/docs/runtime.md");
  ASSERT_TRUE(in) << "docs/runtime.md is missing";
  std::stringstream text;
  text << in.rdbuf();
  for (const SettingSpec& s : runtime_setting_specs()) {
    EXPECT_NE(text.str().find(std::string("`") + s.name + "`"), std::string::npos) << s.name;
    if (s.horovod_name) {
      EXPECT_NE(text.str().find(std::string("`") + s.horovod_name + "`"), std::string::npos)
          << s.horovod_name;
    }
    EXPECT_NE(text.str().find(s.default_text), std::string::npos) << s.name;
  }
}

TEST(StallInspector, WarnsOncePerStallAndReportsFatal) {
  StallInspector si(1.0, 3.0);
  auto t0 = std::chrono::steady_clock::now();
  std::vector<Coordinator::Pending> p = {{"x", OpType::kAllreduce, {0, 2}, {1}, t0}};
  std::string fatal;
  EXPECT_TRUE(si.inspect(p, t0 + std::chrono::milliseconds(500), &fatal).empty());
  auto w = si.inspect(p, t0 + std::chrono::seconds(2), &fatal);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("'x' was enqueued by rank(s) 0,2 but not by rank(s) 1"), std::string::npos);
  EXPECT_TRUE(si.inspect(p, t0 + std::chrono::milliseconds(2500), &fatal).empty());
  EXPECT_TRUE(fatal.empty());
  si.inspect(p, t0 + std::chrono::seconds(4), &fatal);
  EXPECT_NE(fatal.find("'x'"), std::string::npos);
}

TEST(Timeline, RuntimeWritesValidJsonWithEveryPhase) {
  char path[] = "/tmp/tandem-timeline-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  {
    testing::Cluster c(2);
    c.ranks[0]->timeline().start(path, true);
    c.each([&](int r, Runtime& rt) {
      std::vector<float> a(64, 1), b(64, 1), oa(64), ob(64);
      auto h = rt.enqueue({testing::tensor("tl.a", a.data(), oa.data(), {64}),
                           testing::tensor("tl \"quoted\"", b.data(), ob.data(), {64})},
                          testing::allreduce());
      EXPECT_EQ(testing::wait(h), TANDEM_SUCCESS);
      (void)r;
    });
    c.ranks[0]->timeline().stop();
  }
  std::string cmd =
      std::string(
          "/usr/bin/python3 -c \"import json,sys; ev=json.load(open(sys.argv[1])); "
          "names={e.get('name') for e in ev}; "
          "need={'NEGOTIATE','QUEUE','COPY_IN','ALLREDUCE','COPY_OUT','CYCLE_START'}; "
          "sys.exit(0 if need <= names else 1)\" ") +
      path;
  EXPECT_EQ(std::system(cmd.c_str()), 0)
      << "timeline " << path << " is not valid JSON with every phase";
  std::remove(path);
}

// Policies of this process's threads named tandem-runtime (one per rank here).
std::set<int> runtime_thread_policies() {
  std::set<int> out;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return out;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string name;
    std::getline(comm, name);
    if (name == "tandem-runtime") out.insert(sched_getscheduler(std::atoi(e->d_name)));
  }
  closedir(dir);
  return out;
}

// The runtime thread must preempt the framework when it wakes (training on
// one core per rank waited for the framework's time slice under SCHED_BATCH),
// unless TANDEM_RUNTIME_SCHEDULING=batch asks for it.
TEST(Scheduling, RuntimeThreadPolicyFollowsTheSetting) {
  auto policies_of = [](Settings s) {
    testing::Cluster c(2, s);
    c.each([&](int, Runtime& rt) {  // a collective: both threads are up and looping
      std::vector<float> a(4, 1), o(4);
      EXPECT_EQ(testing::wait(rt.enqueue({testing::tensor("sched", a.data(), o.data(), {4})},
                                         testing::allreduce())),
                TANDEM_SUCCESS);
    });
    return runtime_thread_policies();
  };
  EXPECT_EQ(policies_of(testing::Cluster::test_settings()), std::set<int>{SCHED_OTHER});
  Settings batch = testing::Cluster::test_settings();
  batch.batch_scheduling = true;
  EXPECT_EQ(policies_of(batch), std::set<int>{SCHED_BATCH});
  EXPECT_TRUE(
      Settings::from_environment(env({{"TANDEM_RUNTIME_SCHEDULING", "batch"}})).batch_scheduling);
  EXPECT_FALSE(Settings::from_environment(env({})).batch_scheduling);
  EXPECT_THROW(Settings::from_environment(env({{"TANDEM_RUNTIME_SCHEDULING", "fifo"}})),
               InvalidArgument);
}

}  // namespace
}  // namespace tandem::runtime

namespace straggler {

using tandem::runtime::make_report;
using tandem::runtime::RoundWaits;
using tandem::runtime::Summary;

// A summary as a period's fold would leave it: `held` seconds imposed over
// 100 rounds of a 10-second period, last in `last` of them.
Summary rank_on(int rank, const std::string& host, double held, uint64_t last) {
  Summary s;
  s.rank = rank;
  s.place.host = host;
  s.seconds = 10;
  s.rounds = 100;
  s.last = last;
  s.held = held;
  s.imposed.add(held / 100, 100);
  return s;
}

TEST(Straggler, OneSlowRankIsNamedWithItsNode) {
  std::vector<Summary> s = {rank_on(0, "a", 0.1, 0), rank_on(1, "a", 0.2, 1),
                            rank_on(2, "b", 6.0, 98), rank_on(3, "b", 0.1, 1)};
  auto r = make_report(s);
  EXPECT_EQ(r.kind, "rank");
  EXPECT_EQ(r.named, std::vector<int>{2});
  EXPECT_EQ(r.rows.front().rank, 2);
  EXPECT_EQ(r.verdict.rfind("rank 2 on b held 60% of the time", 0), 0u) << r.verdict;
  // The summary survives the exchange.
  Summary back = Summary::parse(s[2].serialize());
  EXPECT_EQ(back.rank, 2);
  EXPECT_EQ(back.place.host, "b");
  EXPECT_EQ(back.last, 98u);
  EXPECT_EQ(back.imposed.counts, s[2].imposed.counts);
  EXPECT_NEAR(back.imposed.quantile(0.5), 0.06, 0.06 * 0.1);
}

TEST(Straggler, BalancedOrEquallySlowNamesNobody) {
  // Everyone waits alike, however long: nobody stands out.
  std::vector<Summary> s = {rank_on(0, "a", 4.0, 25), rank_on(1, "a", 4.5, 30),
                            rank_on(2, "b", 4.2, 20), rank_on(3, "b", 3.9, 25)};
  auto r = make_report(s);
  EXPECT_EQ(r.kind, "none");
  EXPECT_TRUE(r.named.empty());
  EXPECT_EQ(r.verdict.rfind("no rank stands out", 0), 0u) << r.verdict;
  // Just below the margin over the median rank: still nobody.
  s = {rank_on(0, "a", 0.1, 25), rank_on(1, "a", 1.05, 30), rank_on(2, "b", 0.1, 20)};
  EXPECT_EQ(make_report(s).kind, "none");
}

TEST(Straggler, TwoSlowRanksOfOneNodeNameTheNode) {
  std::vector<Summary> s;
  for (int r = 0; r < 8; ++r) {
    const bool slow = r == 4 || r == 5;
    s.push_back(rank_on(r, "n" + std::to_string(r / 2), slow ? 9.0 : 0.1, r == 4 ? 90 : 1));
  }
  auto r = make_report(s);
  EXPECT_EQ(r.kind, "node");
  EXPECT_EQ(r.node, "n2");
  EXPECT_EQ(r.named, (std::vector<int>{4, 5}));
  // Slow ranks on two nodes are listed, not blamed on a node.
  s[5].place.host = "n0";
  EXPECT_EQ(make_report(s).kind, "ranks");
}

TEST(Straggler, RoundsPastTheCapKeepTheSameRoundsOnEveryRank) {
  RoundWaits w;
  for (uint64_t k = 0; k < 3 * RoundWaits::kCap; ++k) w.add(static_cast<float>(k));
  EXPECT_EQ(w.rounds(), 3 * RoundWaits::kCap);
  // Full at round kCap - 1 (stride 2) and again at 2 kCap - 1 (stride 4).
  ASSERT_EQ(w.stride(), 4u);
  // Round k is kept exactly when k is a multiple of the stride.
  for (size_t i = 0; i < w.samples().size(); ++i)
    EXPECT_EQ(w.samples()[i], static_cast<float>(i * 4));
}

TEST(Straggler, TheReportFlagRidesOnTheRoundsFirstByte) {
  tandem::runtime::CycleMessage m;
  auto bits = tandem::runtime::encode_bit_round(m, 2, false, true);
  EXPECT_EQ(bits[0], 2);
  auto round = tandem::runtime::decode_bit_round(bits, 2);
  EXPECT_TRUE(round.full);
  EXPECT_TRUE(round.report);
  round = tandem::runtime::decode_bit_round(tandem::runtime::encode_bit_round(m, 2, true), 2);
  EXPECT_TRUE(round.full);
  EXPECT_FALSE(round.report);
}

}  // namespace straggler
