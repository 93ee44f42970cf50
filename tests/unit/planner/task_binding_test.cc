// The plugin's binding seam (plugin/task_binding.cc) on the tiny4 fixture:
// what it reads from the task environment, what it writes, what it binds.
#include "task_binding.h"

#include <gtest/gtest.h>
#include <sched.h>

#include "plugin_error.h"

namespace tandem::plugin {
namespace {

const std::string kTiny4 = std::string(TANDEM_FIXTURES) + "/tiny4.xml";

Config tiny4() {
  Config c = default_config();
  c.topology_xml = kTiny4;
  return c;
}

TaskIdentity task(uint32_t local_rank, uint32_t local_size) {
  TaskIdentity id;
  id.local_rank = local_rank;
  id.local_size = local_size;
  id.hostname = "node1";
  return id;
}

// Restores the test process's affinity after bind_task changed it.
class Binding : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(sched_getaffinity(0, sizeof saved_, &saved_), 0); }
  void TearDown() override { sched_setaffinity(0, sizeof saved_, &saved_); }
  static bool have_cpu(int cpu) { return cpu < CPU_SETSIZE && CPU_ISSET(cpu, &online()); }
  static const cpu_set_t& online() {
    static cpu_set_t set = [] {
      cpu_set_t s;
      sched_getaffinity(0, sizeof s, &s);
      return s;
    }();
    return set;
  }
  cpu_set_t saved_;
};

TEST_F(Binding, PlansBindsAndExportsForOneTaskOfFour) {
  if (!have_cpu(1)) GTEST_SKIP() << "needs CPU 1 to apply the tiny4 plan";
  MapTaskEnv env;
  env.vars["SLURM_STEP_GPUS"] = "0,1,2,3";
  env.vars["CUDA_VISIBLE_DEVICES"] = "0,1,2,3";
  env.vars["NCCL_IB_HCA"] = "=mlx5_7";  // the user's own choice wins
  BindingResult r = bind_task(tiny4(), task(2, 4), env);
  EXPECT_EQ(r.summary,
            "binding: gpu=2(0000:42:00.0)[planner] cpus=1[planner] numa=1 nic=mlx5_1[planner]");
  EXPECT_EQ(env.vars["CUDA_VISIBLE_DEVICES"], "0,1,2,3");
  EXPECT_EQ(env.vars["CUDA_DEVICE_ORDER"], "PCI_BUS_ID");
  EXPECT_EQ(env.vars["TANDEM_NIC"], "mlx5_1");
  EXPECT_EQ(env.vars["TANDEM_TCP_IFNAME"], "ib1");
  EXPECT_EQ(env.vars["NCCL_IB_HCA"], "=mlx5_7");
  cpu_set_t now;
  ASSERT_EQ(sched_getaffinity(0, sizeof now, &now), 0);
  EXPECT_EQ(CPU_COUNT(&now), 1);
  EXPECT_TRUE(CPU_ISSET(1, &now));
}

TEST_F(Binding, TwoTasksSeeTheirOwnGpusFirst) {
  MapTaskEnv env;
  env.vars["SLURM_STEP_GPUS"] = "0,1,2,3";
  env.vars["CUDA_VISIBLE_DEVICES"] = "0,1,2,3";
  BindingResult r = bind_task(tiny4(), task(1, 2), env);
  EXPECT_EQ(env.vars["CUDA_VISIBLE_DEVICES"], "0,2,3,1");
  EXPECT_EQ(env.vars["NCCL_IB_HCA"], "=mlx5_0,mlx5_1");
}

TEST_F(Binding, GpusPerTaskWithConstrainedDevicesMapsPositionsToSlurmIndices) {
  MapTaskEnv env;
  env.vars["SLURM_STEP_GPUS"] = "2,3";
  env.vars["SLURM_GPUS_PER_TASK"] = "1";
  env.vars["CUDA_VISIBLE_DEVICES"] = "1";  // position 1 of the step's GPUs: index 3
  BindingResult r = bind_task(tiny4(), task(1, 2), env);
  EXPECT_NE(r.summary.find("gpu=3(0000:43:00.0)[user]"), std::string::npos) << r.summary;
  EXPECT_EQ(env.vars["CUDA_VISIBLE_DEVICES"], "1");
}

TEST_F(Binding, NoGpusIsTheCpuOnlyPath) {
  MapTaskEnv env;
  BindingResult r = bind_task(tiny4(), task(0, 2), env);
  EXPECT_EQ(r.summary.rfind("binding: gpu=none[none] cpus=0[planner]", 0), 0u) << r.summary;
  EXPECT_EQ(env.vars.count("CUDA_VISIBLE_DEVICES"), 0u);
}

TEST_F(Binding, GpusTheTopologyDoesNotShowAreLeftToSlurm) {
  MapTaskEnv env;
  env.vars["SLURM_STEP_GPUS"] = "0,1";
  env.vars["CUDA_VISIBLE_DEVICES"] = "0,1";
  Config c = tiny4();
  c.topology_xml = std::string(TANDEM_FIXTURES) + "/cpu2s-nosmt.xml";
  BindingResult r = bind_task(c, task(0, 2), env);  // CPUs 0-3: CPU 0 exists everywhere
  EXPECT_NE(r.summary.find("GPU binding skipped"), std::string::npos) << r.summary;
  EXPECT_EQ(env.vars["CUDA_VISIBLE_DEVICES"], "0,1");
  EXPECT_EQ(env.vars.count("CUDA_DEVICE_ORDER"), 0u);
}

TEST_F(Binding, ExplicitUserCpuMapIsKept) {
  MapTaskEnv env;
  env.vars["SLURM_CPU_BIND_TYPE"] = "map_cpu:";
  BindingResult r = bind_task(tiny4(), task(0, 2), env);
  EXPECT_NE(r.summary.find("[user]"), std::string::npos) << r.summary;
  cpu_set_t now;
  ASSERT_EQ(sched_getaffinity(0, sizeof now, &now), 0);
  EXPECT_TRUE(CPU_EQUAL(&now, &saved_));
}

TEST_F(Binding, ErrorsAreOneMessage) {
  MapTaskEnv env;
  Config c = tiny4();
  c.topology_xml = "/nonexistent/topo.xml";
  try {
    bind_task(c, task(0, 1), env);
    FAIL();
  } catch (const PluginError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/topo.xml"), std::string::npos) << e.what();
  }
  env.vars["SLURM_STEP_GPUS"] = "0,x";
  EXPECT_THROW(bind_task(tiny4(), task(0, 1), env), PluginError);
  env.vars["SLURM_STEP_GPUS"] = "9";
  EXPECT_THROW(bind_task(tiny4(), task(0, 1), env), PluginError);
}

TEST(BindingConfig, PolicyKeysGoThroughThePlugstackTable) {
  Config c = parse_config({"visible=own", "membind=on", "nics=mlx5_1", "binding=none"});
  EXPECT_EQ(c.policy.visible, tandem::planner::Visible::Own);
  EXPECT_TRUE(c.policy.membind);
  EXPECT_EQ(c.policy.nics, std::vector<std::string>{"mlx5_1"});
  EXPECT_EQ(c.binding, "none");
  try {
    parse_config({"visible=some"});
    FAIL();
  } catch (const PluginError& e) {
    EXPECT_NE(std::string(e.what()).find("'visible'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'some'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tandem::plugin
