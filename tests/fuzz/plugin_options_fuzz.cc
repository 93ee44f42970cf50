// What the Slurm plugin parses from outside the engine (plugin/): its
// plugstack.conf arguments, the user's --horovod value, srun's own command
// line, Slurm's compressed task counts and the elastic service's address
// file. The input is one word per line. Each parser answers a value, or a
// PluginError naming the word, or nothing (the optional ones).
#include <string>
#include <vector>

#include "config.h"
#include "elastic_job.h"
#include "fuzz_target.h"
#include "identity.h"
#include "mode.h"
#include "plugin_error.h"
#include "srun_args.h"

using namespace tandem::plugin;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> words;
  for (size_t start = 0; start <= text.size();) {
    const size_t end = std::min(text.find('\n', start), text.size());
    words.push_back(text.substr(start, end - start));
    start = end + 1;
  }

  try {
    (void)parse_config(words);
  } catch (const PluginError&) {}
  std::vector<std::string> argv{"srun"};
  argv.insert(argv.end(), words.begin(), words.end());
  (void)scan_srun_args(argv);

  for (const std::string& w : words) {
    (void)parse_mode(w);
    try {
      (void)parse_tasks_per_node(w);
    } catch (const PluginError&) {}
  }
  if (auto a = parse_service_address(text)) {
    auto again = parse_service_address(format_service_address(*a));
    if (!again || again->host != a->host || again->port != a->port || again->token != a->token)
      fuzz_fail("an elastic service address written again reads differently");
  }
  return 0;
}
