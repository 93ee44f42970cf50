#include "collectives/partners.h"

#include <algorithm>

#include "collectives/steps.h"

namespace tandem {

std::vector<int> algorithm_partners(int me, int n) {
  std::vector<int> out;
  if (n <= 1) return out;
  for (int d = 1; d < n; d <<= 1) {
    out.push_back((me + d) % n);
    out.push_back((me - d % n + n) % n);
  }
  const steps::Fold f(n, me);
  if (f.paired(me)) out.push_back(f.idle ? me + 1 : me - 1);
  if (!f.idle)
    for (int m = 1; m < f.p; m <<= 1) out.push_back(f.rank_of(f.index ^ m));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  out.erase(std::remove(out.begin(), out.end(), me), out.end());
  return out;
}

}  // namespace tandem
