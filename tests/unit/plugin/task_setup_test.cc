#include "task_setup.h"

#include <gtest/gtest.h>

#include "task_binding.h"

namespace tandem::plugin {
namespace {

Config config() {
  Config c;
  c.engine_path = "/opt/tandem/libtandem.so";
  c.python_path = "/opt/tandem/python";
  return c;
}

TaskIdentity identity() { return compute_identity({6, 1, 3, {2, 2, 2}}, 3, 1, "node2"); }

TEST(TaskSetup, ExportsHorovodIdentityAndTandemDetails) {
  MapTaskEnv env;
  export_task(config(), identity(), std::string("eth0"), env);
  EXPECT_EQ(env.vars.at("HOROVOD_RANK"), "3");
  EXPECT_EQ(env.vars.at("HOROVOD_SIZE"), "6");
  EXPECT_EQ(env.vars.at("HOROVOD_LOCAL_RANK"), "1");
  EXPECT_EQ(env.vars.at("HOROVOD_LOCAL_SIZE"), "2");
  EXPECT_EQ(env.vars.at("HOROVOD_CROSS_RANK"), "1");
  EXPECT_EQ(env.vars.at("HOROVOD_CROSS_SIZE"), "3");
  EXPECT_EQ(env.vars.at("HOROVOD_HOSTNAME"), "node2");
  EXPECT_EQ(env.vars.at("TANDEM_NODE_ID"), "1");
  EXPECT_EQ(env.vars.at("TANDEM_NNODES"), "3");
  EXPECT_EQ(env.vars.at("TANDEM_LIBRARY"), "/opt/tandem/libtandem.so");
  EXPECT_EQ(env.vars.at("TANDEM_TCP_IFNAME"), "eth0");
  EXPECT_EQ(env.vars.at("LD_PRELOAD"), "/opt/tandem/libtandem-preload.so");
  EXPECT_EQ(env.vars.at("PYTHONPATH"), "/opt/tandem/python");
}

TEST(TaskSetup, KeepsUserPathsAndSkipsUnknownNic) {
  MapTaskEnv env;
  env.vars["LD_PRELOAD"] = "/u/a.so /opt/tandem/libtandem-preload.so";
  env.vars["PYTHONPATH"] = "/u/py";
  export_task(config(), identity(), std::nullopt, env);
  EXPECT_EQ(env.vars.at("LD_PRELOAD"), "/opt/tandem/libtandem-preload.so:/u/a.so");
  EXPECT_EQ(env.vars.at("PYTHONPATH"), "/opt/tandem/python:/u/py");
  EXPECT_EQ(env.vars.count("TANDEM_TCP_IFNAME"), 0u);
}

TEST(TaskSetup, EmptyPythonPathLeavesPythonpathAlone) {
  MapTaskEnv env;
  Config c = config();
  c.python_path = "";
  export_task(c, identity(), std::nullopt, env);
  EXPECT_EQ(env.vars.count("PYTHONPATH"), 0u);
}

TEST(TaskSetup, VerboseLineNamesEverything) {
  MapTaskEnv env;
  env.vars["CUDA_VISIBLE_DEVICES"] = "0,1";
  env.vars["TANDEM_TCP_IFNAME"] = "eth0";
  Config c = config();
  c.binding = "none";  // the planner itself is tested in tests/unit/planner
  const auto binding = bind_task(c, identity(), env);
  EXPECT_EQ(describe_task(identity(), env, "0-3", binding.summary),
            "tandem: rank 3/6 node node2 local_rank 1/2 cross_rank 1/3 gpus 0,1 cpus 0-3 "
            "nic eth0 binding: none (binding=none in plugstack.conf)");
}

}  // namespace
}  // namespace tandem::plugin
