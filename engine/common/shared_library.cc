#include "common/shared_library.h"

#include <dlfcn.h>
#include <link.h>

#include "common/errors.h"

namespace tandem {

SharedLibrary SharedLibrary::open_first(const std::string& what,
                                        const std::vector<std::string>& candidates,
                                        const std::string& hint) {
  std::string tried;
  for (const auto& candidate : candidates) {
    dlerror();
    // RTLD_LOCAL: the symbols stay out of the global namespace, so a
    // framework that brings its own copy (torch's libnccl, an image's
    // libpmix) is not disturbed.
    void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) return SharedLibrary(handle, what, candidate);
    const char* err = dlerror();
    tried += (tried.empty() ? "" : "; ") + candidate + ": " + (err ? err : "unknown dlopen error");
  }
  throw UnsupportedError(what + " not found (tried " + tried + "); " + hint);
}

void* SharedLibrary::optional_symbol(const char* name) const {
  dlerror();
  return dlsym(handle_, name);
}

void* SharedLibrary::symbol(const char* name) const {
  void* sym = optional_symbol(name);
  if (sym == nullptr)
    throw UnsupportedError(what_ + " at " + path() + " has no symbol " + name +
                           ": it is too old or not the expected library");
  return sym;
}

std::string SharedLibrary::path() const {
  struct link_map* map = nullptr;
  if (dlinfo(handle_, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      map->l_name[0] != '\0')
    return map->l_name;
  return name_;
}

}  // namespace tandem
