"""Horovod's --config-file: a YAML file of runtime parameters.

The sections and keys are Horovod's (its module
horovod.runner.common.util.config_parser): each key lands on the
destination of one command-line flag, and a flag given on the command
line wins over the file. A key lands on its flag's row of flags.FLAGS, so
a refused parameter is refused with the same message as its flag; a key
Horovod does not know is an error (Horovod would drop it without a word).
"""

from tandem._horovodrun import flags

# section -> {key: destination}
SECTIONS = {
    "params": {k: k for k in ("fusion_threshold_mb", "cycle_time_ms", "cache_capacity",
                              "hierarchical_allreduce", "hierarchical_allgather",
                              "torus_allreduce")},
    "autotune": {"enabled": "autotune", "log_file": "autotune_log_file",
                 "warmup_samples": "autotune_warmup_samples",
                 "steps_per_sample": "autotune_steps_per_sample",
                 "bayes_opt_max_samples": "autotune_bayes_opt_max_samples",
                 "gaussian_process_noise": "autotune_gaussian_process_noise"},
    "timeline": {"filename": "timeline_filename", "mark_cycles": "timeline_mark_cycles"},
    "stall_check": {"enabled": "no_stall_check",
                    "warning_time_seconds": "stall_check_warning_time_seconds",
                    "shutdown_time_seconds": "stall_check_shutdown_time_seconds"},
    "library_options": {k: k for k in ("mpi_threads_disable", "num_nccl_streams",
                                       "thread_affinity", "gloo_timeout_seconds")},
    "logging": {"level": "log_level", "with_timestamp": "log_with_timestamp"},
}


class ConfigError(ValueError):
    pass


def load(path):
    """The file's mapping. PyYAML is what Horovod reads it with."""
    try:
        import yaml
    except ImportError as exc:
        raise ConfigError("--config-file %s: reading YAML needs PyYAML, which this python "
                          "cannot import (%s); install python3-yaml" % (path, exc)) from None
    try:
        with open(path) as f:
            data = yaml.safe_load(f)
    except OSError as exc:
        raise ConfigError("--config-file %s: %s" % (path, exc.strerror)) from None
    except yaml.YAMLError as exc:
        raise ConfigError("--config-file %s is not valid YAML: %s" % (path, exc)) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError("--config-file %s: expected a mapping of sections (params, "
                          "autotune, ...), found a %s" % (path, type(data).__name__))
    return data


def apply(args, data, path):
    """Sets on `args` each value of the file whose flag was not given, and
    appends (key, row) to args.given for the refusal check."""
    given = {row.dest for _, row in args.given}
    for section, value in data.items():
        if section == "controller":
            if str(value).lower() not in ("gloo", "mpi"):
                raise ConfigError("--config-file %s: controller '%s': Horovod's controllers are "
                                  "gloo and mpi (Tandem accepts both and uses its own)"
                                  % (path, value))
            continue
        keys = SECTIONS.get(section)
        if keys is None:
            raise ConfigError("--config-file %s: unknown section '%s'; Horovod's are controller, "
                              "%s" % (path, section, ", ".join(SECTIONS)))
        if not isinstance(value, dict):
            raise ConfigError("--config-file %s: section '%s' must be a mapping" % (path, section))
        for key, v in value.items():
            dest = keys.get(key)
            if dest is None:
                raise ConfigError("--config-file %s: unknown key '%s.%s'; Horovod's keys of %s "
                                  "are %s" % (path, section, key, section, ", ".join(keys)))
            if dest in given:
                continue
            if section == "stall_check" and key == "enabled":
                v = not v  # the file says enabled, the flag says no-stall-check
            row = flags.config_flag(dest, v)
            if row.kind == flags.STORE and row.type is not str:
                try:
                    v = row.type(v)
                except (TypeError, ValueError):
                    raise ConfigError("--config-file %s: %s.%s: expected a number (as %s "
                                      "takes), found '%s'" % (path, section, key, row.name, v)
                                      ) from None
            elif row.kind != flags.STORE and not isinstance(v, bool):
                raise ConfigError("--config-file %s: %s.%s: expected true or false, found '%s'"
                                  % (path, section, key, v))
            if row.choices and str(v).upper() not in row.choices:
                raise ConfigError("--config-file %s: %s.%s: '%s' is not one of %s"
                                  % (path, section, key, v, ", ".join(row.choices)))
            setattr(args, dest, v)
            args.given.append(("%s.%s in %s (%s)" % (section, key, path, row.name), row))
