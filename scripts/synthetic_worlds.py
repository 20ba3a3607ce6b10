"""Small deterministic environments that write AgentWorldBench rows.

Three simulators, one per domain family the tiny trained world model learns:

- `Shell` (terminal): a shell over a virtual file system (`ls`, `cd`, `pwd`,
  `mkdir`, `touch`, `echo`, `echo … > file`, `cat`, `rm`), each observation
  the command's output followed by the next prompt line;
- `PhoneScreen` (android): a settings screen of switches or a messaging
  screen, as uiautomator XML (`<hierarchy>` of `<node>`s with `bounds`),
  driven by AndroidWorld JSON actions (`click` by coordinates,
  `input_text`);
- `FormPage` (web): a sign-up form as a BrowserGym accessibility tree
  (`[bid] role 'name', properties`), driven by BrowserGym actions
  (`fill('bid', 'text')`, `click('bid')`).

Every trajectory is drawn from a seeded `random.Random`, so a seed gives the
same rows. Rows follow the AgentWorldBench JSONL layout (`task`, `id`,
`prompt[]`, `response[]`, `current_prompt`, `system_str`, `turn_idx`,
`total_turns`; responses start with `**Environment Observation:**`), with
turn prompts in the layout of the benchmark's rows: GUI turns carry the
current state, text turns carry the initial state in turn 1 only.

Standard library only: `python3 scripts/synthetic_worlds.py OUT_DIR [N]`
writes `OUT_DIR/{terminal,android,web}_test.jsonl` with N trajectories each.
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path

MARKER = "**Environment Observation:**\n"

SYSTEM = {
    "terminal": (
        "# Role\n\nYou simulate a Linux shell (bash) in a sandbox. You see the earlier "
        "turns, then the agent's next command. Reply with what the terminal shows after "
        "it: the command's output, then the next prompt line.\n\n# Answer\n\nReason "
        "briefly, then give the prediction inside one closed "
        "<predicted_observation></predicted_observation> block."
    ),
    "android": (
        "# Role\n\nYou simulate an Android phone. The state is the screen's view "
        "hierarchy as uiautomator XML. You see the earlier turns, then the agent's "
        "next action. Reply with the hierarchy after it.\n\n# Rules\n\n- Keep the "
        "format of earlier observations exactly.\n- Change only what the action "
        "changes.\n\n# Answer\n\nReason briefly, then give the prediction inside one "
        "closed <predicted_observation></predicted_observation> block."
    ),
    "web": (
        "# Role\n\nYou simulate a web browser. The state is the page's accessibility "
        "tree as BrowserGym writes it. You see the earlier turns, then the agent's "
        "next action. Reply with the tree after it.\n\n# Rules\n\n- Keep the format of "
        "earlier observations exactly.\n- Change only what the action changes.\n\n"
        "# Answer\n\nReason briefly, then give the prediction inside one closed "
        "<predicted_observation></predicted_observation> block."
    ),
}

FIRST = ["Ana", "Ben", "Chen", "Dara", "Eli", "Farah", "Gus", "Hana", "Ivo", "Jun",
         "Kai", "Lena", "Mo", "Nia", "Omar", "Pia", "Quinn", "Rosa", "Sami", "Tess"]
LAST = ["Ruiz", "Okafor", "Lind", "Sato", "Moreau", "Novak", "Haddad", "Berg",
        "Costa", "Weiss", "Park", "Silva", "Dubois", "Kaur", "Ito", "Meyer"]
WORDS = ["milk", "report", "draft", "notes", "budget", "meeting", "photos", "backup",
         "plan", "ideas", "list", "todo", "review", "summary", "trip", "garden",
         "invoice", "letter", "recipe", "slides", "music", "books", "tasks", "data"]
PHRASES = ["see you at 6", "on my way", "thanks!", "call me later", "running late",
           "sounds good", "where are you?", "lunch tomorrow?", "got it", "be right there",
           "happy birthday", "can you send the file?", "meeting moved to 3", "ok"]


@dataclass
class Turn:
    """One step: the agent's action and what the environment showed after it."""

    action: str
    fence: str  # the code fence label of the action block
    observation: str
    note: str  # one sentence of what the action does (the reasoning target)
    state_before: str


@dataclass
class Trajectory:
    domain: str
    goal: str
    initial: str
    turns: list[Turn] = field(default_factory=list)


# ---------------------------------------------------------------- terminal --


def not_a_file(start: str, name: str, is_dir: bool) -> tuple[str, str]:
    """The shell's error (beginning `start`) and the note for `name`, which
    is a directory or does not exist."""
    if is_dir:
        return f"{start}: Is a directory", f"{name} is a directory."
    return f"{start}: No such file or directory", f"{name} does not exist."


