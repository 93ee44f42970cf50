// A rank of a job that the straggler report must judge (docs/runtime.md,
// "Stragglers"), run under tandem-run with TANDEM_STRAGGLER_REPORT set
// (tests/unit/runtime/meson.build):
//
//   straggler_job slow R          rank R sleeps before every allreduce
//   straggler_job balanced        every rank sleeps as long
//   straggler_job node K R...     ranks r play node "host<r/K>"; ranks R... sleep
//
// The ranks run steps until the first report has run on all of them (agreed
// through the steps' own allreduce), then every rank checks whom its copy of
// the report names, in the period and in the total: the sleeping rank, the
// sleeping node, or nobody. "rank R: FAIL ..." and exit 1 otherwise.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "job_check.h"
#include "tandem/tandem.h"

namespace {

int rank = 0, size = 1;

std::string report_json() {
  size_t needed = 0;
  OK(tandem_straggler_report(nullptr, 0, &needed));
  std::vector<char> buf(needed + 64);
  OK(tandem_straggler_report(buf.data(), buf.size(), &needed));
  CHECK(needed <= buf.size(), "the report grew from one call to the next");
  return buf.data();
}

int reports_seen(const std::string& json) {
  return std::atoi(json.c_str() + std::strlen("{\"reports\":"));
}

// The part of the report after `key` ("period" or "total").
std::string part(const std::string& json, const char* key) {
  const std::string k = std::string("\"") + key + "\":";
  size_t at = json.find(k);
  CHECK(at != std::string::npos, "no %s in the report: %s", key, json.c_str());
  size_t end = std::string(key) == "period" ? json.find("\"total\":") : json.size();
  return json.substr(at, end - at);
}

void expect(const std::string& json, const char* key, const std::vector<std::string>& any_of) {
  const std::string p = part(json, key);
  for (const std::string& s : any_of)
    if (p.find(s) != std::string::npos) return;
  CHECK(false, "the %s report does not name what it should (%s): %s", key, any_of[0].c_str(),
        p.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  CHECK(argc >= 2, "usage: straggler_job slow R | balanced | node K R...");
  const std::string mode = argv[1];
  const char* env_rank = std::getenv("TANDEM_RANK");
  const int my_rank = env_rank ? std::atoi(env_rank) : 0;
  std::vector<int> slow;
  int per_node = 0;
  if (mode == "slow") {
    CHECK(argc == 3, "slow R");
    slow.push_back(std::atoi(argv[2]));
  } else if (mode == "node") {
    CHECK(argc >= 4, "node K R...");
    per_node = std::atoi(argv[2]);
    for (int i = 3; i < argc; ++i) slow.push_back(std::atoi(argv[i]));
    // A simulated node: ranks of one name share memory, the others are
    // joined over TCP as across machines.
    setenv("TANDEM_NODE_NAME", ("host" + std::to_string(my_rank / per_node)).c_str(), 1);
  } else {
    CHECK(mode == "balanced", "unknown mode '%s'", mode.c_str());
  }
  OK(tandem_init());
  OK(tandem_rank(&rank));
  OK(tandem_size(&size));
  // Rank 0 writes the timeline; its counter track must carry the report.
  const std::string timeline = "/tmp/straggler_job-timeline-" + std::to_string(getpid()) + ".json";
  if (mode == "slow") OK(tandem_start_timeline(timeline.c_str(), 0));
  bool sleeps = mode == "balanced";
  for (int r : slow) sleeps = sleeps || r == rank;

  const int64_t shape = 16;
  for (int step = 0;; ++step) {
    CHECK(step < 2000, "no straggler report after %d steps", step);
    if (sleeps) usleep(20000);
    std::vector<float> in(16, static_cast<float>(reports_seen(report_json()))), out(16, -1);
    tandem_tensor_t t{"step", in.data(), out.data(), TANDEM_FLOAT32, TANDEM_DEVICE_CPU, 1, &shape};
    tandem_handle_t h = 0;
    OK(tandem_enqueue_allreduce(&t, TANDEM_MAX, 1.0, 1.0, TANDEM_GLOBAL_PROCESS_SET, &h));
    OK(tandem_handle_wait(h, 60.0));
    tandem_handle_release(h);
    // Every rank stops at the same step: the first after which some rank
    // had seen a report (all have, then: the report ran in an earlier round).
    if (out[0] >= 1) break;
  }
  const std::string json = report_json();
  for (const char* key : {"period", "total"}) {
    if (mode == "slow") {
      expect(json, key, {"\"kind\":\"rank\",\"named\":[" + std::to_string(slow[0]) + "],"});
    } else if (mode == "balanced") {
      expect(json, key, {"\"kind\":\"none\""});
    } else {
      std::string node = "\"node\":\"host" + std::to_string(slow[0] / per_node) + "\"";
      std::string a = std::to_string(slow[0]), b = std::to_string(slow[1]);
      expect(json, key,
             {"\"kind\":\"node\",\"named\":[" + a + "," + b + "]," + node,
              "\"kind\":\"node\",\"named\":[" + b + "," + a + "]," + node});
    }
  }
  // The rows come ordered by time cost: the first row is a sleeping rank.
  if (!slow.empty()) {
    const std::string rows = part(json, "total");
    const size_t first = rows.find("\"rows\":[{\"rank\":");
    CHECK(first != std::string::npos, "no rows: %s", rows.c_str());
    const int top = std::atoi(rows.c_str() + first + std::strlen("\"rows\":[{\"rank\":"));
    bool top_sleeps = false;
    for (int r : slow) top_sleeps = top_sleeps || r == top;
    CHECK(top_sleeps, "the first row is rank %d, which did not sleep: %s", top, rows.c_str());
  }
  OK(tandem_finalize());
  if (mode == "slow" && rank == 0) {
    std::FILE* f = std::fopen(timeline.c_str(), "r");
    CHECK(f, "no timeline at %s", timeline.c_str());
    std::string text;
    char chunk[4096];
    for (size_t n; (n = std::fread(chunk, 1, sizeof chunk, f)) > 0;) text.append(chunk, n);
    std::fclose(f);
    std::remove(timeline.c_str());
    const std::string track = "{\"name\":\"straggler: share of the period the set waited for\",";
    const size_t at = text.find(track);
    CHECK(at != std::string::npos, "no straggler counter in the timeline");
    const std::string slow_series = "\"rank " + std::to_string(slow[0]) + "\":";
    CHECK(text.find(slow_series, at) != std::string::npos, "the counter has no %s series",
          slow_series.c_str());
  }
  std::printf("rank %d: ok %s\n", rank, mode.c_str());
  return 0;
}
