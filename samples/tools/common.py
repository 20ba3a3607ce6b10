"""Shared helpers for the Worldloom sample generators.

The generators under samples/tools/ build the GUI sample trajectories in
samples/web, samples/os and samples/android from small hand-written page and
screen models, so that every representation of one state (HTML and
accessibility tree, AT-SPI XML and linearized table) stays consistent.
Run `python3 samples/tools/gen_all.py` from the repository root to rebuild.
"""

import json
import os

ENGINE = "sample-author"


class Node:
    """A node of a page or screen model, with keyword fields.

    A subclass lists its fields and their defaults in `FIELDS`; the
    constructor takes any of them by keyword (an unknown one is an error) and
    sets the others to their defaults. `children` is the list of child nodes
    and `key` names a node for `find`."""

    FIELDS = {}

    def __init__(self, children, fields):
        unknown = sorted(set(fields) - set(self.FIELDS))
        if unknown:
            raise TypeError(f"{type(self).__name__}: unknown fields {unknown}")
        for name, default in self.FIELDS.items():
            setattr(self, name, fields.get(name, default))
        self.children = [c for c in children if c is not None]

    def find(self, key):
        """The node below this one (or this one) whose `key` is `key`."""
        stack = [self]
        while stack:
            n = stack.pop()
            if n.key == key:
                return n
            stack.extend(n.children)
        raise KeyError(key)


def esc(s):
    """Escape `&`, `<`, `>` and `"` for XML text and double-quoted attributes."""
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def write_text(path, text):
    """Write `text` to `path` as UTF-8 with Unix newlines, creating folders."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def write_jsonl(path, rows):
    """Write one compact JSON object per line."""
    write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def model_output(think, observation):
    """Format a prediction the way a world model answers: a short
    `<think>` block, then the observation inside `<predicted_observation>`."""
    return (
        f"<think>{think}</think>\n<predicted_observation>\n{observation}\n"
        "</predicted_observation>"
    )


def prediction_row(step, observation, think, representation, engine=ENGINE, seed=0):
    """One predictions-sidecar line for the PREDICTED state `step` (n >= 1).

    `representation` (a Worldloom representation name: axtree, html, os-xml,
    os-table, android-xml) is an extra hint beside the contract's four fields,
    saying how the predicted observation is to be read."""
    return {"step": step, "engine": engine, "seed": seed, "output": model_output(think, observation),
            "representation": representation}


def replace_once(text, old, new):
    """Replace exactly one occurrence of `old`; fail loudly when the anchor is
    missing or ambiguous, so that a prediction never silently equals the truth."""
    n = text.count(old)
    if n != 1:
        raise ValueError(f"anchor found {n} times, expected once: {old[:80]!r}")
    return text.replace(old, new)


def drop_line(text, needle):
    """Remove the single line containing `needle`."""
    lines = text.split("\n")
    hits = [i for i, line in enumerate(lines) if needle in line]
    if len(hits) != 1:
        raise ValueError(f"line anchor found {len(hits)} times: {needle!r}")
    del lines[hits[0]]
    return "\n".join(lines)


def write_png(path, width, height, rows):
    """Write an 8-bit RGB PNG (no interlace, filter 0 on every row): `rows` is
    a list of `height` bytearrays of `width * 3` bytes. Compressed at zlib
    level 9, so a flat synthetic screen is a few KB."""
    import struct
    import zlib

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    raw = b"".join(b"\0" + bytes(r) for r in rows)
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(png)
