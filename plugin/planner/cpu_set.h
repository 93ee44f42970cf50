// A set of logical CPUs (OS indices, as in /proc/self/status Cpus_allowed_list
// and Slurm's map_cpu). Kept sorted and unique; small (a node has at most a
// few thousand CPUs), so a sorted vector beats a bitmap for readability.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tandem::planner {

class CpuSet {
 public:
  CpuSet() = default;
  explicit CpuSet(std::vector<int> cpus);

  // Parses the Linux list format "0-3,8,10-11". Throws PlanError naming
  // `what` (e.g. "--cpus") and the bad text.
  static CpuSet parse(std::string_view text, std::string_view what);

  // "0-3,8,10-11"; "" for the empty set.
  std::string to_string() const;

  bool empty() const { return cpus_.empty(); }
  size_t size() const { return cpus_.size(); }
  bool contains(int cpu) const;
  const std::vector<int>& cpus() const { return cpus_; }

  CpuSet intersect(const CpuSet& other) const;
  CpuSet unite(const CpuSet& other) const;
  bool operator==(const CpuSet& other) const { return cpus_ == other.cpus_; }
  bool operator!=(const CpuSet& other) const { return cpus_ != other.cpus_; }

 private:
  std::vector<int> cpus_;
};

}  // namespace tandem::planner
