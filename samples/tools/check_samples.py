"""Check the GUI samples: every XML parses, every JSON/JSONL line loads, every
trajectory has at least 4 turns and a no-op (two identical consecutive states),
every predictions sidecar covers steps 1..n with exactly one prediction equal to
the real state per engine, web axtree and pruned_html agree on their bids, and a
folder's step_NN.png screenshots (if any) are small PNGs of the screen's shape.

Usage, from the repository root: python3 samples/tools/check_samples.py
Exits non-zero with a message naming the file on the first failure.
"""

import glob
import json
import os
import re
import sys
import xml.dom.minidom
from html.parser import HTMLParser

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OBS_RE = re.compile(r"<think>.*?</think>\n<predicted_observation>\n(.*)\n</predicted_observation>\Z", re.S)


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def load_jsonl(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                fail(f"{path}:{n}: {e}")
    return rows


def check_predictions(path, reals, label):
    """reals: dict engine -> list of real observations (index = step)."""
    rows = load_jsonl(path)
    by_engine = {}
    for r in rows:
        for k in ("step", "engine", "seed", "output"):
            if k not in r:
                fail(f"{path}: row without `{k}`")
        m = OBS_RE.match(r["output"])
        if not m:
            fail(f"{path}: step {r['step']}: output is not <think>…</think> + <predicted_observation>")
        by_engine.setdefault(r["engine"], {})[r["step"]] = m.group(1)
    for engine, preds in by_engine.items():
        real = reals[engine]
        if sorted(preds) != list(range(1, len(real))):
            fail(f"{path}: engine {engine} predicts steps {sorted(preds)}, expected 1..{len(real) - 1}")
        exact = [s for s, p in preds.items() if p == real[s]]
        if len(exact) != 1:
            fail(f"{path}: engine {engine}: {len(exact)} exact predictions (steps {exact}), expected exactly 1")
        print(f"  {label} [{engine}]: {len(preds)} predictions, exact at step {exact[0]}")
    return by_engine


def has_noop(states):
    return any(states[i] == states[i + 1] for i in range(len(states) - 1))


class BidCollector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.bids = set()

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k == "bid":
                self.bids.add(v)


def check_web():
    for path in sorted(glob.glob(os.path.join(ROOT, "web", "*.json"))):
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        steps = doc["steps"]
        if len(steps) < 5:
            fail(f"{path}: {len(steps)} states, need at least 5 (4 turns)")
        for s in steps:
            ax_bids = set(re.findall(r"^\t*\[(\w+)\] ", s["axtree_txt"], re.M))
            p = BidCollector()
            p.feed(s["pruned_html"])
            missing = ax_bids - p.bids
            if missing:
                fail(f"{path}: step {s['step']}: bids in axtree_txt but not in pruned_html: {sorted(missing)}")
            focused = s["focused_element_bid"]
            lines = [ln for ln in s["axtree_txt"].split("\n") if ln.lstrip("\t").startswith(f"[{focused}] ")]
            if lines and ", focused" not in lines[0]:
                fail(f"{path}: step {s['step']}: focused_element_bid {focused} is not marked focused in axtree_txt")
            action = s["action"]
            if action:
                for bid in re.findall(r"^(?:click|dblclick|fill|select_option|hover|press|focus|clear)\('(\w+)'", action):
                    if bid not in p.bids:
                        fail(f"{path}: step {s['step']}: action {action} names a bid not on the page")
        if not has_noop([s["axtree_txt"] for s in steps]):
            fail(f"{path}: no no-op turn")
        stem = os.path.splitext(path)[0]
        reals = {"sample-author": [s["axtree_txt"] for s in steps],
                 "sample-author-html": [s["pruned_html"] for s in steps]}
        check_predictions(stem + ".predictions.jsonl", reals, os.path.basename(path))


def parse_xml(path_or_text, label):
    try:
        if os.path.exists(path_or_text):
            xml.dom.minidom.parse(path_or_text)
        else:
            xml.dom.minidom.parseString(path_or_text.encode("utf-8"))
    except Exception as e:  # noqa: BLE001 - report any parser error with its source
        fail(f"{label}: XML does not parse: {e}")


def check_screenshots(folder, count, screen):
    """A folder's step_NN.png screenshots, if any: one per state, each a PNG
    (signature and IHDR) of the screen's aspect ratio and at most 8 KB."""
    pngs = sorted(glob.glob(os.path.join(folder, "step_*.png")))
    if not pngs:
        return
    if len(pngs) != count:
        fail(f"{folder}: {len(pngs)} screenshots for {count} states")
    for p in pngs:
        with open(p, "rb") as f:
            data = f.read()
        if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
            fail(f"{p}: not a PNG")
        w, h = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        if screen and w * screen["height"] != h * screen["width"]:
            fail(f"{p}: {w}x{h} is not the screen's aspect ratio ({screen['width']}x{screen['height']})")
        if len(data) > 8192:
            fail(f"{p}: {len(data)} bytes; sample screenshots stay under 8 KB")
    print(f"  {os.path.basename(folder)}: {len(pngs)} screenshots")


def check_folders(domain):
    for folder in sorted(glob.glob(os.path.join(ROOT, domain, "*_trajectory"))):
        xmls = sorted(glob.glob(os.path.join(folder, "step_*.xml")))
        states = []
        for p in xmls:
            parse_xml(p, p)
            with open(p, encoding="utf-8") as f:
                states.append(f.read())
        if len(states) < 5:
            fail(f"{folder}: {len(states)} states, need at least 5")
        if not has_noop(states):
            fail(f"{folder}: no no-op turn")
        actions = load_jsonl(os.path.join(folder, "actions.jsonl"))
        if [a["step"] for a in actions] != list(range(len(states))) or actions[-1]["action"] is not None:
            fail(f"{folder}: actions.jsonl must have steps 0..{len(states) - 1} and a null last action")
        with open(os.path.join(folder, "task.json"), encoding="utf-8") as f:
            task = json.load(f)
        check_screenshots(folder, len(states), task.get("screen"))
        reals = {"sample-author": states}
        if domain == "os":
            tsvs = []
            for p in sorted(glob.glob(os.path.join(folder, "step_*.tsv"))):
                with open(p, encoding="utf-8") as f:
                    text = f.read()
                for n, line in enumerate(text.rstrip("\n").split("\n"), 1):
                    if line.count("\t") != 6:
                        fail(f"{p}:{n}: expected 7 tab-separated cells")
                tsvs.append(text.rstrip("\n"))
            first = load_jsonl(os.path.join(folder, "predictions.jsonl"))[0]["output"]
            if "<predicted_observation>\n<desktop-frame" not in first:
                reals = {"sample-author": tsvs}
        engines = check_predictions(os.path.join(folder, "predictions.jsonl"), reals, os.path.basename(folder))
        for preds in engines.values():
            for step, obs in preds.items():
                if obs.startswith("<"):
                    parse_xml(obs, f"{folder}/predictions.jsonl step {step}")


def main():
    check_web()
    check_folders("os")
    check_folders("android")
    print("all samples OK")


if __name__ == "__main__":
    main()
