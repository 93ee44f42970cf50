// The file through which a later elastic step finds the job's membership
// service (plugin/elastic_job.h).
#include "elastic_job.h"

#include <gtest/gtest.h>

namespace tandem::plugin {
namespace {

TEST(ElasticJob, TheFileIsNamedAfterTheClusterAndTheJob) {
  EXPECT_EQ(elastic_job_file("/home/u/.tandem/elastic", "tandemx", 42),
            "/home/u/.tandem/elastic/tandemx.42");
}

TEST(ElasticJob, AnAddressRoundTrips) {
  const ServiceAddress a{"10.0.0.1", 41835, "tok-0123456789abcdef"};
  auto b = parse_service_address(format_service_address(a));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->host, a.host);
  EXPECT_EQ(b->port, a.port);
  EXPECT_EQ(b->token, a.token);
}

TEST(ElasticJob, AnythingElseIsNoAddress) {
  for (const char* bad :
       {"", "host", "host 1", "host 0 tok-0123456789", "host 70000 tok-0123456789",
        "host x tok-0123456789", "host 12 short", "host 12 tok-0123456789 extra"})
    EXPECT_FALSE(parse_service_address(bad)) << bad;
}

}  // namespace
}  // namespace tandem::plugin