class Shell:
    """A bash-like shell over an in-memory tree rooted at /home/dev.

    Directories are dicts, files are strings. `run` returns the output text
    (possibly empty) and a one-sentence note.
    """

    HOME = ["home", "dev"]

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.root: dict = {"home": {"dev": {}}}
        self.cwd = list(self.HOME)
        home = self.dir(self.cwd)
        for name in rng.sample(["src", "docs", "logs", "archive", "tmp", "music"], rng.randint(1, 3)):
            home[name] = {}
        for name in rng.sample(WORDS, rng.randint(1, 3)):
            home[name + rng.choice([".txt", ".md", ".csv"])] = " ".join(rng.sample(WORDS, 3))

    def dir(self, path: list[str]) -> dict:
        node = self.root
        for part in path:
            node = node[part]
        return node

    def cwd_text(self) -> str:
        if self.cwd[:2] == self.HOME:
            return "~" + "".join("/" + p for p in self.cwd[2:])
        return "/" + "/".join(self.cwd)

    def prompt(self) -> str:
        return f"dev@sandbox:{self.cwd_text()}$"

    def listing(self) -> str:
        names = sorted(self.dir(self.cwd))
        return "  ".join(names)

    def run(self, command: str) -> tuple[str, str]:
        here = self.dir(self.cwd)
        words = command.split(" ")
        verb, args = words[0], words[1:]
        if verb == "ls":
            return self.listing(), "It lists the current directory."
        if verb == "pwd":
            return "/" + "/".join(self.cwd), "It prints the working directory."
        if verb == "cd":
            target = args[0]
            if target == "..":
                if len(self.cwd) > 1:
                    self.cwd.pop()
                return "", "It goes up one directory; the prompt changes."
            if isinstance(here.get(target), dict):
                self.cwd.append(target)
                return "", f"It enters {target}; the prompt changes."
            if target in here:
                return f"bash: cd: {target}: Not a directory", f"{target} is a file."
            return f"bash: cd: {target}: No such file or directory", f"{target} does not exist."
        if verb == "mkdir":
            name = args[0]
            if name in here:
                return f"mkdir: cannot create directory '{name}': File exists", f"{name} exists already."
            here[name] = {}
            return "", f"It creates the directory {name} silently."
        if verb == "touch":
            here.setdefault(args[0], "")
            return "", f"It creates {args[0]} silently."
        if verb in ("rm", "cat"):
            name = args[0]
            if not isinstance(here.get(name), str):
                start = f"rm: cannot remove '{name}'" if verb == "rm" else f"cat: {name}"
                return not_a_file(start, name, name in here)
            if verb == "cat":
                return here[name], f"It prints {name}."
            del here[name]
            return "", f"It removes {name} silently."
        if verb == "echo":
            if ">" in args:
                at = args.index(">")
                text, name = " ".join(args[:at]), args[at + 1]
                if isinstance(here.get(name), dict):
                    return f"bash: {name}: Is a directory", f"{name} is a directory."
                here[name] = text
                return "", f"It writes the text to {name} silently."
            return " ".join(args), "It prints its arguments."
        return f"bash: {verb}: command not found", f"{verb} is not a command."

    def observation(self, output: str) -> str:
        return (output + "\n" if output else "") + self.prompt()

    def next_command(self) -> str:
        rng = self.rng
        here = self.dir(self.cwd)
        files = [n for n, v in here.items() if isinstance(v, str)]
        dirs = [n for n, v in here.items() if isinstance(v, dict)]
        new = rng.choice(WORDS) + rng.choice(["", "2", "_old", "_new"])
        kind = rng.choices(
            ["ls", "pwd", "cd", "cd..", "mkdir", "touch", "rm", "cat", "echo", "write", "bad"],
            [4, 1, 3, 1, 2, 2, 2, 3, 2, 3, 1],
        )[0]
        if kind == "ls":
            return "ls"
        if kind == "pwd":
            return "pwd"
        if kind == "cd":
            return "cd " + (rng.choice(dirs) if dirs and rng.random() < 0.8 else new)
        if kind == "cd..":
            return "cd .."
        if kind == "mkdir":
            return "mkdir " + (rng.choice(dirs) if dirs and rng.random() < 0.2 else new)
        if kind == "touch":
            return "touch " + new + ".txt"
        if kind == "rm":
            return "rm " + (rng.choice(files) if files and rng.random() < 0.8 else new + ".txt")
        if kind == "cat":
            return "cat " + (rng.choice(files) if files and rng.random() < 0.85 else new + ".md")
        if kind == "echo":
            return "echo " + " ".join(rng.sample(WORDS, rng.randint(1, 4)))
        if kind == "write":
            name = rng.choice(files) if files and rng.random() < 0.3 else new + ".txt"
            return "echo " + " ".join(rng.sample(WORDS, rng.randint(1, 4))) + " > " + name
        return rng.choice(["sl", "gti status", "pyhton3"])


