/** Formatting of scores for lists and panels. */

/** A [0, 1] score as a percentage with no decimals, or an en dash when unknown. */
export function formatScore(v: number | null | undefined): string {
  return v == null || Number.isNaN(v) ? "–" : `${Math.round(v * 100)}`;
}

/** CSS class bucket for a [0, 1] score. */
export function fidelityClass(v: number | null | undefined): string {
  if (v == null) return "f-none";
  if (v >= 0.85) return "f-high";
  if (v >= 0.6) return "f-mid";
  return "f-low";
}
