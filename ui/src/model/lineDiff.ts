/**
 * Line diff of two texts for the source and text views, on the `diff`
 * package (Myers' algorithm). Each side gets its own numbered lines with a
 * status; the other side's counterpart line is recorded for hover sync.
 */
import { diffLines } from "diff";
import type { LineOp } from "../api/types";

/**
 * A line's status: `removed` lines exist only in the real text, `added` only
 * in the predicted one; `filler` rows are blank padding that keep the two
 * sides aligned row for row.
 */
export type LineStatus = "same" | "removed" | "added" | "filler";

/** One numbered line of one side. */
export interface DiffLine {
  /** 1-based line number in this side's text; 0 for filler rows. */
  number: number;
  text: string;
  status: LineStatus;
  /** 1-based line number of the same line on the other side, for `same` lines. */
  other?: number;
}

/** Both sides, line by line; `real` and `predicted` have the same length (row i faces row i). */
export interface SideBySideLines {
  real: DiffLine[];
  predicted: DiffLine[];
  /** Number of lines only in the real text / only in the predicted text. */
  removed: number;
  added: number;
}

function splitLines(value: string): string[] {
  const lines = value.split("\n");
  if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
  return lines;
}

/**
 * Diffs `real` against `predicted` line by line. Either side may be empty.
 * A run of removed lines next to a run of added lines faces it row for row;
 * the shorter run is padded with filler rows.
 */
export function sideBySideLines(real: string, predicted: string): SideBySideLines {
  const out: SideBySideLines = { real: [], predicted: [], removed: 0, added: 0 };
  let r = 0;
  let p = 0;
  let pendingRemoved: DiffLine[] = [];
  let pendingAdded: DiffLine[] = [];
  const flush = () => {
    const rows = Math.max(pendingRemoved.length, pendingAdded.length);
    for (let i = 0; i < rows; i++) {
      out.real.push(pendingRemoved[i] ?? { number: 0, text: "", status: "filler" });
      out.predicted.push(pendingAdded[i] ?? { number: 0, text: "", status: "filler" });
    }
    pendingRemoved = [];
    pendingAdded = [];
  };
  for (const part of diffLines(real, predicted)) {
    const lines = splitLines(part.value);
    for (const text of lines) {
      if (part.added) {
        pendingAdded.push({ number: ++p, text, status: "added" });
        out.added += 1;
      } else if (part.removed) {
        pendingRemoved.push({ number: ++r, text, status: "removed" });
        out.removed += 1;
      } else {
        flush();
        r += 1;
        p += 1;
        out.real.push({ number: r, text, status: "same", other: p });
        out.predicted.push({ number: p, text, status: "same", other: r });
      }
    }
  }
  flush();
  return out;
}

/** Only one side present: every line is `same`. */
export function plainLines(text: string): DiffLine[] {
  return splitLines(text).map((t, i) => ({ number: i + 1, text: t, status: "same" as const }));
}

/**
 * Side-by-side rows from a line diff computed by the back end (so the view
 * and the line-ratio metric agree). `equal` runs face each other; `delete`,
 * `insert` and `replace` runs are padded with filler rows. Falls back to
 * {@link sideBySideLines} when the ops do not cover both texts.
 */
export function sideBySideFromOps(real: string, predicted: string, ops: readonly LineOp[]): SideBySideLines {
  const r = splitLines(real);
  const p = splitLines(predicted);
  const covered = ops.length > 0 && ops[ops.length - 1]!.real_end === r.length && ops[ops.length - 1]!.pred_end === p.length;
  if (!covered && (r.length > 0 || p.length > 0)) return sideBySideLines(real, predicted);
  const out: SideBySideLines = { real: [], predicted: [], removed: 0, added: 0 };
  for (const op of ops) {
    if (op.tag === "equal") {
      for (let i = 0; i < op.real_end - op.real_start; i++) {
        const rn = op.real_start + i + 1;
        const pn = op.pred_start + i + 1;
        out.real.push({ number: rn, text: r[rn - 1] ?? "", status: "same", other: pn });
        out.predicted.push({ number: pn, text: p[pn - 1] ?? "", status: "same", other: rn });
      }
      continue;
    }
    const rows = Math.max(op.real_end - op.real_start, op.pred_end - op.pred_start);
    for (let i = 0; i < rows; i++) {
      const rn = op.real_start + i;
      const pn = op.pred_start + i;
      if (rn < op.real_end) {
        out.real.push({ number: rn + 1, text: r[rn] ?? "", status: "removed" });
        out.removed += 1;
      } else out.real.push({ number: 0, text: "", status: "filler" });
      if (pn < op.pred_end) {
        out.predicted.push({ number: pn + 1, text: p[pn] ?? "", status: "added" });
        out.added += 1;
      } else out.predicted.push({ number: 0, text: "", status: "filler" });
    }
  }
  return out;
}
