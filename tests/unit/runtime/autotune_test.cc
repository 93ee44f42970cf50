// The autotuner's parts on known functions: the Gaussian process, the
// Bayesian optimizer, and the sampling state machine driven by a simulated
// job whose throughput is a known function of the tuned values.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/errors.h"
#include "runtime/autotune.h"
#include "runtime/bayesian_optimizer.h"
#include "runtime/cycle_message.h"
#include "runtime/response_cache.h"
#include "runtime/settings.h"

namespace tandem::runtime {
namespace {

TEST(GaussianProcess, InterpolatesSamplesAndIsUnsureFarFromThem) {
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (int i = 0; i <= 4; ++i) {
    const double u = 0.1 * i;  // samples on [0, 0.4] only
    x.push_back({u});
    y.push_back(std::sin(6 * u));
  }
  GaussianProcess gp(1e-6);
  gp.fit(x, y);
  for (size_t i = 0; i < x.size(); ++i) {
    const auto p = gp.predict(x[i]);
    EXPECT_NEAR(p.mean, y[i], 1e-3) << "at " << x[i][0];
    EXPECT_LT(p.stddev, 0.01);
  }
  // Between samples: close to the function; far away: the prior's doubt.
  EXPECT_NEAR(gp.predict({0.15}).mean, std::sin(0.9), 0.05);
  EXPECT_GT(gp.predict({1.0}).stddev, 0.5);
  // With noise the fit smooths instead of interpolating exactly.
  GaussianProcess noisy(0.5);
  noisy.fit(x, y);
  EXPECT_GT(std::abs(noisy.predict(x[2]).mean - y[2]), 1e-3);
  EXPECT_THROW(gp.fit({}, {}), InvalidArgument);
}

TEST(GaussianProcess, PicksTheLengthScaleTheDataSupports) {
  // A slow function is best explained by a long scale, a fast one by a short.
  std::vector<std::vector<double>> x;
  std::vector<double> slow, fast;
  for (int i = 0; i <= 10; ++i) {
    x.push_back({0.1 * i});
    slow.push_back(std::cos(1.0 * 0.1 * i));
    fast.push_back(std::cos(40.0 * 0.1 * i));
  }
  GaussianProcess a(1e-4), b(1e-4);
  a.fit(x, slow);
  b.fit(x, fast);
  EXPECT_GT(a.length_scale(), b.length_scale());
}

TEST(BayesianOptimizer, ExpectedImprovementRewardsMeanAndDoubt) {
  const double best = 1.0;
  const double low = BayesianOptimizer::expected_improvement({0.5, 0.1}, best, 0.0);
  const double high = BayesianOptimizer::expected_improvement({1.5, 0.1}, best, 0.0);
  const double unsure = BayesianOptimizer::expected_improvement({0.5, 1.0}, best, 0.0);
  EXPECT_GT(high, low);
  EXPECT_GT(unsure, low);
  EXPECT_NEAR(BayesianOptimizer::expected_improvement({1.5, 0.0}, best, 0.0), 0.5, 1e-12);
  EXPECT_EQ(BayesianOptimizer::expected_improvement({0.5, 0.0}, best, 0.0), 0.0);
}

// Runs the optimizer for `n` samples on f over the box; returns the best x.
std::vector<double> optimize(const BayesianOptimizer::Bounds& bounds,
                             const std::function<double(const std::vector<double>&)>& f,
                             std::vector<std::vector<double>> starts, int n, double noise,
                             double* best_y) {
  BayesianOptimizer bo(bounds, noise);
  std::vector<double> best_x;
  *best_y = -1e300;
  for (int i = 0; i < n; ++i) {
    std::vector<double> x = i < static_cast<int>(starts.size()) ? starts[i] : bo.next();
    for (size_t k = 0; k < x.size(); ++k) {
      EXPECT_GE(x[k], bounds[k].first);
      EXPECT_LE(x[k], bounds[k].second);
    }
    const double y = f(x);
    bo.add(x, y);
    if (y > *best_y) {
      *best_y = y;
      best_x = x;
    }
  }
  return best_x;
}

TEST(BayesianOptimizer, FindsTheMaximumOfAOneDimensionalFunction) {
  auto f = [](const std::vector<double>& x) { return -(x[0] - 7.0) * (x[0] - 7.0); };
  double best = 0;
  const auto x = optimize({{0, 10}}, f, {{1.0}, {5.0}}, 12, 1e-4, &best);
  EXPECT_NEAR(x[0], 7.0, 0.3);
}

TEST(BayesianOptimizer, FindsTheMaximumOfATwoDimensionalFunctionInItsOwnUnits) {
  // A bump at (48, 3) in a box of (0..128) x (0..20), the knobs' scales.
  auto f = [](const std::vector<double>& x) {
    const double a = (x[0] - 48) / 40, b = (x[1] - 3) / 6;
    return std::exp(-(a * a + b * b));
  };
  double best = 0;
  const auto x =
      optimize({{0, 128}, {0, 20}}, f, {{128, 0.5}, {4, 5}, {32, 10}, {16, 1}}, 20, 0.01, &best);
  EXPECT_GT(best, 0.95) << "best at " << x[0] << ", " << x[1];
  EXPECT_THROW(BayesianOptimizer({{1, 1}}, 0.1), InvalidArgument);
  BayesianOptimizer empty({{0, 1}}, 0.1);
  EXPECT_THROW(empty.next(), InvalidArgument);
}

// A simulated job: one tensor per cycle; each cycle takes as long as its
// bytes at a throughput that is a known function of the tuned values.
struct SimulatedJob {
  std::function<double(const TunedValues&)> throughput;  // bytes per µs
  std::string name = "grad";
  size_t bytes = 1 << 20;
  std::chrono::steady_clock::time_point now{};
  int cycles = 0;
  std::vector<TunedValues> tried;  // a row per change

