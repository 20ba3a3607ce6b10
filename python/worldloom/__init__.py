"""Worldloom from Python: open the studio, record an agent loop, load trajectories.

The package ships the ``worldloom`` command (installed on the environment's
``PATH``) and drives it:

- :func:`open` serves the studio on ``127.0.0.1`` in the background
  (``worldloom serve``) and returns a :class:`Studio` with its URL; in a
  notebook the studio shows inline.
- :class:`Recorder` appends an agent loop's steps to a trajectory of a
  workspace as they happen (``worldloom record``); a studio with that
  workspace open shows each step at once.
- :func:`load` reads trajectories (any file ``worldloom import`` reads, or a
  workspace) as plain Python objects: the native JSON's trajectories as
  dicts (``docs/formats.md``, "Native format").

Example, an agent loop that records its steps::

    import worldloom

    rec = worldloom.Recorder("runs.worldloom", domain="terminal",
                             representation="text", goal="list the files",
                             observation="$ ")
    for action in ["ls", "ls -a"]:
        observation = env.step(action)            # the real environment
        predicted = world_model(action)           # optional
        rec.step(action, observation, predicted=predicted)
    rec.close()
    studio = worldloom.open("runs.worldloom")
    print(studio.url)
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, List, Optional, Sequence, Union

__all__ = [
    "WorldloomError",
    "Studio",
    "Recorder",
    "RecordedStep",
    "open",
    "load",
    "binary",
]

PathLike = Union[str, "os.PathLike[str]"]


class WorldloomError(RuntimeError):
    """The ``worldloom`` command refused a request; the message is its own."""


def binary() -> str:
    """Path of the ``worldloom`` command: ``$WORLDLOOM_BIN``, else the one
    installed with this package (the environment's scripts folder), else the
    first on ``PATH``.

    Raises:
        WorldloomError: when none is found.
    """
    override = os.environ.get("WORLDLOOM_BIN")
    if override:
        return override
    name = "worldloom.exe" if sys.platform == "win32" else "worldloom"
    beside = Path(sysconfig.get_path("scripts")) / name
    if beside.is_file():
        return str(beside)
    found = shutil.which("worldloom")
    if found:
        return found
    raise WorldloomError("the `worldloom` command is not installed (pip install worldloom, or set WORLDLOOM_BIN)")


class Studio:
    """A studio served in the background by ``worldloom serve``.

    Attributes:
        url: the studio's address with its access token
            (``http://127.0.0.1:PORT/?token=…``).
        workspace: the workspace file it has open.
    """

    def __init__(self, process: "subprocess.Popen[str]", url: str, workspace: Path) -> None:
        self._process = process
        self.url = url
        self.workspace = workspace

    @property
    def token(self) -> str:
        """The access token (the ``token`` query parameter of :attr:`url`)."""
        return self.url.split("token=", 1)[1]

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return self.url.split("/?", 1)[0]

    def call(self, command: str, request: Optional[dict] = None) -> Any:
        """Calls a studio API command (``POST /api/COMMAND``, ``docs/api.md``)
        and returns its JSON reply.

        Raises:
            WorldloomError: with the API's error code and message.
        """
        import urllib.error
        import urllib.request

        body = json.dumps(request if request is not None else {}).encode()
        req = urllib.request.Request(
            f"{self.origin}/api/{command}",
            data=body,
            method="POST",
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as e:
            try:
                err = json.loads(e.read())["error"]
                raise WorldloomError(f"{command}: {err['code']}: {err['message']}") from None
            except (ValueError, KeyError):
                raise WorldloomError(f"{command}: HTTP {e.code}") from None

    def close(self) -> None:
        """Stops the server (as Ctrl+C would) and waits for it."""
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGINT)
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        for stream in (self._process.stdout, self._process.stderr):
            if stream is not None:
                stream.close()

    def __enter__(self) -> "Studio":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _repr_html_(self) -> str:
        return f'<iframe src="{self.url}" width="100%" height="720" style="border:0"></iframe>'

    def __repr__(self) -> str:
        return f"Studio(url={self.url!r}, workspace={str(self.workspace)!r})"


def _drain(stream: IO[str]) -> None:
    for _ in stream:
        pass


def open(
    paths_or_workspace: Union[PathLike, Sequence[PathLike], None] = None,
    *,
    workspace: Optional[PathLike] = None,
    port: int = 0,
    timeout: float = 120.0,
) -> Studio:
    """Serves the studio in the background and returns it once it answers.

    Args:
        paths_or_workspace: a workspace file, or trajectory files and folders
            to import (one path or several), as ``worldloom serve`` takes them.
        workspace: the workspace to open (created when missing); default: the
            workspace among the paths, else ``./studio.worldloom``.
        port: the port on ``127.0.0.1``; 0 picks a free one.
        timeout: seconds to wait for the server (imports happen first).

    Raises:
        WorldloomError: the command failed (its error output is the message).
    """
    if paths_or_workspace is None:
        paths: List[str] = []
    elif isinstance(paths_or_workspace, (str, os.PathLike)):
        paths = [os.fspath(paths_or_workspace)]
    else:
        paths = [os.fspath(p) for p in paths_or_workspace]
    args = [binary(), "serve", *paths, "--port", str(port)]
    if workspace is not None:
        args += ["--workspace", os.fspath(workspace)]
    process = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8"
    )
    found: dict = {}
    errors: List[str] = []
    started = threading.Event()

    def read_stdout() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("workspace: "):
                found["workspace"] = line[len("workspace: ") :].strip().removesuffix(" (new)")
            if line.startswith("Worldloom studio: "):
                found["url"] = line[len("Worldloom studio: ") :].strip()
                break
        started.set()
        # The server's later output is read and dropped, so it never blocks on a full pipe.
        _drain(process.stdout)

    def read_stderr() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            errors.append(line.rstrip("\n"))

    threading.Thread(target=read_stdout, daemon=True).start()
    threading.Thread(target=read_stderr, daemon=True).start()
    started.wait(timeout)
    if "url" not in found:
        process.kill()
        process.wait()
        message = "\n".join(e for e in errors if e) or "the studio did not start in time"
        raise WorldloomError(message)
    return Studio(process, found["url"], Path(found.get("workspace", "")))


def _path(path: Optional[PathLike]) -> Optional[str]:
    return None if path is None else os.path.abspath(os.fspath(path))


@dataclass(frozen=True)
class RecordedStep:
    """Where a recorded step landed in the workspace.

    Attributes:
        trajectory_id: the trajectory's workspace id (a decimal string).
        node_id: the state the step led to (0: the first state).
        edge_id: the turn (``None`` for the first state).
    """

    trajectory_id: str
    node_id: int
    edge_id: Optional[int]


class Recorder:
    """Appends an agent loop's steps to a new trajectory of a workspace.

    Each :meth:`step` is one turn: the action, the observation it led to
    and, optionally, a world model's prediction of that observation (stored
    as the state's chosen prediction and scored, so the studio shows real
    and predicted side by side with their fidelity).

    Args:
        workspace: the workspace file (created when missing).
        domain: ``mcp``, ``search``, ``terminal``, ``swe``, ``web``, ``os`` or ``android``.
        representation: how observations are written: ``html``, ``axtree``,
            ``os-xml``, ``os-table``, ``android-xml``, ``json`` or ``text``.
        goal: the agent's task.
        observation: the first observation, before any action.
        screenshot: a PNG or JPEG file of that first screen.
        name: the trajectory's name (default ``recorded-<time>``).

    Raises:
        WorldloomError: a bad domain or representation, or a workspace that
            cannot be opened.
    """

    def __init__(
        self,
        workspace: PathLike,
        domain: str,
        representation: str,
        goal: Optional[str] = None,
        *,
        observation: Optional[str] = None,
        screenshot: Optional[PathLike] = None,
        name: Optional[str] = None,
    ) -> None:
        args = [
            binary(),
            "record",
            "--workspace",
            os.fspath(workspace),
            "--domain",
            domain,
            "--representation",
            representation,
        ]
        if goal is not None:
            args += ["--goal", goal]
        if name is not None:
            args += ["--name", name]
        self.workspace = Path(workspace)
        self.steps: List[RecordedStep] = []
        self._process = subprocess.Popen(
            args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        if observation is not None or screenshot is not None:
            self._send({"observation": observation, "screenshot": _path(screenshot)})

    @property
    def trajectory_id(self) -> Optional[str]:
        """The trajectory's workspace id, once something was recorded."""
        return self.steps[0].trajectory_id if self.steps else None

    def _send(self, line: dict) -> RecordedStep:
        p = self._process
        assert p.stdin is not None and p.stdout is not None
        try:
            p.stdin.write(json.dumps(line) + "\n")
            p.stdin.flush()
            reply = p.stdout.readline()
        except BrokenPipeError:
            reply = ""
        if not reply:
            err = p.stderr.read() if p.stderr is not None else ""
            self.close()
            raise WorldloomError(err.strip() or "`worldloom record` stopped")
        answer = json.loads(reply)
        if "error" in answer:
            raise WorldloomError(answer["error"])
        step = RecordedStep(answer["trajectory_id"], answer["node_id"], answer.get("edge_id"))
        self.steps.append(step)
        return step

    def step(
        self,
        action: str,
        observation: Optional[str],
        predicted: Optional[str] = None,
        screenshot: Optional[PathLike] = None,
    ) -> RecordedStep:
        """Records one step: ``action`` (in the domain's action language),
        the ``observation`` it led to, a world model's ``predicted``
        observation (or raw output with its tags) when there is one, and a
        ``screenshot`` of the new screen (a PNG or JPEG file, kept in the
        workspace and shown beside the panes).

        Raises:
            WorldloomError: the step was not recorded (the message names why);
                the next step is taken from the last state recorded.
        """
        return self._send(
            {
                "action": action,
                "observation": observation,
                "predicted": predicted,
                "screenshot": _path(screenshot),
            }
        )

    def close(self) -> None:
        """Ends the recording."""
        p = self._process
        if p.poll() is None:
            assert p.stdin is not None
            p.stdin.close()
            p.wait(timeout=30)
        for stream in (p.stdin, p.stdout, p.stderr):
            if stream is not None:
                stream.close()

    def __enter__(self) -> "Recorder":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def load(path: PathLike) -> List[dict]:
    """The trajectories of ``path`` (any file or folder ``worldloom import``
    reads, or a workspace: each trajectory as its live tree) as plain
    objects: the native format's trajectories (``id``, ``domain``,
    ``source``, ``goal``, ``nodes`` with ``real`` observations and
    ``predictions``, ``edges`` with ``from``, ``to`` and ``action``).

    Raises:
        WorldloomError: the path does not read (the message names the file
            and line or field).
    """
    done = subprocess.run(
        [binary(), "export", "--format", "native", "-o", "-", os.fspath(path)],
        capture_output=True,
        text=True,
        encoding="utf-8",
    )
    if done.returncode != 0:
        raise WorldloomError(done.stderr.strip().removeprefix("error: "))
    return list(json.loads(done.stdout)["trajectories"])
