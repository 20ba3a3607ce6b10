/**
 * The source and text views' rows from the line diff the API sent
 * (`get_turn`'s `line_diff`, `worldloom-obs`'s line diff, the same one the
 * line-ratio metric reads): each side gets its own numbered lines with a
 * status; the other side's counterpart line is recorded for hover sync. No
 * diff is computed here.
 */
import type { LineDiff } from "../api/types";

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

/** Only one side present: every line is `same`. */
export function plainLines(text: string): DiffLine[] {
  return splitLines(text).map((t, i) => ({ number: i + 1, text: t, status: "same" as const }));
}

/**
 * Side-by-side rows from the API's line diff of `real` and `predicted`.
 * `equal` runs face each other; `delete`, `insert` and `replace` runs are
 * padded with filler rows. `null` when the ops do not cover both texts (a
 * diff of other texts): the panes then show each side's lines unmarked.
 */
export function sideBySide(real: string, predicted: string, diff: LineDiff): SideBySideLines | null {
  const ops = diff.ops;
  const r = splitLines(real);
  const p = splitLines(predicted);
  const last = ops[ops.length - 1];
  if ((last?.real_end ?? 0) !== r.length || (last?.pred_end ?? 0) !== p.length) return null;
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