def terminal_trajectory(rng: random.Random) -> Trajectory:
    shell = Shell(rng)
    home = ", ".join(sorted(shell.dir(shell.cwd)))
    initial = f"{shell.prompt()} ls\n{shell.listing()}\n{shell.prompt()}"
    goal = rng.choice([
        "Tidy up the home directory.", "Make a folder for the " + rng.choice(WORDS) + " files.",
        "Write down today's " + rng.choice(WORDS) + ".", "Find out what is in " + home + ".",
    ])
    t = Trajectory("terminal", goal, initial)
    for _ in range(rng.randint(2, 5)):
        before = shell.observation("")
        command = shell.next_command()
        output, note = shell.run(command)
        t.turns.append(Turn(command, "bash", shell.observation(output), note, before))
    return t


# ----------------------------------------------------------------- android --

PACKAGE = "com.android.settings"
ROW_TOP, ROW_HEIGHT = 320, 160


def attrs(**a: str) -> str:
    order = ["index", "text", "resource-id", "class", "package", "content-desc",
             "checkable", "checked", "clickable", "focused", "bounds"]
    return " ".join(f'{k}="{a[k]}"' for k in order if k in a)


def bounds(x0: int, y0: int, x1: int, y1: int) -> str:
    return f"[{x0},{y0}][{x1},{y1}]"


class PhoneScreen:
    """A settings screen of switches, or a messaging thread, as uiautomator XML."""

    SETTINGS = ["Wi-Fi", "Bluetooth", "Airplane mode", "Mobile data", "Hotspot",
                "Dark theme", "Location", "Do not disturb", "Auto-rotate", "Battery saver",
                "NFC", "Night light"]

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.kind = rng.choice(["settings", "messages"])
        if self.kind == "settings":
            self.package = PACKAGE
            self.title = rng.choice(["Network & internet", "Display", "Connected devices", "Quick settings"])
            names = rng.sample(self.SETTINGS, rng.randint(2, 4))
            self.switches = [[n, rng.random() < 0.5] for n in names]
        else:
            self.package = "com.example.messages"
            self.title = rng.choice(FIRST) + " " + rng.choice(LAST)
            self.messages = [rng.choice(PHRASES) for _ in range(rng.randint(0, 2))]
            self.draft = ""
            self.focused = False

    def xml(self) -> str:
        p = self.package
        nodes = [f'<node {attrs(index="0", text=self.title, **{"resource-id": "android:id/title"}, **{"class": "android.widget.TextView"}, clickable="false", bounds=bounds(48, 160, 1032, 280))} />']
        if self.kind == "settings":
            for i, (name, on) in enumerate(self.switches):
                y = ROW_TOP + ROW_HEIGHT * i
                label = f'<node {attrs(index="0", text=name, **{"resource-id": "android:id/title"}, **{"class": "android.widget.TextView"}, clickable="false", bounds=bounds(48, y + 40, 800, y + 120))} />'
                switch = f'<node {attrs(index="1", text="", **{"resource-id": "android:id/switch_widget"}, **{"class": "android.widget.Switch"}, checkable="true", checked=str(on).lower(), clickable="true", bounds=bounds(912, y + 40, 1032, y + 120))} />'
                nodes.append(f'<node {attrs(index=str(i + 1), text="", **{"resource-id": ""}, **{"class": "android.widget.LinearLayout"}, clickable="false", bounds=bounds(0, y, 1080, y + ROW_HEIGHT))}>{label}{switch}</node>')
        else:
            for i, text in enumerate(self.messages):
                y = ROW_TOP + ROW_HEIGHT * i
                nodes.append(f'<node {attrs(index=str(i + 1), text=text, **{"resource-id": "com.example.messages:id/bubble"}, **{"class": "android.widget.TextView"}, clickable="false", bounds=bounds(300, y + 20, 1032, y + 140))} />')
            n = len(self.messages) + 1
            nodes.append(f'<node {attrs(index=str(n), text=self.draft, **{"resource-id": "com.example.messages:id/compose"}, **{"class": "android.widget.EditText"}, clickable="true", focused=str(self.focused).lower(), bounds=bounds(48, 2200, 880, 2320))} />')
            nodes.append(f'<node {attrs(index=str(n + 1), text="", **{"resource-id": "com.example.messages:id/send"}, **{"class": "android.widget.ImageButton"}, **{"content-desc": "Send"}, clickable="true", bounds=bounds(912, 2200, 1032, 2320))} />')
        root = f'<node {attrs(index="0", text="", **{"resource-id": ""}, **{"class": "android.widget.FrameLayout"}, package=p, bounds=bounds(0, 0, 1080, 2400))}>{"".join(nodes)}</node>'
        return "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>\n" + f'<hierarchy rotation="0">{root}</hierarchy>'

    def step(self) -> tuple[str, str]:
        """Draws an action, applies it; returns (action JSON, note)."""
        rng = self.rng
        if self.kind == "settings":
            i = rng.randrange(len(self.switches) + 1)
            if i == len(self.switches):
                y = 220
                action = {"action_type": "click", "x": 540, "y": y}
                return json.dumps(action), "The title is not clickable; nothing changes."
            y = ROW_TOP + ROW_HEIGHT * i + 80
            self.switches[i][1] = not self.switches[i][1]
            state = "on" if self.switches[i][1] else "off"
            return json.dumps({"action_type": "click", "x": 972, "y": y}), f"It turns {self.switches[i][0]} {state}."
        choice = rng.random()
        if choice < 0.45 or (not self.draft and choice < 0.8):
            text = rng.choice(PHRASES)
            self.draft, self.focused = text, True
            return json.dumps({"action_type": "input_text", "text": text}), "It types into the message box."
        if choice < 0.9:
            if not self.draft:
                return json.dumps({"action_type": "click", "x": 972, "y": 2260}), "The message box is empty; nothing is sent."
            self.messages.append(self.draft)
            self.draft = ""
            return json.dumps({"action_type": "click", "x": 972, "y": 2260}), "It sends the message; the box clears."
        self.focused = True
        return json.dumps({"action_type": "click", "x": 464, "y": 2260}), "It focuses the message box."


