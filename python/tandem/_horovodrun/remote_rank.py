"""One rank on another host, the far end of horovodrun's ssh (ssh_rank.py).

ssh runs ``python3 remote_rank.py``; the first line on its stdin is the
rank as JSON: its environment, working directory and command. The job's
rendezvous token is in that environment, so it travels inside the ssh
connection and is never on a command line that ps shows another user.

The command runs in a process group of its own, with stdin from /dev/null.
ssh is started without a terminal, so when the launcher's side goes (another
rank failed, Ctrl-C, horovodrun killed) the one sign here is stdin closing:
then the whole group gets SIGTERM, and SIGKILL after a grace time. When the
command ends, whatever it left in its group is killed before this exits
with the command's status (128 + N for signal N), which ssh hands back.
Standard library only, and run as a file, not imported from the tandem
package: nothing of Tandem is loaded before the rank's own environment is.
"""

import json
import os
import signal
import socket
import sys
import threading
import time

GRACE_S = 3


def _say(level, text):
    sys.stderr.write("horovodrun %s tools: %s: %s\n" % (level, socket.gethostname(), text))
    sys.stderr.flush()


def _read_rank():
    """(env, cwd, argv) from stdin's first line; None when it is not one."""
    line = sys.stdin.buffer.readline()
    try:
        spec = json.loads(line.decode())
        return dict(spec["env"]), str(spec["cwd"]), [str(a) for a in spec["argv"]]
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        _say("ERROR", "expected the rank's description as one JSON line on stdin, found %r; "
             "this program is started by horovodrun over ssh, not by hand" % line[:60])
        return None


def _start(env, argv):
    pid = os.fork()
    if pid == 0:
        try:
            os.setpgid(0, 0)
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.execvpe(argv[0], argv, env)
        except OSError as exc:
            _say("ERROR", "cannot run %s: %s (is it on PATH there?)" % (argv[0], exc.strerror))
        os._exit(127)
    try:
        os.setpgid(pid, pid)  # also here, so that no signal finds it still in ours
    except OSError:
        pass  # it has exec'd (or died) already, and its own call set the group
    return pid


def _signal_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def main():
    rank = _read_rank()
    if rank is None:
        return 2
    env, cwd, argv = rank
    try:
        os.chdir(cwd)
    except OSError as exc:
        # Horovod's launcher runs the rank where cd left it; so does this, saying so.
        _say("WARNING", "cannot enter %s (%s); the rank runs in %s" % (cwd, exc.strerror,
                                                                      os.getcwd()))
    pid = _start(env, argv)
    stopping = threading.Event()

    def stop(_signum=None, _frame=None):
        if stopping.is_set():
            return
        stopping.set()
        _signal_group(pid, signal.SIGTERM)

        def kill_later():
            time.sleep(GRACE_S)
            _signal_group(pid, signal.SIGKILL)
        threading.Thread(target=kill_later, daemon=True).start()

    def watch_stdin():
        # Unbuffered: the first line was the only one sent, the rest is the wait for EOF.
        while os.read(0, 65536):
            pass
        stop()

    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(s, stop)
    threading.Thread(target=watch_stdin, daemon=True).start()
    # Wait without reaping, so that the group's id is still the rank's when
    # what it left behind is killed.
    while True:
        try:
            os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
            break
        except InterruptedError:
            continue
    _signal_group(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    status = main()
    sys.stderr.flush()
    # Not sys.exit: the stdin thread may be in a read, and the interpreter's
    # shutdown would wait on it (or abort over its buffer's lock).
    os._exit(status)
