/**
 * The "Roll out N" list: the actions a user writes for a rollout, one per
 * line or in blocks. Only the list is split here; each action is read by the
 * back end in its domain's language.
 */

/**
 * Splits the "Roll out N" list into actions: blocks separated by lines of
 * `---` when there are any (for multi-line actions), else one action per
 * non-empty line.
 */
export function splitActionList(text: string): string[] {
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  if (lines.some((l) => l.trim() === "---")) {
    const out: string[] = [];
    let cur: string[] = [];
    for (const l of lines) {
      if (l.trim() === "---") {
        if (cur.join("\n").trim()) out.push(cur.join("\n").trim());
        cur = [];
      } else cur.push(l);
    }
    if (cur.join("\n").trim()) out.push(cur.join("\n").trim());
    return out;
  }
  return lines.map((l) => l.trim()).filter((l) => l !== "");
}
