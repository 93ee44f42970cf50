// Joins the job with bootstrap_from_environment and prints one line with this
// rank's identity, the result of an allgather and a broadcast, and how long
// joining and a barrier took. The launcher tests (tandem-run, mpirun, srun)
// run it and check every rank's line.
//
//   rank=1 size=4 local_rank=1 local_size=4 cross_rank=0 cross_size=1
//   nodes=0,0,0,0 job=tcp-... gather=r0,r1,r2,r3 bcast=from-3 init_ms=.. barrier_ms=..
#include <chrono>
#include <cstdio>
#include <string>

#include "bootstrap/from_environment.h"
#include "common/errors.h"

int main() {
  using namespace std::chrono;
  try {
    auto t0 = steady_clock::now();
    auto b = tandem::bootstrap_from_environment();
    auto t1 = steady_clock::now();
    const auto& id = b->identity();
    std::string mine = "r" + std::to_string(id.rank);
    auto all = b->allgather(tandem::Bytes(mine.begin(), mine.end()), seconds(60));
    std::string gather;
    for (const auto& v : all) gather += (gather.empty() ? "" : ",") + std::string(v.begin(), v.end());
    std::string from = "from-" + std::to_string(id.size - 1);
    auto bc = b->broadcast(tandem::Bytes(from.begin(), from.end()), id.size - 1, seconds(60));
    auto t2 = steady_clock::now();
    b->barrier(seconds(60));
    auto t3 = steady_clock::now();
    std::string nodes;
    for (int n : id.node_of_rank) nodes += (nodes.empty() ? "" : ",") + std::to_string(n);
    std::printf("rank=%d size=%d local_rank=%d local_size=%d cross_rank=%d cross_size=%d nodes=%s "
                "job=%s gather=%s bcast=%s init_ms=%.2f barrier_ms=%.3f\n",
                id.rank, id.size, id.local_rank, id.local_size, id.cross_rank, id.cross_size,
                nodes.c_str(), id.job_id.c_str(), gather.c_str(),
                std::string(bc.begin(), bc.end()).c_str(),
                duration<double, std::milli>(t1 - t0).count(),
                duration<double, std::milli>(t3 - t2).count());
    return 0;
  } catch (const tandem::Error& e) {
    std::fprintf(stderr, "bootstrap_probe: %s\n", e.what());
    return 1;
  }
}
