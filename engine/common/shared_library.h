// A shared library opened at run time with dlopen. libtandem never links
// against CUDA, NCCL or PMIx: it is loaded into every task of a step, in
// images that hold none of them, and a DT_NEEDED on libcudart or libpmix
// would stop it from loading at all (every program of a container exited
// 127 over a missing libpmix.so.2). The GPU path and the PMIx bootstrap open
// the libraries here instead, and a failure becomes a reason string, not a
// crash.
#pragma once

#include <string>
#include <vector>

namespace tandem {

class SharedLibrary {
 public:
  // Opens the first candidate that loads (a soname searched the usual way or
  // a path). Throws UnsupportedError listing every candidate with dlerror()'s
  // answer, so "not found" and "found but broken" can be told apart.
  static SharedLibrary open_first(const std::string& what,
                                  const std::vector<std::string>& candidates,
                                  const std::string& hint);

  // Throws UnsupportedError naming the library and the symbol: a library
  // without the symbol is too old or is not the library it claims to be.
  void* symbol(const char* name) const;
  // nullptr when absent, for entry points only newer versions have.
  void* optional_symbol(const char* name) const;

  const std::string& name() const { return name_; }  // the candidate that loaded
  std::string path() const;                          // the file it resolved to

 private:
  SharedLibrary(void* handle, std::string what, std::string name)
      : handle_(handle), what_(std::move(what)), name_(std::move(name)) {}
  // Never dlclose()d: libnccl and libpmix start threads (the bootstrap root
  // listener of ncclGetUniqueId, proxies, PMIx's progress thread) that
  // would run on unmapped code. A handle lives as long as the process,
  // which is how the libraries expect it.
  void* handle_;
  std::string what_;
  std::string name_;
};

// Typed lookup: the table's member type comes from the vendor header, so a
// signature mismatch with the header is a compile error, not a crash.
template <typename Fn>
void bind(const SharedLibrary& lib, Fn*& slot, const char* name) {
  slot = reinterpret_cast<Fn*>(lib.symbol(name));
}
template <typename Fn>
void bind_optional(const SharedLibrary& lib, Fn*& slot, const char* name) {
  slot = reinterpret_cast<Fn*>(lib.optional_symbol(name));
}

}  // namespace tandem
