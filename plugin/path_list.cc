#include "path_list.h"

#include <vector>

namespace tandem::plugin {

std::string prepend_unique(std::string_view entry, std::string_view list,
                           std::string_view separators) {
  std::vector<std::string_view> kept;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find_first_of(separators, start);
    if (end == std::string_view::npos) end = list.size();
    std::string_view item = list.substr(start, end - start);
    if (!item.empty() && item != entry) {
      bool seen = false;
      for (auto k : kept) seen = seen || (k == item);
      if (!seen) kept.push_back(item);
    }
    start = end + 1;
  }
  std::string out(entry);
  for (auto k : kept) {
    out += ':';
    out += k;
  }
  return out;
}

}  // namespace tandem::plugin
