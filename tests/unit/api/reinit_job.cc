// A rank that joins and leaves the job many times in one process, as a
// Horovod script may (hvd.init(); ...; hvd.shutdown(); hvd.init(); ...):
//
//   reinit_job [cycles]        default 50
//
// Each cycle: tandem_init, identity, a barrier and an allreduce through the
// runtime (named tensors), a direct allreduce, tandem_finalize; between
// cycles tandem_is_initialized() must be 0 and every call must answer
// NOT_INITIALIZED. Runs under tandem-run (tests/unit/api/meson.build), alone
// (a world of one) and under srun --horovod=on (tests/e2e/test_reinit.py).
// Every wait has its own deadline, so a hang is a failure naming the cycle,
// not a stuck test. Exits 1 after "rank R: FAIL ..."; prints "rank R: ok
// reinit N cycles" on success.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tandem/tandem.h"

namespace {

int rank = -1, size = 0, cycle = -1;

#define CHECK(cond, ...)                                                                        \
  do {                                                                                          \
    if (!(cond)) {                                                                              \
      std::fprintf(stderr, "rank %d: FAIL cycle %d: %s:%d: ", rank, cycle, __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                                                        \
      std::fprintf(stderr, " (last error: %s)\n", tandem_last_error());                         \
      std::fflush(stderr);                                                                      \
      std::_Exit(1);                                                                            \
    }                                                                                           \
  } while (0)

#define OK(call) CHECK((call) == TANDEM_SUCCESS, "%s", #call)

// Deadline of one wait: generous (the machine is shared), but a hang ends.
constexpr double kWait = 120.0;

void one_cycle() {
  OK(tandem_init());
  CHECK(tandem_is_initialized() == 1, "not initialized after tandem_init");
  int r = -1, n = 0;
  OK(tandem_rank(&r));
  OK(tandem_size(&n));
  if (cycle == 0) {
    rank = r;
    size = n;
  }
  CHECK(r == rank && n == size, "identity changed: rank %d size %d, was %d of %d", r, n, rank,
        size);

  tandem_handle_t h = 0;
  OK(tandem_enqueue_barrier(TANDEM_GLOBAL_PROCESS_SET, &h));
  CHECK(tandem_handle_wait(h, kWait) == TANDEM_SUCCESS, "barrier did not complete");
  tandem_handle_release(h);

  // The same name every cycle: a new runtime has nothing of the last one.
  std::vector<int64_t> in(17, rank + cycle), out(17, -1);
  const int64_t shape[1] = {17};
  tandem_tensor_t t{"reinit.sum", in.data(), out.data(), TANDEM_INT64, TANDEM_DEVICE_CPU, 1, shape};
  OK(tandem_enqueue_allreduce(&t, TANDEM_SUM, 1.0, 1.0, TANDEM_GLOBAL_PROCESS_SET, &h));
  CHECK(tandem_handle_wait(h, kWait) == TANDEM_SUCCESS, "allreduce did not complete");
  tandem_handle_release(h);
  const int64_t expect =
      static_cast<int64_t>(size) * (size - 1) / 2 + static_cast<int64_t>(size) * cycle;
  for (int64_t v : out)
    CHECK(v == expect, "allreduce gave %lld, expected %lld", (long long)v, (long long)expect);

  int32_t x = rank + 1;
  OK(tandem_allreduce(&x, &x, 1, TANDEM_INT32, TANDEM_SUM, 1.0, 1.0));
  CHECK(x == size * (size + 1) / 2, "direct allreduce gave %d", x);

  OK(tandem_finalize());
  CHECK(tandem_is_initialized() == 0, "still initialized after tandem_finalize");
  int dummy = 0;
  CHECK(tandem_rank(&dummy) == TANDEM_ERR_NOT_INITIALIZED, "tandem_rank between cycles");
  CHECK(tandem_enqueue_barrier(TANDEM_GLOBAL_PROCESS_SET, &h) == TANDEM_ERR_NOT_INITIALIZED,
        "enqueue between cycles");
}

}  // namespace

int main(int argc, char** argv) {
  const int cycles = argc > 1 ? std::atoi(argv[1]) : 50;
  CHECK(cycles > 0, "usage: reinit_job [cycles > 0]");
  CHECK(tandem_is_initialized() == 0, "initialized before tandem_init");
  for (cycle = 0; cycle < cycles; ++cycle) one_cycle();
  std::printf("rank %d: ok reinit %d cycles\n", rank, cycles);
  return 0;
}
