// The PMIx client calls the bootstrap uses, opened at run time. libtandem has
// no DT_NEEDED on libpmix: inside a user's container the host's libpmix (and
// its libevent, libhwloc, libmunge, built for the host's glibc) is usually
// not visible or not loadable, and a missing dependency of a preloaded
// library stops every program. Where PMIx cannot be opened, the bootstrap
// says why and another one is chosen (from_environment.cc).
#pragma once

#include <pmix.h>

#include <string>

namespace tandem {

struct PmixApi {
  decltype(&PMIx_Init) Init = nullptr;
  decltype(&PMIx_Finalize) Finalize = nullptr;
  decltype(&PMIx_Error_string) Error_string = nullptr;
  decltype(&PMIx_Get) Get = nullptr;
  decltype(&PMIx_Put) Put = nullptr;
  decltype(&PMIx_Commit) Commit = nullptr;
  decltype(&PMIx_Fence) Fence = nullptr;
  decltype(&PMIx_Info_load) Info_load = nullptr;
  decltype(&PMIx_Value_destruct) Value_destruct = nullptr;
  std::string path;  // the file it was opened from
};

// Opens libpmix once per process (TANDEM_PMIX_LIBRARY, the build's libpmix,
// then the loader's search for libpmix.so.2) and keeps it. Throws
// UnsupportedError naming every candidate and why it did not load.
const PmixApi& pmix_api();

}  // namespace tandem
