// Typed errors used inside the engine, and the one table that ties each to
// its result code at the C boundary (tandem.h) and to the exception class a
// binding raises (python/tandem/errors.py builds its classes from this table
// through tandem_result_name / tandem_result_class). Messages are written
// for the user: what was expected, what was found, what to do.
//
// Who uses the table: the C boundary (api/guard.cc record(): exception ->
// code), the runtime (code_of for a failure of its thread, throw_error when
// a handle's code becomes an exception again, lasting for every call after
// a failure), the Communicator (lasting, the same rule) and Python.
#pragma once

#include <exception>
#include <stdexcept>
#include <string>

#include "tandem/tandem.h"

namespace tandem {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class InvalidArgument : public Error {
 public:
  using Error::Error;
};
class NotInitializedError : public Error {
 public:
  using Error::Error;
};
class BootstrapError : public Error {
 public:
  using Error::Error;
};
class PeerLostError : public Error {
 public:
  using Error::Error;
};
class TimeoutError : public Error {
 public:
  using Error::Error;
};
class MismatchError : public Error {
 public:
  using Error::Error;
};
class DuplicateNameError : public Error {
 public:
  using Error::Error;
};
class UnsupportedError : public Error {
 public:
  using Error::Error;
};
class AbortedError : public Error {
 public:
  using Error::Error;
};
class SystemError : public Error {
 public:
  // what: the call that failed and its subject, e.g. "shm_open /tandem-..".
  SystemError(const std::string& what, int err);
  // A failure that has no errno (a device's, gpu/gpu_errors.h).
  explicit SystemError(const std::string& message) : Error(message), code_(0) {}
  int code() const { return code_; }

 private:
  int code_;
};

// One row per tandem_result_t, in code order.
struct ErrorKind {
  tandem_result_t code;
  const char* name;         // "TANDEM_ERR_TIMEOUT": tandem_result_name
  const char* description;  // "a peer did not answer in time": tandem_result_string
  const char* class_name;   // the class bindings raise: "TimeoutError"
  // The call's own arguments are at fault (Horovod raises ValueError for
  // these: Python's classes are also ValueError).
  bool argument_error;
  // A state of the job rather than of one call: after the runtime or a
  // Communicator failed with it, every later call fails with it too. Every
  // other failure fails later calls with TANDEM_ERR_ABORTED and the first
  // failure's message: a later call did not mismatch, and its arguments
  // were not invalid (Python would raise ValueError, and elastic scripts
  // that catch HorovodInternalError would not see the job was broken).
  bool lasting;
  // Whether an exception is of this kind (nullptr: no C++ type, e.g. success).
  bool (*matches)(const std::exception&);
  // Throws this kind's C++ type (AbortedError where there is none).
  void (*raise)(const std::string& message);
};

// nullptr for a value that is not a result code.
const ErrorKind* find_error_kind(int code);
// Every code of tandem_result_t (a bug otherwise).
const ErrorKind& error_kind(tandem_result_t code);

// The code of an exception: its kind's, TANDEM_ERR_SYSTEM for bad_alloc,
// TANDEM_ERR_INTERNAL for anything else (a bug).
tandem_result_t code_of(const std::exception& e);
// Throws the exception type of `code` (not TANDEM_SUCCESS).
[[noreturn]] void throw_error(tandem_result_t code, const std::string& message);
// After a failure with `code`: throws what every later call fails with
// (ErrorKind::lasting).
[[noreturn]] void throw_after_failure(tandem_result_t code, const std::string& message);
// The same for a stored exception: rethrows it when its kind is lasting,
// else throws AbortedError with its message.
[[noreturn]] void rethrow_after_failure(const std::exception_ptr& first);

}  // namespace tandem
