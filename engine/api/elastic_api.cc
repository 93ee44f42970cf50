// The elastic section of tandem.h: what the framework layer needs beside
// tandem_init/tandem_finalize (which join the next generation themselves).
#include "api/guard.h"
#include "elastic/client.h"

using tandem::elastic::ElasticClient;

extern "C" {

TANDEM_API int tandem_elastic_enabled(void) { return ElasticClient::requested() ? 1 : 0; }

TANDEM_API tandem_result_t tandem_elastic_wait_update(int timeout_ms, int64_t* timestamp,
                                                      int* kind) {
  bool got = false;
  const tandem_result_t rc = tandem::guarded([&] {
    if (!timestamp || !kind) throw tandem::InvalidArgument("timestamp or kind is NULL");
    if (timeout_ms < 0) throw tandem::InvalidArgument("timeout_ms is negative");
    if (!ElasticClient::requested())
      throw tandem::InvalidArgument(
          "not an elastic launch: no host updates will come "
          "(start the job with srun --horovod=elastic)");
    uint64_t ts = 0;
    uint32_t k = 0;
    got = ElasticClient::instance().wait_update(
        tandem::Clock::now() + std::chrono::milliseconds(timeout_ms), &ts, &k);
    *timestamp = static_cast<int64_t>(ts);
    *kind = static_cast<int>(k);
  });
  if (rc == TANDEM_SUCCESS && !got) return TANDEM_ERR_IN_PROGRESS;
  return rc;
}

TANDEM_API tandem_result_t tandem_elastic_done(void) {
  return tandem::guarded([] {
    if (ElasticClient* client = ElasticClient::existing()) client->done();
  });
}

}  // extern "C"
