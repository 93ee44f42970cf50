#include "api/state.h"

namespace tandem::api {

State state;

}  // namespace tandem::api
