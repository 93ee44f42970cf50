// tandem-bench --device cuda: the same sweep on GPU buffers, through the
// runtime's named-tensor API (the path a framework's CUDA tensors take:
// negotiation, fusion into the device buffer, NCCL on tandem's stream).
// Every result is checked against what the ranks contributed. Fails with
// the GPU path's reason, on every rank, where it is not usable.
//
// Device memory is handled by the CUDA runtime loaded here with dlopen, as
// libtandem does, so the tool builds and runs (and fails clearly) on nodes
// without CUDA.
#include "tandem-bench-device.h"

#include <dlfcn.h>
#include <getopt.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tandem/tandem.h"
#include "tool_log.h"

namespace {

struct Cuda {  // the few calls the bench needs, C signatures (0 = cudaSuccess)
  int (*GetDeviceCount)(int*);
  int (*SetDevice)(int);
  int (*Malloc)(void**, size_t);
  int (*Free)(void*);
  int (*Memcpy)(void*, const void*, size_t, int);  // kind 4: cudaMemcpyDefault
  int (*DeviceSynchronize)();
};

[[noreturn]] void fail(const std::string& why) {
  int rank = -1;
  tandem_rank(&rank);
  TANDEM_ERROR(tools, "--device cuda: rank %d: %s", rank, why.c_str());
  std::exit(3);
}

void must(tandem_result_t rc, const char* what) {
  if (rc != TANDEM_SUCCESS)
    fail(std::string(what) + " failed: " + tandem_result_name(rc) + ": " + tandem_last_error());
}

void cuda_must(int rc, const char* what) {
  if (rc != 0) fail(std::string(what) + " failed with cudaError " + std::to_string(rc));
}

template <typename F>
void bind(void* lib, F& f, const char* name) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  if (!f) fail(std::string("the CUDA runtime has no ") + name);
}

