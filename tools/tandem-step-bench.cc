// tandem-step-bench: a training step's gradient pattern through the runtime
// (the step-pattern benchmark of docs/runtime.md). Every step enqueues SMALL
// tensors of SMALL_BYTES and LARGE tensors of LARGE_BYTES (float32 sum
// allreduce, named as a framework would, the same names every step so later
// steps take the response-cache path) back to back, then waits for all of
// them. The time of a step is from the first enqueue to the last
// completion on the slowest rank; the line printed holds the median and
// the best over the timed steps.
//
//   tandem-run -np 2 tandem-step-bench [-s 100] [-S 16K] [-l 10] [-L 4M] [-n 30] [-w 5]
//   tandem-run -np 4 tandem-step-bench -i 5     (idle: CPU used while nothing is enqueued)
//
// With TANDEM_AUTOTUNE=1 the warm-up lasts until the tuner has settled
// (docs/runtime.md, "Autotune"), so the timed steps run with the values it
// kept; the line then also says after how many steps it settled and on what.
//
// contrib/bench/step.sh runs it beside one fused MPI_Allreduce of the same
// bytes and gloo reducing the tensors one by one.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tandem/tandem.h"
#include "tool_log.h"

namespace {

size_t parse_size(const char* s) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  if (end == s) {
    TANDEM_ERROR(tools, "'%s' is not a size (e.g. 16K, 4M)", s);
    std::exit(2);
  }
  switch (*end) {
    case 'K':
    case 'k': v *= 1024.0; break;
    case 'M':
    case 'm': v *= 1048576.0; break;
    case 'G':
    case 'g': v *= 1073741824.0; break;
    default: break;
  }
  return static_cast<size_t>(v);
}