def android_trajectory(rng: random.Random) -> Trajectory:
    screen = PhoneScreen(rng)
    goal = (f"Change some settings in {screen.title}." if screen.kind == "settings"
            else f"Reply to {screen.title}.")
    t = Trajectory("android", goal, screen.xml())
    for _ in range(rng.randint(2, 3)):
        before = screen.xml()
        action, note = screen.step()
        t.turns.append(Turn(action, "json", screen.xml(), note, before))
    return t


# --------------------------------------------------------------------- web --


class FormPage:
    """A sign-up form in a BrowserGym accessibility tree."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.site = rng.choice(["Corner Club", "Tidewell", "Larkmail", "Quillpost", "Harbor Gym"])
        base = rng.randrange(10, 200)
        self.fields = []  # [bid, name, value, required]
        names = ["Full name", "Email"] + rng.sample(["City", "Phone", "Company", "Username"], rng.randint(0, 2))
        for i, name in enumerate(names):
            self.fields.append([str(base + 2 * i + 2), name, "", i < 2])
        self.box = [str(base + 2 * len(names) + 2), rng.choice(["Subscribe to newsletter", "I accept the terms"]), False]
        self.submit = str(base + 2 * len(names) + 4)
        self.heading = str(base)
        self.focus = None
        self.error = None
        self.done = False
        self.person = (rng.choice(FIRST), rng.choice(LAST))

    def tree(self) -> str:
        if self.done:
            name = self.fields[0][2]
            return (f"RootWebArea 'Welcome – {self.site}', focused\n"
                    f"\t[{int(self.submit) + 10}] heading 'Thanks, {name}', visible\n"
                    f"\t[{int(self.submit) + 11}] StaticText 'We sent a confirmation to {self.fields[1][2]}'")
        lines = [f"RootWebArea 'Sign up – {self.site}', focused",
                 f"\t[{self.heading}] heading 'Create your account', visible"]
        for bid, name, value, required in self.fields:
            props = ["clickable", "visible"] + (["focused"] if self.focus == bid else []) + (["required"] if required else [])
            tail = f", value='{value}'" if value else ""
            lines.append(f"\t[{bid}] textbox '{name}', {', '.join(props)}{tail}")
        bid, name, checked = self.box
        props = ["clickable", "visible"] + (["focused"] if self.focus == bid else [])
        lines.append(f"\t[{bid}] checkbox '{name}', {', '.join(props)}, checked='{str(checked).lower()}'")
        props = ["clickable", "visible"] + (["focused"] if self.focus == self.submit else [])
        lines.append(f"\t[{self.submit}] button 'Sign up', {', '.join(props)}")
        if self.error:
            lines.append(f"\t[{int(self.submit) + 2}] StaticText '{self.error}'")
        return "\n".join(lines)

    def value_for(self, name: str) -> str:
        first, last = self.person
        return {
            "Full name": f"{first} {last}",
            "Email": f"{first.lower()}.{last.lower()}@example.com",
            "City": self.rng.choice(["Lyon", "Osaka", "Porto", "Quito", "Oslo", "Accra"]),
            "Phone": "+1 555 0" + str(self.rng.randrange(100, 999)),
            "Company": self.rng.choice(["Acme", "Globex", "Initech", "Umbrella"]),
            "Username": first.lower() + str(self.rng.randrange(10, 99)),
        }[name]

    def step(self) -> tuple[str, str]:
        rng = self.rng
        if self.done:
            return "go_back()", "The page does not change: go_back is not simulated here."
        empty = [f for f in self.fields if not f[2]]
        r = rng.random()
        if r < 0.6 and empty:
            f = rng.choice(empty)
            f[2] = self.value_for(f[1])
            self.focus = f[0]
            return f"fill('{f[0]}', '{f[2]}')", f"It fills {f[1]}."
        if r < 0.8:
            self.box[2] = not self.box[2]
            self.focus = self.box[0]
            return f"click('{self.box[0]}')", "It toggles the checkbox."
        self.focus = self.submit
        missing = [f[1] for f in self.fields if f[3] and not f[2]]
        if missing:
            self.error = f"Please fill in {missing[0]}"
            return f"click('{self.submit}')", f"{missing[0]} is required: an error shows."
        self.done = True
        return f"click('{self.submit}')", "The form is complete: a welcome page loads."


def web_trajectory(rng: random.Random) -> Trajectory:
    page = FormPage(rng)
    t = Trajectory("web", f"Sign up on {page.site}.", page.tree())
    for _ in range(rng.randint(2, 5)):
        before = page.tree()
        action, note = page.step()
        t.turns.append(Turn(action, "python", page.tree(), note, before))
    return t


GENERATORS = {"terminal": terminal_trajectory, "android": android_trajectory, "web": web_trajectory}


# -------------------------------------------------------------------- rows --


def turn_prompt(t: Trajectory, k: int) -> str:
    """The user message of turn k (1-based), as the benchmark's rows write it."""
    turn = t.turns[k - 1]
    head = f"### Turn {k}\n"
    if k == 1:
        head += f"**Task Instruction:**\n{t.goal}\n\n"
    if t.domain == "terminal":
        if k == 1:
            head += f"**Initial State:**\n{t.initial}\n\n"
    else:
        head += f"**Current State:**\n{turn.state_before}\n\n"
    return head + f"**Action:**\n```{turn.fence}\n{turn.action}\n```"


