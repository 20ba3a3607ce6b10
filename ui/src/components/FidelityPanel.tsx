/** The turn's fidelity: headline score, metrics, domain anchors, judge scores, reasoning. */
import { JUDGE_DIMENSIONS, type Fidelity } from "../api/types";
import { fidelityClass, formatScore } from "./format";

function MetricValue({ name, value, unit }: { name: string; value: number | null; unit?: string | null }) {
  if (value == null) return <span className="muted">–</span>;
  // `exact` is a yes/no fact, not a fraction.
  if (name === "exact") return <span className={value >= 1 ? "c-added" : "muted"}>{value >= 1 ? "identical" : "differs"}</span>;
  if (unit)
    return (
      <span>
        {Number.isInteger(value) ? value : value.toFixed(2)} {unit}
      </span>
    );
  return (
    <span className="metric-bar">
      <span className={`bar ${fidelityClass(value)}`} style={{ width: `${Math.round(value * 100)}%` }} />
      <span className="metric-num">{(value * 100).toFixed(1)}</span>
    </span>
  );
}

/** Props of {@link FidelityPanel}. */
export interface FidelityPanelProps {
  fidelity: Fidelity | null | undefined;
  reasoning?: string | null;
  engine?: string | null;
  /** The prediction's raw model output, shown when it yielded no observation. */
  rawOutput?: string | null;
}

export function FidelityPanel({ fidelity, reasoning, engine, rawOutput }: FidelityPanelProps) {
  const judge = fidelity?.judge;
  return (
    <aside className="fidelity" role="complementary" aria-label="Fidelity">
      <h2>Fidelity</h2>
      {!fidelity ? (
        <p className="muted">No prediction scored for this turn.</p>
      ) : (
        <>
          <div className={`overall ${fidelityClass(fidelity.overall)}`} aria-label="Overall fidelity">
            <span className="overall-num">{formatScore(fidelity.overall)}</span>
            <span className="overall-label">overall{engine ? ` · ${engine}` : ""}</span>
          </div>
          {fidelity.note ? <p className="fidelity-note">{fidelity.note}</p> : null}
          <table className="metrics" aria-label="Metrics">
            <tbody>
              {fidelity.metrics.map((m) => (
                <tr key={m.name} title={m.description ?? undefined}>
                  <th scope="row">{m.name}</th>
                  <td>
                    <MetricValue name={m.name} value={m.value} unit={m.unit} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <h3>Anchors</h3>
          {fidelity.anchors.length === 0 ? (
            <p className="muted">None for this domain.</p>
          ) : (
            <ul className="anchors" aria-label="Anchors">
              {fidelity.anchors.map((a, i) => (
                <li key={`${a.anchor}-${i}`} className={`anchor a-${a.status}`}>
                  <span className="anchor-icon" aria-hidden="true">
                    {a.status === "matched" ? "✓" : a.status === "mismatched" ? "✗" : "∅"}
                  </span>
                  <span className="anchor-key">{a.anchor}</span>
                  <span className="anchor-status">{a.status}</span>
                  {a.status !== "matched" ? (
                    <span className="anchor-vals">
                      <span title="real">{a.real ?? "∅"}</span> → <span title="predicted">{a.pred ?? "∅"}</span>
                    </span>
                  ) : null}
                </li>
              ))}
            </ul>
          )}
          {judge ? (
            <>
              <h3>Judge{judge.judge ? ` · ${judge.judge}` : ""}</h3>
              <table className="metrics judge" aria-label="Judge scores">
                <tbody>
                  {JUDGE_DIMENSIONS.map((k) =>
                    typeof judge[k] === "number" ? (
                      <tr key={k}>
                        <th scope="row">{k}</th>
                        <td>
                          <span className="judge-dots" aria-label={`${judge[k]} of 5`}>
                            {"●".repeat(judge[k] as number)}
                            <span className="off">{"●".repeat(5 - (judge[k] as number))}</span>
                          </span>
                        </td>
                      </tr>
                    ) : null,
                  )}
                  {judge.score != null ? (
                    <tr>
                      <th scope="row">score</th>
                      <td>{judge.score.toFixed(1)} / 100</td>
                    </tr>
                  ) : null}
                </tbody>
              </table>
              {judge.rationale ? <p className="rationale">{judge.rationale}</p> : null}
            </>
          ) : null}
        </>
      )}
      {reasoning ? (
        <details className="reasoning">
          <summary>Reasoning</summary>
          <pre>{reasoning}</pre>
        </details>
      ) : null}
      {rawOutput ? (
        <details className="reasoning" open>
          <summary>Raw output</summary>
          <pre>{rawOutput}</pre>
        </details>
      ) : null}
    </aside>
  );
}
