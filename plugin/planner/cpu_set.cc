#include "cpu_set.h"

#include <algorithm>
#include <charconv>
#include <iterator>

#include "errors.h"

namespace tandem::planner {

namespace {

// Largest CPU number accepted; far above any real node, low enough that a
// typo like "0-99999999" is an error rather than a huge allocation.
constexpr int kMaxCpu = 65535;

int parse_number(std::string_view text, std::string_view whole, std::string_view what) {
  int value = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 0 ||
      value > kMaxCpu) {
    throw PlanError(std::string(what) + ": expected a CPU list like 0-3,8 (numbers 0.." +
                    std::to_string(kMaxCpu) + "), got '" + std::string(whole) + "'");
  }
  return value;
}

}  // namespace

CpuSet::CpuSet(std::vector<int> cpus) : cpus_(std::move(cpus)) {
  std::sort(cpus_.begin(), cpus_.end());
  cpus_.erase(std::unique(cpus_.begin(), cpus_.end()), cpus_.end());
}

CpuSet CpuSet::parse(std::string_view text, std::string_view what) {
  std::vector<int> cpus;
  if (text.empty()) {
    throw PlanError(std::string(what) + ": expected a CPU list like 0-3,8, got an empty value");
  }
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string_view item =
        text.substr(start, comma == std::string_view::npos ? comma : comma - start);
    size_t dash = item.find('-');
    int first = parse_number(item.substr(0, dash), text, what);
    int last =
        dash == std::string_view::npos ? first : parse_number(item.substr(dash + 1), text, what);
    if (last < first) {
      throw PlanError(std::string(what) + ": range '" + std::string(item) +
                      "' runs backwards in '" + std::string(text) + "'");
    }
    for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return CpuSet(std::move(cpus));
}

std::string CpuSet::to_string() const {
  std::string out;
  for (size_t i = 0; i < cpus_.size();) {
    size_t j = i;
    while (j + 1 < cpus_.size() && cpus_[j + 1] == cpus_[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus_[i]);
    if (j > i) out += '-' + std::to_string(cpus_[j]);
    i = j + 1;
  }
  return out;
}

bool CpuSet::contains(int cpu) const { return std::binary_search(cpus_.begin(), cpus_.end(), cpu); }

CpuSet CpuSet::intersect(const CpuSet& other) const {
  std::vector<int> out;
  std::set_intersection(cpus_.begin(), cpus_.end(), other.cpus_.begin(), other.cpus_.end(),
                        std::back_inserter(out));
  return CpuSet(std::move(out));
}

CpuSet CpuSet::unite(const CpuSet& other) const {
  std::vector<int> out;
  std::set_union(cpus_.begin(), cpus_.end(), other.cpus_.begin(), other.cpus_.end(),
                 std::back_inserter(out));
  return CpuSet(std::move(out));
}

}  // namespace tandem::planner
