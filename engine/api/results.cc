// Result codes and version: the part of the C API that needs no engine state.
// Names, descriptions and class names come from the one table
// (common/errors.h), read by bindings through these calls: no copies to keep
// in sync.
#include "common/errors.h"
#include "tandem/tandem.h"
#include "tandem_config.h"

extern "C" {

TANDEM_API const char* tandem_result_name(int result) {
  const tandem::ErrorKind* k = tandem::find_error_kind(result);
  return k ? k->name : nullptr;
}

TANDEM_API const char* tandem_result_string(tandem_result_t result) {
  const tandem::ErrorKind* k = tandem::find_error_kind(result);
  return k ? k->description : "unknown result code";
}

TANDEM_API const char* tandem_result_class(int result) {
  const tandem::ErrorKind* k = tandem::find_error_kind(result);
  return k ? k->class_name : nullptr;
}

TANDEM_API int tandem_result_is_argument_error(int result) {
  const tandem::ErrorKind* k = tandem::find_error_kind(result);
  return k && k->argument_error ? 1 : 0;
}

TANDEM_API const char* tandem_version(void) { return TANDEM_VERSION; }

}  // extern "C"
