// What srun's own command line says about --horovod and --mpi, read before
// srun has parsed it.
//
// Why: srun fixes the step's MPI plugin from SLURM_MPI_TYPE (or --mpi) while
// it parses options, before any SPANK option callback or init_post_opt can
// act. The only SPANK hook that runs earlier is the local slurm_spank_init,
// and it is not told the options. So it reads srun's argv (/proc/self/cmdline)
// and stops where srun stops: at "--" or at the first word that is neither
// an option nor an option's value (the command). To know which words are
// values, it knows which srun 22.05 options take a required argument; an
// unknown long option is taken to have none, which can only make it miss a
// later --horovod. The caller turns such a miss into a clear error at
// init_post_opt (the option callback still sees the option), never into a
// step without PMIx.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tandem::plugin {

struct SrunArgs {
  std::optional<std::string> horovod;  // value of the last --horovod ("on" when bare)
  std::optional<std::string> mpi;      // value of the last --mpi
  // value of the last -K/--kill-on-bad-exit ("1" when bare; -K takes its
  // value only attached: -K0)
  std::optional<std::string> kill_on_bad_exit;
};

// argv[0] is the program name.
SrunArgs scan_srun_args(const std::vector<std::string>& argv);

// Whether srun must be told SLURM_KILL_BAD_EXIT=1 for a step: when the step
// runs with --horovod and the user said nothing about it (neither -K or
// --kill-on-bad-exit on the command line nor SLURM_KILL_BAD_EXIT, given as
// `env`, which may be null). A failed rank then ends the step instead of a
// stopped or cut-off peer holding the allocation (docs/plugin.md, "A failed
// job gives its allocation back").
bool needs_kill_on_bad_exit(bool enabled, const SrunArgs& args, const char* env);

// This process's argv, from /proc/self/cmdline (empty if unreadable).
std::vector<std::string> own_argv();

}  // namespace tandem::plugin
