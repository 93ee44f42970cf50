#include "srun_args.h"

#include <gtest/gtest.h>

namespace tandem::plugin {
namespace {

SrunArgs scan(std::vector<std::string> args) {
  args.insert(args.begin(), "srun");
  return scan_srun_args(args);
}

TEST(SrunArgs, FindsHorovodInItsForms) {
  EXPECT_EQ(scan({"--horovod", "python", "x.py"}).horovod, "on");
  EXPECT_EQ(scan({"-N", "2", "--horovod=verbose", "hostname"}).horovod, "verbose");
  EXPECT_EQ(scan({"--horovod=on", "--horovod=off", "true"}).horovod, "off");
  EXPECT_FALSE(scan({"-N2", "true"}).horovod);
}

TEST(SrunArgs, SkipsOptionValues) {
  EXPECT_EQ(scan({"-N", "3", "-n", "6", "--nodes", "3", "--horovod", "true"}).horovod, "on");
  EXPECT_EQ(scan({"-lN", "3", "--horovod", "true"}).horovod, "on");
  EXPECT_EQ(scan({"-N3", "-l", "--horovod", "true"}).horovod, "on");
  EXPECT_EQ(scan({"-m", "cyclic", "--mpi", "pmi2", "--horovod", "true"}).mpi, "pmi2");
}

TEST(SrunArgs, StopsAtTheCommand) {
  EXPECT_FALSE(scan({"-N", "2", "python", "train.py", "--horovod=on"}).horovod);
  EXPECT_FALSE(scan({"--", "--horovod=on"}).horovod);
  EXPECT_FALSE(scan({"python", "--mpi=pmi2"}).mpi);
}

TEST(SrunArgs, ReadsMpi) {
  EXPECT_EQ(scan({"--mpi=pmix_v4", "true"}).mpi, "pmix_v4");
  EXPECT_FALSE(scan({"true"}).mpi);
}

TEST(SrunArgs, ReadsKillOnBadExitInItsForms) {
  EXPECT_EQ(scan({"-K", "true"}).kill_on_bad_exit, "1");
  EXPECT_EQ(scan({"-K0", "true"}).kill_on_bad_exit, "0");
  EXPECT_EQ(scan({"-lK0", "true"}).kill_on_bad_exit, "0");
  EXPECT_EQ(scan({"--kill-on-bad-exit", "true"}).kill_on_bad_exit, "1");
  EXPECT_EQ(scan({"--kill-on-bad-exit=0", "--horovod", "true"}).kill_on_bad_exit, "0");
  EXPECT_EQ(scan({"-N", "2", "--kill-on-bad-exit=1", "true"}).kill_on_bad_exit, "1");
  // -K takes no separate value: "0" here is the command.
  EXPECT_EQ(scan({"-K", "0"}).kill_on_bad_exit, "1");
  EXPECT_FALSE(scan({"-N", "2", "true", "-K0"}).kill_on_bad_exit);
  EXPECT_FALSE(scan({"--horovod", "true"}).kill_on_bad_exit);
  // The value of an option is not an option: "-J -K0" names the job "-K0".
  EXPECT_FALSE(scan({"-J", "-K0", "true"}).kill_on_bad_exit);
}

TEST(SrunArgs, KillOnBadExitOnlyForHorovodStepsTheUserSaidNothingAbout) {
  EXPECT_TRUE(needs_kill_on_bad_exit(true, scan({"--horovod", "true"}), nullptr));
  EXPECT_FALSE(needs_kill_on_bad_exit(false, scan({"true"}), nullptr));
  EXPECT_FALSE(
      needs_kill_on_bad_exit(true, scan({"--kill-on-bad-exit=0", "--horovod", "true"}), nullptr));
  EXPECT_FALSE(needs_kill_on_bad_exit(true, scan({"-K0", "--horovod", "true"}), nullptr));
  EXPECT_FALSE(needs_kill_on_bad_exit(true, scan({"-K", "--horovod", "true"}), nullptr));
  EXPECT_FALSE(needs_kill_on_bad_exit(true, scan({"--horovod", "true"}), "0"));
  EXPECT_FALSE(needs_kill_on_bad_exit(true, scan({"--horovod", "true"}), "1"));
}

}  // namespace
}  // namespace tandem::plugin