Cuda load_cuda() {
  const char* env = std::getenv("TANDEM_CUDA_LIBRARY");
  void* lib = nullptr;
  for (const char* name : {env, "libcudart.so.13", "libcudart.so.12"})
    if (name && *name && (lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
  if (!lib) fail("the CUDA runtime (libcudart) could not be loaded, though libtandem loaded one");
  Cuda c{};
  bind(lib, c.GetDeviceCount, "cudaGetDeviceCount");
  bind(lib, c.SetDevice, "cudaSetDevice");
  bind(lib, c.Malloc, "cudaMalloc");
  bind(lib, c.Free, "cudaFree");
  bind(lib, c.Memcpy, "cudaMemcpy");
  bind(lib, c.DeviceSynchronize, "cudaDeviceSynchronize");
  return c;
}

struct DeviceBuffer {
  const Cuda& cuda;
  void* p = nullptr;
  DeviceBuffer(const Cuda& c, size_t bytes) : cuda(c) {
    cuda_must(cuda.Malloc(&p, bytes ? bytes : 4), "cudaMalloc");
  }
  ~DeviceBuffer() { cuda.Free(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

float value(int rank, size_t i) {
  return static_cast<float>(rank + 1) + static_cast<float>(i % 13);
}

// One collective on float32 device buffers: enqueue, wait, and (when asked)
// the result copied back and compared with the exact expected values
// (small integers, so float sums are exact).
bool run_once(const Cuda& cuda, const std::string& coll, size_t count, int n, int me, int device,
              void* send, void* recv, bool check) {
  const int64_t rows = static_cast<int64_t>(count);
  tandem_tensor_t t{"tandem-bench.device", send, recv, TANDEM_FLOAT32, device, 1, &rows};
  tandem_handle_t h = 0;
  if (coll == "allreduce") must(tandem_enqueue_allreduce(&t, TANDEM_SUM, 1, 1, 0, &h), "allreduce");
  else if (coll == "broadcast") must(tandem_enqueue_broadcast(&t, 0, 0, &h), "broadcast");
  else if (coll == "allgather") {
    t.output = nullptr;
    must(tandem_enqueue_allgather(&t, 0, &h), "allgather");
  } else if (coll == "alltoall") {
    t.output = nullptr;
    must(tandem_enqueue_alltoall(&t, nullptr, 0, 0, &h), "alltoall");
  } else {
    t.output = nullptr;
    must(tandem_enqueue_reducescatter(&t, TANDEM_SUM, 1, 1, 0, &h), "reducescatter");
  }
  const tandem_result_t rc = tandem_handle_wait(h, -1);
  if (rc != TANDEM_SUCCESS)
    fail(coll + " failed: " + tandem_result_name(rc) + ": " + tandem_handle_error(h));
  bool ok = true;
  if (check) {
    std::vector<float> got;
    if (coll == "allreduce" || coll == "broadcast") {
      got.resize(count);
      cuda_must(cuda.Memcpy(got.data(), recv, count * 4, 4), "cudaMemcpy");
    } else {
      const void* data = nullptr;
      size_t bytes = 0;
      must(tandem_handle_output_data(h, 0, &data, &bytes), "output_data");
      got.resize(bytes / 4);
      must(tandem_handle_copy_output(h, 0, got.data(), bytes), "copy_output");
    }
    for (size_t i = 0; i < got.size() && ok; ++i) {
      float expect = 0;
      if (coll == "allreduce")
        for (int r = 0; r < n; ++r) expect += value(r, i);
      else if (coll == "broadcast") expect = value(0, i);
      else if (coll == "allgather") expect = value(static_cast<int>(i / count), i % count);
      else if (coll == "alltoall")
        expect = value(static_cast<int>(i / (count / n)),
                       static_cast<size_t>(me) * (count / n) + i % (count / n));
      else {  // reducescatter: rank me's block of count / n rows (count divisible)
        for (int r = 0; r < n; ++r) expect += value(r, static_cast<size_t>(me) * (count / n) + i);
      }
      ok = got[i] == expect;
    }
  }
  tandem_handle_release(h);
  return ok;
}

}  // namespace

int device_bench_main(int argc, char** argv) {
  std::vector<std::string> colls{"allreduce"};
  size_t min_bytes = 8, max_bytes = size_t{64} << 20;
  int iters = 20;
  for (int c; (c = getopt(argc, argv, "c:b:e:n:")) != -1;) {
    if (c == 'c') {
      std::string s = optarg;
      colls = s == "all" ? std::vector<std::string>{"allreduce", "broadcast", "allgather",
                                                    "alltoall", "reducescatter"}
                         : std::vector<std::string>{s};
    } else if (c == 'b') min_bytes = std::strtoull(optarg, nullptr, 10);
    else if (c == 'e') max_bytes = std::strtoull(optarg, nullptr, 10);
    else if (c == 'n') iters = std::atoi(optarg);
    else {
      std::fprintf(stderr,
                   "usage: tandem-bench --device cuda [-c COLL|all] [-b MIN] [-e MAX] [-n ITERS]"
                   " (bytes, float32, sum)\n");
      return 2;
    }
  }
  must(tandem_init(), "tandem_init");
  int n = 1, me = 0, local = 0;
  tandem_size(&n);
  tandem_rank(&me);
  tandem_local_rank(&local);
  const char* reason = nullptr;
  int usable = tandem_gpu_available(&reason) == 1 ? 1 : 0, all = 0;
  must(tandem_allreduce(&usable, &all, 1, TANDEM_INT32, TANDEM_MIN, 1, 1), "availability exchange");
  if (!all) {
    if (!usable)
      TANDEM_ERROR(tools, "--device cuda: rank %d: the GPU path is not available: %s", me, reason);
    tandem_finalize();
    return 3;
  }
  const Cuda cuda = load_cuda();
  int count_devices = 0;
  cuda_must(cuda.GetDeviceCount(&count_devices), "cudaGetDeviceCount");
  const char* chosen = std::getenv("TANDEM_GPU_DEVICE");
  const int device = chosen && *chosen ? std::atoi(chosen) : local % count_devices;
  cuda_must(cuda.SetDevice(device), "cudaSetDevice");
  bool all_ok = true;
  for (const std::string& coll : colls) {
    if (me == 0)
      std::printf("# tandem-bench --device cuda %s: %d ranks, GPU %d on rank 0\n#%11s %11s %6s\n",
                  coll.c_str(), n, device, "size(B)", "time(us)", "check");
    for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
      size_t count = std::max<size_t>(bytes / 4, static_cast<size_t>(n));
      count -= count % static_cast<size_t>(n);  // alltoall/reducescatter: even blocks
      std::vector<float> host(count);
      for (size_t i = 0; i < count; ++i) host[i] = value(me, i);
      DeviceBuffer send(cuda, count * 4), recv(cuda, count * 4);
      cuda_must(cuda.Memcpy(send.p, host.data(), count * 4, 4), "cudaMemcpy");
      int ok = run_once(cuda, coll, count, n, me, device, send.p, recv.p, true) ? 1 : 0, every = 0;
      must(tandem_allreduce(&ok, &every, 1, TANDEM_INT32, TANDEM_MIN, 1, 1), "check exchange");
      if (coll == "broadcast" || coll == "allreduce")  // the check wrote recv only
        cuda_must(cuda.Memcpy(send.p, host.data(), count * 4, 4), "cudaMemcpy");
      must(tandem_barrier(), "barrier");
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < iters; ++i)
        run_once(cuda, coll, count, n, me, device, send.p, recv.p, false);
      cuda_must(cuda.DeviceSynchronize(), "cudaDeviceSynchronize");
      double mine = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
                    iters,
             slowest = 0;
      must(tandem_allreduce(&mine, &slowest, 1, TANDEM_FLOAT64, TANDEM_MAX, 1, 1), "time exchange");
      all_ok = all_ok && every;
      if (me == 0)
        std::printf("%12zu %11.2f %6s\n", count * 4, slowest * 1e6, every ? "ok" : "FAIL");
      std::fflush(stdout);
    }
  }
  must(tandem_finalize(), "tandem_finalize");
  return all_ok ? 0 : 1;
}