// CPU seconds this process used so far, every thread (the runtime's too).
double cpu_seconds() {
  struct rusage u {};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

void fail(const char* what) {
  TANDEM_ERROR(tools, "%s: %s", what, tandem_last_error());
  std::exit(1);
}

std::string autotune_state() {
  size_t needed = 0;
  if (tandem_autotune_state(nullptr, 0, &needed) != TANDEM_SUCCESS) fail("autotune state");
  std::string buf(needed + 64, '\0');
  if (tandem_autotune_state(buf.data(), buf.size(), &needed) != TANDEM_SUCCESS)
    fail("autotune state");
  return buf.c_str();
}

// Whether the tuner has settled on every rank (each applies its values
// after the same cycle, but reads its state at its own time).
bool settled_everywhere() {
  int32_t mine = autotune_state().find("\"settled\":true") != std::string::npos ? 1 : 0, all = 0;
  if (tandem_allreduce(&mine, &all, 1, TANDEM_INT32, TANDEM_MIN, 1.0, 1.0) != TANDEM_SUCCESS)
    fail("allreduce of the autotune state");
  return all == 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (!tandem::tools::start_log("tandem-step-bench")) return 2;
  int small = 100, large = 10, steps = 30, warmup = 5;
  double idle = 0;
  size_t small_bytes = 16 << 10, large_bytes = 4 << 20;
  int c;
  while ((c = getopt(argc, argv, "s:S:l:L:n:w:i:h")) != -1) {
    switch (c) {
      case 's': small = std::atoi(optarg); break;
      case 'S': small_bytes = parse_size(optarg); break;
      case 'l': large = std::atoi(optarg); break;
      case 'L': large_bytes = parse_size(optarg); break;
      case 'n': steps = std::atoi(optarg); break;
      case 'w': warmup = std::atoi(optarg); break;
      case 'i': idle = std::atof(optarg); break;
      default:
        std::fprintf(stderr,
                     "usage: tandem-step-bench [-s SMALL] [-S SMALL_BYTES] [-l LARGE] "
                     "[-L LARGE_BYTES] [-n STEPS] [-w WARMUP] [-i IDLE_SECONDS]\n");
        return c == 'h' ? 0 : 2;
    }
  }
  if (small < 0 || large < 0 || steps < 1 || warmup < 0 || small + large < 1) {
    TANDEM_ERROR(tools, "counts must be >= 0, steps >= 1");
    return 2;
  }
  if (tandem_init() != TANDEM_SUCCESS) fail("tandem_init");
  int rank = 0, size = 1;
  tandem_rank(&rank);
  tandem_size(&size);

  if (idle > 0) {
    // An idle engine must not burn CPU: ranks share cores with each other and
    // with the training process, which spends most of its time elsewhere.
    if (tandem_barrier() != TANDEM_SUCCESS) fail("barrier");
    const double c0 = cpu_seconds();
    usleep(static_cast<useconds_t>(idle * 1e6));
    double used = cpu_seconds() - c0, most = 0, sum = 0;
    if (tandem_allreduce(&used, &most, 1, TANDEM_FLOAT64, TANDEM_MAX, 1.0, 1.0) != TANDEM_SUCCESS ||
        tandem_allreduce(&used, &sum, 1, TANDEM_FLOAT64, TANDEM_SUM, 1.0, 1.0) != TANDEM_SUCCESS)
      fail("allreduce of the CPU times");
    if (rank == 0)
      std::printf(
          "tandem-idle np=%d seconds=%.1f cpu_ms_all_ranks=%.1f cpu_ms_busiest_rank=%.1f "
          "busiest_rank_percent_of_a_core=%.2f\n",
          size, idle, sum * 1e3, most * 1e3, 100.0 * most / idle);
    tandem_finalize();
    return 0;
  }
  const int n = small + large;
  std::vector<std::vector<float>> in(n), out(n);
  std::vector<std::string> names(n);
  std::vector<int64_t> shapes(n);
  size_t total = 0;
  for (int t = 0; t < n; ++t) {
    const size_t count = (t < small ? small_bytes : large_bytes) / sizeof(float);
    in[t].resize(count);
    out[t].assign(count, 0.0f);
    for (size_t i = 0; i < count; ++i) in[t][i] = static_cast<float>(rank + 1 + (i + t) % 7);
    names[t] = (t < small ? "small." : "large.") + std::to_string(t);
    shapes[t] = static_cast<int64_t>(count);
    total += count * sizeof(float);
  }
  std::vector<tandem_handle_t> h(n);
  std::vector<double> times;
  bool ok = true;
  const bool tuning = autotune_state().find("\"on\":true") != std::string::npos;
  constexpr int kMostTuningSteps = 100000;
  int first_timed = warmup;
  for (int step = 0; step < first_timed + steps; ++step) {
    if (tuning && step == first_timed && !settled_everywhere()) {
      if (++first_timed > kMostTuningSteps) fail("autotune did not settle");
    }
    if (tandem_barrier() != TANDEM_SUCCESS) fail("barrier");
    const auto t0 = std::chrono::steady_clock::now();
    for (int t = 0; t < n; ++t) {
      tandem_tensor_t x{names[t].c_str(), in[t].data(),      out[t].data(),
                        TANDEM_FLOAT32,   TANDEM_DEVICE_CPU, 1,
                        &shapes[t]};
      if (tandem_enqueue_allreduce(&x, TANDEM_SUM, 1.0, 1.0, TANDEM_GLOBAL_PROCESS_SET, &h[t]) !=
          TANDEM_SUCCESS)
        fail("enqueue");
    }
    for (int t = 0; t < n; ++t)
      if (tandem_handle_wait(h[t], 300.0) != TANDEM_SUCCESS) fail(tandem_handle_error(h[t]));
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    for (int t = 0; t < n; ++t) tandem_handle_release(h[t]);
    if (step == 0)
      for (int t = 0; t < n && ok; ++t)
        for (size_t i = 0; i < out[t].size(); ++i)
          if (out[t][i] != static_cast<float>(size * (size + 1) / 2 + size * ((i + t) % 7))) {
            ok = false;
            break;
          }
    if (step >= first_timed) times.push_back(us);
  }
  // The slowest rank's time of every step, and whether every rank checked ok.
  std::vector<double> slowest(times.size());
  if (tandem_allreduce(times.data(), slowest.data(), times.size(), TANDEM_FLOAT64, TANDEM_MAX, 1.0,
                       1.0) != TANDEM_SUCCESS)
    fail("allreduce of the times");
  int32_t mine_ok = ok ? 1 : 0, all_ok = 0;
  if (tandem_allreduce(&mine_ok, &all_ok, 1, TANDEM_INT32, TANDEM_MIN, 1.0, 1.0) != TANDEM_SUCCESS)
    fail("allreduce of the check");
  std::sort(slowest.begin(), slowest.end());
  std::string tuned;
  if (tuning) {
    // The values it settled on: the last change applied.
    const std::string state = autotune_state();
    const size_t at = state.rfind("{\"cycle\":");
    tuned = " autotune_settle_steps=" + std::to_string(first_timed) + " settled=" +
            (at == std::string::npos ? "none" : state.substr(at, state.size() - 2 - at));
  }
  if (rank == 0)
    std::printf(
        "tandem-runtime np=%d tensors=%d bytes=%zu median_us=%.1f best_us=%.1f check=%s%s\n", size,
        n, total, slowest[slowest.size() / 2], slowest.front(), all_ok ? "ok" : "FAIL",
        tuned.c_str());
  tandem_finalize();
  return all_ok ? 0 : 1;
}
