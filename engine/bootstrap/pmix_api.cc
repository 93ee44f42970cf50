#include "bootstrap/pmix_api.h"

#include <mutex>
#include <vector>

#include "bootstrap/env.h"
#include "common/errors.h"
#include "common/shared_library.h"
#include "tandem_config.h"

namespace tandem {

namespace {

PmixApi open_pmix() {
  std::vector<std::string> candidates;
  if (auto explicit_path = env::get("TANDEM_PMIX_LIBRARY")) {
    candidates.push_back(*explicit_path);  // only it: a wrong value must not be papered over
  } else {
    // The libpmix this build was compiled against (Debian keeps it outside
    // the loader's search path, /usr/lib/<triplet>/pmix2/lib), then any
    // libpmix.so.2 the loader finds (an image's own PMIx).
    if (*TANDEM_BUILD_PMIX_LIBRARY != '\0') candidates.push_back(TANDEM_BUILD_PMIX_LIBRARY);
    candidates.push_back("libpmix.so.2");
  }
  const auto lib = SharedLibrary::open_first(
      "libpmix", candidates,
      "set TANDEM_PMIX_LIBRARY to the libpmix.so.2 of the PMIx the launcher uses");
  PmixApi api;
  bind(lib, api.Init, "PMIx_Init");
  bind(lib, api.Finalize, "PMIx_Finalize");
  bind(lib, api.Error_string, "PMIx_Error_string");
  bind(lib, api.Get, "PMIx_Get");
  bind(lib, api.Put, "PMIx_Put");
  bind(lib, api.Commit, "PMIx_Commit");
  bind(lib, api.Fence, "PMIx_Fence");
  bind(lib, api.Info_load, "PMIx_Info_load");
  bind(lib, api.Value_destruct, "PMIx_Value_destruct");
  api.path = lib.path();
  return api;
}

}  // namespace

const PmixApi& pmix_api() {
  // Opened once; a failure is remembered and thrown again on every call, so
  // that each bootstrap attempt reports the same reason.
  static std::once_flag once;
  static PmixApi* api = nullptr;
  static std::string* failure = nullptr;
  std::call_once(once, [] {
    try {
      api = new PmixApi(open_pmix());
    } catch (const Error& e) { failure = new std::string(e.what()); }
  });
  if (api == nullptr) throw UnsupportedError(*failure);
  return *api;
}

}  // namespace tandem
