// Result codes and version: the part of the C API that needs no engine state.
#include "tandem/tandem.h"

#include "tandem_config.h"

extern "C" {

TANDEM_API const char* tandem_result_name(int result) {
  // One table, read by bindings through this call: no copies to keep in sync.
  static const char* const names[TANDEM_RESULT_COUNT_] = {
      "TANDEM_SUCCESS",           "TANDEM_ERR_INVALID_ARGUMENT", "TANDEM_ERR_NOT_INITIALIZED",
      "TANDEM_ERR_BOOTSTRAP",     "TANDEM_ERR_PEER_LOST",        "TANDEM_ERR_TIMEOUT",
      "TANDEM_ERR_MISMATCH",      "TANDEM_ERR_DUPLICATE_NAME",   "TANDEM_ERR_UNSUPPORTED",
      "TANDEM_ERR_IN_PROGRESS",   "TANDEM_ERR_ABORTED",          "TANDEM_ERR_SYSTEM",
      "TANDEM_ERR_INTERNAL"};
  if (result < 0 || result >= TANDEM_RESULT_COUNT_) return nullptr;
  return names[result];
}

TANDEM_API const char* tandem_result_string(tandem_result_t result) {
  switch (result) {
    case TANDEM_SUCCESS: return "success";
    case TANDEM_ERR_INVALID_ARGUMENT: return "invalid argument";
    case TANDEM_ERR_NOT_INITIALIZED: return "tandem is not initialized: call tandem_init() first";
    case TANDEM_ERR_BOOTSTRAP: return "could not join the job (PMIx or rendezvous)";
    case TANDEM_ERR_PEER_LOST: return "a peer rank was lost";
    case TANDEM_ERR_TIMEOUT: return "a peer did not answer in time";
    case TANDEM_ERR_MISMATCH: return "ranks disagree on the operation";
    case TANDEM_ERR_DUPLICATE_NAME: return "a tensor with this name is already in flight";
    case TANDEM_ERR_UNSUPPORTED: return "not supported by this build or machine";
    case TANDEM_ERR_IN_PROGRESS: return "still in progress";
    case TANDEM_ERR_ABORTED: return "the engine was shut down or aborted";
    case TANDEM_ERR_SYSTEM: return "an operating-system call failed";
    case TANDEM_ERR_INTERNAL: return "internal error (a bug in tandem)";
    default: return "unknown result code";
  }
}

TANDEM_API const char* tandem_version(void) { return TANDEM_VERSION; }

}  // extern "C"
