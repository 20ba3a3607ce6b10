/**
 * One state predicted by two runs: real | A | B side by side, each
 * prediction's lines that differ from the real observation marked (from the
 * API's line diff of each prediction against the real state; nothing is
 * diffed here), and the line of the element the turn's action landed on
 * (`SideDocument.landing`) outlined and scrolled to, the element's own
 * markup highlighted in it. Observations are shown
 * as text, never rendered.
 */
import { useEffect, useMemo, useRef } from "react";
import type { Landing, RunPair, TurnDetail } from "../api/types";
import { landingCaption, spanChars } from "../model/landing";
import type { Backend } from "../backend/backend";
import { useTurn } from "../data/queries";
import { changedPredictedLines, changedRealLines, formatScore } from "./runsModel";

/** Props of {@link ThreePanes}. */
export interface ThreePanesProps {
  backend: Backend;
  pair: RunPair;
  onClose: () => void;
}

/** A line's text with the part in `[from, to)` (string indices within the line) marked. */
function marked(line: string, from: number, to: number) {
  if (line === "") return "\u00a0";
  if (to <= 0 || from >= line.length) return line;
  const a = Math.max(0, from);
  const b = Math.min(line.length, to);
  return (
    <>
      {line.slice(0, a)}
      <mark className="landed-span">{line.slice(a, b)}</mark>
      {line.slice(b)}
    </>
  );
}

export function Lines({ text, marked: changed, label, landing }: { text: string | null; marked: Set<number>; label: string; landing: Landing | null }) {
  const ref = useRef<HTMLPreElement>(null);
  // 0-based index of the landed line, and the landed element's characters.
  const landed = landing?.line != null ? landing.line - 1 : null;
  const chars = useMemo(() => (text !== null ? spanChars(text, landing?.span) : null), [text, landing]);
  useEffect(() => {
    const pre = ref.current;
    const row = landed != null ? (pre?.children[landed] as HTMLElement | undefined) : undefined;
    if (pre && row) pre.scrollTop = Math.max(0, row.offsetTop - pre.offsetTop - pre.clientHeight / 3);
  }, [landed, text]);
  if (text === null) return <div className="pane-empty">none</div>;
  const lines = text.split("\n");
  const starts: number[] = [];
  for (let i = 0, at = 0; i < lines.length; i++) {
    starts.push(at);
    at += lines[i]!.length + 1;
  }
  return (
    <pre className="three-text" aria-label={label} ref={ref}>
      {lines.map((line, i) => {
        const start = starts[i]!;
        const cls = ["line", changed.has(i) ? "changed" : "", landed === i ? "landed" : ""].filter(Boolean).join(" ");
        return (
          <div key={i} className={cls} data-landed={landed === i ? "" : undefined}>
            {chars ? marked(line, chars[0] - start, chars[1] - start) : line === "" ? "\u00a0" : line}
          </div>
        );
      })}
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