  // Runs until the tuner settles (or `limit` cycles); false when it did not.
  bool run(Autotuner& tuner, int limit) {
    tried.push_back(tuner.current());
    for (; cycles < limit; ++cycles) {
      const double us = static_cast<double>(bytes) / throughput(tuner.current());
      now += std::chrono::microseconds(static_cast<int64_t>(us));
      if (!tuner.note({{&name, bytes}}, now)) continue;
      // The runtime carries the values in the next round and applies them.
      now += std::chrono::microseconds(50);
      tuner.started(now);
      tried.push_back(tuner.current());
      if (tuner.settled()) return true;
    }
    return false;
  }
};

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string temp_path(const char* what) {
  return "/tmp/autotune_test-" + std::string(what) + "-" + std::to_string(getpid()) + ".csv";
}

const char* kHeader =
    "hierarchical_allreduce,hierarchical_allgather,torus_allreduce,cache_enabled,cycle_time_ms,"
    "tensor_fusion_threshold,score";

TEST(Autotuner, SearchesThenSettlesOnTheBestAndLogsHorovodsColumns) {
  AutotuneConfig c;
  c.warmup_samples = 2;
  c.steps_per_sample = 3;
  c.max_samples = 12;
  c.noise = 0.01;
  c.log_path = temp_path("search");
  TunedValues start{size_t{128} << 20, 0.5, true};
  Autotuner tuner(c, start, {});
  SimulatedJob job;
  // Best at 48 MiB and 3 ms, with the cache on worth 10%.
  job.throughput = [](const TunedValues& v) {
    const double a = (static_cast<double>(v.fusion_threshold_bytes) / (1 << 20) - 48) / 40;
    const double b = (v.cycle_time_ms - 3) / 6;
    return 1000 * std::exp(-(a * a + b * b)) * (v.cache_enabled ? 1.1 : 1.0) + 1;
  };
  ASSERT_TRUE(job.run(tuner, 100000));
  // Warm-up samples keep the start values; every scored sample is a row,
  // and the last row repeats the best one, as in Horovod.
  EXPECT_EQ(job.tried.front(), start);
  EXPECT_EQ(tuner.scored(), c.max_samples + 1);  // the joint search, then the cache off
  const std::vector<std::string> rows = lines_of(c.log_path);
  std::remove(c.log_path.c_str());
  ASSERT_EQ(rows.size(), static_cast<size_t>(1 + tuner.scored() + 1));
  EXPECT_EQ(rows[0], kHeader);
  EXPECT_EQ(rows[1].rfind("1,0,0, 1,0.5,128,", 0), 0u) << rows[1];
  EXPECT_NE(rows[rows.size() - 2].find(", 0,"), std::string::npos) << "the cache is tried off";
  const TunedValues best = tuner.current();
  EXPECT_TRUE(best.cache_enabled);
  EXPECT_GT(job.throughput(best), 0.9 * 1100)
      << best.fusion_threshold_bytes << " bytes, " << best.cycle_time_ms << " ms";
  // Settled: nothing changes any more.
  EXPECT_FALSE(tuner.note({{&job.name, job.bytes}}, job.now));
  // The settled values are the best sample's, whose row ends the log.
  std::ostringstream tail;
  tail << best.cycle_time_ms << "," << static_cast<double>(best.fusion_threshold_bytes) / (1 << 20)
       << ",";
  EXPECT_NE(rows.back().find(tail.str()), std::string::npos) << rows.back();
}

TEST(Autotuner, KeepsWhatTheUserSetAndPrefersACacheOffThatWins) {
  AutotuneConfig c;
  c.warmup_samples = 0;
  c.steps_per_sample = 1;
  c.max_samples = 5;
  c.fusion_fixed = true;
  TunedValues start{size_t{8} << 20, 0.5, true};
  Autotuner tuner(c, start, {});
  SimulatedJob job;
  job.throughput = [](const TunedValues& v) {
    return 100.0 / (1 + std::abs(v.cycle_time_ms - 10)) * (v.cache_enabled ? 1.0 : 2.0);
  };
  ASSERT_TRUE(job.run(tuner, 100000));
  for (const TunedValues& v : job.tried) EXPECT_EQ(v.fusion_threshold_bytes, size_t{8} << 20);
  EXPECT_FALSE(tuner.current().cache_enabled);
  // Nothing to tune: settled at once, on the start values.
  c.cycle_fixed = c.cache_fixed = true;
  Autotuner idle(c, start, {});
  EXPECT_TRUE(idle.settled());
  EXPECT_EQ(idle.current(), start);
}

TEST(Autotuner, AWindowIsStepsOfTheMostFrequentTensorNotCycles) {
  // Two tensors a step, in two cycles: a sample of 5 windows of 2 steps
  // ends after 10 steps, i.e. on the first cycle of the 11th step.
  AutotuneConfig c;
  c.warmup_samples = 0;
  c.steps_per_sample = 2;
  c.max_samples = 2;
  c.cache_fixed = true;
  Autotuner tuner(c, {1 << 20, 1.0, true}, {});
  const std::string a = "a", b = "b";
  auto t = std::chrono::steady_clock::time_point{};
  int cycles = 0;
  for (;;) {
    t += std::chrono::milliseconds(1);
    ++cycles;
    const std::string& name = cycles % 2 ? a : b;
    if (tuner.note({{&name, 100}}, t)) break;
    ASSERT_LT(cycles, 1000);
  }
  EXPECT_EQ(cycles, 2 * Autotuner::kWindows * c.steps_per_sample + 1);
}

TEST(Autotuner, AnUnwritableLogIsAnErrorNamingTheVariable) {
  AutotuneConfig c;
  c.log_path = "/nonexistent-dir/autotune.csv";
  try {
    Autotuner t(c, {}, {});
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("TANDEM_AUTOTUNE_LOG='/nonexistent-dir/autotune.csv'"),
              std::string::npos)
        << e.what();
  }
}

TEST(Autotuner, ValuesTravelInTheCycleMessageAndForceARoundOfMessages) {
  CycleMessage m;
  EXPECT_FALSE(full_round_needed(m));
  m.tuning = CycleMessage::Tuning{{size_t{3} << 20, 2.25, false}, true};
  EXPECT_TRUE(full_round_needed(m));
  const CycleMessage back = CycleMessage::parse(m.serialize());
  ASSERT_TRUE(back.tuning);
  EXPECT_EQ(*back.tuning, *m.tuning);
  EXPECT_FALSE(CycleMessage::parse(CycleMessage{}.serialize()).tuning);
}

TEST(Autotuner, TheCacheSwitchEmptiesItAndOnAgainRefills) {
  ResponseCache cache(4);
  Request q;
  q.name = "w";
  q.dtype = TANDEM_FLOAT32;
  q.shape = {4};
  cache.put(std::make_shared<const std::vector<Request>>(std::vector<Request>{q, q}));
  EXPECT_EQ(cache.lookup(q, 0).state, ResponseCache::State::kHit);
  cache.set_enabled(false);
  EXPECT_FALSE(cache.enabled());
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.span(), 0u);
  cache.put(std::make_shared<const std::vector<Request>>(std::vector<Request>{q, q}));
  EXPECT_EQ(cache.lookup(q, 0).state, ResponseCache::State::kMiss);
  cache.set_enabled(true);
  cache.put(std::make_shared<const std::vector<Request>>(std::vector<Request>{q, q}));
  EXPECT_EQ(cache.lookup(q, 0).state, ResponseCache::State::kHit);
}

