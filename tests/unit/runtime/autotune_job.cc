// A rank of a job that autotunes (docs/runtime.md, "Autotune"), run under
// tandem-run with TANDEM_AUTOTUNE=1 and a small sample budget
// (tests/unit/runtime/meson.build):
//
//   autotune_job MAX_SAMPLES
//
// The ranks run training-like steps (three gradients of different sizes,
// summed, and checked) until the tuner has settled, agreed through the
// steps' own allreduce. Then every rank writes the record of the values it
// applied and the cycle after which it applied them (tandem_autotune_state)
// to a folder the job's ranks share, and rank 0 checks that every rank's
// record is its own, that the log has Horovod's header, one row per scored
// sample and the best row, and that its rows are the values the ranks ran.
// "rank R: FAIL ..." and exit 1 otherwise.
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "job_check.h"
#include "tandem/tandem.h"

namespace {

int rank = 0, size = 1;

std::string state_json() {
  size_t needed = 0;
  OK(tandem_autotune_state(nullptr, 0, &needed));
  std::vector<char> buf(needed + 64);
  OK(tandem_autotune_state(buf.data(), buf.size(), &needed));
  return buf.data();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  CHECK(in.good(), "cannot read %s", path.c_str());
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The numbers after each `key` in the JSON, in order.
std::vector<double> numbers_after(const std::string& json, const std::string& key) {
  std::vector<double> out;
  const std::string k = "\"" + key + "\":";
  for (size_t at = json.find(k); at != std::string::npos; at = json.find(k, at + 1))
    out.push_back(std::strtod(json.c_str() + at + k.size(), nullptr));
  return out;
}

void barrier() {
  tandem_handle_t h = 0;
  OK(tandem_enqueue_barrier(TANDEM_GLOBAL_PROCESS_SET, &h));
  OK(tandem_handle_wait(h, 60.0));
  tandem_handle_release(h);
}

}  // namespace

int main(int argc, char** argv) {
  CHECK(argc == 2, "usage: autotune_job MAX_SAMPLES");
  const int max_samples = std::atoi(argv[1]);
  // tandem-run is every rank's parent: its pid names the folder they share.
  const std::string dir = "/tmp/autotune_job-" + std::to_string(getppid());
  mkdir(dir.c_str(), 0700);
  const std::string log = dir + "/autotune.csv";
  setenv("TANDEM_AUTOTUNE_LOG", log.c_str(), 1);
  setenv("TANDEM_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", argv[1], 1);
  OK(tandem_init());
  OK(tandem_rank(&rank));
  OK(tandem_size(&size));

  const int64_t sizes[] = {256, 16384, 65536};
  const char* names[] = {"grad.a", "grad.b", "grad.c"};
  int step = 0;
  for (;; ++step) {
    CHECK(step < 5000, "autotune did not settle after %d steps", step);
    const bool settled = state_json().find("\"settled\":true") != std::string::npos;
    std::vector<std::vector<float>> in(3), out(3);
    tandem_handle_t h[3] = {};
    for (int t = 0; t < 3; ++t) {
      in[t].assign(static_cast<size_t>(sizes[t]), static_cast<float>(rank + t));
      in[t][0] = settled ? 1.0f : 0.0f;
      out[t].assign(in[t].size(), -1);
      tandem_tensor_t x{names[t], in[t].data(), out[t].data(), TANDEM_FLOAT32, TANDEM_DEVICE_CPU,
                        1,        &sizes[t]};
      OK(tandem_enqueue_allreduce(&x, t == 0 ? TANDEM_MAX : TANDEM_SUM, 1.0, 1.0,
                                  TANDEM_GLOBAL_PROCESS_SET, &h[t]));
    }
    for (int t = 0; t < 3; ++t) {
      OK(tandem_handle_wait(h[t], 60.0));
      tandem_handle_release(h[t]);
    }
    // Whatever the tuner tried, the sums are right.
    for (int t = 1; t < 3; ++t) {
      const float want = static_cast<float>(size * (size - 1) / 2 + size * t);
      CHECK(out[t].back() == want, "step %d: %s ends in %g, expected %g", step, names[t],
            out[t].back(), want);
    }
    if (out[0][0] >= 1) break;  // every rank stops after the same step
  }
  const std::string mine = state_json();
  {
    std::ofstream f(dir + "/rank" + std::to_string(rank) + ".json");
    f << mine;
  }
  barrier();
  if (rank == 0) {
    for (int r = 1; r < size; ++r) {
      const std::string theirs = read_file(dir + "/rank" + std::to_string(r) + ".json");
      CHECK(theirs == mine,
            "rank %d applied other values or at other cycles:\n  rank 0: %s\n"
            "  rank %d: %s",
            r, mine.c_str(), r, theirs.c_str());
    }
    std::vector<std::string> rows;
    {
      std::ifstream in(log);
      for (std::string line; std::getline(in, line);) rows.push_back(line);
    }
    CHECK(!rows.empty() && rows[0] ==
                               "hierarchical_allreduce,hierarchical_allgather,torus_allreduce,"
                               "cache_enabled,cycle_time_ms,tensor_fusion_threshold,score",
          "the log does not start with Horovod's header: %s", rows.empty() ? "" : rows[0].c_str());
    // The joint search's samples, then the cache tried the other way, then
    // the best row again.
    const size_t scored = static_cast<size_t>(max_samples) + 1;
    CHECK(rows.size() == 1 + scored + 1, "the log has %zu rows, expected %zu:\n%s", rows.size(),
          1 + scored + 1, read_file(log).c_str());
    // Each sample after the first ran with the values applied before it.
    const std::vector<double> cycles = numbers_after(mine, "cycle_time_ms");
    const std::vector<double> fusion = numbers_after(mine, "fusion_threshold");
    CHECK(cycles.size() == scored, "%zu changes applied, expected %zu: %s", cycles.size(), scored,
          mine.c_str());
    for (size_t k = 0; k + 1 < scored; ++k) {
      double hier, gather, torus, cache, cycle_ms, fusion_mb, score;
      CHECK(std::sscanf(rows[k + 2].c_str(), "%lf,%lf,%lf, %lf,%lf,%lf,%lf", &hier, &gather, &torus,
                        &cache, &cycle_ms, &fusion_mb, &score) == 7,
            "row %zu is not Horovod's: %s", k + 2, rows[k + 2].c_str());
      CHECK(std::fabs(cycle_ms - cycles[k]) <= 1e-5 * std::fabs(cycles[k]) + 1e-9 &&
                std::fabs(fusion_mb * 1048576 - fusion[k]) <= 1e-5 * fusion[k] + 1,
            "row %zu (%s) is not what the ranks applied (%g ms, %g bytes)", k + 2,
            rows[k + 2].c_str(), cycles[k], fusion[k]);
      CHECK(score > 0, "row %zu scores nothing: %s", k + 2, rows[k + 2].c_str());
    }
    for (int r = 0; r < size; ++r)
      std::remove((dir + "/rank" + std::to_string(r) + ".json").c_str());
    std::remove(log.c_str());
    rmdir(dir.c_str());
  }
  OK(tandem_finalize());
  std::printf("rank %d: ok autotune settled after %d steps, %zu values applied\n", rank, step,
              numbers_after(mine, "cycle").size());
  return 0;
}
