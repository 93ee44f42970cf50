// A rank of a job that uses the runtime through the public C API only, as a
// framework binding does: run under tandem-run (tests/unit/runtime/meson.build),
// alone (a world of one) and under srun --horovod=on (tests/e2e/test_runtime.py).
//
//   runtime_job [scenario...]     default: every scenario but lost-peer,
//                                 lost-idle-peer and diverged
//
// Every check that fails prints "rank R: FAIL ..." and the rank exits 1;
// "rank R: ok <scenario>" lines say what passed.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "job_check.h"
#include "tandem/tandem.h"

namespace {

int rank = 0, size = 1;

tandem_tensor_t tensor(const char* name, const void* in, void* out, int dtype, int ndim,
                       const int64_t* shape) {
  return tandem_tensor_t{name, in, out, dtype, TANDEM_DEVICE_CPU, ndim, shape};
}

float value(int r, int t, size_t i) { return static_cast<float>(r * 1000 + t * 3 + i % 11); }

// Every rank enqueues the same 60 tensors (16 B .. 256 KiB) in its own random
// order, for several steps; then checks every element.
void random_orders() {
  const int kTensors = 60;
  for (int step = 0; step < 6; ++step) {
    std::mt19937 rng(static_cast<unsigned>(step * 7919 + rank * 104729 + 1));
    std::vector<int> order(kTensors);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<std::vector<float>> in(kTensors), out(kTensors);
    std::vector<std::string> names(kTensors);
    std::vector<int64_t> shapes(kTensors);
    std::vector<tandem_handle_t> h(kTensors);
    for (int t : order) {
      const size_t len = 4 + static_cast<size_t>(t * 1117 % 65536);
      in[t].resize(len);
      out[t].assign(len, -1);
      for (size_t i = 0; i < len; ++i) in[t][i] = value(rank, t, i);
      names[t] = "grad." + std::to_string(t);
      shapes[t] = static_cast<int64_t>(len);
      tandem_tensor_t x =
          tensor(names[t].c_str(), in[t].data(), out[t].data(), TANDEM_FLOAT32, 1, &shapes[t]);
      OK(tandem_enqueue_allreduce(&x, t % 2 ? TANDEM_SUM : TANDEM_AVERAGE, 1.0, 1.0,
                                  TANDEM_GLOBAL_PROCESS_SET, &h[t]));
      if (rng() % 8 == 0) usleep(static_cast<useconds_t>(rng() % 2000));
    }
    for (int t = 0; t < kTensors; ++t) {
      OK(tandem_handle_wait(h[t], 120.0));
      for (size_t i = 0; i < out[t].size(); ++i) {
        double expect = 0;
        for (int k = 0; k < size; ++k) expect += value(k, t, i);
        if (t % 2 == 0) expect /= size;
        CHECK(std::fabs(out[t][i] - expect) <= 1e-3 * std::fabs(expect) + 1e-3,
              "step %d tensor %d element %zu: %g, expected %g", step, t, i, out[t][i], expect);
      }
      tandem_handle_release(h[t]);
    }
  }
  std::printf("rank %d: ok random-orders\n", rank);
}

// Rank-dependent shape: every rank gets MISMATCH naming the tensor; the next
// step works.
void mismatch() {
  if (size < 2) return;
  std::vector<float> in(8, 1.0f), out(8, 0.0f);
  int64_t shape[2] = {rank == 0 ? 2 : 4, rank == 0 ? 4 : 2};
  tandem_tensor_t x = tensor("bad.shape", in.data(), out.data(), TANDEM_FLOAT32, 2, shape);
  tandem_handle_t h = 0;
  OK(tandem_enqueue_allreduce(&x, TANDEM_SUM, 1.0, 1.0, 0, &h));
  CHECK(tandem_handle_wait(h, 120.0) == TANDEM_ERR_MISMATCH, "expected a mismatch");
  const std::string msg = tandem_handle_error(h);
  CHECK(msg.find("bad.shape") != std::string::npos && msg.find("shape") != std::string::npos,
        "message does not name the tensor and field: %s", msg.c_str());
  std::printf("rank %d: mismatch error: %s\n", rank, msg.c_str());
  tandem_handle_release(h);
  int64_t good[1] = {8};
  x = tensor("good.after", in.data(), out.data(), TANDEM_FLOAT32, 1, good);
  OK(tandem_enqueue_allreduce(&x, TANDEM_SUM, 1.0, 1.0, 0, &h));
  OK(tandem_handle_wait(h, 120.0));
  CHECK(out[7] == static_cast<float>(size), "after the mismatch: %g", out[7]);
  tandem_handle_release(h);
  std::printf("rank %d: ok mismatch\n", rank);
}

// Rank r runs r+1 steps, then joins: step k sums the ranks still stepping;
// join returns the last rank to join (size-1, whose last step needs all the
// others joined).
void join() {
  for (int step = 0; step <= rank; ++step) {
    double in = rank + 1, out = 0;
    int64_t shape[1] = {1};
    tandem_tensor_t x = tensor("join.step", &in, &out, TANDEM_FLOAT64, 1, shape);
    tandem_handle_t h = 0;
    OK(tandem_enqueue_allreduce(&x, TANDEM_SUM, 1.0, 1.0, 0, &h));
    OK(tandem_handle_wait(h, 120.0));
    double expect = 0;
    for (int k = step; k < size; ++k) expect += k + 1;
    CHECK(out == expect, "join step %d: %g, expected %g", step, out, expect);
    tandem_handle_release(h);
  }
  tandem_handle_t h = 0;
  OK(tandem_enqueue_join(TANDEM_DEVICE_CPU, &h));
  OK(tandem_handle_wait(h, 120.0));
  int last = -1;
  OK(tandem_handle_join_result(h, &last));
  CHECK(last == size - 1, "join returned %d, expected %d", last, size - 1);
  tandem_handle_release(h);
  std::printf("rank %d: ok join (last %d)\n", rank, last);
}

// The even ranks form a set; it runs beside the global set, then goes.
void process_sets() {
  std::vector<int> even;
  for (int k = 0; k < size; k += 2) even.push_back(k);
  int id = -1;
  OK(tandem_add_process_set(even.data(), static_cast<int>(even.size()), &id));
  CHECK(size == 1 ? id == 0 : id > 0, "set id %d", id);
  const bool member = rank % 2 == 0;
  for (int step = 0; step < 4; ++step) {
    int32_t gin = rank + 1, gout = 0, sin = rank + 1, sout = 0;
    tandem_handle_t hg = 0, hs = 0;
    tandem_tensor_t g = tensor("ps.global", &gin, &gout, TANDEM_INT32, 0, nullptr);
    tandem_tensor_t s = tensor("ps.even", &sin, &sout, TANDEM_INT32, 0, nullptr);
    if (member && step % 2) OK(tandem_enqueue_allreduce(&s, TANDEM_SUM, 1, 1, id, &hs));
    OK(tandem_enqueue_allreduce(&g, TANDEM_SUM, 1, 1, 0, &hg));
    if (member && !(step % 2)) OK(tandem_enqueue_allreduce(&s, TANDEM_SUM, 1, 1, id, &hs));
    OK(tandem_handle_wait(hg, 120.0));
    CHECK(gout == size * (size + 1) / 2, "global %d", gout);
    if (member) {
      OK(tandem_handle_wait(hs, 120.0));
      int expect = 0;
      for (int k : even) expect += k + 1;
      CHECK(sout == expect, "set sum %d, expected %d", sout, expect);
      tandem_handle_release(hs);
    }
    tandem_handle_release(hg);
  }
  if (!member) {
    int32_t x = 0;
    tandem_tensor_t s = tensor("not.mine", &x, &x, TANDEM_INT32, 0, nullptr);
    tandem_handle_t h = 0;
    CHECK(tandem_enqueue_allreduce(&s, TANDEM_SUM, 1, 1, id, &h) == TANDEM_ERR_INVALID_ARGUMENT,
          "a non-member enqueued into the set");
  }
  if (id != 0) OK(tandem_remove_process_set(id));
  std::printf("rank %d: ok process-sets\n", rank);
}

void broadcast_allgather() {
  std::vector<int64_t> b(1000, rank), bout(1000, -1);
  int64_t bshape[1] = {1000};
  tandem_tensor_t x = tensor("bc", b.data(), bout.data(), TANDEM_INT64, 1, bshape);
  tandem_handle_t hb = 0, hg = 0;
  OK(tandem_enqueue_broadcast(&x, size - 1, 0, &hb));
  std::vector<float> g(static_cast<size_t>(rank + 1) * 3, static_cast<float>(rank));
  int64_t gshape[2] = {rank + 1, 3};
  tandem_tensor_t y = tensor("ag", g.data(), nullptr, TANDEM_FLOAT32, 2, gshape);
  OK(tandem_enqueue_allgather(&y, 0, &hg));
  OK(tandem_handle_wait(hb, 120.0));
  CHECK(bout[999] == size - 1, "broadcast gave %lld", static_cast<long long>(bout[999]));
  OK(tandem_handle_wait(hg, 120.0));
  int64_t shape[2];
  int ndim = 0;
  OK(tandem_handle_output_shape(hg, 0, shape, 2, &ndim));
  CHECK(ndim == 2 && shape[0] == size * (size + 1) / 2 && shape[1] == 3, "allgather shape");
  std::vector<float> all(static_cast<size_t>(shape[0] * 3));
  OK(tandem_handle_copy_output(hg, 0, all.data(), all.size() * sizeof(float)));
  size_t pos = 0;
  for (int k = 0; k < size; ++k)
    for (int i = 0; i < (k + 1) * 3; ++i)
      CHECK(all[pos++] == static_cast<float>(k), "allgather element %zu", pos - 1);
  tandem_handle_release(hb);
  tandem_handle_release(hg);
  std::printf("rank %d: ok broadcast-allgather\n", rank);
}

// The last rank leaves without finalizing (as a crash would, but with exit
// status 0 so that the launcher does not end the job first); every other
// rank's pending handle fails with the data path's error.
void lost_peer() {
  if (size < 2) return;
  float in = 1, out = 0;
  tandem_tensor_t x = tensor("warmup", &in, &out, TANDEM_FLOAT32, 0, nullptr);
  tandem_handle_t h = 0;
  OK(tandem_enqueue_allreduce(&x, TANDEM_SUM, 1, 1, 0, &h));
  OK(tandem_handle_wait(h, 120.0));
  if (rank == size - 1) {
    std::fflush(stdout);
    _exit(0);
  }
  // The runtime may notice the loss before this enqueue (an idle rank's
  // doorbell wait checks its peers every few ms, and a loaded machine can
  // hold this thread longer than that): then the enqueue itself fails with
  // the same error, which is as right as a pending handle failing.
  x = tensor("never.completes", &in, &out, TANDEM_FLOAT32, 0, nullptr);
  h = 0;
  tandem_result_t rc = tandem_enqueue_allreduce(&x, TANDEM_SUM, 1, 1, 0, &h);
  const bool queued = rc == TANDEM_SUCCESS;
  if (queued) rc = tandem_handle_wait(h, 120.0);
  CHECK(rc == TANDEM_ERR_PEER_LOST || rc == TANDEM_ERR_TIMEOUT,
        "%s ended with %s, expected PEER_LOST", queued ? "the pending handle" : "the enqueue",
        tandem_result_name(rc));
  std::printf("rank %d: ok lost-peer (%s %s: %s)\n", rank, queued ? "pending" : "enqueue",
              tandem_result_name(rc), queued ? tandem_handle_error(h) : tandem_last_error());
  tandem_tensor_t y = tensor("after.loss", &in, &out, TANDEM_FLOAT32, 0, nullptr);
  const tandem_result_t later = tandem_enqueue_allreduce(&y, TANDEM_SUM, 1, 1, 0, &h);
  CHECK(later != TANDEM_SUCCESS || tandem_handle_wait(h, 120.0) != TANDEM_SUCCESS,
        "an enqueue after the loss succeeded");
}

// The last rank takes part in the cycle that announces the others' tensor,
// then leaves without enqueueing it. The others have nothing new to
// announce and the lost rank will never ask for a cycle: their runtime must
// still notice (idle ranks on one node sleep on the doorbell; a rank with
// pending tensors runs a cycle now and then) and fail the handle.
void lost_idle_peer() {
  if (size < 2) return;
  float in = 1, out = 0;
  tandem_tensor_t x = tensor("warmup", &in, &out, TANDEM_FLOAT32, 0, nullptr);
  tandem_handle_t h = 0;
  OK(tandem_enqueue_allreduce(&x, TANDEM_SUM, 1, 1, 0, &h));
  OK(tandem_handle_wait(h, 120.0));
  if (rank == size - 1) {
    // Long enough for the others' cycle to run with this rank in it.
    usleep(300 * 1000);
    std::fflush(stdout);
    _exit(0);
  }
  x = tensor("waits.for.the.lost.rank", &in, &out, TANDEM_FLOAT32, 0, nullptr);
  OK(tandem_enqueue_allreduce(&x, TANDEM_SUM, 1, 1, 0, &h));
  const tandem_result_t rc = tandem_handle_wait(h, 60.0);
  CHECK(rc == TANDEM_ERR_PEER_LOST, "pending handle ended with %s, expected PEER_LOST",
        tandem_result_name(rc));
  std::printf("rank %d: ok lost-idle-peer (%s)\n", rank, tandem_handle_error(h));
}

// The ranks take different paths: rank 0 waits in a barrier, rank 1 in an
// allgather 'x', any others in an allreduce whose name drifted. No rank
// can ever go on: every rank's wait fails (TANDEM_ERR_ABORTED) with one
// message naming each rank's wait, long before TANDEM_TIMEOUT. The next
// enqueue fails the same way; after finalize and init the job works again.
void diverged() {
  if (size < 2) return;
  tandem_handle_t h = 0;
  std::vector<float> x(3, 1.0f);
  int64_t shape[1] = {3};
  const std::string drift = "drift." + std::to_string(rank);
  tandem_tensor_t t = tensor(rank == 1 ? "x" : drift.c_str(), x.data(),
                             rank == 1 ? nullptr : x.data(), TANDEM_FLOAT32, 1, shape);
  if (rank == 0) OK(tandem_enqueue_barrier(0, &h));
  else if (rank == 1) OK(tandem_enqueue_allgather(&t, 0, &h));
  else OK(tandem_enqueue_allreduce(&t, TANDEM_SUM, 1, 1, 0, &h));
  const tandem_result_t rc = tandem_handle_wait(h, 120.0);
  CHECK(rc == TANDEM_ERR_ABORTED, "diverged ranks: the wait ended with %s, expected ABORTED",
        tandem_result_name(rc));
  const std::string msg = tandem_handle_error(h);
  CHECK(msg.find("deadlock") != std::string::npos &&
            msg.find("rank 0 waits in barrier") != std::string::npos &&
            msg.find("rank 1 waits in allgather 'x'") != std::string::npos,
        "the message does not name every rank's wait: %s", msg.c_str());
  for (int k = 2; k < size; ++k)
    CHECK(msg.find("rank " + std::to_string(k) + " waits in allreduce 'drift." + std::to_string(k) +
                   "'") != std::string::npos,
          "rank %d's wait is not named: %s", k, msg.c_str());
  std::printf("rank %d: deadlock error: %s\n", rank, msg.c_str());
  tandem_handle_release(h);
  float v = 1;
  tandem_tensor_t y = tensor("after.deadlock", &v, &v, TANDEM_FLOAT32, 0, nullptr);
  CHECK(tandem_enqueue_allreduce(&y, TANDEM_SUM, 1, 1, 0, &h) == TANDEM_ERR_ABORTED,
        "an enqueue after the deadlock did not fail with ABORTED");
  OK(tandem_finalize());
  OK(tandem_init());
  OK(tandem_enqueue_allreduce(&y, TANDEM_SUM, 1, 1, 0, &h));
  OK(tandem_handle_wait(h, 120.0));
  CHECK(v == static_cast<float>(size), "allreduce after init again gave %g", v);
  tandem_handle_release(h);
  std::printf("rank %d: ok diverged\n", rank);
}

}  // namespace

int main(int argc, char** argv) {
  if (tandem_init() != TANDEM_SUCCESS) {
    std::fprintf(stderr, "tandem_init failed: %s\n", tandem_last_error());
    return 1;
  }
  OK(tandem_rank(&rank));
  OK(tandem_size(&size));
  std::vector<std::string> scenarios(argv + 1, argv + argc);
  if (scenarios.empty())
    scenarios = {"random-orders", "mismatch", "join", "process-sets", "broadcast-allgather"};
  for (const std::string& s : scenarios) {
    if (s == "random-orders") random_orders();
    else if (s == "mismatch") mismatch();
    else if (s == "join") join();
    else if (s == "process-sets") process_sets();
    else if (s == "broadcast-allgather") broadcast_allgather();
    else if (s == "lost-peer") lost_peer();
    else if (s == "lost-idle-peer") lost_idle_peer();
    else if (s == "diverged") diverged();
    else CHECK(false, "unknown scenario '%s'", s.c_str());
  }
  OK(tandem_finalize());
  std::printf("rank %d: done\n", rank);
  return 0;
}
