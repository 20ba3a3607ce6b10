/**
 * The step bar on the predicted pane: "Step" with a teacher-forced /
 * free-running switch, "Stop", the engine in use, and after a step its
 * figures (tokens/s, token counts, prompt tokens re-read); the collapsible
 * "Reasoning" panel streams the model's thinking.
 */
import type { StepStats, TokenView } from "../api/lab";
import type { ContextMode } from "../api/types";
import { RadioSeg } from "./DialogParts";

/** A step (or rollout) in progress or just finished. */
export interface StepStream {
  job_id: string | null;
  trajectory_id: string;
  node_id: number;
  reasoning: string;
  observation: string;
  tokens: TokenView[];
  running: boolean;
  status: string | null;
  error: string | null;
  stats: StepStats | null;
  started_ms: number;
  finished_ms: number | null;
}

/** One line of figures for a finished step. */
export function statsLine(stats: StepStats): string {
  const parts = [
    `${stats.decode_tokens_per_sec.toFixed(1)} tokens/s`,
    `${stats.completion_tokens} generated`,
    `${stats.prompt_tokens_computed} of ${stats.prompt_tokens} prompt tokens re-read`,
  ];
  if (stats.drafted_tokens > 0) {
    // Speculative decoding: how much of the draft held, and what that bought.
    parts.push(`drafts ${stats.accepted_tokens} of ${stats.drafted_tokens} kept`);
    if (stats.decode_forwards > 0) {
      parts.push(`${(stats.completion_tokens / stats.decode_forwards).toFixed(1)} tokens/forward`);
    }
  }
  if (stats.prefill_ms > 0) parts.push(`prefill ${Math.round(stats.prefill_ms)} ms`);
  if (stats.stop_reason) parts.push(`stop: ${stats.stop_reason}`);
  return parts.join(" · ");
}

/** Props of {@link StepBar}. */
export interface StepBarProps {
  engine: string;
  context: ContextMode;
  onContext: (c: ContextMode) => void;
  onStep: () => void;
  onStop: () => void;
  canStep: boolean;
  stream: StepStream | null;
  reasoningOpen: boolean;
  onReasoningOpen: (open: boolean) => void;
  onEngine: () => void;
}

export function StepBar({ engine, context, onContext, onStep, onStop, canStep, stream, reasoningOpen, onReasoningOpen, onEngine }: StepBarProps) {
  const running = !!stream?.running;
  return (
    <div className="step-area">
      <div className="step-bar" role="toolbar" aria-label="Step">
        <button type="button" className="primary" onClick={onStep} disabled={!canStep || running} title="Predict this turn with the engine">
          Step
        </button>
        <RadioSeg<ContextMode>
          label="Context"
          options={["teacher-forced", "free-running"]}
          value={context}
          onChange={onContext}
          title={(c) => (c === "teacher-forced" ? "history from the real observations" : "history from this branch's chosen predictions")}
        />
        <button type="button" onClick={onStop} disabled={!running} className={running ? "danger" : undefined}>
          Stop
        </button>
        <button type="button" className="link engine-chip" onClick={onEngine} title="Change the engine">
          {engine}
        </button>
        <span className="step-status" role="status" aria-label="Step status">
          {stream
            ? running
              ? `streaming… ${stream.observation.length} characters${stream.tokens.length ? `, ${stream.tokens.length} tokens` : ""}`
              : stream.status === "cancelled"
                ? "stopped — nothing stored"
                : [
                    stream.status === "ok" ? null : `${stream.status ?? "failed"}${stream.error ? `: ${stream.error}` : ""}`,
                    stream.stats ? statsLine(stream.stats) : stream.status === "ok" ? "done" : null,
                  ]
                    .filter(Boolean)
                    .join(" · ")
            : ""}
        </span>
      </div>
      {stream && (stream.reasoning || running) ? (
        <div className="reasoning-panel" role="region" aria-label="Reasoning">
          <button type="button" className="link" aria-expanded={reasoningOpen} onClick={() => onReasoningOpen(!reasoningOpen)}>
            {reasoningOpen ? "▾" : "▸"} Reasoning{stream.reasoning ? ` (${stream.reasoning.length} chars)` : ""}
          </button>
          {reasoningOpen ? <pre className="reasoning-text">{stream.reasoning || "…"}</pre> : null}
        </div>
      ) : null}
    </div>
  );
}
