"""Tandem inside the user's container, on the local cluster (docs/containers.md).

The images are plain Debian root file systems built by
contrib/containers/build-image.sh (debootstrap, cached under
/opt/tandem-deps/images): nothing of Tandem, MPI or Slurm in them. The
runtime is Charliecloud's ch-run through the site wrapper tandem-ch-run.
Tests that need an image or ch-run skip, saying why, when it is missing;
contrib/test.sh builds the images first (minutes, once per machine).

Also here, without a container: the PMIx server invisible (PMIx's
variables point where nothing is, as inside a container that does not see
slurmd's spool), a private /dev/shm per task, and the plugin ordered
before pyxis.
"""

import json
import os
import pathlib
import shutil
import subprocess
import tempfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD_IMAGE = ROOT / "contrib" / "containers" / "build-image.sh"
CH_RUN_WRAPPER = ROOT / "tools" / "tandem-ch-run"

# A Horovod-style training script: same seed everywhere, a different batch
# per rank, DistributedOptimizer; prints the final parameters.
TRAIN = r"""
import sys
import torch
import horovod.torch as hvd
hvd.init()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05),
                               named_parameters=model.named_parameters())
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
g = torch.Generator().manual_seed(100 + hvd.rank())
for _ in range(5):
    x = torch.randn(16, 8, generator=g)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
w = torch.cat([p.detach().double().flatten() for p in model.parameters()])
# A digest of the exact values: srun cuts long lines of several tasks apart.
import hashlib
digest = hashlib.sha256(",".join(repr(v) for v in w.tolist()).encode()).hexdigest()
print("PARAMS %d %d %d %s %r" % (hvd.rank(), hvd.size(), hvd.local_size(), digest, w[0].item()),
      flush=True)
"""

# The core API on numpy arrays (no framework): for the old image.
SUM = r"""
import numpy as np
import tandem
from tandem import _arrays, _ops
tandem.init()
out = _arrays.wait_all([_arrays.start_allreduce("x", np.full(4, tandem.rank() + 1.0), _ops.Sum)])[0]
print("SUM %d %d %s" % (tandem.rank(), tandem.size(), out.tolist()), flush=True)
"""


def image(name):
    path = subprocess.run([str(BUILD_IMAGE), "--path", name], capture_output=True, text=True,
                          check=True).stdout.strip()
    if not os.path.exists(os.path.join(path, ".complete")):
        pytest.skip("image %s not built (contrib/containers/build-image.sh %s)" % (name, name))
    return path


@pytest.fixture(scope="module")
def ch_run():
    if shutil.which("ch-run") is None:
        pytest.skip("ch-run (Debian's charliecloud-runtime) is not installed: contrib/install-deps.sh")
    return str(CH_RUN_WRAPPER)


def params(output):
    """rank -> (size, local_size, parameters) from the PARAMS lines."""
    found = {}
    for line in output.splitlines():
        if line.startswith("PARAMS "):
            _, rank, size, local, digest, first = line.split(" ", 5)
            found[int(rank)] = (int(size), int(local), digest, float(first))
    return found


