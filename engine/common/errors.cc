#include "common/errors.h"

#include <cstring>
#include <new>

namespace tandem {

SystemError::SystemError(const std::string& what, int err)
    : Error(what + ": " + std::strerror(err)), code_(err) {}

namespace {

template <typename T>
bool is(const std::exception& e) {
  return dynamic_cast<const T*>(&e) != nullptr;
}

template <typename T>
void throw_as(const std::string& message) {
  throw T(message);
}

// The table. Keep it in code order, one row per tandem_result_t; class
// names are CamelCase of the code plus "Error" (Python's, stable: scripts
// catch them by name).
const ErrorKind kKinds[TANDEM_RESULT_COUNT_] = {
    {TANDEM_SUCCESS, "TANDEM_SUCCESS", "success", nullptr, false, false, nullptr,
     throw_as<AbortedError>},
    {TANDEM_ERR_INVALID_ARGUMENT, "TANDEM_ERR_INVALID_ARGUMENT", "invalid argument",
     "InvalidArgumentError", true, false, is<InvalidArgument>, throw_as<InvalidArgument>},
    {TANDEM_ERR_NOT_INITIALIZED, "TANDEM_ERR_NOT_INITIALIZED",
     "tandem is not initialized: call tandem_init() first", "NotInitializedError", false, false,
     is<NotInitializedError>, throw_as<NotInitializedError>},
    {TANDEM_ERR_BOOTSTRAP, "TANDEM_ERR_BOOTSTRAP", "could not join the job (PMIx or rendezvous)",
     "BootstrapError", false, false, is<BootstrapError>, throw_as<BootstrapError>},
    {TANDEM_ERR_PEER_LOST, "TANDEM_ERR_PEER_LOST", "a peer rank was lost", "PeerLostError", false,
     true, is<PeerLostError>, throw_as<PeerLostError>},
    {TANDEM_ERR_TIMEOUT, "TANDEM_ERR_TIMEOUT", "a peer did not answer in time", "TimeoutError",
     false, true, is<TimeoutError>, throw_as<TimeoutError>},
    {TANDEM_ERR_MISMATCH, "TANDEM_ERR_MISMATCH", "ranks disagree on the operation", "MismatchError",
     false, false, is<MismatchError>, throw_as<MismatchError>},
    {TANDEM_ERR_DUPLICATE_NAME, "TANDEM_ERR_DUPLICATE_NAME",
     "a tensor with this name is already in flight", "DuplicateNameError", true, false,
     is<DuplicateNameError>, throw_as<DuplicateNameError>},
    {TANDEM_ERR_UNSUPPORTED, "TANDEM_ERR_UNSUPPORTED", "not supported by this build or machine",
     "UnsupportedError", false, false, is<UnsupportedError>, throw_as<UnsupportedError>},
    {TANDEM_ERR_IN_PROGRESS, "TANDEM_ERR_IN_PROGRESS", "still in progress", "InProgressError",
     false, false, nullptr, throw_as<AbortedError>},
    {TANDEM_ERR_ABORTED, "TANDEM_ERR_ABORTED", "the engine was shut down or aborted",
     "AbortedError", false, true, is<AbortedError>, throw_as<AbortedError>},
    {TANDEM_ERR_SYSTEM, "TANDEM_ERR_SYSTEM", "an operating-system call failed", "SystemError",
     false, false, is<SystemError>, throw_as<SystemError>},
    {TANDEM_ERR_INTERNAL, "TANDEM_ERR_INTERNAL", "internal error (a bug in tandem)",
     "InternalError", false, false, nullptr, throw_as<Error>},
};

}  // namespace

const ErrorKind* find_error_kind(int code) {
  if (code < 0 || code >= TANDEM_RESULT_COUNT_) return nullptr;
  return &kKinds[code];
}

const ErrorKind& error_kind(tandem_result_t code) {
  const ErrorKind* k = find_error_kind(code);
  return k ? *k : kKinds[TANDEM_ERR_INTERNAL];
}

tandem_result_t code_of(const std::exception& e) {
  for (const ErrorKind& k : kKinds)
    if (k.matches && k.matches(e)) return k.code;
  if (is<std::bad_alloc>(e)) return TANDEM_ERR_SYSTEM;
  return TANDEM_ERR_INTERNAL;
}

void throw_error(tandem_result_t code, const std::string& message) {
  error_kind(code).raise(message);
  throw AbortedError(message);  // not reached: every row's raise throws
}

void throw_after_failure(tandem_result_t code, const std::string& message) {
  if (error_kind(code).lasting) throw_error(code, message);
  throw AbortedError(message);
}

void rethrow_after_failure(const std::exception_ptr& first) {
  try {
    std::rethrow_exception(first);
  } catch (const std::exception& e) {
    if (error_kind(code_of(e)).lasting) throw;
    throw AbortedError(e.what());
  }
}

}  // namespace tandem
