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

}  // namespace
}  // namespace tandem::plugin
