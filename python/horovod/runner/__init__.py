"""``horovod.run`` (``horovod.runner.run``): Horovod's Python launcher, on
this host. It runs ``func(*args, **kwargs)`` on ``num_proc`` ranks started by
tandem-run and returns the list of what each returned, by rank. Remote hosts,
host files and elastic runs are refused with what to use instead; the
framework-neutral work is in tandem._run_function."""

import warnings

_LOCAL_NAMES = ("localhost", "127.0.0.1")

# Parameters Horovod uses for a launch that is not a fixed job on this host,
# with what to do instead under Tandem.
_REFUSED = {
    "min_num_proc": "elastic runs: use srun --horovod=elastic or tandem-run --elastic",
    "max_num_proc": "elastic runs: use srun --horovod=elastic or tandem-run --elastic",
    "slots": "elastic runs: use srun --horovod=elastic or tandem-run --elastic",
    "reset_limit": "elastic runs: use srun --horovod=elastic or tandem-run --elastic",
    "cooldown_range": "elastic runs: use srun --horovod=elastic or tandem-run --elastic",
    "host_discovery_script": "elastic runs: use srun --horovod=elastic or tandem-run --elastic",
    "hostfile": "horovod.run runs on this host only; across hosts, start the script with "
                "srun --horovod=on or horovodrun",
    "ssh_port": "horovod.run starts no remote process; across hosts, use horovodrun",
    "ssh_identity_file": "horovod.run starts no remote process; across hosts, use horovodrun",
    "output_filename": "the ranks' output goes to this process's stdout and stderr, one "
                       "line at a time",
    "mpi_args": "Tandem has no MPI controller",
    "network_interfaces": "the ranks of one host talk over shared memory; across nodes set "
                          "TANDEM_TCP_IFNAME",
}


def _local_slots(hosts):
    total = 0
    for entry in hosts.split(","):
        name, _, slots = entry.strip().partition(":")
        if name not in _LOCAL_NAMES:
            raise ValueError("horovod.run: host '%s' is not this host: horovod.run runs on "
                             "localhost only; across hosts, start the script with srun "
                             "--horovod=on or horovodrun -H" % name)
        try:
            total += int(slots) if slots else 1
        except ValueError:
            raise ValueError("horovod.run: hosts entry '%s' is not <host>:<slots>"
                             % entry) from None
    return total


def run(func, args=(), kwargs=None, num_proc=1, min_num_proc=None, max_num_proc=None,
        slots=None, reset_limit=None, cooldown_range=None, hosts=None, hostfile=None,
        host_discovery_script=None, start_timeout=None, ssh_port=None, ssh_identity_file=None,
        disable_cache=None, output_filename=None, verbose=None, use_gloo=None, use_mpi=None,
        mpi_args=None, network_interface=None, network_interfaces=None, executable=None,
        np=None, min_np=None, max_np=None):
    """Runs func(*args, **kwargs) on num_proc ranks of this host; the list of
    its return values, indexed by rank. ``disable_cache`` is accepted (Tandem
    keeps no cache of start-up checks), ``use_gloo``/``use_mpi`` too (Tandem
    uses its own rendezvous and transports either way); ``start_timeout``
    bounds the whole run."""
    if network_interface:
        network_interfaces = network_interface.split(",")
        warnings.warn("network_interface is deprecated, use network_interfaces instead",
                      DeprecationWarning, stacklevel=2)
    if np is not None:
        num_proc = np
        warnings.warn("np is deprecated, use num_proc instead", DeprecationWarning, stacklevel=2)
    if min_np is not None:
        min_num_proc = min_np
    if max_np is not None:
        max_num_proc = max_np
    if hosts is not None and hostfile is not None:
        raise ValueError("Argument hosts and hostfile only allow one provided.")
    if use_gloo and use_mpi:
        raise ValueError("Argument use_gloo and use_mpi only allow one set True.")
    given = {"min_num_proc": min_num_proc, "max_num_proc": max_num_proc, "slots": slots,
             "reset_limit": reset_limit, "cooldown_range": cooldown_range,
             "host_discovery_script": host_discovery_script, "hostfile": hostfile,
             "ssh_port": ssh_port, "ssh_identity_file": ssh_identity_file,
             "output_filename": output_filename, "mpi_args": mpi_args,
             "network_interfaces": network_interfaces}
    for name, value in given.items():
        if value is not None:
            raise ValueError("horovod.run: %s is not supported by Tandem's horovod.run (%s)"
                             % (name, _REFUSED[name]))
    if not isinstance(num_proc, int) or num_proc < 1:
        raise ValueError("horovod.run: num_proc must be a positive number of processes, "
                         "got %r" % (num_proc,))
    if hosts is not None:
        available = _local_slots(hosts)
        if num_proc > available:
            raise ValueError("horovod.run: num_proc=%d is more than the %d slots of hosts='%s'"
                             % (num_proc, available, hosts))
    from tandem import _run_function
    return _run_function.run_function(func, args, kwargs or {}, num_proc, executable=executable,
                                      timeout=start_timeout, verbose=bool(verbose))
