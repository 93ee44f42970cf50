#include "container_env.h"

#include <gtest/gtest.h>

#include <set>

namespace tandem::plugin {
namespace {

Config config(const std::string& python = "/opt/tandem/python") {
  Config c;
  c.engine_path = "/opt/tandem/libtandem.so.0";
  c.python_path = python;
  return c;
}

TaskIdentity identity() { return compute_identity({6, 1, 3, {2, 2, 2}}, 3, 1, "node2"); }

TEST(ContainerEnv, PreloadIsTheShimBesideTheEngine) {
  EXPECT_EQ(preload_path(config()), "/opt/tandem/libtandem-preload.so");
  EXPECT_EQ(engine_dir(config()), "/opt/tandem");
}

TEST(ContainerEnv, ApptainerBindsTheEngineFolderOnceWhenPythonIsInside) {
  MapTaskEnv env;
  export_container_env(config(), identity(), "10.0.0.1", 7, 2, env);
  EXPECT_EQ(env.vars.at("APPTAINER_BIND"), "/opt/tandem");
  EXPECT_EQ(env.vars.at("SINGULARITY_BIND"), "/opt/tandem");
  EXPECT_EQ(env.vars.at("TANDEM_PYTHONPATH"), "/opt/tandem/python");
}

TEST(ContainerEnv, ApptainerBindsKeepTheUsersAndAddAnOutsidePythonFolder) {
  MapTaskEnv env;
  env.vars["APPTAINER_BIND"] = "/scratch,/opt/tandem:/opt/tandem:ro";
  export_container_env(config("/srv/py"), identity(), "10.0.0.1", 7, 2, env);
  EXPECT_EQ(env.vars.at("APPTAINER_BIND"), "/scratch,/opt/tandem:/opt/tandem:ro,/srv/py");
  EXPECT_EQ(env.vars.at("SINGULARITY_BIND"), "/opt/tandem,/srv/py");
}

TEST(ContainerEnv, RendezvousOnlyWithTheStepsToken) {
  MapTaskEnv without;
  export_container_env(config(), identity(), "10.0.0.1", 7, 2, without);
  EXPECT_EQ(without.vars.count("TANDEM_RENDEZVOUS_ADDR"), 0u);
  EXPECT_EQ(without.vars.count("TANDEM_RANK"), 0u);

  MapTaskEnv env;
  env.vars["TANDEM_RENDEZVOUS_TOKEN"] = "0123456789abcdef";
  export_container_env(config(), identity(), "10.0.0.1", 7, 2, env);
  EXPECT_EQ(env.vars.at("TANDEM_RENDEZVOUS_ADDR"),
            "10.0.0.1:" + std::to_string(12288 + 7 * 16 + 2));
  EXPECT_EQ(env.vars.at("TANDEM_RANK"), "3");
  EXPECT_EQ(env.vars.at("TANDEM_SIZE"), "6");

  MapTaskEnv v6;
  v6.vars["TANDEM_RENDEZVOUS_TOKEN"] = "0123456789abcdef";
  export_container_env(config(), identity(), "fd00::1", 7, 2, v6);
  EXPECT_EQ(v6.vars.at("TANDEM_RENDEZVOUS_ADDR"),
            "[fd00::1]:" + std::to_string(12288 + 7 * 16 + 2));
}

TEST(ContainerEnv, StorePortsStayBelowTorchsAndDifferBetweenNearbySteps) {
  std::set<uint16_t> seen;
  for (uint32_t job = 1000; job < 1256; ++job)
    for (uint32_t step = 0; step < 16; ++step) {
      const uint16_t p = store_port(job, step);
      EXPECT_GE(p, 12288);
      EXPECT_LT(p, 16384);
      EXPECT_TRUE(seen.insert(p).second) << job << "." << step;
    }
}

TEST(ContainerEnv, TokensAreFreshHex) {
  const std::string a = random_token(), b = random_token();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
}

}  // namespace
}  // namespace tandem::plugin
