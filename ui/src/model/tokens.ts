/**
 * Token-level uncertainty shading of a predicted observation.
 *
 * Each observation token may carry its log-probability under the model's
 * sampling distribution and the entropy (nats) of that distribution. The
 * shade of a token is its uncertainty in [0, 1]:
 * - probability mode: `1 − exp(logprob)` (a token the model was sure of is 0);
 * - entropy mode: `min(1, entropy / ENTROPY_CEILING_NATS)`.
 * Shades fall into {@link SHADE_LEVELS} buckets so the legend can name them.
 *
 * The tokens are the observation's own: the back end pairs each piece of
 * observation text with the token that produced it (tags and surrounding
 * whitespace already removed), so their texts concatenate to the observation.
 */
import type { TokenView } from "../api/lab";

/** What the shade measures. */
export type UncertaintyMode = "probability" | "entropy";

/** Entropy at and above which a token gets the darkest shade, nats (ln 32 ≈ 3.47: as unsure as a uniform pick among 32 tokens). */
export const ENTROPY_CEILING_NATS = Math.log(32);

/** Number of shade buckets (0 = sure … SHADE_LEVELS − 1 = most unsure). */
export const SHADE_LEVELS = 5;

/** Uncertainty of one token in [0, 1], or `null` when the token carries no figure for `mode`. */
export function tokenUncertainty(token: TokenView, mode: UncertaintyMode): number | null {
  if (mode === "probability") {
    if (token.logprob == null || Number.isNaN(token.logprob)) return null;
    const p = Math.exp(Math.min(0, token.logprob));
    return Math.max(0, Math.min(1, 1 - p));
  }
  if (token.entropy == null || Number.isNaN(token.entropy)) return null;
  return Math.max(0, Math.min(1, token.entropy / ENTROPY_CEILING_NATS));
}

/** Bucket of an uncertainty in [0, 1]: 0 … SHADE_LEVELS − 1; `null` stays `null` (unshaded). */
export function shadeLevel(u: number | null): number | null {
  if (u == null) return null;
  return Math.min(SHADE_LEVELS - 1, Math.floor(u * SHADE_LEVELS));
}

/** Whether any token has a figure for `mode` (the toggle is offered only then). */
export function hasUncertainty(tokens: ReadonlyArray<TokenView> | null | undefined, mode: UncertaintyMode): boolean {
  return !!tokens && tokens.some((t) => tokenUncertainty(t, mode) !== null);
}

/** A run of consecutive tokens with the same shade (fewer DOM nodes for long observations). */
export interface ShadedSpan {
  text: string;
  level: number | null;
  /** Tooltip: the figures of the first token of the run. */
  title: string;
}

function describe(t: TokenView): string {
  const parts: string[] = [];
  if (t.logprob != null) parts.push(`p = ${Math.exp(Math.min(0, t.logprob)).toFixed(3)}`);
  if (t.entropy != null) parts.push(`H = ${t.entropy.toFixed(2)} nats`);
  return parts.join(", ");
}

/**
 * Groups tokens into runs of equal shade. Concatenating the runs' text gives
 * back the tokens' text exactly. Whitespace-only tokens join the run before
 * them so line breaks do not split a shade.
 */
export function shadeTokens(tokens: ReadonlyArray<TokenView>, mode: UncertaintyMode): ShadedSpan[] {
  const out: ShadedSpan[] = [];
  for (const t of tokens) {
    const level = shadeLevel(tokenUncertainty(t, mode));
    const last = out[out.length - 1];
    if (last && (last.level === level || t.text.trim() === "")) last.text += t.text;
    else out.push({ text: t.text, level, title: describe(t) });
  }
  return out;
}

/** Legend rows: the range each bucket covers, in the mode's own unit. */
export function legendFor(mode: UncertaintyMode): Array<{ level: number; label: string }> {
  const rows: Array<{ level: number; label: string }> = [];
  for (let level = 0; level < SHADE_LEVELS; level++) {
    const lo = level / SHADE_LEVELS;
    const hi = (level + 1) / SHADE_LEVELS;
    if (mode === "probability") rows.push({ level, label: `p ${(1 - lo).toFixed(1)}–${(1 - hi).toFixed(1)}` });
    else
      rows.push({ level, label: `H ${(lo * ENTROPY_CEILING_NATS).toFixed(1)}–${level === SHADE_LEVELS - 1 ? "∞" : (hi * ENTROPY_CEILING_NATS).toFixed(1)}` });
  }
  return rows;
}
