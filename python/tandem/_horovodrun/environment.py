"""The variables the honoured flags set, for every rank.

As Horovod's launcher does, the ranks get horovodrun's whole environment
with these added (srun --export=ALL inside an allocation; tandem-run passes
its own on). Each name is one the engine or the Python package already reads
(docs/settings.md); where Horovod's variable is one Tandem honours, Horovod's
name is set, so that a job script that also exports it the same way agrees.
"""

import os

MIB = 1024 * 1024


class EnvError(ValueError):
    pass


def _nonnegative(name, value):
    if value is not None and value < 0:
        raise EnvError("%s %s: must be 0 or more" % (name, value))


def _interface(nics):
    """--network-interface(s): one name (Horovod takes a comma list)."""
    names = [n.strip() for n in nics.split(",") if n.strip()]
    if len(names) != 1:
        raise EnvError("--network-interfaces %s: Tandem's TCP transport listens on one interface; "
                       "give one name (ip -br link lists them)" % nics)
    return names[0]


def from_args(args, environ=os.environ):
    """{variable: value} for the ranks; raises EnvError on a bad value."""
    for name in ("fusion_threshold_mb", "cycle_time_ms", "cache_capacity",
                 "stall_check_warning_time_seconds", "stall_check_shutdown_time_seconds",
                 "gloo_timeout_seconds", "start_timeout", "min_num_proc", "max_num_proc",
                 "elastic_timeout", "reset_limit", "autotune_warmup_samples",
                 "autotune_steps_per_sample", "autotune_bayes_opt_max_samples",
                 "autotune_gaussian_process_noise"):
        _nonnegative("--" + name.replace("_", "-"), getattr(args, name))
    env = {}

    def put(name, value):
        if value is not None:
            env[name] = str(value)

    put("HOROVOD_FUSION_THRESHOLD",
        None if args.fusion_threshold_mb is None else args.fusion_threshold_mb * MIB)
    put("HOROVOD_CYCLE_TIME", args.cycle_time_ms)
    put("HOROVOD_CACHE_CAPACITY", args.cache_capacity)
    if args.timeline_filename:  # Horovod marks cycles only with a timeline
        put("HOROVOD_TIMELINE", args.timeline_filename)
        if args.timeline_mark_cycles is not None:
            put("HOROVOD_TIMELINE_MARK_CYCLES", int(args.timeline_mark_cycles))
    _autotune(args, put)
    put("HOROVOD_STALL_CHECK_TIME_SECONDS", args.stall_check_warning_time_seconds)
    if args.no_stall_check:
        env["HOROVOD_STALL_CHECK_TIME_SECONDS"] = "0"
    put("HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", args.stall_check_shutdown_time_seconds)
    if args.tcp_flag:
        env["NCCL_IB_DISABLE"] = "1"
    put("TANDEM_TIMEOUT", args.gloo_timeout_seconds)
    put("HOROVOD_LOG_LEVEL", args.log_level)
    start = args.start_timeout
    if start is None and environ.get("HOROVOD_START_TIMEOUT"):
        text = environ["HOROVOD_START_TIMEOUT"]
        if not text.isdigit() or int(text) == 0:
            raise EnvError("HOROVOD_START_TIMEOUT='%s': expected a whole number of seconds, "
                           "at least 1" % text)
        start = int(text)
    if start is not None:
        if start == 0:
            raise EnvError("--start-timeout 0: give at least 1 second")
        env["TANDEM_BOOTSTRAP_TIMEOUT"] = str(start)
    if args.nics:
        name = _interface(args.nics)
        env["TANDEM_TCP_IFNAME"] = name
        env["NCCL_SOCKET_IFNAME"] = name
    if is_elastic(args):
        put("TANDEM_ELASTIC_MIN_NP", args.min_num_proc)
        put("TANDEM_ELASTIC_MAX_NP", args.max_num_proc)
        put("TANDEM_ELASTIC_RESET_LIMIT", args.reset_limit)
        put("HOROVOD_ELASTIC_TIMEOUT", args.elastic_timeout)
    else:
        for dest, flag in (("max_num_proc", "--max-np"), ("elastic_timeout", "--elastic-timeout"),
                           ("reset_limit", "--reset-limit")):
            if getattr(args, dest) is not None:
                raise EnvError("%s applies to an elastic job, which --min-np starts; give "
                               "--min-np too, or drop %s" % (flag, flag))
    return env


_AUTOTUNE_FLAGS = (("autotune_log_file", "HOROVOD_AUTOTUNE_LOG"),
                   ("autotune_warmup_samples", "HOROVOD_AUTOTUNE_WARMUP_SAMPLES"),
                   ("autotune_steps_per_sample", "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE"),
                   ("autotune_bayes_opt_max_samples", "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES"),
                   ("autotune_gaussian_process_noise", "HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE"))


def _autotune(args, put):
    """--autotune and its parameters, as Horovod sets them: the parameters
    only with --autotune (without it they would be ignored, so they are
    refused)."""
    if args.autotune:
        put("HOROVOD_AUTOTUNE", 1)
        for dest, name in _AUTOTUNE_FLAGS:
            put(name, getattr(args, dest))
        return
    for dest, _ in _AUTOTUNE_FLAGS:
        if getattr(args, dest) is not None:
            flag = "--" + dest.replace("_", "-")
            raise EnvError("%s applies while autotune runs, which --autotune turns on; give "
                           "--autotune too, or drop %s" % (flag, flag))


def is_elastic(args):
    """Horovod's rule, less the discovery script (refused): --min-np."""
    return args.min_num_proc is not None


def per_rank_overrides(env):
    """The variables the Slurm plugin sets in each task and a flag must
    override there: they are put on the command line (``env NAME=VALUE``),
    after the plugin has set the task's environment."""
    return {k: v for k, v in env.items() if k in ("TANDEM_TCP_IFNAME", "NCCL_SOCKET_IFNAME")}
