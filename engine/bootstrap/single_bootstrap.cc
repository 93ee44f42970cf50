#include "bootstrap/single_bootstrap.h"

#include "bootstrap/identity.h"

namespace tandem {

SingleBootstrap::SingleBootstrap() {
  identity_.node_of_rank = {0};
  identity_.job_id = random_job_id("single");
}

}  // namespace tandem
