"""The horovodrun command: parse, check, then run one launcher and wait.

Everything that can be wrong with the command line (a refused flag, a bad
value, a host outside the allocation, more ranks than slots) is said before
any rank starts. The launcher (srun or tandem-run) runs in its own session
so that the terminal's Ctrl-C reaches horovodrun alone, which stops the job
through the launcher's own way of stopping it (SIGTERM: srun cancels the
step, tandem-run stops every rank); a second Ctrl-C, or a launcher still
there after a grace time, gets SIGKILL. The launcher also gets SIGTERM if
horovodrun itself dies (PR_SET_PDEATHSIG), so nothing outlives it.
"""

import argparse
import ctypes
import logging
import os
import signal
import subprocess
import sys

from tandem import _log
from tandem._horovodrun import check_build, config_file, environment, flags, hosts, local
from tandem._horovodrun import output, slurm, ssh

PROGRAM = "horovodrun"
USAGE_ERROR = 2
_KILL_GRACE_S = 10
_PR_SET_PDEATHSIG = 1

log = logging.getLogger("tandem.tools")


class _Refused(Exception):
    pass


def _verbose(text):
    sys.stderr.write("%s: %s\n" % (PROGRAM, text))


def _refusals(args):
    """One line per refused flag given, in the order given."""
    return ["%s: %s" % (name, row.refused) for name, row in args.given if row.refused]


def parse(argv):
    """The checked arguments; raises _Refused with the messages."""
    args = flags.parser().parse_args(argv, namespace=argparse.Namespace(given=[]))
    if args.config_file:
        config_file.apply(args, config_file.load(args.config_file), args.config_file)
    refused = _refusals(args)
    if refused:
        raise _Refused("\n".join(refused))
    if args.hosts and args.hostfile:
        raise _Refused("-H and --hostfile both list the hosts: give one")
    return args


def _host_slots(args):
    if args.hosts:
        return hosts.parse_hosts(args.hosts)
    if args.hostfile:
        return hosts.parse_hostfile(args.hostfile)
    return None


def _num_proc(args, environ):
    np = args.num_proc if args.num_proc is not None else args.min_num_proc
    if np is None and slurm.in_allocation(environ) and environ.get("SLURM_NTASKS", "").isdigit():
        np = int(environ["SLURM_NTASKS"])
    if np is None:
        raise _Refused("-np N is required: the number of ranks (inside an allocation it "
                       "defaults to SLURM_NTASKS)")
    if np < 1:
        raise _Refused("-np %d: give at least 1 rank" % np)
    return np


def _describe(args, launcher, elastic):
    if args.use_gloo or args.use_mpi:
        _verbose("%s accepted: Tandem uses its own controller and collectives, neither Gloo nor "
                 "MPI" % ("--gloo" if args.use_gloo else "--mpi"))
    if elastic:
        how = "an elastic job: the membership service of " + (
            "srun --horovod=elastic" if launcher == "srun" else "tandem-run --elastic")
    else:
        how = "PMIx through srun --horovod" if launcher == "srun" else \
            "the TCP store of tandem-run"
    _verbose("controller: Tandem (%s)" % how)
    for name, row in args.given:
        if row.honoured and row.kind != flags.STORE:
            _verbose("%s: %s" % (name, row.honoured))


def _check_ssh_flags(args, why_no_ssh):
    """-p and -i apply to the ssh sessions to other hosts; where there are
    none (`why_no_ssh` says why) they are refused, not ignored."""
    if not why_no_ssh:
        return
    for name, row in args.given:
        if row.dest in ("ssh_port", "ssh_identity_file"):
            raise _Refused("%s: %s, so no ssh session starts; drop the flag" % (name, why_no_ssh))


