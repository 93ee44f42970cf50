// tandem-bench: collective bandwidth and latency in the spirit of
// nccl-tests, over the public C API. Every rank runs it (srun, tandem-run);
// rank 0 prints one line per size:
//   size  count  type  redop  time(us)  algbw(GB/s)  busbw(GB/s)  check
// time is the mean per iteration, the slowest rank's; algbw = size / time;
// busbw = algbw * factor, nccl-tests' factors: allreduce 2(n-1)/n,
// allgather, reducescatter and alltoall (n-1)/n, broadcast 1. "size" is what
// nccl-tests calls it: the whole buffer (allreduce, broadcast), the gathered
// or scattered total (allgather, reducescatter), per rank (alltoall).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <getopt.h>

#include "tandem/tandem.h"
#include "tool_log.h"
#include "tandem-bench-device.h"  // --device cuda

namespace {

struct Options {
  std::vector<std::string> colls{"allreduce"};
  size_t min_bytes = 8, max_bytes = size_t{256} << 20;
  double factor = 4;
  tandem_dtype_t dtype = TANDEM_FLOAT32;
  tandem_op_t op = TANDEM_SUM;
  int iters = 0, warmup = -1;  // 0 / -1: chosen per size
  bool check = true, shared = false, in_place = false;
};

[[noreturn]] void usage(const char* why) {
  if (why) TANDEM_ERROR(tools, "%s", why);
  std::fprintf(
      stderr,
      "usage: tandem-bench [-c COLL[,COLL..]|all] [-b MIN] [-e MAX] [-f FACTOR] [-d TYPE] [-o OP]\n"
      "                    [-n ITERS] [-w WARMUP] [-C 0|1] [-s] [-i]\n"
      "  -c  allreduce, broadcast, allgather, alltoall, reducescatter, all (default allreduce)\n"
      "  -b, -e  smallest and largest size in bytes, suffix K, M, G (default 8 and 256M)\n"
      "  -f  size factor between steps (default 4)\n"
      "  -d  float32, float64, int32, int64 (default float32)\n"
      "  -o  sum, average, min, max (default sum)\n"
      "  -n, -w  timed and warm-up iterations (default: by size)\n"
      "  -C  check results (default 1)\n"
      "  -s  send buffers in the node's shared segment (tandem_alloc_shared): no copy-in\n"
      "  -i  in place (send == recv) for allreduce\n"
      "  --device cuda [-c COLL|all] [-b MIN] [-e MAX] [-n ITERS]: GPU buffers through the\n"
      "      runtime and NCCL, float32 sum, results checked (docs/gpu.md)\n");
  std::exit(why ? 2 : 0);
}

size_t parse_size(const char* s) {
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  double mult = 1;
  if (*end == 'K' || *end == 'k') mult = 1024.0, ++end;
  else if (*end == 'M' || *end == 'm') mult = 1024.0 * 1024, ++end;
  else if (*end == 'G' || *end == 'g') mult = 1024.0 * 1024 * 1024, ++end;
  if (end == s || *end != '\0' || !(v > 0)) usage((std::string("bad size '") + s + "'").c_str());
  return static_cast<size_t>(v * mult);
}

Options parse(int argc, char** argv) {
  Options o;
  int c;
  while ((c = getopt(argc, argv, "c:b:e:f:d:o:n:w:C:sih")) != -1) {
    const std::string a = optarg ? optarg : "";
    switch (c) {
      case 'c':
        o.colls.clear();
        if (a == "all") {
          o.colls = {"allreduce", "broadcast", "allgather", "alltoall", "reducescatter"};
        } else {
          size_t at = 0;
          while (at <= a.size()) {
            const size_t comma = a.find(',', at);
            o.colls.push_back(
                a.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
            if (comma == std::string::npos) break;
            at = comma + 1;
          }
        }
        for (auto& x : o.colls)
          if (x != "allreduce" && x != "broadcast" && x != "allgather" && x != "alltoall" &&
              x != "reducescatter")
            usage(("unknown collective '" + x + "'").c_str());
        break;
      case 'b': o.min_bytes = parse_size(optarg); break;
      case 'e': o.max_bytes = parse_size(optarg); break;
      case 'f':
        o.factor = std::atof(optarg);
        if (!(o.factor > 1)) usage("-f must be > 1");
        break;
      case 'd':
        if (a == "float32") o.dtype = TANDEM_FLOAT32;
        else if (a == "float64") o.dtype = TANDEM_FLOAT64;
        else if (a == "int32") o.dtype = TANDEM_INT32;
        else if (a == "int64") o.dtype = TANDEM_INT64;
        else usage(("unknown type '" + a + "'").c_str());
        break;
      case 'o':
        if (a == "sum") o.op = TANDEM_SUM;
        else if (a == "average") o.op = TANDEM_AVERAGE;
        else if (a == "min") o.op = TANDEM_MIN;
        else if (a == "max") o.op = TANDEM_MAX;
        else usage(("unknown op '" + a + "'").c_str());
        break;
      case 'n':
        o.iters = std::atoi(optarg);
        if (o.iters < 1) usage("-n must be >= 1");
        break;
      case 'w':
        o.warmup = std::atoi(optarg);
        if (o.warmup < 0) usage("-w must be >= 0");
        break;
      case 'C': o.check = std::atoi(optarg) != 0; break;
      case 's': o.shared = true; break;
      case 'i': o.in_place = true; break;
      case 'h': usage(nullptr);
      default: usage("unknown option");
    }
  }
  if (o.min_bytes > o.max_bytes) usage("-b is larger than -e");
  return o;
}

void must(tandem_result_t rc, const char* what) {
  if (rc == TANDEM_SUCCESS) return;
  // Read before tandem_rank(), which sets its own message when init failed.
  const std::string why = tandem_last_error();
  int rank = -1;
  tandem_rank(&rank);
  TANDEM_ERROR(tools, "rank %d: %s failed: %s: %s", rank, what, tandem_result_name(rc),
               why.c_str());
  std::exit(3);
}

// A buffer from the shared segment (-s) or the heap.
struct Buffer {
  void* p = nullptr;
  bool shared = false;
  std::vector<char> heap;
  Buffer(size_t bytes, bool in_segment) : shared(in_segment) {
    if (shared) must(tandem_alloc_shared(bytes ? bytes : 1, &p), "tandem_alloc_shared");
    else heap.resize(bytes ? bytes : 1), p = heap.data();
  }
  ~Buffer() {
    if (shared) tandem_free_shared(p);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};

double get(tandem_dtype_t t, const void* p, size_t i) {
  switch (t) {
    case TANDEM_FLOAT32: return static_cast<const float*>(p)[i];
    case TANDEM_FLOAT64: return static_cast<const double*>(p)[i];
    case TANDEM_INT32: return static_cast<const int32_t*>(p)[i];
    default: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
  }
}
void put(tandem_dtype_t t, void* p, size_t i, double v) {
  switch (t) {
    case TANDEM_FLOAT32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case TANDEM_FLOAT64: static_cast<double*>(p)[i] = v; break;
    case TANDEM_INT32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); break;
    default: static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v); break;
  }
}
// Rank r's element i: small integers, so every check is exact.
double value(int r, size_t i) { return static_cast<double>(r + 1 + static_cast<int>(i % 7)); }

struct Case {
  std::string coll;
  int n, me;
  size_t bytes, es;
  size_t count;  // the count printed: elements of "size"
  size_t send_count, recv_count;
  double busbw_factor;
};

Case make_case(const std::string& coll, size_t bytes, size_t es, int n, int me) {
  Case c{coll, n, me, bytes, es, bytes / es, 0, 0, 1.0};
  const double f = static_cast<double>(n - 1) / n;
  if (coll == "allreduce") c.send_count = c.recv_count = c.count, c.busbw_factor = 2 * f;
  else if (coll == "broadcast") c.send_count = c.recv_count = c.count, c.busbw_factor = 1;
  else if (coll == "allgather")
    c.send_count = c.count / n, c.recv_count = c.send_count * n, c.busbw_factor = f;
  else if (coll == "reducescatter")
    c.recv_count = c.count / n, c.send_count = c.recv_count * n, c.busbw_factor = f;
  else c.send_count = c.recv_count = c.count / n * n, c.busbw_factor = f;  // alltoall
  return c;
}

void run_once(const Case& c, const Options& o, void* send, void* recv) {
  switch (c.coll[0] == 'a' && c.coll.size() > 4 ? c.coll[4] : c.coll[0]) {
    case 'e':  // allreduce
      must(tandem_allreduce(send, o.in_place ? send : recv, c.count, o.dtype, o.op, 1.0, 1.0),
           "allreduce");
      break;
    case 'b': must(tandem_broadcast(send, c.count, o.dtype, 0), "broadcast"); break;
    case 'a':  // allgather
      must(tandem_allgather(send, c.send_count, recv, o.dtype), "allgather");
      break;
    case 'o':  // alltoall
      must(tandem_alltoall(send, recv, c.send_count / c.n, o.dtype), "alltoall");
      break;
    default: {
      std::vector<size_t> counts(c.n, c.recv_count);
      must(tandem_reducescatter(send, recv, counts.data(), o.dtype, o.op), "reducescatter");
    }
  }
}

double reduced(const Options& o, int n, size_t i) {
  double acc = value(0, i);
  for (int r = 1; r < n; ++r) {
    const double v = value(r, i);
    if (o.op == TANDEM_MIN) acc = std::min(acc, v);
    else if (o.op == TANDEM_MAX) acc = std::max(acc, v);
    else acc += v;
  }
  if (o.op == TANDEM_AVERAGE) {
    if (o.dtype == TANDEM_FLOAT32) return static_cast<float>(acc) / static_cast<float>(n);
    if (o.dtype == TANDEM_FLOAT64) return acc / n;
    return std::trunc(acc / n);
  }
  return acc;
}

// Fills inputs, runs once, compares every element; true when correct.
bool check(const Case& c, const Options& o, void* send, void* recv) {
  for (size_t i = 0; i < c.send_count; ++i) put(o.dtype, send, i, value(c.me, i));
  run_once(c, o, send, recv);
  const void* out = (c.coll == "allreduce" && o.in_place) || c.coll == "broadcast" ? send : recv;
  size_t bad = 0;
  for (size_t i = 0; i < c.recv_count && bad == 0; ++i) {
    double want;
    if (c.coll == "allreduce") want = reduced(o, c.n, i);
    else if (c.coll == "broadcast") want = value(0, i);
    else if (c.coll == "allgather")
      want = value(static_cast<int>(i / c.send_count), i % c.send_count);
    else if (c.coll == "reducescatter") want = reduced(o, c.n, c.me * c.recv_count + i);
    else {
      const size_t block = c.send_count / c.n;
      const int from = static_cast<int>(i / block);
      want = value(from, c.me * block + i % block);
    }
    if (get(o.dtype, out, i) != want) ++bad;
  }
  return bad == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (!tandem::tools::start_log("tandem-bench")) return 2;
  // ---- device mode (GPU path): tandem-bench --device cuda [...]
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--device") != 0) continue;
    if (std::strcmp(argv[i + 1], "cuda") != 0) usage("--device takes 'cuda'");
    std::vector<char*> rest(argv, argv + argc);
    rest.erase(rest.begin() + i, rest.begin() + i + 2);
    return device_bench_main(static_cast<int>(rest.size()), rest.data());
  }
  // ---- end device mode
  const Options o = parse(argc, argv);
  must(tandem_init(), "tandem_init");
  int n = 1, me = 0, nodes = 1, local = 1;
  tandem_size(&n);
  tandem_rank(&me);
  tandem_cross_size(&nodes);
  tandem_local_size(&local);
  const size_t es = tandem_dtype_size(o.dtype);
  static const char* const op_names[] = {"sum", "average", "min", "max", "product"};
  static const char* const type_names[] = {"uint8",    "int8",    "int32",   "int64", "float16",
                                           "bfloat16", "float32", "float64", "bool"};
  // Warm up for at least 200 ms before the first timed size: right after
  // start the scheduler may still keep ranks on one CPU, which would make
  // the first (smallest) size look slow. Every rank runs the same number of
  // rounds: the slowest rank's clock decides.
  {
    float w[2] = {0, 0};
    const auto t0 = std::chrono::steady_clock::now();
    for (double elapsed = 0; elapsed < 0.2;) {
      for (int i = 0; i < 200; ++i)
        must(tandem_allreduce(w, w, 2, TANDEM_FLOAT32, TANDEM_SUM, 1.0, 1.0), "warm-up");
      const double mine =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      must(tandem_allreduce(&mine, &elapsed, 1, TANDEM_FLOAT64, TANDEM_MAX, 1.0, 1.0), "warm-up");
    }
  }
  bool all_ok = true;
  double bus_sum = 0;
  int bus_n = 0;
  for (const auto& coll : o.colls) {
    if (me == 0) {
      std::printf("# tandem-bench %s: %d ranks on %d node(s), %d local; %s%s\n", coll.c_str(), n,
                  nodes, local, o.shared ? "shared-segment buffers" : "private buffers",
                  o.in_place ? ", in place" : "");
      std::printf("#%11s %12s %9s %8s %11s %12s %12s %6s\n", "size(B)", "count", "type", "redop",
                  "time(us)", "algbw(GB/s)", "busbw(GB/s)", "check");
    }
    for (double b = static_cast<double>(o.min_bytes);
         b <= static_cast<double>(o.max_bytes) * 1.0001; b *= o.factor) {
      const size_t bytes = static_cast<size_t>(b) / es * es;
      const Case c = make_case(coll, bytes, es, n, me);
      Buffer send(c.send_count * es, o.shared), recv(c.recv_count * es, false);
      int ok = 1;
      if (o.check) ok = check(c, o, send.p, recv.p) ? 1 : 0;
      int all = ok;
      must(tandem_allreduce(&ok, &all, 1, TANDEM_INT32, TANDEM_MIN, 1.0, 1.0), "check exchange");
      const int iters =
          o.iters ? o.iters
                  : static_cast<int>(std::min<size_t>(
                        1000, std::max<size_t>(5, (size_t{1} << 30) / (bytes ? bytes : 1))));
      const int warmup = o.warmup >= 0 ? o.warmup : std::max(2, iters / 10);
      for (int i = 0; i < warmup; ++i) run_once(c, o, send.p, recv.p);
      must(tandem_barrier(), "barrier");
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < iters; ++i) run_once(c, o, send.p, recv.p);
      const double mine =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
      double slowest = mine;
      must(tandem_allreduce(&mine, &slowest, 1, TANDEM_FLOAT64, TANDEM_MAX, 1.0, 1.0),
           "time exchange");
      const double algbw = static_cast<double>(bytes) / slowest / 1e9;
      const double busbw = algbw * c.busbw_factor;
      bus_sum += busbw;
      ++bus_n;
      all_ok = all_ok && all;
      if (me == 0) {
        const bool reducing = coll == "allreduce" || coll == "reducescatter";
        std::printf("%12zu %12zu %9s %8s %11.2f %12.3f %12.3f %6s\n", bytes, c.count,
                    type_names[o.dtype], reducing ? op_names[o.op] : "none", slowest * 1e6, algbw,
                    busbw, o.check ? (all ? "ok" : "FAIL") : "-");
        std::fflush(stdout);
      }
    }
  }
  if (me == 0) {
    std::printf("# Out of bounds values : %s\n", all_ok ? "0 OK" : "FAILED");
    std::printf("# Avg bus bandwidth    : %.3f GB/s\n", bus_n ? bus_sum / bus_n : 0.0);
  }
  must(tandem_finalize(), "tandem_finalize");
  return all_ok ? 0 : 1;
}
