#include <cstring>

#include "collectives/collectives.h"

namespace tandem {

void alltoallv(Transport& t, const void* send, const std::vector<size_t>& send_bytes, void* recv,
               const std::vector<size_t>& recv_bytes) {
  const int n = t.size(), me = t.rank();
  std::vector<size_t> sat(n, 0), rat(n, 0);
  for (int j = 1; j < n; ++j) {
    sat[j] = sat[j - 1] + send_bytes[j - 1];
    rat[j] = rat[j - 1] + recv_bytes[j - 1];
  }
  const char* in = static_cast<const char*>(send);
  char* out = static_cast<char*>(recv);
  if (send_bytes[me]) std::memmove(out + rat[me], in + sat[me], send_bytes[me]);
  for (int k = 1; k < n; ++k) {
    const int to = (me + k) % n, from = (me - k + n) % n;
    t.sendrecv(to, in + sat[to], send_bytes[to], from, out + rat[from], recv_bytes[from]);
  }
}

}  // namespace tandem