def _pdeathsig():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def _run(argv, env, out):
    child = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True,
                             preexec_fn=_pdeathsig)
    signals = []

    def on_signal(signum, frame):
        signals.append(signum)
        try:
            child.send_signal(signal.SIGTERM if len(signals) == 1 else signal.SIGKILL)
        except ProcessLookupError:
            pass

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)
    pumps = [out.pump(child.stdout, "stdout", sys.stdout),
             out.pump(child.stderr, "stderr", sys.stderr)]
    while True:
        try:
            child.wait(timeout=_KILL_GRACE_S if signals else None)
            break
        except subprocess.TimeoutExpired:
            child.kill()
    for t in pumps:
        t.join(timeout=5)
    out.close()
    rc = child.returncode
    if signals:
        log.error("stopped the job on %s", signal.Signals(signals[0]).name)
        return 128 + signals[0]
    if rc < 0:
        rc = 128 - rc
    if rc != 0:
        log.error("the job failed: %s exited with status %d (the failing rank is named above)",
                  os.path.basename(argv[0]), rc)
    return rc


def run(args, tandem_run, environ=os.environ):
    if args.version:
        import horovod
        print(horovod.__version__)
        return 0
    if args.check_build:
        print(check_build.report(bool(args.verbose)))
        return 0
    if not args.command:
        raise _Refused("no command to run: give it after the options (horovodrun -np 2 python "
                       "train.py)")
    np = _num_proc(args, environ)
    host_slots = _host_slots(args)
    extra = environment.from_args(args, environ)
    elastic = environment.is_elastic(args)
    env = dict(environ)
    env.update(extra)
    cleanup = []
    if slurm.in_allocation(environ):
        _check_ssh_flags(args, "inside a Slurm allocation srun starts every rank")
        launcher = "srun"
        placed = slurm.placement(host_slots, np, environ)
        mode = "elastic" if elastic else ("verbose" if args.verbose else "on")
        overrides = environment.per_rank_overrides(extra)
        command = (["env"] + ["%s=%s" % kv for kv in sorted(overrides.items())]
                   if overrides else []) + list(args.command)
        argv, step_env = slurm.srun_command(np, placed, mode, command, environ)
        for k, v in step_env.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        cleanup += [step_env["SLURM_HOSTFILE"]] if "SLURM_HOSTFILE" in step_env else []
    else:
        launcher = "tandem-run"
        placed = local.placement(host_slots, np)
        remote = ssh.remote_hosts(placed)
        _check_ssh_flags(args, "every rank of this job runs on this host" if not remote else None)
        if remote:
            if elastic:
                raise _Refused("--min-np with hosts other than this one (%s): an elastic job "
                               "across hosts runs inside an allocation (srun "
                               "--horovod=elastic); outside one it runs on this host only"
                               % ",".join(remote))
            ssh.check_options(args.ssh_port, args.ssh_identity_file)
            ssh.check_hosts(remote, args.ssh_port, args.ssh_identity_file)
            argv = ssh.tandem_run_command(tandem_run, np, placed, args.ssh_port,
                                          args.ssh_identity_file, args.command)
            if args.verbose:
                _verbose("over ssh: the ranks on %s (the store here, at this host's address on "
                         "the route to each)" % ",".join(remote))
        else:
            argv = local.tandem_run_command(tandem_run, np, elastic, args.command)
    if args.verbose:
        _describe(args, launcher, elastic)
        for k in sorted(extra):
            _verbose("sets %s=%s" % (k, extra[k]))
        if "SLURM_HOSTFILE" in env and cleanup:
            _verbose("SLURM_HOSTFILE %s: %s" % (cleanup[0], " ".join(
                open(cleanup[0]).read().split())))
        _verbose("runs: " + " ".join(argv))
    out = output.Output(launcher, np, args.output_filename,
                        bool(args.prefix_output_with_timestamp))
    try:
        return _run(argv, env, out)
    except FileNotFoundError as exc:
        raise _Refused("cannot run %s: %s (is %s on PATH?)" % (argv[0], exc.strerror, argv[0])
                       ) from None
    finally:
        for path in cleanup:
            os.unlink(path)


def main(argv=None, tandem_run="tandem-run"):
    _log.configure(program=PROGRAM)
    try:
        return run(parse(argv), tandem_run)
    except (_Refused, config_file.ConfigError, environment.EnvError, hosts.HostsError,
            slurm.SlurmError, ssh.SshError) as exc:
        for line in str(exc).splitlines():
            log.error("%s", line)
        return USAGE_ERROR
