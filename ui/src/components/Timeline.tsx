/**
 * The selected branch's turns: previous / play / next, a fidelity sparkline
 * over all turns, and a strip of turn cells with each action. Keyboard
 * navigation (←/→, j/k, Home/End) is bound in `App`.
 */
import { useEffect, useRef } from "react";
import type { TurnSummary } from "../api/types";
import { KindBadge, kindOfTurn } from "../lab/Kinds";
import { fidelityClass, formatScore } from "./format";

/** Points of the sparkline polyline, in a `width` × `height` box (pure; tested). */
export function sparklinePoints(values: ReadonlyArray<number | null | undefined>, width: number, height: number, pad = 3): Array<[number, number] | null> {
  const n = values.length;
  return values.map((v, i) => {
    if (v == null) return null;
    const x = n <= 1 ? width / 2 : pad + (i * (width - 2 * pad)) / (n - 1);
    const y = pad + (1 - Math.max(0, Math.min(1, v))) * (height - 2 * pad);
    return [x, y];
  });
}

/** Props of {@link Timeline}. */
export interface TimelineProps {
  turns: TurnSummary[];
  /** Index into `turns`, or -1 for the initial state. */
  current: number;
  onSelect: (index: number) => void;
  playing: boolean;
  onPlay: () => void;
  /** False while the branch's turns (or the turn asked for in the URL) are still on their way: the label says so instead of a position. */
  settled: boolean;
}

export function Timeline({ turns, current, onSelect, playing, onPlay, settled }: TimelineProps) {
  const strip = useRef<HTMLOListElement>(null);
  useEffect(() => {
    const el = strip.current?.querySelector<HTMLElement>("[aria-current='step']");
    el?.scrollIntoView?.({ block: "nearest", inline: "nearest" });
  }, [current]);
  const W = 180;
  const H = 30;
  const pts = sparklinePoints(
    turns.map((t) => t.fidelity),
    W,
    H,
  );
  const path = pts.map((p, i) => (p ? `${i === 0 || !pts[i - 1] ? "M" : "L"}${p[0].toFixed(1)},${p[1].toFixed(1)}` : "")).join(" ");
  return (
    <div className="timeline" role="group" aria-label="Timeline">
      <div className="tl-controls">
        <button type="button" aria-label="Previous turn" title="Previous turn (← or k)" disabled={current <= -1} onClick={() => onSelect(current - 1)}>
          ◀
        </button>
        <button type="button" aria-label={playing ? "Pause" : "Play"} title="Play through the turns" aria-pressed={playing} onClick={onPlay}>
          {playing ? "❚❚" : "▶"}
        </button>
        <button type="button" aria-label="Next turn" title="Next turn (→ or j)" disabled={current >= turns.length - 1} onClick={() => onSelect(current + 1)}>
          ▶▎
        </button>
        <span className="tl-pos" aria-live="polite" aria-label="Current turn">
          {!settled ? "loading…" : `${current < 0 ? "initial" : `turn ${turns[current]?.turn ?? current + 1}`} / ${turns.length}`}
        </span>
      </div>
      <svg className="sparkline" width={W} height={H} role="img" aria-label="Per-turn fidelity sparkline">
        <line x1={0} x2={W} y1={H - 3} y2={H - 3} className="spark-base" />
        <path d={path} className="spark-line" />
        {pts.map((p, i) =>
          p ? (
            <circle
              key={i}
              cx={p[0]}
              cy={p[1]}
              r={i === current ? 3.5 : 2}
              className={`spark-dot ${fidelityClass(turns[i]?.fidelity)}${i === current ? " is-current" : ""}`}
              onClick={() => onSelect(i)}
            >
              <title>{`turn ${turns[i]?.turn}: ${formatScore(turns[i]?.fidelity)}`}</title>
            </circle>
          ) : null,
        )}
      </svg>
      <ol className="tl-strip" ref={strip} aria-label="Turns">
        <li>
          <button
            type="button"
            className={current === -1 ? "tcell is-current" : "tcell"}
            aria-current={current === -1 ? "step" : undefined}
            onClick={() => onSelect(-1)}
          >
            <span className="tnum">0</span>
            <span className="tact">initial state</span>
          </button>
        </li>
        {turns.map((t, i) => (
          <li key={t.node_id}>
            <button
              type="button"
              className={i === current ? "tcell is-current" : "tcell"}
              aria-current={i === current ? "step" : undefined}
              aria-label={`Turn ${t.turn}: ${t.action.summary}`}
              title={t.action.raw}
              onClick={() => onSelect(i)}
            >
              <span className="tnum">{t.turn}</span>
              <span className="tkinds">
                {t.has_real ? <KindBadge kind="real" /> : null}
                {t.has_authored || t.prediction_count > 0 || !t.has_real ? <KindBadge kind={kindOfTurn(t, "right")} /> : null}
                {t.perturbation ? (
                  <span className="perturbation-mark" title={`control instruction: ${t.perturbation}`}>
                    ⚡
                  </span>
                ) : null}
              </span>
              <code className="tact">{t.action.summary}</code>
              <span className={`tfid ${fidelityClass(t.fidelity)}`} style={{ width: `${Math.round((t.fidelity ?? 0) * 100)}%` }} />
            </button>
          </li>
        ))}
      </ol>
    </div>
  );
}
