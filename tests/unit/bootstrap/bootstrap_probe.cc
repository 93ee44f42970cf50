// Joins the job with bootstrap_from_environment and prints one line with this
// rank's identity, the result of an allgather and a broadcast, and timings.
// The launcher tests (tandem-run, mpirun, srun) run it and check every line:
//
//   rank=1 size=4 local_rank=1 local_size=4 cross_rank=0 cross_size=1
//   nodes=0,0,0,0 job=tcp-... gather=r0,r1,r2,r3 bcast=from-3 init_ms=..
//   barrier_ms=.. allgather_ms=..
//
// Options:
//   --repeat N        barrier_ms/allgather_ms are the median of N (default 1)
//   --pmix-init       time PMIx_Init alone first (pmix_init_ms=..)
//   --absent-rank R --wait-ms T
//                     rank R sits out a barrier; the others call it with a
//                     T ms timeout and print barrier_error=<the message>,
//                     exiting 0 only when it was a TimeoutError
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pmix.h>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/from_environment.h"
#include "common/errors.h"

namespace {

using namespace std::chrono;

double ms_since(steady_clock::time_point t) {
  return duration<double, std::milli>(steady_clock::now() - t).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string text(const tandem::Bytes& b) { return std::string(b.begin(), b.end()); }
tandem::Bytes bytes(const std::string& s) { return tandem::Bytes(s.begin(), s.end()); }

}  // namespace

int main(int argc, char** argv) {
  int repeat = 1, absent = -1, wait_ms = 0;
  bool pmix_init = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--repeat" && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
    else if (a == "--pmix-init") pmix_init = true;
    else if (a == "--absent-rank" && i + 1 < argc) absent = std::atoi(argv[++i]);
    else if (a == "--wait-ms" && i + 1 < argc) wait_ms = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "bootstrap_probe: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  try {
    std::string extra;
    pmix_proc_t me;
    bool pmix_open = false;
    if (pmix_init) {
      auto t = steady_clock::now();
      if (PMIx_Init(&me, nullptr, 0) != PMIX_SUCCESS) {
        std::fprintf(stderr, "PMIx_Init failed\n");
        return 1;
      }
      extra += " pmix_init_ms=" + std::to_string(ms_since(t));
      pmix_open = true;
    }
    auto t0 = steady_clock::now();
    auto b = tandem::bootstrap_from_environment();
    const double init_ms = ms_since(t0);
    const auto& id = b->identity();
    auto all = b->allgather(bytes("r" + std::to_string(id.rank)), seconds(60));
    std::string gather;
    for (const auto& v : all) gather += (gather.empty() ? "" : ",") + text(v);
    auto bc = b->broadcast(bytes("from-" + std::to_string(id.size - 1)), id.size - 1, seconds(60));
    if (absent >= 0) {
      if (id.rank == absent) {
        std::this_thread::sleep_for(milliseconds(wait_ms + 3000));
        std::printf("rank=%d absent\n", id.rank);
        return 0;
      }
      try {
        b->barrier(milliseconds(wait_ms));
        std::printf("rank=%d barrier_error=none\n", id.rank);
        return 1;
      } catch (const tandem::TimeoutError& e) {
        std::printf("rank=%d barrier_error=%s\n", id.rank, e.what());
        return 0;
      }
    }
    std::vector<double> barrier, gather_t;
    for (int i = 0; i < repeat; ++i) {
      auto t = steady_clock::now();
      b->barrier(seconds(60));
      barrier.push_back(ms_since(t));
      t = steady_clock::now();
      b->allgather(bytes(std::string(64, 'x')), seconds(60));
      gather_t.push_back(ms_since(t));
    }
    std::string nodes;
    for (int n : id.node_of_rank) nodes += (nodes.empty() ? "" : ",") + std::to_string(n);
    std::printf(
        "rank=%d size=%d local_rank=%d local_size=%d cross_rank=%d cross_size=%d nodes=%s "
        "job=%s gather=%s bcast=%s init_ms=%.2f barrier_ms=%.3f allgather_ms=%.3f%s\n",
        id.rank, id.size, id.local_rank, id.local_size, id.cross_rank, id.cross_size, nodes.c_str(),
        id.job_id.c_str(), gather.c_str(), text(bc).c_str(), init_ms, median(barrier),
        median(gather_t), extra.c_str());
    b.reset();
    if (pmix_open) PMIx_Finalize(nullptr, 0);
    return 0;
  } catch (const tandem::Error& e) {
    std::fprintf(stderr, "bootstrap_probe: %s\n", e.what());
    return 1;
  }
}