Settings::Getenv env(std::map<std::string, std::string> vars) {
  auto held = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [held](const char* n) -> const char* {
    auto it = held->find(n);
    return it == held->end() ? nullptr : it->second.c_str();
  };
}

TEST(Autotuner, SettingsTakeHorovodsNamesAndSayWhichKnobsTheUserSet) {
  const Settings d = Settings::from_environment(env({}));
  EXPECT_FALSE(d.autotune);
  EXPECT_EQ(d.autotune_warmup_samples, 3);
  EXPECT_EQ(d.autotune_steps_per_sample, 10);
  EXPECT_EQ(d.autotune_max_samples, 20);
  EXPECT_EQ(d.autotune_noise, 0.8);
  EXPECT_FALSE(d.fusion_threshold_set || d.cycle_time_set || d.cache_capacity_set);
  const Settings h =
      Settings::from_environment(env({{"HOROVOD_AUTOTUNE", "1"},
                                      {"HOROVOD_AUTOTUNE_LOG", "/tmp/a.csv"},
                                      {"HOROVOD_AUTOTUNE_WARMUP_SAMPLES", "0"},
                                      {"TANDEM_AUTOTUNE_STEPS_PER_SAMPLE", "4"},
                                      {"HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "7"},
                                      {"HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", "0.25"},
                                      {"HOROVOD_CYCLE_TIME", "2"}}));
  EXPECT_TRUE(h.autotune);
  EXPECT_EQ(h.autotune_log, "/tmp/a.csv");
  EXPECT_EQ(h.autotune_warmup_samples, 0);
  EXPECT_EQ(h.autotune_steps_per_sample, 4);
  EXPECT_EQ(h.autotune_max_samples, 7);
  EXPECT_EQ(h.autotune_noise, 0.25);
  EXPECT_TRUE(h.cycle_time_set);
  EXPECT_FALSE(h.fusion_threshold_set);
  for (auto bad : std::vector<std::pair<std::string, std::string>>{
           {"TANDEM_AUTOTUNE", "yes please"},
           {"HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", "0"},
           {"TANDEM_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", "0"},
           {"HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "many"}}) {
    try {
      Settings::from_environment(env({bad}));
      ADD_FAILURE() << bad.first << "=" << bad.second << " was accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(bad.first + "='" + bad.second + "'"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace tandem::runtime
