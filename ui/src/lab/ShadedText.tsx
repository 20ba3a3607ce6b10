/**
 * A predicted observation as text, each token shaded by its uncertainty
 * (probability or entropy; see `model/tokens.ts`), with a legend.
 */
import { useMemo } from "react";
import type { TokenView } from "../api/lab";
import { legendFor, shadeTokens, type UncertaintyMode } from "../model/tokens";

/** Props of {@link ShadedText}. */
export interface ShadedTextProps {
  tokens: TokenView[];
  mode: UncertaintyMode;
  /** Text after the tokens (for example, text the tokens do not cover). */
  label: string;
}

export function UncertaintyLegend({ mode }: { mode: UncertaintyMode }) {
  return (
    <span className="unc-legend" aria-label={`Uncertainty legend (${mode})`}>
      <span className="muted">{mode === "probability" ? "token probability" : "entropy, nats"}:</span>
      {legendFor(mode).map((r) => (
        <span key={r.level} className={`unc unc-${r.level}`}>
          {r.label}
        </span>
      ))}
    </span>
  );
}

export function ShadedText({ tokens, mode, label }: ShadedTextProps) {
  const spans = useMemo(() => shadeTokens(tokens, mode), [tokens, mode]);
  return (
    <div className="shaded" role="document" aria-label={label}>
      <pre className="shaded-text">
        {spans.map((s, i) => (
          <span key={i} className={s.level === null ? "unc-none" : `unc unc-${s.level}`} title={s.title || undefined}>
            {s.text}
          </span>
        ))}
      </pre>
    </div>
  );
}
