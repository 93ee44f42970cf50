// tandem_init under an elastic launch: ask the membership service for a place
// in the next generation (probing the other candidates when it asks), then
// build the Communicator and the runtime over that generation. A generation
// can fail while it forms, when one of its members dies or stops answering
// in between; that is no error for the script: this rank asks for the next
// generation, which forms without the failed member. Only the service's own
// verdicts end tandem_init with an error: this process was removed (its node
// was excluded), or the job failed (the reset limit, the minimum size).
#include "api/join.h"
#include "common/errors.h"
#include "common/log.h"
#include "elastic/client.h"
#include "elastic/elastic_bootstrap.h"
#include "transport/tcp/probe.h"
#include "transport/tcp/tcp_transport.h"

namespace tandem {

namespace {

std::vector<uint32_t> probe(const std::vector<elastic::ProbeTarget>& targets,
                            std::chrono::milliseconds timeout, void*) {
  std::vector<Bytes> endpoints;
  for (const auto& t : targets) endpoints.push_back(t.endpoint);
  std::vector<uint32_t> bad;
  for (size_t i : tcp::unreachable(endpoints, timeout)) bad.push_back(targets[i].member);
  return bad;
}

}  // namespace

std::unique_ptr<Communicator> join_elastic(const std::function<void(Communicator&)>& start) {
  elastic::ElasticClient& client = elastic::ElasticClient::instance();
  CommunicatorOptions options = CommunicatorOptions::from_environment();
  options.setup_log_level = log::Level::kInfo;  // TANDEM_LOG=info describes the world's set-up
  for (;;) {
    elastic::JoinAnswer answer;
    {
      tcp::ProbeListener listener;  // open until every candidate has probed it
      answer = client.join(listener.endpoint(), &probe, nullptr);
    }
    if (answer.kind != elastic::JoinAnswer::kAssigned) throw AbortedError(answer.message);
    const elastic::Assignment& a = answer.assignment;
    // The log's prefix names this generation's rank, as bootstrap_from_environment
    // does for the other launches.
    const size_t r = static_cast<size_t>(a.rank);
    log::set_identity(a.rank, r < a.nodes.size() ? a.nodes[r] : std::string("?"));
    TANDEM_INFO(elastic, "joined generation %u: rank %d of %d, job %s", a.generation, a.rank,
                a.size, a.job_id.c_str());
    try {
      auto comm = std::make_unique<Communicator>(
          std::make_unique<elastic::ElasticBootstrap>(client, a), job_transport(), options);
      start(*comm);
      return comm;
    } catch (const PeerLostError& e) {
      TANDEM_WARN(elastic, "rank %d: generation %u failed while it formed (%s); joining the next",
                  a.rank, a.generation, e.what());
    } catch (const TimeoutError& e) {
      TANDEM_WARN(elastic, "rank %d: generation %u failed while it formed (%s); joining the next",
                  a.rank, a.generation, e.what());
    }
  }
}

}  // namespace tandem
