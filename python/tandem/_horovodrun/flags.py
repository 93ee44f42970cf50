"""Every flag of Horovod 0.28.1's horovodrun, honoured or refused.

FLAGS is the one table: each row is one Horovod option (its spellings, the
argparse destination Horovod gives it, how it takes a value) and either what
Tandem does with it or, for a refused one, the one message that names the
flag and says what to do instead. A flag is never accepted and ignored:
where Tandem's behaviour already is the flag's meaning (``--hierarchical-
allreduce``: its allreduce always is) the row says so, and ``--verbose``
prints it. tests/python/test_core_horovodrun_flags.py reads Horovod's own
parser from a checkout and checks that every option it declares is a row
here, and that each refused one stops with its message.
"""

import argparse

# How a row takes its value on the command line.
STORE = "store"      # one value, of the row's type
TRUE = "true"        # a switch that sets its destination to True
FALSE = "false"      # a switch that sets it to False
COUNT = "count"      # the -v/--version and -cb/--check-build actions


class Flag:
    """One option of Horovod's parser.

    honoured: what Tandem does with it (None for a refused row);
    refused: the message when it is given (None for an honoured row)."""

    def __init__(self, options, dest, kind, honoured=None, refused=None, type=str,  # noqa: A002 - argparse's name
                 nargs=None, choices=None):
        assert (honoured is None) != (refused is None), options
        self.options, self.dest, self.kind = tuple(options), dest, kind
        self.honoured, self.refused = honoured, refused
        self.type, self.nargs, self.choices = type, nargs, choices

    @property
    def name(self):
        """The spelling messages use: the long one when there is one."""
        longs = [o for o in self.options if o.startswith("--")]
        return (longs or list(self.options))[0]


_WITH_AUTOTUNE = " (with --autotune)"
_ELASTIC = ("Tandem's elastic jobs (docs/elastic.md) take their hosts from the allocation and "
            "grow with later steps (srun --jobid=J --overlap --horovod=elastic), not from ")
