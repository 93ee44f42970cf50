#!/usr/bin/python3
"""tandem-bind's output and errors, parsed as a user's script would.

    tandem_bind_test.py TANDEM_BIND FIXTURES_DIR
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

BIN = sys.argv[1] if len(sys.argv) > 1 else "tandem-bind"
FIXTURES = sys.argv[2] if len(sys.argv) > 2 else "."


def run(*args):
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=60)


def plan(*args):
    r = run(*args, "--json")
    if r.returncode != 0:
        raise AssertionError("tandem-bind %s failed: %s" % (" ".join(args), r.stderr))
    return json.loads(r.stdout)


def fixture(name):
    return os.path.join(FIXTURES, name + ".xml")


class TandemBind(unittest.TestCase):
    def test_dgx8_four_tasks_on_socket_one(self):
        p = plan("--topology", fixture("dgx8"), "--tasks", "4", "--gpus", "4-7")
        tasks = p["tasks"]
        self.assertEqual([t["gpus"][0]["pci"] for t in tasks],
                         ["0000:53:00.0", "0000:54:00.0", "0000:63:00.0", "0000:64:00.0"])
        self.assertEqual([t["cpus"] for t in tasks], ["8-9,24-25", "10-11,26-27", "12-13,28-29", "14-15,30-31"])
        self.assertEqual([t["numa"] for t in tasks], [1, 1, 1, 1])
        self.assertEqual([t["nic"]["name"] for t in tasks], ["mlx5_2", "mlx5_2", "mlx5_3", "mlx5_3"])
        self.assertEqual([t["env"]["CUDA_VISIBLE_DEVICES"] for t in tasks], ["4,5,6,7"] * 4)
        self.assertEqual(p["nccl_filter"], {"NCCL_IB_HCA": "=mlx5_2,mlx5_3"})
        self.assertEqual({t["source"]["gpu"] for t in tasks}, {"planner"})

    def test_visible_own_and_membind(self):
        p = plan("--topology", fixture("quad4"), "--tasks", "2", "--gpus", "1,2", "--visible", "own",
                 "--membind", "on")
        self.assertEqual([t["env"]["CUDA_VISIBLE_DEVICES"] for t in p["tasks"]], ["1", "2"])
        self.assertEqual([t["membind"] for t in p["tasks"]], [True, True])
        self.assertEqual([t["numa"] for t in p["tasks"]], [0, 1])

    def test_gpus_per_task_is_reported_as_user_binding(self):
        p = plan("--topology", fixture("tiny4"), "--tasks", "4", "--gpus-per-task", "1")
        self.assertEqual([t["source"]["gpu"] for t in p["tasks"]], ["user"] * 4)
        self.assertNotIn("CUDA_VISIBLE_DEVICES", p["tasks"][0]["env"])
        self.assertEqual([t["cpus"] for t in p["tasks"]], ["0", "0", "1", "1"])

    def test_policy_none(self):
        p = plan("--topology", fixture("dgx8"), "--tasks", "2", "--policy", "none")
        self.assertEqual([t["env"] for t in p["tasks"]], [{}, {}])
        self.assertEqual(p["tasks"][0]["source"], {"gpu": "none", "cpu": "none", "nic": "none"})

    def test_text_output_names_every_part(self):
        r = run("--topology", fixture("quad4"), "--tasks", "1", "--gpus", "3")
        self.assertEqual(r.returncode, 0, r.stderr)
        for needle in ("task 0:", "3(0000:43:00.0)", "cpus   4-7", "numa   1", "mlx5_1",
                       "CUDA_VISIBLE_DEVICES=3", "NCCL_IB_HCA==mlx5_1"):
            self.assertIn(needle, r.stdout)

    def test_live_machine_cpu_only(self):
        p = plan("--tasks", "2")
        self.assertEqual(len(p["tasks"]), 2)
        for t in p["tasks"]:
            self.assertEqual(t["gpus"], [])
            self.assertNotEqual(t["cpus"], "")
            self.assertEqual(t["source"]["cpu"], "planner")
        allowed = sorted(os.sched_getaffinity(0))
        used = set()
        for t in p["tasks"]:
            for part in t["cpus"].split(","):
                a, _, b = part.partition("-")
                used.update(range(int(a), int(b or a) + 1))
        self.assertTrue(used <= set(range(0, max(allowed) + 1)))

    def test_errors(self):
        cases = [
            (["--topology", "/nonexistent.xml"], 1, "cannot read topology file '/nonexistent.xml'"),
            (["--topology", os.path.join(FIXTURES, "generate.py")], 1, "not a valid hwloc XML"),
            (["--topology", fixture("quad4"), "--tasks", "0"], 2, "--tasks: expected a whole number"),
            (["--topology", fixture("quad4"), "--gpus", "7"], 1, "GPU index 7 was given"),
            (["--topology", fixture("quad4"), "--cpus", "3-1"], 1, "runs backwards"),
            (["--topology", fixture("quad4"), "--visible", "some"], 1, "invalid value 'some'"),
            (["--topology", fixture("quad4"), "--frobnicate", "1"], 2, "unknown option '--frobnicate'"),
            (["--topology", fixture("quad4"), "--tasks", "3", "--gpus-per-task", "2"], 2, "needs 6 GPUs"),
        ]
        for args, code, message in cases:
            r = run(*args)
            self.assertEqual(r.returncode, code, (args, r.stderr))
            self.assertIn(message, r.stderr, args)
            self.assertEqual(r.stdout, "", args)
        with tempfile.NamedTemporaryFile(suffix=".xml") as empty:
            r = run("--topology", empty.name)
            self.assertEqual(r.returncode, 1)
            self.assertIn("not a valid hwloc XML", r.stderr)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=2)
