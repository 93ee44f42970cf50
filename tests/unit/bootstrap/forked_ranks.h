// Runs ranks as forked processes for the bootstrap tests. Each child gets its
// own environment, runs a body that returns "" on success or a failure
// message, and reports that message to the parent through a pipe. The parent
// waits with a deadline and kills whatever is left, so a hung rank fails the
// test instead of hanging it.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tandem::test {

struct RankSpec {
  std::map<std::string, std::string> env;  // set in the child before the body runs
};

struct RankOutcome {
  int rank = -1;
  bool exited = false;  // exited normally (vs killed)
  int code = -1;        // exit code, or the signal when !exited
  std::string message;  // the body's failure message, "" on success
};

// body(rank) runs in child `rank`; the children listed in `launch` are started
// (default: all of specs). Children still running at the deadline are killed.
std::vector<RankOutcome> run_forked(const std::vector<RankSpec>& specs,
                                    const std::function<std::string(int)>& body,
                                    std::chrono::seconds deadline = std::chrono::seconds(60),
                                    std::vector<int> launch = {});

// A TCP port that was free a moment ago (for a rank 0 that hosts the store).
int free_port();

}  // namespace tandem::test