@pytest.fixture(scope="module")
def work():
    """Scripts go under the host's /tmp, which ch-run shares with the
    container (the cluster's folder is not visible inside)."""
    path = pathlib.Path(tempfile.mkdtemp(prefix="tandem-e2e-containers-", dir="/tmp"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path)


def write(work, name, text):
    path = work / name
    path.write_text(text)
    return str(path)


def check_same_everywhere(found, size):
    assert sorted(found) == list(range(size)), found
    first = found[0][2]
    for rank, entry in found.items():
        assert entry[2] == first, "rank %d ended with other parameters than rank 0" % rank
    return first


def test_torch_image_trains_as_on_bare_metal(cluster, work, ch_run):
    """Debian 12 + Debian's torch 1.13, nothing of Tandem: 4 ranks on 2 nodes
    through ch-run end with the parameters of the same run on bare metal."""
    img = image("bookworm-torch")
    script = write(work, "container_train.py", TRAIN)
    env = {"USER": "root"}  # ch-run wants $USER; the test runs as root
    inside = cluster.srun("-N", "2", "-n", "4", "--horovod=on", ch_run, img, "--",
                          "python3", script, env=env, timeout=240)
    assert inside.returncode == 0, inside.stdout + inside.stderr
    bare = cluster.srun("-N", "2", "-n", "4", "--horovod=on", "/usr/bin/python3", script,
                        timeout=240)
    assert bare.returncode == 0, bare.stdout + bare.stderr
    in_container = check_same_everywhere(params(inside.stdout), 4)
    on_host = check_same_everywhere(params(bare.stdout), 4)
    assert in_container == on_host
    assert "cannot be preloaded" not in inside.stderr


def test_old_image_runs_everything_and_the_collective(cluster, work, ch_run):
    """Debian 11 (glibc 2.31): every program runs with the preload in place,
    and the engine loads (its floor is glibc 2.28) and reduces across nodes."""
    img = image("bullseye")
    env = {"USER": "root"}
    r = cluster.srun("-N", "2", "-n", "2", "--horovod=on", ch_run, img, "--", "sh", "-c",
                     "/bin/true && ldd --version | head -n 1 && python3 -c 'import numpy'",
                     env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2.31" in r.stdout
    assert "ld.so" not in r.stderr and "ERROR" not in r.stderr, r.stderr
    script = write(work, "container_sum.py", SUM)
    r = cluster.srun("-N", "2", "-n", "4", "--horovod=on", ch_run, img, "--", "python3", script,
                     env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    sums = sorted(line for line in r.stdout.splitlines() if line.startswith("SUM "))
    assert sums == ["SUM %d 4 [10.0, 10.0, 10.0, 10.0]" % k for k in range(4)], r.stdout


def test_unloadable_engine_never_stops_a_program(cluster, work, ch_run):
    """An engine the image cannot load (built against a newer glibc than the
    image's, the case of every image older than the floor): programs run as
    without Tandem, and the import names the cause and the fix."""
    img = image("bullseye")
    src = work / "new.c"
    # pthread_create's default version is GLIBC_2.34 on this machine: too new for 2.31.
    src.write_text("#include <pthread.h>\nvoid* f(void* a){return a;}\n"
                   "int tandem_version(void){pthread_t t; return pthread_create(&t,0,f,0);}\n")
    lib = work / "libtandem.so.0"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(src), "-pthread"], check=True)
    shim = pathlib.Path(cluster.engine).parent / "libtandem-preload.so"
    # Plain ch-run with the variables the plugin would set, the folders bound
    # by hand onto mount points under the host's /tmp (which ch-run shares).
    mnt = pathlib.Path(tempfile.mkdtemp(prefix="tandem-unloadable-", dir="/tmp"))
    for d in ("engine", "shim", "python"):
        (mnt / d).mkdir()
    cmd = ["ch-run", "-b", "%s:%s/engine" % (work, mnt), "-b", "%s:%s/shim" % (shim.parent, mnt),
           "-b", "%s:%s/python" % (cluster.python_dir, mnt),
           "--set-env=LD_PRELOAD=%s/shim/libtandem-preload.so" % mnt,
           "--set-env=TANDEM_LIBRARY=%s/engine/libtandem.so.0" % mnt,
           "--set-env=PYTHONPATH=%s/python" % mnt, img, "--"]
    full = dict(os.environ, USER="root")
    try:
        r = subprocess.run(cmd + ["sh", "-c", "/bin/true && echo ran"], env=full,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and r.stdout.strip() == "ran" and r.stderr == "", r
        r = subprocess.run(cmd + ["python3", "-c", "import tandem; tandem.init()"], env=full,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode != 0
        assert "needs glibc 2.28 or newer and this image has glibc 2.31" in r.stderr, r.stderr
        assert "GLIBC_2.34" in r.stderr, r.stderr
    finally:
        shutil.rmtree(mnt)


def test_folder_not_visible_names_the_bind(cluster, ch_run):
    """Plain ch-run (no wrapper): the site's folder is not in the image (only
    the Python package, bound by hand). Every program still runs; the import
    says what is missing and where to bind it."""
    img = image("bookworm-torch")
    # -t: ch-run shares the host's /tmp by default, so a build tree under
    # /tmp (a CI clone) would be visible after all; the package goes to the
    # image's own /mnt (ch-run binds only onto paths the image has).
    r = cluster.srun("-N", "1", "-n", "1", "--horovod=on", "ch-run", "-t",
                     "-b", "%s:/mnt" % cluster.python_dir, img, "--",
                     "sh", "-c", "/bin/true && PYTHONPATH=/mnt python3 -c 'import tandem; tandem.init()'",
                     env={"USER": "root"}, timeout=120)
    assert r.returncode != 0
    assert "is not visible inside this charliecloud container" in r.stderr, r.stderr
    assert "must be visible at the same path" in r.stderr


def test_pmix_server_invisible_bootstraps_over_tcp(cluster, work, any_torch_python):
    """A task that cannot reach slurmd's PMIx server (its directory and
    address point where nothing is, as in a container without the spool):
    the job joins through the plugin's TCP store by itself. With PMIx forced
    it fails: the fallback is what makes it work."""
    hide = write(work, "hide_pmix.sh", "#!/bin/bash\n"
                 "export PMIX_SERVER_TMPDIR=/nonexistent/pmix\n"
                 "for v in $(compgen -e | grep '^PMIX_SERVER_URI'); do export \"$v=pmix-server.1;tcp4://127.0.0.1:9\"; done\n"
                 "exec \"$@\"\n")
    os.chmod(hide, 0o755)
    script = write(work, "container_train.py", TRAIN)
    r = cluster.srun("-N", "2", "-n", "4", "--horovod=on", hide, any_torch_python, script, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    check_same_everywhere(params(r.stdout), 4)
    forced = cluster.srun("-N", "2", "-n", "2", "--horovod=on", hide, any_torch_python, script,
                          env={"TANDEM_BOOTSTRAP": "pmix"}, timeout=120)
    assert forced.returncode != 0
    assert "PMIX_SERVER_TMPDIR" in forced.stderr and "is not visible here" in forced.stderr


def private_shm(work):
    path = write(work, "private_shm.sh", "#!/bin/bash\n"
                 "# each task its own /dev/shm, as runc and Podman give each container\n"
                 "exec unshare --mount --propagation private sh -c "
                 "'mount -t tmpfs -o size=256m tmpfs /dev/shm && exec \"$0\" \"$@\"' \"$@\"\n")
    os.chmod(path, 0o755)
    return path


def test_private_dev_shm_falls_back_to_tcp_inside_the_node(cluster, work, any_torch_python):
    """Two tasks of a node with a /dev/shm each: bootstrapped over TCP (as
    inside such containers, where PMIx is not visible) they are told apart
    and talk over TCP, with one warning; the result is the same."""
    wrap = private_shm(work)
    script = write(work, "container_train.py", TRAIN)
    r = cluster.srun("-N", "2", "-n", "4", "--horovod=on", wrap, any_torch_python, script,
                     env={"TANDEM_BOOTSTRAP": "tcp"}, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    found = params(r.stdout)
    check_same_everywhere(found, 4)
    assert "share no /dev/shm or PID namespace" in r.stderr
    bare = cluster.srun("-N", "2", "-n", "4", "--horovod=on", any_torch_python, script, timeout=240)
    assert bare.returncode == 0, bare.stdout + bare.stderr
    check_same_everywhere(params(bare.stdout), 4)
    # Four nodes of one rank reduce in another order than 3+1 over shared
    # memory: equal to float64 round-off of float32 sums, not bit for bit.
    assert abs(params(bare.stdout)[0][3] - found[0][3]) <= 1e-6 * max(1.0, abs(found[0][3]))


def test_private_dev_shm_under_pmix_is_one_clear_error(cluster, work, any_torch_python):
    wrap = private_shm(work)
    r = cluster.srun("-N", "1", "-n", "2", "--horovod=on", wrap, any_torch_python, "-c",
                     "import tandem; tandem.init()", timeout=120)
    assert r.returncode != 0
    assert "do not see the same /dev/shm" in r.stderr, r.stderr
    assert "--ipc=host" in r.stderr


def test_tandem_listed_before_pyxis_is_named(cluster, any_torch_python):
    """What a task gets when pyxis runs after tandem's task_init: the first
    task's variables (HOROVOD_RANK, TANDEM_RANK) over its own, SLURM_PROCID
    kept, PYXIS_VERSION set. The engine says so instead of joining as rank 0."""
    r = cluster.srun("-N", "1", "-n", "2", "--horovod=on", "bash", "-c",
                     "export HOROVOD_RANK=0 TANDEM_RANK=0 PYXIS_VERSION=0.20.0; exec \"$0\" -c "
                     "'import tandem; tandem.init()'", any_torch_python, timeout=120)
    assert r.returncode != 0
    assert "tandem_spank.so is listed before pyxis" in r.stderr, r.stderr


def test_plugin_sets_what_containers_need(cluster):
    envs = cluster.task_envs("-N", "2", "-n", "2", "--horovod=on")
    engine_dir = os.path.dirname(cluster.engine)
    tokens = set()
    for rank, e in enumerate(envs):
        assert e["LD_PRELOAD"] == os.path.join(engine_dir, "libtandem-preload.so")
        assert e["TANDEM_PYTHONPATH"] == cluster.python_dir
        for var in ("APPTAINER_BIND", "SINGULARITY_BIND"):
            assert e[var].split(",") == [engine_dir, cluster.python_dir]
        assert e["TANDEM_RANK"] == str(rank) and e["TANDEM_SIZE"] == "2"
        host, port = e["TANDEM_RENDEZVOUS_ADDR"].rsplit(":", 1)
        assert e["MASTER_ADDR"] == host and 12288 <= int(port) < 16384
        tokens.add(e["TANDEM_RENDEZVOUS_TOKEN"])
    assert len(tokens) == 1 and len(tokens.pop()) == 32
    again = cluster.task_envs("-N", "1", "-n", "1", "--horovod=on")
    assert again[0]["TANDEM_RENDEZVOUS_TOKEN"] != envs[0]["TANDEM_RENDEZVOUS_TOKEN"]


def test_enroot_hook_binds_the_folder_for_horovod_steps(cluster, work):
    """The enroot hook, run as enroot runs it (ENROOT_ROOTFS, ENROOT_MOUNTS,
    ENROOT_ENVIRON, the step's environment), then its mount lines applied as
    enroot would (a bind per line, the mount point created) to a copy-on-write
    view of the bookworm image: the engine loads and the package imports at
    the host's paths. A step without --horovod gets nothing."""
    img = image("bookworm-torch")
    hook = pathlib.Path(cluster.build) / "etc" / "50-tandem.sh"
    engine_dir = os.path.dirname(cluster.engine)
    mounts, environ = work / "enroot.mounts", work / "enroot.environ"
    for f in (mounts, environ):
        f.write_text("")
    env = dict(os.environ, ENROOT_ROOTFS=img, ENROOT_MOUNTS=str(mounts), ENROOT_ENVIRON=str(environ),
               TANDEM_DIR="%s:%s" % (engine_dir, cluster.python_dir))
    env.pop("TANDEM_RENDEZVOUS_TOKEN", None)
    subprocess.run([str(hook)], env=env, check=True)
    assert mounts.read_text() == ""
    env["TANDEM_RENDEZVOUS_TOKEN"] = "0123456789abcdef"
    subprocess.run([str(hook)], env=env, check=True)
    lines = [line.split() for line in mounts.read_text().splitlines()]
    assert [(l[0], l[1]) for l in lines] == [(engine_dir, engine_dir), (cluster.python_dir, cluster.python_dir)]
    assert all("x-create=dir" in l[3] and "bind" in l[3] for l in lines)
    # Apply them in a private mount namespace over an overlay of the image.
    upper, wd, root = work / "upper", work / "wd", work / "root"
    for d in (upper, wd, root):
        d.mkdir(exist_ok=True)
    binds = " && ".join("mkdir -p %s%s && mount --bind %s %s%s" % (root, l[1], l[0], root, l[1]) for l in lines)
    probe = ("import ctypes, tandem; from tandem import _library; "
             "lib = _library.library(); print('ENGINE', lib.loaded_file())")
    script = ("mount -t overlay overlay -o lowerdir=%s,upperdir=%s,workdir=%s %s && %s && "
              "chroot %s env PYTHONPATH=%s TANDEM_LIBRARY=%s python3 -c \"%s\"" % (
                  img, upper, wd, root, binds, root, cluster.python_dir, cluster.engine, probe))
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ENGINE %s" % os.path.realpath(cluster.engine) in r.stdout, r.stdout


@pytest.fixture(scope="module")
def podman(cluster, work):
    """podman with runc (crun fails under this machine's cgroup v1), its
    storage and state in the test's folder (nothing in /var/lib/containers),
    the site's containers.conf drop-in (etc/containers) for the build tree's
    folders. Returns a function: podman(ipc_private=False) -> (command, env)."""
    if shutil.which("podman") is None or shutil.which("runc") is None:
        pytest.skip("podman or runc is not installed: contrib/install-deps.sh")
    img = image("bookworm-torch")
    store = work / "podman"
    store.mkdir()
    template = (ROOT / "etc" / "containers" / "tandem-containers.conf.in").read_text()
    # podman's default limits (nofile 2^20, nproc) are above the hard limits
    # tasks get here; the task's own hard limits are passed instead.
    wrapper = write(work, "podman.sh", "#!/bin/bash\n"
                    "lim() { local v; v=$(ulimit -H$1); [ \"$v\" = unlimited ] && v=-1; echo \"$v:$v\"; }\n"
                    "exec podman --root %s --runroot %s run --rm --ulimit nofile=$(lim n) "
                    "--ulimit nproc=4096:4096 \"$@\"\n" % (store / "root", store / "run"))
    os.chmod(wrapper, 0o755)

    def make(ipc_private=False):
        engine_dir = os.path.dirname(cluster.engine)
        volumes = ['"%s:%s:ro"' % (d, d) for d in (engine_dir, cluster.python_dir)]
        volumes.append('"%s:%s"' % (work, work))  # the test's scripts and results
        conf = template.replace('volumes = ["@TANDEM_DIR@:@TANDEM_DIR@:ro"]', "volumes = [%s]" % ", ".join(volumes))
        if ipc_private:
            conf = conf.replace('ipcns = "host"', 'ipcns = "private"').replace('pidns = "host"', 'pidns = "private"')
        conf += '\n[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\n'
        path = work / ("containers-%s.conf" % ("private" if ipc_private else "host"))
        path.write_text(conf)
        cmd = [wrapper, "--rootfs", img + ":O"]
        return cmd, {"CONTAINERS_CONF": str(path)}

    yield make
    # Overlays of containers that did not clean up, then the storage.
    mounted = subprocess.run(["findmnt", "-rn", "-o", "TARGET"], capture_output=True, text=True).stdout
    for target in sorted((m for m in mounted.split() if m.startswith(str(store))), reverse=True):
        subprocess.run(["umount", "-l", target])
    shutil.rmtree(store, ignore_errors=True)
    for parent in pathlib.Path("/sys/fs/cgroup").glob("*/libpod_parent"):
        for d in sorted(parent.rglob("*"), key=lambda p: len(p.parts), reverse=True):
            if d.is_dir():
                try:
                    d.rmdir()
                except OSError:
                    pass
        try:
            parent.rmdir()
        except OSError:
            pass


def test_podman_trains_as_on_bare_metal(cluster, work, podman):
    """Podman with the site's containers.conf (the folder as a volume, the
    job's variables, the host's network, /dev/shm and PID namespace): one
    container per task, the parameters of bare metal."""
    script = write(work, "container_train.py", TRAIN)
    cmd, env = podman()
    r = cluster.srun("-N", "2", "-n", "4", "--horovod=on", *cmd, "python3", script, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    bare = cluster.srun("-N", "2", "-n", "4", "--horovod=on", "/usr/bin/python3", script, timeout=240)
    assert bare.returncode == 0, bare.stdout + bare.stderr
    assert check_same_everywhere(params(r.stdout), 4) == check_same_everywhere(params(bare.stdout), 4)


def test_podman_private_ipc_falls_back_to_tcp(cluster, work, podman):
    """Podman's defaults: every container its own /dev/shm and PID namespace.
    PMIx is not visible inside, the job joins through the TCP store, and the
    node's ranks, told apart, talk over TCP (one warning)."""
    script = write(work, "container_train.py", TRAIN)
    cmd, env = podman(ipc_private=True)
    r = cluster.srun("-N", "2", "-n", "4", "--horovod=on", *cmd, "python3", script, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    check_same_everywhere(params(r.stdout), 4)
    assert "share no /dev/shm or PID namespace" in r.stderr


def test_tensorflow_keras_image_trains_as_on_bare_metal(cluster, work, podman):
    """TensorFlow 2.21 + Keras 3 in a container: the bookworm image with the
    shared TF venv's site-packages bound in read-only and named by the
    container's own PYTHONPATH (as an image's ENV would), nothing of Tandem.
    The preload adds Tandem's packages before them. Horovod's
    tensorflow2_keras_mnist-style example (examples/, synthetic data, no
    dropout) ends with the weights of the same run on bare metal, on every
    rank."""
    site = "/opt/tandem-deps/tf/lib/python3.11/site-packages"
    tf_python = "/opt/tandem-deps/tf/bin/python"
    if not os.path.isdir(site) or not os.path.exists(tf_python):
        pytest.skip("no TensorFlow venv (contrib/install-python-envs.sh)")
    example = work / "tensorflow2_keras_mnist.py"
    shutil.copy(ROOT / "examples" / "tensorflow2_keras_mnist.py", example)
    args = ["--epochs", "1", "--num-samples", "1024", "--dropout", "0", "--no-shuffle",
            "--warmup-epochs", "0", "--verbose", "0"]
    cmd, env = podman()
    cmd = cmd[:1] + ["-v", "%s:/opt/tf-site:ro" % site, "-e", "PYTHONPATH=/opt/tf-site"] + cmd[1:]
    inside = cluster.srun("-N", "2", "-n", "4", "--horovod=on", *cmd, "python3", str(example), *args,
                          "--save", str(work / "tf-container-{rank}.npz"), env=env, timeout=600)
    assert inside.returncode == 0, inside.stdout + inside.stderr
    bare = cluster.srun("-N", "2", "-n", "4", "--horovod=on", tf_python, str(example), *args,
                        "--save", str(work / "tf-bare-{rank}.npz"), timeout=600)
    assert bare.returncode == 0, bare.stdout + bare.stderr
    import numpy as np
    reference = np.load(work / "tf-bare-0.npz")
    for rank in range(4):
        for kind in ("container", "bare"):
            got = np.load(work / ("tf-%s-%d.npz" % (kind, rank)))
            assert sorted(got.files) == sorted(reference.files)
            for key in reference.files:
                assert np.array_equal(got[key], reference[key]), (kind, rank, key)


def test_oci_runtime_wrapper_for_slurm_container(cluster, work):
    """Slurm's --container (oci.conf RunTimeRun, 23.02+; Slurm 22.05 here
    cannot run it with several tasks per node): tandem-oci-run edits the
    bundle Slurm would hand to runc and runs runc. Checked with a real runc
    and a bundle as Slurm makes it (the task's environment in process.env,
    the image as root, read-only): the engine loads at the host's path, the
    packages go before the image's own PYTHONPATH, the host's PID namespace."""
    if shutil.which("runc") is None:
        pytest.skip("runc is not installed: contrib/install-deps.sh")
    img = image("bullseye")
    bundle = work / "oci-bundle"
    bundle.mkdir()
    subprocess.run(["runc", "spec"], cwd=bundle, check=True)
    config = json.loads((bundle / "config.json").read_text())
    config["root"] = {"path": img, "readonly": True}
    config["process"]["terminal"] = False
    config["process"]["args"] = ["python3", "-c",
                                 "import os, tandem; from tandem import _library; "
                                 "print('ENGINE', _library.library().loaded_file()); "
                                 "print('PYTHONPATH', os.environ['PYTHONPATH']); "
                                 "print('PIDNS', os.readlink('/proc/self/ns/pid'))"]
    engine_dir = os.path.dirname(cluster.engine)
    config["process"]["env"] += ["TANDEM_LIBRARY=%s" % cluster.engine,
                                 "TANDEM_PYTHONPATH=%s" % cluster.python_dir,
                                 "LD_PRELOAD=%s/libtandem-preload.so" % engine_dir,
                                 "PYTHONPATH=/image/own"]
    (bundle / "config.json").write_text(json.dumps(config))
    wrapper = cluster.build / "tools" / "tandem-oci-run"
    r = subprocess.run([str(wrapper), "runc", "run", "-b", str(bundle), "tandem-oci-%d" % os.getpid()],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ENGINE %s" % os.path.realpath(cluster.engine) in r.stdout, r.stdout
    assert "PYTHONPATH %s:/image/own" % cluster.python_dir in r.stdout, r.stdout
    assert "PIDNS %s" % os.readlink("/proc/self/ns/pid") in r.stdout, r.stdout
