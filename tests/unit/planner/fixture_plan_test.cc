// Exact plans on the hwloc XML fixtures of tests/fixtures/topologies (see
// generate.py there for each machine's layout). These go through the hwloc
// loader, so they also pin down how GPUs, NICs and switches are found.
#include <gtest/gtest.h>

#include "errors.h"
#include "format.h"
#include "hwloc_loader.h"
#include "planner.h"

namespace tandem::planner {
namespace {

Topology load(const std::string& name) {
  return LoadedTopology::from_xml(std::string(TANDEM_FIXTURES) + "/" + name + ".xml").model();
}

NodePlan plan(const std::string& name, int tasks,
              std::optional<std::vector<int>> gpus = std::nullopt,
              std::optional<CpuSet> cpus = std::nullopt) {
  PlanRequest r;
  r.local_tasks = tasks;
  r.step_gpus = std::move(gpus);
  r.step_cpus = std::move(cpus);
  return plan_node(load(name), r);
}

std::string env(const TaskPlan& task, const std::string& name) {
  for (const EnvVar& v : task.env)
    if (v.name == name) return v.value;
  return "<unset>";
}

// One row per task: "gpus | cpus | numa | nic | CUDA_VISIBLE_DEVICES".
std::vector<std::string> rows(const NodePlan& p) {
  std::vector<std::string> out;
  for (const TaskPlan& t : p.tasks) {
    std::string gpus;
    for (const TaskGpu& g : t.gpus)
      gpus += (gpus.empty() ? "" : ",") + std::to_string(g.slurm_index);
    out.push_back(gpus + " | " + t.cpus.to_string() + " | " + std::to_string(t.numa) + " | " +
                  (t.nic ? t.nic->name() : "-") + " | " + env(t, "CUDA_VISIBLE_DEVICES"));
  }
  return out;
}

TEST(Loader, Dgx8FindsGpusNicsAndSharedSwitches) {
  Topology t = load("dgx8");
  ASSERT_EQ(t.numa.size(), 2u);
  EXPECT_EQ(t.numa[1].cores.size(), 8u);
  EXPECT_EQ(t.numa[1].cores[0].to_string(), "8,24");
  ASSERT_EQ(t.gpus.size(), 8u);
  EXPECT_EQ(t.gpus[0].pci.bus_id, "0000:13:00.0");
  EXPECT_EQ(t.gpus[0].name, "nvml0");
  EXPECT_EQ(t.gpus[7].pci.bus_id, "0000:64:00.0");
  EXPECT_EQ(t.gpus[7].pci.numa, 1);
  ASSERT_EQ(t.nics.size(), 5u);  // eno1 + mlx5_0..3, by bus id
  EXPECT_EQ(t.nics[0].name(), "eno1");
  EXPECT_EQ(t.nics[0].kind, NicKind::Ethernet);
  EXPECT_EQ(t.nics[1].name(), "mlx5_0");
  EXPECT_EQ(t.nics[1].kind, NicKind::InfiniBand);
  EXPECT_EQ(t.nics[1].netdevs, std::vector<std::string>{"ib0"});
  EXPECT_NE(t.gpus[0].pci.switch_id, -1);
  EXPECT_EQ(t.gpus[0].pci.switch_id, t.gpus[1].pci.switch_id);
  EXPECT_EQ(t.gpus[0].pci.switch_id, t.nics[1].pci.switch_id);
  EXPECT_NE(t.gpus[1].pci.switch_id, t.gpus[2].pci.switch_id);
  EXPECT_EQ(t.allowed.to_string(), "0-31");
}

TEST(Loader, PciOnlyGpusAreFoundByVendorAndOrderedByBusId) {
  Topology t = load("pcionly");
  ASSERT_EQ(t.gpus.size(), 4u);  // the ASPEED VGA device is not one
  EXPECT_EQ(t.gpus[0].pci.bus_id, "0000:11:00.0");
  EXPECT_EQ(t.gpus[1].pci.bus_id, "0000:21:00.0");
  EXPECT_EQ(t.gpus[2].pci.bus_id, "0000:91:00.0");
  EXPECT_EQ(t.gpus[0].name, "");
  EXPECT_EQ(t.gpus[2].pci.numa, 1);
}

TEST(Loader, UnreadableAndInvalidFilesAreClearErrors) {
  try {
    LoadedTopology::from_xml("/nonexistent/topo.xml");
    FAIL();
  } catch (const TopologyError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/topo.xml"), std::string::npos) << e.what();
  }
  std::string script = std::string(TANDEM_FIXTURES) + "/generate.py";
  try {
    LoadedTopology::from_xml(script);
    FAIL();
  } catch (const TopologyError& e) {
    EXPECT_NE(std::string(e.what()).find("not a valid hwloc XML"), std::string::npos) << e.what();
  }
}

TEST(FixturePlan, Dgx8OneTaskPerGpuGetsItsSwitchsHca) {
  NodePlan p = plan("dgx8", 8);
  const std::string all = "0,1,2,3,4,5,6,7";
  EXPECT_EQ(rows(p), (std::vector<std::string>{
                         "0 | 0-1,16-17 | 0 | mlx5_0 | " + all,
                         "1 | 2-3,18-19 | 0 | mlx5_0 | " + all,
                         "2 | 4-5,20-21 | 0 | mlx5_1 | " + all,
                         "3 | 6-7,22-23 | 0 | mlx5_1 | " + all,
                         "4 | 8-9,24-25 | 1 | mlx5_2 | " + all,
                         "5 | 10-11,26-27 | 1 | mlx5_2 | " + all,
                         "6 | 12-13,28-29 | 1 | mlx5_3 | " + all,
                         "7 | 14-15,30-31 | 1 | mlx5_3 | " + all,
                     }));
  ASSERT_TRUE(p.nccl_filter);
  EXPECT_EQ(p.nccl_filter->name, "NCCL_IB_HCA");
  EXPECT_EQ(p.nccl_filter->value, "=mlx5_0,mlx5_1,mlx5_2,mlx5_3");
  for (const TaskPlan& t : p.tasks) {
    EXPECT_EQ(env(t, "NCCL_IB_HCA"),
              "=mlx5_0,mlx5_1,mlx5_2,mlx5_3");  // node-wide, same in every task
    EXPECT_EQ(env(t, "CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
    EXPECT_EQ(env(t, "TANDEM_NIC"), t.nic->name());
    EXPECT_EQ(t.gpu_source, Source::Planner);
  }
  EXPECT_EQ(env(p.tasks[5], "TANDEM_TCP_IFNAME"), "ib2");
  EXPECT_EQ(p.tasks[3].gpus[0].bus_id, "0000:24:00.0");
}

TEST(FixturePlan, Dgx8StepWithHalfTheGpusKeepsOnlyThemVisible) {
  NodePlan p = plan("dgx8", 2, std::vector<int>{4, 5, 6, 7});
  // Both tasks sit on socket 1 and split its 8 cores.
  EXPECT_EQ(rows(p), (std::vector<std::string>{
                         "4,5 | 8-11,24-27 | 1 | mlx5_2 | 4,5,6,7",
                         "6,7 | 12-15,28-31 | 1 | mlx5_3 | 4,6,7,5",
                     }));
}

TEST(FixturePlan, Dgx8GpuOnSocketWithoutStepCpusUsesTheOtherSocket) {
  NodePlan p = plan("dgx8", 2, std::vector<int>{0, 4}, CpuSet::parse("0-7,16-23", "test"));
  EXPECT_EQ(rows(p), (std::vector<std::string>{
                         "0 | 0-3,16-19 | 0 | mlx5_0 | 0,4",
                         "4 | 4-7,20-23 | 0 | mlx5_2 | 0,4",
                     }));
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_NE(p.warnings[0].find("task 1"), std::string::npos) << p.warnings[0];
}

TEST(FixturePlan, Quad4FourTasksOneNicPerSocket) {
  NodePlan p = plan("quad4", 4);
  EXPECT_EQ(rows(p), (std::vector<std::string>{
                         "0 | 0-1 | 0 | mlx5_0 | 0,1,2,3",
                         "1 | 2-3 | 0 | mlx5_0 | 0,1,2,3",
                         "2 | 4-5 | 1 | mlx5_1 | 0,1,2,3",
                         "3 | 6-7 | 1 | mlx5_1 | 0,1,2,3",
                     }));
  EXPECT_EQ(p.tasks[0].gpus[0].name, "cuda0");  // seen through CUDA co-processors only
}

TEST(FixturePlan, Quad4ThreeTasksOnFourGpusGroupInsideADomain) {
  NodePlan p = plan("quad4", 3);
  EXPECT_EQ(rows(p), (std::vector<std::string>{
                         "0 | 0-1 | 0 | mlx5_0 | 0,1,2,3",
                         "1 | 2-3 | 0 | mlx5_0 | 0,1,2,3",
                         "2,3 | 4-7 | 1 | mlx5_1 | 0,1,2,3",
                     }));
}

TEST(FixturePlan, Quad4EightTasksShareGpusInBlocksWithOwnGpuAtLocalRankModuloCount) {
  NodePlan p = plan("quad4", 8);
  EXPECT_EQ(rows(p), (std::vector<std::string>{
                         "0 | 0 | 0 | mlx5_0 | 0,1,2,3",
                         "0 | 1 | 0 | mlx5_0 | 1,0,2,3",
                         "1 | 2 | 0 | mlx5_0 | 0,2,1,3",
                         "1 | 3 | 0 | mlx5_0 | 0,2,3,1",
                         "2 | 4 | 1 | mlx5_1 | 2,0,1,3",
                         "2 | 5 | 1 | mlx5_1 | 0,2,1,3",
                         "3 | 6 | 1 | mlx5_1 | 0,1,3,2",
                         "3 | 7 | 1 | mlx5_1 | 0,1,2,3",
                     }));
}

TEST(FixturePlan, PciOnlyGpusWithEthernetOnlyUseASocketFilter) {
  NodePlan p = plan("pcionly", 4);
  EXPECT_EQ(rows(p), (std::vector<std::string>{
                         "0 | 0-1,8-9 | 0 | eth0 | 0,1,2,3",
                         "1 | 2-3,10-11 | 0 | eth0 | 0,1,2,3",
                         "2 | 4-5,12-13 | 1 | eth1 | 0,1,2,3",
                         "3 | 6-7,14-15 | 1 | eth1 | 0,1,2,3",
                     }));
  EXPECT_EQ(p.tasks[1].gpus[0].bus_id, "0000:21:00.0");
  ASSERT_TRUE(p.nccl_filter);
  EXPECT_EQ(p.nccl_filter->name, "NCCL_SOCKET_IFNAME");
  EXPECT_EQ(p.nccl_filter->value, "=eth0,eth1");
}

TEST(FixturePlan, CpuOnlyTasksSpreadOverSocketsWithWholeCores) {
  NodePlan p = plan("cpu2s-smt", 4);
  EXPECT_EQ(rows(p), (std::vector<std::string>{
                         " | 0-1,8-9 | 0 | eth0 | <unset>",
                         " | 2-3,10-11 | 0 | eth0 | <unset>",
                         " | 4-5,12-13 | 1 | eth1 | <unset>",
                         " | 6-7,14-15 | 1 | eth1 | <unset>",
                     }));
  EXPECT_EQ(env(p.tasks[0], "CUDA_DEVICE_ORDER"), "<unset>");
  EXPECT_EQ(p.tasks[0].gpu_source, Source::None);
}

TEST(FixturePlan, CpuOnlyNoSmtSameSplit) {
  NodePlan p = plan("cpu2s-nosmt", 4);
  EXPECT_EQ(rows(p), (std::vector<std::string>{
                         " | 0-1 | 0 | eth0 | <unset>",
                         " | 2-3 | 0 | eth0 | <unset>",
                         " | 4-5 | 1 | eth1 | <unset>",
                         " | 6-7 | 1 | eth1 | <unset>",
                     }));
}

TEST(FixturePlan, TwoTasksOnOneSocketsWorthOfCpus) {
  NodePlan p = plan("cpu2s-smt", 2, std::nullopt, CpuSet::parse("0-3,8-11", "test"));
  EXPECT_EQ(rows(p), (std::vector<std::string>{
                         " | 0-1,8-9 | 0 | eth0 | <unset>",
                         " | 2-3,10-11 | 0 | eth0 | <unset>",
                     }));
}

TEST(FixturePlan, SmtSiblingsAreSplitOnlyWhenTasksOutnumberCores) {
  // 6 tasks per socket, 4 cores of 2 threads: two tasks keep whole cores,
  // four split the other two cores' siblings.
  NodePlan p = plan("cpu2s-smt", 12);
  std::vector<std::string> cpus;
  for (int t = 0; t < 6; ++t) cpus.push_back(p.tasks[t].cpus.to_string());
  EXPECT_EQ(cpus, (std::vector<std::string>{"0,8", "1,9", "2", "10", "3", "11"}));
  // Without SMT the same 6 tasks must share the 4 single-thread cores.
  p = plan("cpu2s-nosmt", 12);
  cpus.clear();
  for (int t = 0; t < 6; ++t) cpus.push_back(p.tasks[t].cpus.to_string());
  EXPECT_EQ(cpus, (std::vector<std::string>{"0", "0", "1", "1", "2", "3"}));
}

TEST(FixturePlan, GpusPerTaskIsAUserBindingThatLeavesCudaVisibleDevicesAlone) {
  Topology t = load("tiny4");
  PlanRequest r;
  r.local_tasks = 4;
  r.step_gpus = std::vector<int>{0, 1, 2, 3};
  r.user.gpus = true;
  NodePlan p = plan_task(t, r, TaskState{2, CpuSet({0, 1}), std::vector<int>{2}});
  const TaskPlan& task = p.tasks[2];
  EXPECT_EQ(task.gpu_source, Source::User);
  EXPECT_EQ(task.gpus[0].bus_id, "0000:42:00.0");
  EXPECT_EQ(env(task, "CUDA_VISIBLE_DEVICES"), "<unset>");
  EXPECT_EQ(task.cpus.to_string(), "1");
  EXPECT_EQ(task.nic->name(), "mlx5_1");
  EXPECT_EQ(describe(task), "gpu=2(0000:42:00.0)[user] cpus=1[planner] numa=1 nic=mlx5_1[planner]");
}

}  // namespace
}  // namespace tandem::planner