_LOG_LEVELS = ["TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "FATAL"]

FLAGS = [
    Flag(["-v", "--version"], "version", COUNT, honoured="prints the Horovod version Tandem "
         "provides"),
    Flag(["-np", "--num-proc"], "num_proc", STORE, type=int, honoured="the number of ranks "
         "(inside an allocation, default: SLURM_NTASKS)"),
    Flag(["-cb", "--check-build"], "check_build", COUNT, honoured="what this install has, in "
         "Horovod's layout"),
    Flag(["--disable-cache"], "disable_cache", TRUE, honoured="accepted: Tandem keeps no cache "
         "of host checks, so every run checks afresh"),
    Flag(["--start-timeout"], "start_timeout", STORE, type=int, honoured="TANDEM_BOOTSTRAP_TIMEOUT"
         " (seconds for every rank to join; default HOROVOD_START_TIMEOUT, else the engine's)"),
    Flag(["--network-interfaces"], "nics", STORE, honoured="TANDEM_TCP_IFNAME and "
         "NCCL_SOCKET_IFNAME (one interface: Tandem's TCP transport listens on one)"),
    Flag(["--network-interface"], "nics", STORE, honoured="the same as --network-interfaces"),
    Flag(["--output-filename"], "output_filename", STORE, honoured="each rank's output also "
         "in DIR/rank.N/stdout and DIR/rank.N/stderr"),
    Flag(["--verbose"], "verbose", TRUE, honoured="says what Tandem runs; srun --horovod=verbose"),
    Flag(["--config-file"], "config_file", STORE, honoured="Horovod's YAML parameters, "
         "flags given on the command line win"),
    Flag(["-p", "--ssh-port"], "ssh_port", STORE, type=int, honoured="ssh's port on -H's "
         "other hosts (outside an allocation, where their ranks start over ssh)"),
    Flag(["-i", "--ssh-identity-file"], "ssh_identity_file", STORE, honoured="the key ssh logs "
         "in with on -H's other hosts (outside an allocation)"),
    Flag(["--fusion-threshold-mb"], "fusion_threshold_mb", STORE, type=int,
         honoured="HOROVOD_FUSION_THRESHOLD (bytes)"),
    Flag(["--cycle-time-ms"], "cycle_time_ms", STORE, type=float, honoured="HOROVOD_CYCLE_TIME"),
    Flag(["--cache-capacity"], "cache_capacity", STORE, type=int,
         honoured="HOROVOD_CACHE_CAPACITY"),
    Flag(["--hierarchical-allreduce"], "hierarchical_allreduce", TRUE, honoured="accepted: "
         "Tandem's allreduce is always hierarchical (shared memory inside a node, TCP between)"),
    Flag(["--no-hierarchical-allreduce"], "hierarchical_allreduce", FALSE, refused="Tandem's "
         "allreduce is always hierarchical (shared memory inside a node, the network between "
         "nodes) and has no flat variant; drop the flag"),
    Flag(["--hierarchical-allgather"], "hierarchical_allgather", TRUE, honoured="accepted: "
         "Tandem's allgather is always hierarchical"),
    Flag(["--no-hierarchical-allgather"], "hierarchical_allgather", FALSE, refused="Tandem's "
         "allgather is always hierarchical (gathered inside each node first) and has no flat "
         "variant; drop the flag"),
    Flag(["--torus-allreduce"], "torus_allreduce", TRUE, refused="Tandem has no 2D torus "
         "allreduce; drop the flag (its allreduce is hierarchical: docs/engine.md)"),
    Flag(["--no-torus-allreduce"], "torus_allreduce", FALSE, honoured="accepted: Tandem has no "
         "torus allreduce to turn off"),
    Flag(["--autotune"], "autotune", TRUE, honoured="HOROVOD_AUTOTUNE=1: rank 0 tunes the fusion "
         "threshold, cycle time and response cache while the job trains (docs/runtime.md)"),
    Flag(["--no-autotune"], "autotune", FALSE, honoured="accepted: autotune is off unless "
         "--autotune (or HOROVOD_AUTOTUNE=1) turns it on"),
    Flag(["--autotune-log-file"], "autotune_log_file", STORE,
         honoured="HOROVOD_AUTOTUNE_LOG" + _WITH_AUTOTUNE),
    Flag(["--autotune-warmup-samples"], "autotune_warmup_samples", STORE, type=int,
         honoured="HOROVOD_AUTOTUNE_WARMUP_SAMPLES" + _WITH_AUTOTUNE),
    Flag(["--autotune-steps-per-sample"], "autotune_steps_per_sample", STORE, type=int,
         honoured="HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE" + _WITH_AUTOTUNE),
    Flag(["--autotune-bayes-opt-max-samples"], "autotune_bayes_opt_max_samples", STORE, type=int,
         honoured="HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES" + _WITH_AUTOTUNE),
    Flag(["--autotune-gaussian-process-noise"], "autotune_gaussian_process_noise", STORE,
         type=float, honoured="HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE" + _WITH_AUTOTUNE),
    Flag(["--min-np", "--min-num-proc"], "min_num_proc", STORE, type=int, honoured="an elastic "
         "job (srun --horovod=elastic, tandem-run --elastic) with TANDEM_ELASTIC_MIN_NP"),
    Flag(["--max-np", "--max-num-proc"], "max_num_proc", STORE, type=int,
         honoured="TANDEM_ELASTIC_MAX_NP (with --min-np)"),
    Flag(["--slots-per-host"], "slots", STORE, type=int, refused=_ELASTIC + "a discovery "
         "script's hosts; give the slots in -H host:slots and drop --slots-per-host"),
    Flag(["--elastic-timeout"], "elastic_timeout", STORE, type=int,
         honoured="HOROVOD_ELASTIC_TIMEOUT (with --min-np)"),
    Flag(["--reset-limit"], "reset_limit", STORE, type=int,
         honoured="TANDEM_ELASTIC_RESET_LIMIT (with --min-np)"),
    Flag(["--blacklist-cooldown-range"], "cooldown_range", STORE, type=int, nargs=2,
         refused="Tandem excludes a failed node for the rest of the elastic job and never lets "
         "it back after a cooldown; drop the flag (docs/elastic.md)"),
    Flag(["--timeline-filename"], "timeline_filename", STORE, honoured="HOROVOD_TIMELINE"),
    Flag(["--timeline-mark-cycles"], "timeline_mark_cycles", TRUE,
         honoured="HOROVOD_TIMELINE_MARK_CYCLES=1 (with --timeline-filename)"),
    Flag(["--no-timeline-mark-cycles"], "timeline_mark_cycles", FALSE,
         honoured="HOROVOD_TIMELINE_MARK_CYCLES=0 (with --timeline-filename)"),
    Flag(["--no-stall-check"], "no_stall_check", TRUE,
         honoured="HOROVOD_STALL_CHECK_TIME_SECONDS=0 (Tandem's way to turn it off)"),
    Flag(["--stall-check"], "no_stall_check", FALSE, honoured="accepted: the stall check is on "
         "unless turned off"),
    Flag(["--stall-check-warning-time-seconds"], "stall_check_warning_time_seconds", STORE,
         type=int, honoured="HOROVOD_STALL_CHECK_TIME_SECONDS"),
    Flag(["--stall-check-shutdown-time-seconds"], "stall_check_shutdown_time_seconds", STORE,
         type=int, honoured="HOROVOD_STALL_SHUTDOWN_TIME_SECONDS"),
    Flag(["--mpi-threads-disable"], "mpi_threads_disable", TRUE, honoured="accepted: Tandem "
         "runs no MPI, so there is no MPI threading to disable"),
    Flag(["--no-mpi-threads-disable"], "mpi_threads_disable", FALSE, honoured="accepted: "
         "Tandem runs no MPI"),
    Flag(["--mpi-args"], "mpi_args", STORE, refused="Tandem's horovodrun runs no mpirun; "
         "drop the flag (inside an allocation the step is srun's: give srun's options in "
         "SLURM_* input variables, or run srun --horovod=on yourself)"),
    Flag(["--tcp"], "tcp_flag", TRUE, honoured="NCCL_IB_DISABLE=1 (Tandem's own transport "
         "between nodes is TCP already)"),
    Flag(["--binding-args"], "binding_args", STORE, refused="binding is the Slurm plugin's "
         "(docs/binding.md: the plugstack's binding=, visible=, membind=, nics=, or srun's "
         "--cpu-bind); drop the flag"),
    Flag(["--num-nccl-streams"], "num_nccl_streams", STORE, type=int, refused="Tandem's GPU "
         "path runs its NCCL calls on one stream per process and has no setting for more; "
         "drop the flag (docs/gpu.md)"),
    Flag(["--thread-affinity"], "thread_affinity", STORE, type=int, refused="Tandem does not "
         "pin its background thread to a core (it runs within the rank's CPUs, which the "
         "plugin binds: docs/binding.md); drop the flag"),
    Flag(["--gloo-timeout-seconds"], "gloo_timeout_seconds", STORE, type=int,
         honoured="TANDEM_TIMEOUT (how long any wait may go without progress)"),
    Flag(["--log-level"], "log_level", STORE, choices=_LOG_LEVELS, honoured="HOROVOD_LOG_LEVEL"),
    Flag(["--log-with-timestamp"], "log_with_timestamp", TRUE, refused="Tandem's log lines "
         "carry no timestamp; use --prefix-output-with-timestamp, which stamps every output "
         "line"),
    Flag(["--log-without-timestamp"], "log_with_timestamp", FALSE, honoured="accepted: "
         "Tandem's log lines carry no timestamp"),
    Flag(["-prefix-timestamp", "--prefix-output-with-timestamp"], "prefix_output_with_timestamp",
         TRUE, honoured="every output line begins with the time, as Horovod's"),
    Flag(["--log-hide-timestamp"], "log_with_timestamp", FALSE, honoured="accepted (Horovod's "
         "old name of --log-without-timestamp)"),
    Flag(["--no-log-hide-timestamp"], "log_with_timestamp", TRUE, refused="Tandem's log lines "
         "carry no timestamp; use --prefix-output-with-timestamp, which stamps every output "
         "line"),
    Flag(["-H", "--hosts"], "hosts", STORE, honoured="host:slots placement of the ranks"),
    Flag(["-hostfile", "--hostfile"], "hostfile", STORE, honoured="'host slots=N' lines, as -H"),
    Flag(["--host-discovery-script"], "host_discovery_script", STORE, refused=_ELASTIC +
         "a discovery script; run the job inside an allocation with --min-np (and -H for the "
         "first hosts), and add nodes with srun --jobid=J --overlap --horovod=elastic"),
    Flag(["--gloo"], "use_gloo", TRUE, honoured="accepted: Tandem's own controller and "
         "collectives are used (neither Gloo nor MPI); --verbose says which"),
    Flag(["--mpi"], "use_mpi", TRUE, honoured="accepted: as --gloo"),
    Flag(["--jsrun"], "use_jsrun", TRUE, refused="jsrun is LSF's launcher; Tandem runs on "
         "Slurm: drop the flag (inside an allocation horovodrun runs one srun step)"),
]


def by_option():
    """{option string: Flag}."""
    return {option: flag for flag in FLAGS for option in flag.options}


def config_flag(dest, value):
    """The row a --config-file value lands on: for a switch, the spelling
    that would set that value on the command line."""
    rows = [f for f in FLAGS if f.dest == dest]
    if len(rows) > 1 and isinstance(value, bool):
        for f in rows:
            if (f.kind == TRUE) == value:
                return f
    return rows[0]


class _Given(argparse.Action):
    """Stores the value as Horovod's action would, and records which
    spellings were given, so that refusals and the config file's "the
    command line wins" both know."""

    def __init__(self, option_strings, dest, row=None, **kwargs):
        self.row = row
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        if self.row.kind == TRUE:
            values = True
        elif self.row.kind == FALSE:
            values = False
        elif self.row.kind == COUNT:
            values = True
        setattr(namespace, self.dest, values)
        namespace.given.append((option_string, self.row))


def parser():
    """argparse over FLAGS, with Horovod's spellings, destinations and types."""
    p = argparse.ArgumentParser(
        prog="horovodrun", description="Horovod's horovodrun on Tandem: one srun "
        "--horovod=on step inside a Slurm allocation; outside one, tandem-run on this host, "
        "with the ranks of -H's other hosts over ssh (man horovodrun, docs/launchers.md).")
    for row in FLAGS:
        kwargs = {"dest": row.dest, "row": row, "action": _Given, "default": None,
                  "help": row.honoured or ("refused: " + row.refused)}
        if row.kind == STORE:
            kwargs.update(type=row.type, nargs=row.nargs, choices=row.choices)
        else:
            kwargs["nargs"] = 0
        p.add_argument(*row.options, **kwargs)
    p.add_argument("command", nargs=argparse.REMAINDER, help="the command each rank runs")
    p.set_defaults(given=[])
    return p
