/**
 * One state predicted by two runs: real | A | B side by side, each
 * prediction's lines that differ from the real observation marked (from the
 * API's line diff of each prediction against the real state; nothing is
 * diffed here), and the line of the element the turn's action landed on
 * (`SideDocument.landing`) outlined and scrolled to. Observations are shown
 * as text, never rendered.
 */
import { useEffect, useRef } from "react";
import type { Landing, RunPair, TurnDetail } from "../api/types";
import { landingCaption } from "../model/landing";
import type { Backend } from "../backend/backend";
import { useTurn } from "../data/queries";
import { changedPredictedLines, changedRealLines, formatScore } from "./runsModel";

/** Props of {@link ThreePanes}. */
export interface ThreePanesProps {
  backend: Backend;
  pair: RunPair;
  onClose: () => void;
}

function Lines({ text, marked, label, landing }: { text: string | null; marked: Set<number>; label: string; landing: Landing | null }) {
  const ref = useRef<HTMLPreElement>(null);
  // 0-based index of the landed line.
  const landed = landing?.line != null ? landing.line - 1 : null;
  useEffect(() => {
    const pre = ref.current;
    const row = landed != null ? (pre?.children[landed] as HTMLElement | undefined) : undefined;
    if (pre && row) pre.scrollTop = Math.max(0, row.offsetTop - pre.offsetTop - pre.clientHeight / 3);
  }, [landed, text]);
  if (text === null) return <div className="pane-empty">none</div>;
  return (
    <pre className="three-text" aria-label={label} ref={ref}>
      {text.split("\n").map((line, i) => (
        <div
          key={i}
          className={["line", marked.has(i) ? "changed" : "", landed === i ? "landed" : ""].filter(Boolean).join(" ")}
          data-landed={landed === i ? "" : undefined}
        >
          {line === "" ? "\u00a0" : line}
        </div>
      ))}
    </pre>
  );
}

/** The caption under a column's heading: where the turn's action landed in it. */
function LandingNote({ detail, landing, label }: { detail: TurnDetail | undefined; landing: Landing | null; label: string }) {
  const target = detail?.action_target;
  if (!target || !landing) return null;
  return (
    <div className="three-landing" role="status" aria-label={label}>
      ◎ {landingCaption(target, landing)}
    </div>
  );
}

function view(detail: TurnDetail | undefined) {
  return detail?.views[0] ?? null;
}

export function ThreePanes({ backend, pair, onClose }: ThreePanesProps) {
  const a = useTurn(backend, pair.a.trajectory_id, pair.a.node_id, pair.a.prediction_id, true);
  const b = useTurn(backend, pair.b.trajectory_id, pair.b.node_id, pair.b.prediction_id, true);
  const va = view(a.data);
  const vb = view(b.data);
  const missed = new Set([...changedRealLines(va?.line_diff), ...changedRealLines(vb?.line_diff)]);
  return (
    <section className="three-panes" aria-label="Real, A and B">
      <header>
        <b>{pair.a.trajectory_name}</b> turn {pair.a.turn} · {pair.a.domain} · A {formatScore(pair.a_value)} · B {formatScore(pair.b_value)}
        <button type="button" onClick={onClose}>
          Close
        </button>
      </header>
      {a.error || b.error ? <div className="pane-empty">{String(a.error ?? b.error)}</div> : null}
      <div className="three-grid">
        <div>
          <h4>Real</h4>
          <LandingNote detail={a.data} landing={va?.real?.landing ?? null} label="Real action target" />
          <Lines text={va?.real?.text ?? null} marked={missed} label="Real observation" landing={va?.real?.landing ?? null} />
        </div>
        <div>
          <h4>A · {pair.a.status}</h4>
          <LandingNote detail={a.data} landing={va?.predicted?.landing ?? null} label="A's action target" />
          <Lines
            text={va?.predicted?.text ?? null}
            marked={changedPredictedLines(va?.line_diff)}
            label="A's prediction"
            landing={va?.predicted?.landing ?? null}
          />
        </div>
        <div>
          <h4>B · {pair.b.status}</h4>
          <LandingNote detail={b.data} landing={vb?.predicted?.landing ?? null} label="B's action target" />
          <Lines
            text={vb?.predicted?.text ?? null}
            marked={changedPredictedLines(vb?.line_diff)}
            label="B's prediction"
            landing={vb?.predicted?.landing ?? null}
          />
        </div>
      </div>
    </section>
  );
}
