#include "torch_env.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <tuple>

#include "plugin_error.h"

namespace tandem::plugin {
namespace {

TEST(TorchEnv, DerivedPortFormulaAndRange) {
  EXPECT_EQ(derived_master_port(0, 0), 16384);
  EXPECT_EQ(derived_master_port(1, 0), 16384 + 16);
  EXPECT_EQ(derived_master_port(1, 3), 16384 + 16 + 3);
  EXPECT_EQ(derived_master_port(1023, 15), 32767);
  EXPECT_EQ(derived_master_port(1024, 0), 16384);  // wraps: job ids 1024 apart
  EXPECT_EQ(derived_master_port(5, 16), derived_master_port(5, 0));
  EXPECT_EQ(derived_master_port(0xffffffffu, 0xffffffffu), 32767);
  // Every port of the range, each exactly once, over 1024 jobs x 16 steps.
  std::set<uint16_t> seen;
  for (uint32_t job = 77; job < 77 + kJobSlots; ++job) {
    for (uint32_t step = 0; step < kStepSlots; ++step) {
      const uint16_t p = derived_master_port(job, step);
      EXPECT_GE(p, 16384);
      EXPECT_LE(p, 32767);
      seen.insert(p);
    }
  }
  EXPECT_EQ(seen.size(), kJobSlots * kStepSlots);
}

TEST(TorchEnv, ConcurrentStepsNeverCollideWithinTheDocumentedWindow) {
  // Any two (job, step) with job ids < 1024 apart and step ids < 16 apart:
  // distinct ports. Sampled around a wrap of both moduli.
  for (uint32_t j1 = 1000; j1 < 1060; j1 += 7) {
    for (uint32_t j2 = j1; j2 < j1 + kJobSlots; j2 += 41) {
      for (uint32_t s1 = 10; s1 < 20; ++s1) {
        for (uint32_t s2 = s1; s2 < s1 + kStepSlots; ++s2) {
          if (j1 == j2 && s1 == s2) continue;
          EXPECT_NE(derived_master_port(j1, s1), derived_master_port(j2, s2))
              << j1 << "." << s1 << " vs " << j2 << "." << s2;
        }
      }
    }
  }
}

TEST(TorchEnv, FirstReservedPort) {
  EXPECT_EQ(first_reserved_port("12000-12003"), 12000);
  EXPECT_EQ(first_reserved_port("12000,12005-12006"), 12000);
  EXPECT_EQ(first_reserved_port("65535"), 65535);
  for (const char* bad : {"", "-12000", "x", "0", "65536", "123456", "12000;", " 12000"}) {
    EXPECT_THROW(first_reserved_port(bad), PluginError) << bad;
  }
}

TEST(TorchEnv, Rank0NodeFromPmixMapping) {
  EXPECT_EQ(rank0_node("(vector,(0,2,2))"), 0u);
  EXPECT_EQ(rank0_node("(vector,(1,1,1),(0,1,2))"), 1u);  // -m arbitrary, rank 0 on node 1
  EXPECT_EQ(rank0_node("(vector,(12,3,4))"), 12u);
  for (const char* bad :
       {"", "(vector,", "(vector,()", "(vector,(x,1,1))", "(vector,(1", "vector,(0,1,1)"}) {
    EXPECT_THROW(rank0_node(bad), PluginError) << bad;
  }
}

TEST(TorchEnv, NthHostExpandsSlurmHostLists) {
  EXPECT_EQ(nth_host("node1", 0), "node1");
  EXPECT_EQ(nth_host("node[1-2]", 0), "node1");
  EXPECT_EQ(nth_host("node[1-2]", 1), "node2");
  EXPECT_EQ(nth_host("node[08-11]", 0), "node08");
  EXPECT_EQ(nth_host("node[08-11]", 3), "node11");
  EXPECT_EQ(nth_host("node[1,3,5-6]", 2), "node5");
  EXPECT_EQ(nth_host("a1,b[3-4],c", 2), "b4");
  EXPECT_EQ(nth_host("a1,b[3-4],c", 3), "c");
  EXPECT_EQ(nth_host("n[1-2]-ib", 1), "n2-ib");
  EXPECT_EQ(nth_host("r[1-2]n[1-3]", 0), "r1n1");
  EXPECT_EQ(nth_host("r[1-2]n[1-3]", 2), "r1n3");
  EXPECT_EQ(nth_host("r[1-2]n[1-3]", 3), "r2n1");
  EXPECT_EQ(nth_host("gpu[0998-1001]", 2), "gpu1000");
}

TEST(TorchEnv, NthHostRefusesBadListsAndShortOnes) {
  for (const char* bad : {"", "node[1-2", "node1-2]", "node[]", "node[a-b]", "node[3-1]", "a,,b",
                          "a,", "n[[1]]", "n[1--2]"}) {
    EXPECT_THROW(nth_host(bad, 0), PluginError) << bad;
  }
  EXPECT_THROW(nth_host("node[1-2]", 2), PluginError);
  try {
    nth_host("node[1-2]", 5);
    FAIL();
  } catch (const PluginError& e) {
    EXPECT_NE(std::string(e.what()).find("names 2 nodes; node 5"), std::string::npos) << e.what();
  }
}

std::string fake_address(const std::string& node) { return "addr-of-" + node; }

TEST(TorchEnv, RendezvousFromTheJobEnvironment) {
  MapTaskEnv env;
  env.vars["SLURM_STEP_NODELIST"] = "node[3-5]";
  env.vars["SLURM_PMIX_MAPPING_SERV"] = "(vector,(2,1,1),(0,2,1))";
  TorchRendezvous r = torch_rendezvous(env, 4242, 3, fake_address);
  EXPECT_EQ(r.master_node, "node5");
  EXPECT_EQ(r.master_addr, "addr-of-node5");
  EXPECT_EQ(r.master_port, derived_master_port(4242, 3));

  env.vars.erase("SLURM_PMIX_MAPPING_SERV");  // no mapping: node 0 of the step
  env.vars["SLURM_STEP_RESV_PORTS"] = "12004-12006";
  r = torch_rendezvous(env, 4242, 3, fake_address);
  EXPECT_EQ(r.master_node, "node3");
  EXPECT_EQ(r.master_port, 12004);

  env.vars.erase("SLURM_STEP_NODELIST");
  EXPECT_THROW(torch_rendezvous(env, 1, 0, fake_address), PluginError);
}

TaskIdentity identity() {
  // rank 3 of 6 on node 1 of 3, two tasks per node.
  return compute_identity({6, 1, 3, {2, 2, 2}}, 3, 1, "node2");
}

TEST(TorchEnv, ExportsEveryVariable) {
  MapTaskEnv env;
  env.vars["TANDEM_TCP_IFNAME"] = "eth0";
  export_torch_env(identity(), {"node1", "10.0.0.11", 17000}, env);
  EXPECT_EQ(env.vars.at("MASTER_ADDR"), "10.0.0.11");
  EXPECT_EQ(env.vars.at("MASTER_PORT"), "17000");
  EXPECT_EQ(env.vars.at("RANK"), "3");
  EXPECT_EQ(env.vars.at("WORLD_SIZE"), "6");
  EXPECT_EQ(env.vars.at("LOCAL_RANK"), "1");
  EXPECT_EQ(env.vars.at("LOCAL_WORLD_SIZE"), "2");
  EXPECT_EQ(env.vars.at("GLOO_SOCKET_IFNAME"), "eth0");
}

TEST(TorchEnv, UserValuesWinPerVariable) {
  const std::tuple<const char*, const char*> user[] = {
      {"MASTER_ADDR", "head"},      {"MASTER_PORT", "29500"}, {"RANK", "7"},
      {"WORLD_SIZE", "8"},          {"LOCAL_RANK", "5"},      {"LOCAL_WORLD_SIZE", "4"},
      {"GLOO_SOCKET_IFNAME", "ib0"}};
  for (const auto& [name, value] : user) {
    MapTaskEnv env;
    env.vars["TANDEM_TCP_IFNAME"] = "eth0";
    env.vars[name] = value;
    export_torch_env(identity(), {"node1", "10.0.0.11", 17000}, env);
    EXPECT_EQ(env.vars.at(name), value);
    // ... and only that one is kept.
    EXPECT_EQ(env.vars.at("WORLD_SIZE"), std::string(name) == "WORLD_SIZE" ? "8" : "6");
    EXPECT_EQ(env.vars.at("MASTER_PORT"), std::string(name) == "MASTER_PORT" ? "29500" : "17000");
  }
  MapTaskEnv empty;  // an empty value counts as unset
  empty.vars["MASTER_ADDR"] = "";
  export_torch_env(identity(), {"node1", "10.0.0.11", 17000}, empty);
  EXPECT_EQ(empty.vars.at("MASTER_ADDR"), "10.0.0.11");
  EXPECT_EQ(empty.vars.count("GLOO_SOCKET_IFNAME"), 0u);  // no NIC chosen: gloo decides
}

TEST(TorchEnv, NodeAddressFallsBackToTheNameOutsideSlurm) {
  // No slurm_conf_get_address in this process (it lives in libslurmfull).
  EXPECT_EQ(slurm_node_address("node7"), "node7");
}

}  // namespace
}  // namespace tandem::plugin