def rows(t: Trajectory, trajectory_id: int) -> list[dict]:
    """One AgentWorldBench row per turn of `t`."""
    prompts = [turn_prompt(t, k) for k in range(1, len(t.turns) + 1)]
    responses = [MARKER + turn.observation for turn in t.turns]
    task = "agentworld/terminal" if t.domain == "terminal" else t.domain
    return [
        {
            "task": task,
            "id": trajectory_id * 100 + k,
            "prompt": prompts,
            "response": responses,
            "current_prompt": prompts[k - 1],
            "system_str": SYSTEM[t.domain],
            "turn_idx": k,
            "total_turns": len(t.turns),
        }
        for k in range(1, len(t.turns) + 1)
    ]


def answer(t: Trajectory, k: int, thinking: bool) -> str:
    """The assistant text the model is trained to write for turn k, after
    the generation prompt (`<think>\\n` when thinking, else the closed empty
    block the template writes)."""
    turn = t.turns[k - 1]
    body = f"<predicted_observation>\n{turn.observation}\n</predicted_observation>"
    return f"{turn.note}\n</think>\n\n{body}" if thinking else body


def trajectories(domain: str, seed: int, n: int) -> list[Trajectory]:
    rng = random.Random(f"{domain}:{seed}")
    return [GENERATORS[domain](rng) for _ in range(n)]


def main() -> None:
    out = Path(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    out.mkdir(parents=True, exist_ok=True)
    for domain in GENERATORS:
        with open(out / f"{domain}_test.jsonl", "w", encoding="utf-8") as f:
            for i, t in enumerate(trajectories(domain, 1, n)):
                for row in rows(t, 9_000_000 + i):
                    f.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
