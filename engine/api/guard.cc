#include "api/guard.h"

#include <new>

#include "common/errors.h"

namespace tandem {
namespace {
thread_local std::string last_error;
}

void set_last_error(const std::string& message) { last_error = message; }
void clear_last_error() { last_error.clear(); }
const char* last_error_cstr() { return last_error.c_str(); }

tandem_result_t record(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const NotInitializedError& x) {
    set_last_error(x.what());
    return TANDEM_ERR_NOT_INITIALIZED;
  } catch (const InvalidArgument& x) {
    set_last_error(x.what());
    return TANDEM_ERR_INVALID_ARGUMENT;
  } catch (const BootstrapError& x) {
    set_last_error(x.what());
    return TANDEM_ERR_BOOTSTRAP;
  } catch (const PeerLostError& x) {
    set_last_error(x.what());
    return TANDEM_ERR_PEER_LOST;
  } catch (const TimeoutError& x) {
    set_last_error(x.what());
    return TANDEM_ERR_TIMEOUT;
  } catch (const MismatchError& x) {
    set_last_error(x.what());
    return TANDEM_ERR_MISMATCH;
  } catch (const DuplicateNameError& x) {
    set_last_error(x.what());
    return TANDEM_ERR_DUPLICATE_NAME;
  } catch (const UnsupportedError& x) {
    set_last_error(x.what());
    return TANDEM_ERR_UNSUPPORTED;
  } catch (const AbortedError& x) {
    set_last_error(x.what());
    return TANDEM_ERR_ABORTED;
  } catch (const SystemError& x) {
    set_last_error(x.what());
    return TANDEM_ERR_SYSTEM;
  } catch (const std::bad_alloc&) {
    set_last_error("out of memory");
    return TANDEM_ERR_SYSTEM;
  } catch (const std::exception& x) {
    set_last_error(std::string("internal error: ") + x.what() + " (please report this)");
    return TANDEM_ERR_INTERNAL;
  } catch (...) {
    set_last_error("internal error: unknown exception (please report this)");
    return TANDEM_ERR_INTERNAL;
  }
}

}  // namespace tandem



extern "C" TANDEM_API const char* tandem_last_error(void) { return tandem::last_error_cstr(); }
