// The planner on topology models built in the test: the policy's rules one
// at a time, without hwloc.
#include <gtest/gtest.h>

#include "errors.h"
#include "planner.h"

namespace tandem::planner {
namespace {

// `domains` NUMA domains, one per package, each with `cores` cores of `smt`
// threads numbered like Linux (first threads of all cores, then the second).
Topology machine(int domains, int cores, int smt) {
  Topology t;
  t.source = "test model";
  int total = domains * cores;
  for (int d = 0; d < domains; ++d) {
    NumaDomain numa;
    numa.os_index = d;
    numa.package = d;
    for (int c = d * cores; c < (d + 1) * cores; ++c) {
      std::vector<int> threads;
      for (int s = 0; s < smt; ++s) threads.push_back(c + s * total);
      numa.cores.push_back(CpuSet(threads));
    }
    t.numa.push_back(numa);
  }
  for (const NumaDomain& d : t.numa)
    for (const CpuSet& c : d.cores) t.allowed = t.allowed.unite(c);
  return t;
}

PciLocation at(const std::string& bus, int numa, long sw = -1) { return {bus, numa, numa, sw}; }

void add_gpu(Topology& t, const std::string& bus, int numa, long sw = -1) {
  t.gpus.push_back({at(bus, numa, sw), ""});
}

void add_nic(Topology& t, const std::string& bus, int numa, const std::string& rdma,
             const std::string& netdev, long sw = -1) {
  Nic n;
  n.pci = at(bus, numa, sw);
  n.rdma = rdma;
  if (!netdev.empty()) n.netdevs = {netdev};
  n.kind = rdma.empty() ? NicKind::Ethernet : NicKind::InfiniBand;
  t.nics.push_back(n);
}

std::string env(const TaskPlan& task, const std::string& name) {
  for (const EnvVar& v : task.env)
    if (v.name == name) return v.value;
  return "<unset>";
}

TEST(ModelPlan, MoreTasksThanThreadsShareThreadsInBlocks) {
  Topology t = machine(1, 2, 1);  // CPUs 0,1
  PlanRequest r;
  r.local_tasks = 5;
  NodePlan plan = plan_node(t, r);
  std::vector<std::string> cpus;
  for (const TaskPlan& task : plan.tasks) cpus.push_back(task.cpus.to_string());
  EXPECT_EQ(cpus, (std::vector<std::string>{"0", "0", "0", "1", "1"}));
}

TEST(ModelPlan, GpuDomainWithoutUsableCpusFallsBackToSamePackageThenNearest) {
  Topology t = machine(4, 2, 1);  // domains 0..3, CPUs 0-7, packages = domains
  t.numa[1].package = 0;          // domains 0 and 1 share package 0
  add_gpu(t, "0000:01:00.0", 0);
  PlanRequest r;
  r.step_cpus = CpuSet({2, 3, 6, 7});  // domains 1 and 3 only
  NodePlan plan = plan_node(t, r);
  EXPECT_EQ(plan.tasks[0].numa, 1);  // same package beats being adjacent
  EXPECT_EQ(plan.tasks[0].cpus.to_string(), "2-3");
  ASSERT_EQ(plan.warnings.size(), 1u);
  EXPECT_NE(plan.warnings[0].find("NUMA domain 0"), std::string::npos) << plan.warnings[0];
}

TEST(ModelPlan, NoUsableCpuIsAnErrorThatNamesThem) {
  Topology t = machine(1, 2, 1);
  PlanRequest r;
  r.step_cpus = CpuSet({40, 41});
  try {
    plan_node(t, r);
    FAIL();
  } catch (const PlanError& e) {
    EXPECT_NE(std::string(e.what()).find("40-41"), std::string::npos) << e.what();
  }
}

TEST(ModelPlan, GpuIndexBeyondTheNodeIsAnError) {
  Topology t = machine(1, 2, 1);
  add_gpu(t, "0000:01:00.0", 0);
  PlanRequest r;
  r.step_gpus = std::vector<int>{0, 3};
  try {
    plan_node(t, r);
    FAIL();
  } catch (const PlanError& e) {
    EXPECT_NE(std::string(e.what()).find("GPU index 3"), std::string::npos) << e.what();
  }
  r.step_gpus = std::vector<int>{0, 0};
  EXPECT_THROW(plan_node(t, r), PlanError);
  r.step_gpus = std::vector<int>{0};
  r.local_tasks = 0;
  EXPECT_THROW(plan_node(t, r), PlanError);
}

TEST(ModelPlan, RdmaBeatsCloserEthernetAndTiesAreTakenInTurn) {
  Topology t = machine(2, 4, 1);
  add_gpu(t, "0000:01:00.0", 0, 7);
  add_gpu(t, "0000:02:00.0", 0, 8);
  add_nic(t, "0000:03:00.0", 0, "", "eth0", 7);  // same switch as GPU 0, but Ethernet
  add_nic(t, "0000:81:00.0", 1, "mlx5_0", "ib0");
  add_nic(t, "0000:82:00.0", 1, "mlx5_1", "ib1");
  PlanRequest r;
  r.local_tasks = 2;
  NodePlan plan = plan_node(t, r);
  EXPECT_EQ(plan.tasks[0].nic->name(), "mlx5_0");
  EXPECT_EQ(plan.tasks[1].nic->name(), "mlx5_1");
  EXPECT_EQ(plan.nccl_filter->name, "NCCL_IB_HCA");
  EXPECT_EQ(plan.nccl_filter->value, "=mlx5_0,mlx5_1");
  // With the HCAs filtered out, the same-switch Ethernet port wins.
  r.policy.nics = {"eth0"};
  plan = plan_node(t, r);
  EXPECT_EQ(plan.tasks[0].nic->name(), "eth0");
  EXPECT_EQ(plan.nccl_filter->name, "NCCL_SOCKET_IFNAME");
  EXPECT_EQ(plan.nccl_filter->value, "=eth0");
}

TEST(ModelPlan, VerbsOnlyNicStillGivesTcpTheClosestInterface) {
  Topology t = machine(2, 2, 1);
  add_nic(t, "0000:01:00.0", 0, "efa_0", "");
  add_nic(t, "0000:81:00.0", 1, "", "eth1");
  add_nic(t, "0000:02:00.0", 0, "", "eth0");
  PlanRequest r;
  NodePlan plan = plan_node(t, r);
  EXPECT_EQ(plan.tasks[0].nic->name(), "efa_0");
  EXPECT_EQ(plan.tasks[0].ifname, "eth0");
}

TEST(ModelPlan, UnmatchedNicFilterWarnsAndGivesNoNic) {
  Topology t = machine(1, 2, 1);
  add_nic(t, "0000:01:00.0", 0, "", "eth0");
  PlanRequest r;
  r.policy.nics = {"mlx5_9"};
  NodePlan plan = plan_node(t, r);
  EXPECT_FALSE(plan.tasks[0].nic.has_value());
  EXPECT_FALSE(plan.nccl_filter.has_value());
  ASSERT_EQ(plan.warnings.size(), 1u);
  EXPECT_NE(plan.warnings[0].find("mlx5_9"), std::string::npos);
}

TEST(ModelPlan, PolicyNoneBindsNothing) {
  Topology t = machine(1, 2, 1);
  add_gpu(t, "0000:01:00.0", 0);
  PlanRequest r;
  r.local_tasks = 2;
  r.policy.kind = PolicyKind::None;
  NodePlan plan = plan_node(t, r);
  for (const TaskPlan& task : plan.tasks) {
    EXPECT_TRUE(task.gpus.empty());
    EXPECT_TRUE(task.cpus.empty());
    EXPECT_TRUE(task.env.empty());
    EXPECT_EQ(task.cpu_source, Source::None);
  }
}

TEST(ModelPlan, VisibleOwnShowsOnlyTheTasksGpusWithSlurmTokens) {
  Topology t = machine(1, 4, 1);
  for (int g = 0; g < 4; ++g) add_gpu(t, "0000:0" + std::to_string(g + 1) + ":00.0", 0);
  PlanRequest r;
  r.local_tasks = 2;
  r.step_gpus = std::vector<int>{2, 3};
  r.cuda_ids = {"0", "1"};  // cgroup-constrained step: Slurm renumbers from 0
  r.policy.visible = Visible::Own;
  NodePlan plan = plan_node(t, r);
  EXPECT_EQ(env(plan.tasks[0], "CUDA_VISIBLE_DEVICES"), "0");
  EXPECT_EQ(env(plan.tasks[1], "CUDA_VISIBLE_DEVICES"), "1");
  EXPECT_EQ(plan.tasks[1].gpus[0].slurm_index, 3);
  r.policy.visible = Visible::All;
  plan = plan_node(t, r);
  EXPECT_EQ(env(plan.tasks[0], "CUDA_VISIBLE_DEVICES"), "0,1");  // Slurm's tokens, not indices 2,3
  EXPECT_EQ(env(plan.tasks[1], "CUDA_VISIBLE_DEVICES"), "0,1");
}

TEST(ModelPlan, MembindFollowsTheTasksDomain) {
  Topology t = machine(2, 2, 1);
  PlanRequest r;
  r.local_tasks = 2;
  r.policy.membind = true;
  NodePlan plan = plan_node(t, r);
  EXPECT_TRUE(plan.tasks[1].membind);
  EXPECT_EQ(plan.tasks[1].numa, 1);
  EXPECT_EQ(plan.tasks[1].cpus.to_string(), "2-3");
}

TEST(ModelPlan, UserCpuBindingIsKeptForTheTask) {
  Topology t = machine(2, 2, 1);
  PlanRequest r;
  r.local_tasks = 2;
  r.user.cpus = true;
  r.policy.membind = true;
  TaskState self{1, CpuSet({0}), std::nullopt};
  NodePlan plan = plan_task(t, r, self);
  EXPECT_EQ(plan.tasks[1].cpus.to_string(), "0");
  EXPECT_EQ(plan.tasks[1].cpu_source, Source::User);
  EXPECT_FALSE(plan.tasks[1].membind);
}

TEST(ModelPlan, UserGpuBindingKeepsSlurmsDevicesAndPlansCpusAroundThem) {
  Topology t = machine(2, 2, 1);
  add_gpu(t, "0000:01:00.0", 0);
  add_gpu(t, "0000:81:00.0", 1);
  PlanRequest r;
  r.local_tasks = 2;
  r.step_gpus = std::vector<int>{0, 1};
  r.user.gpus = true;
  // Task 0 was given the GPU on domain 1 (e.g. --gpu-bind=map_gpu:1,0).
  TaskState self{0, CpuSet({0, 1, 2, 3}), std::vector<int>{1}};
  NodePlan plan = plan_task(t, r, self);
  const TaskPlan& task = plan.tasks[0];
  EXPECT_EQ(task.gpu_source, Source::User);
  EXPECT_EQ(task.gpus[0].slurm_index, 1);
  EXPECT_EQ(env(task, "CUDA_VISIBLE_DEVICES"), "<unset>");
  EXPECT_EQ(task.numa, 1);
  EXPECT_EQ(task.cpu_source, Source::Planner);
  // Task 1 is assumed to hold GPU 1 too (Slurm's per-task layout): they share domain 1.
  EXPECT_EQ(task.cpus.to_string(), "2");
}

}  // namespace
}  // namespace tandem::planner
