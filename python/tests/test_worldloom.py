"""Tests of the installed `worldloom` package (run with the venv's python
after `pip install worldloom-*.whl`; scripts/test-python.sh does both).

Records three steps through `Recorder`, reads them back through the studio
API of `open()`, and loads them with `load()`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import unittest
from pathlib import Path

import worldloom

REPO = Path(__file__).resolve().parents[2]


def one_pixel_png() -> bytes:
    """A 1×1 PNG, written here (PNG spec: signature, IHDR, IDAT, IEND)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00\x10\x20\x30")
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


class InstalledPackage(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="worldloom-py-"))
        self.workspace = self.dir / "loop.worldloom"
        self.png = self.dir / "screen.png"
        self.png.write_bytes(one_pixel_png())

    def tearDown(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_the_command_is_on_the_environments_path(self) -> None:
        scripts = Path(sysconfig.get_path("scripts"))
        self.assertEqual(Path(worldloom.binary()), scripts / "worldloom")
        out = subprocess.run([worldloom.binary(), "--version"], capture_output=True, text=True, check=True)
        self.assertRegex(out.stdout.strip(), r"^worldloom \d+\.\d+\.\d+ \(commit ([0-9a-f]{12}|unknown)\)$")

    def record_three_steps(self) -> worldloom.Recorder:
        rec = worldloom.Recorder(
            self.workspace,
            domain="terminal",
            representation="text",
            goal="find the notes",
            observation="user@box:~$ ",
        )
        rec.step("ls", "notes.txt  src", predicted="notes.txt", screenshot=self.png)
        rec.step("cat notes.txt", "buy milk")
        rec.step("pwd", "/home/user", predicted="/home/user")
        rec.close()
        return rec

    def test_recorded_steps_read_back_through_the_studio_api_and_load(self) -> None:
        rec = self.record_three_steps()
        self.assertEqual([s.node_id for s in rec.steps], [0, 1, 2, 3])
        self.assertEqual([s.edge_id for s in rec.steps], [None, 0, 1, 2])
        tid = rec.trajectory_id
        assert tid is not None

        with worldloom.open(self.workspace) as studio:
            self.assertTrue(studio.url.startswith("http://127.0.0.1:"), studio.url)
            self.assertIn("token=", studio.url)
            self.assertIn(studio.url, studio._repr_html_())
            listed = studio.call("list_trajectories", {})["trajectories"]
            self.assertEqual([t["id"] for t in listed], [tid])
            self.assertEqual(listed[0]["domain"], "terminal")
            self.assertEqual(listed[0]["goal"], "find the notes")
            self.assertEqual(listed[0]["prediction_count"], 2)
            turn = lambda node: studio.call(  # noqa: E731
                "get_turn", {"trajectory_id": tid, "node_id": node, "prediction_id": None}
            )
            first, last = turn(1), turn(3)
            self.assertEqual(first["action"]["raw"], "ls")
            self.assertEqual(first["real_screenshot"]["width_px"], 1)
            self.assertIsNone(last["real_screenshot"])
            self.assertEqual(last["action"]["raw"], "pwd")
            # The recorded predictions were scored against the real observations.
            self.assertEqual(last["fidelity"]["overall"], 1.0)
            self.assertGreater(first["fidelity"]["overall"], 0.0)
            self.assertLess(first["fidelity"]["overall"], 1.0)

        trajectories = worldloom.load(self.workspace)
        self.assertEqual(len(trajectories), 1)
        t = trajectories[0]
        self.assertEqual(t["domain"], "terminal")
        self.assertEqual([n["real"]["text"] for n in t["nodes"]], ["user@box:~$ ", "notes.txt  src", "buy milk", "/home/user"])
        self.assertEqual([e["action"]["raw"] for e in t["edges"]], ["ls", "cat notes.txt", "pwd"])
        self.assertEqual(t["nodes"][1]["predictions"][0]["observation"], "notes.txt")

    def test_a_bad_step_is_refused_by_name_and_recording_goes_on(self) -> None:
        rec = worldloom.Recorder(self.workspace, domain="terminal", representation="text")
        rec.step("ls", "a")
        with self.assertRaisesRegex(worldloom.WorldloomError, "action: empty"):
            rec.step("  ", "b")
        step = rec.step("pwd", "/")
        self.assertEqual((step.node_id, step.edge_id), (2, 1))
        rec.close()
        with self.assertRaisesRegex(worldloom.WorldloomError, "unknown domain `moon`"):
            worldloom.Recorder(self.workspace, domain="moon", representation="text").step("x", "y")

    def test_open_imports_the_samples_and_load_reads_a_trajectory_file(self) -> None:
        with worldloom.open(REPO / "samples" / "web", workspace=self.workspace) as studio:
            listed = studio.call("list_trajectories", {})["trajectories"]
            self.assertEqual(len(listed), 3)
        loaded = worldloom.load(REPO / "samples" / "web" / "agentlab_larkmail-reply_6steps.json")
        self.assertEqual(len(loaded), 1)
        self.assertEqual(loaded[0]["domain"], "web")
        with self.assertRaises(worldloom.WorldloomError):
            worldloom.load(self.dir / "missing.json")


if __name__ == "__main__":
    os.chdir(REPO)
    unittest.main(argv=[sys.argv[0], "-v"])
