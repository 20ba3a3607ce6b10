/**
 * The turn view: the real and the predicted pane side by side (the same
 * view tab on both), the predicted pane's prediction picker, uncertainty
 * shading and step bar (a streaming step shows there until it is stored),
 * and the node inspector and fidelity panel beside them; `bare` (presentation
 * mode) keeps only the two panes.
 */
import { useMemo, type ReactNode } from "react";
import type { TurnDetail, TurnSummary } from "../api/types";
import type { Backend } from "../backend/backend";
import { FidelityPanel } from "../components/FidelityPanel";
import { formatScore } from "../components/format";
import { NodeInspector } from "../components/NodeInspector";
import { Pane } from "../components/Pane";
import { KindBadge } from "../lab/Kinds";
import { ShadedText, UncertaintyLegend } from "../lab/ShadedText";
import { StepBar, type StepBarProps, type StepStream } from "../lab/StepBar";
import { sideBySide } from "../model/lineDiff";
import { hasUncertainty, type UncertaintyMode } from "../model/tokens";
import { pickTab, tabsFor, type ViewTab } from "../views/tabs";

/** How the panes are shown; kept by the caller so it outlives a switch to the tree. */
export interface PaneSettings {
  tabId: string | null;
  setTabId: (id: string) => void;
  uncertainty: "off" | UncertaintyMode;
  setUncertainty: (mode: "off" | UncertaintyMode) => void;
  reasoningOpen: boolean;
  setReasoningOpen: (open: boolean) => void;
}

/** The view shown in both panes (the active tab's), for callers that need it (authoring). */
export function shownView(detail: TurnDetail | null, tabId: string | null) {
  const views = detail?.views ?? [];
  const active = pickTab(tabsFor(views, !!detail?.real_screenshot), tabId, views);
  return active ? views[active.view_index] : undefined;
}

/** The step bar's controls, which the turn view passes through. */
export type StepControls = Pick<StepBarProps, "engine" | "context" | "onContext" | "onStep" | "onStop" | "onEngine">;

/** Props of {@link TurnPanes}. */
export interface TurnPanesProps extends StepControls {
  detail: TurnDetail | null;
  /** The timeline's entry of the turn shown (`undefined` for the initial state). */
  turn: TurnSummary | undefined;
  /** The step streaming into this state, if any. */
  stream: StepStream | null;
  /** Chooses the prediction shown (`null`: the authored observation). */
  onChoose: (predictionId: number | null) => void;
  settings: PaneSettings;
  /** The back end the tree views read their rows from. */
  backend: Backend;
  /** Only the two panes and their view tabs (presentation mode): no pickers, step bar, inspector or fidelity panel. */
  bare?: boolean;
}

export function TurnPanes({ detail, turn, stream, onChoose, settings, backend, bare = false, ...controls }: TurnPanesProps) {
  const { tabId, setTabId, uncertainty, setUncertainty, reasoningOpen, setReasoningOpen } = settings;
  const views = useMemo(() => detail?.views ?? [], [detail]);
  const hasScreenshot = !!detail?.real_screenshot;
  const tabs = useMemo(() => tabsFor(views, hasScreenshot), [views, hasScreenshot]);
  const active: ViewTab | undefined = pickTab(tabs, tabId, views);
  const view = active ? views[active.view_index] : undefined;
  const needsLines = active && ["html-source", "ax-source", "source", "text"].includes(active.kind);
  const lines = useMemo(() => {
    // The API's line diff (sent when both sides exist), so the view and the line-ratio metric agree.
    if (!needsLines || !view?.line_diff) return null;
    return sideBySide(view.real?.text ?? "", view.predicted?.text ?? "", view.line_diff);
  }, [needsLines, view]);
  const viewIndex = active?.view_index ?? null;
  const turnRef = useMemo(
    () =>
      detail && viewIndex !== null
        ? { trajectory_id: detail.trajectory_id, node_id: detail.node_id, prediction_id: detail.prediction_id, view_index: viewIndex }
        : null,
    [detail, viewIndex],
  );
  /** What both panes show alike: the tabs, the view and its lines, the real state's metadata, where tree rows come from. */
  const shared = {
    tabs,
    active,
    onTab: (t: ViewTab) => setTabId(t.id),
    view,
    lines,
    meta: detail?.real_meta,
    backend,
    turnRef,
    actionTarget: detail?.action_target ?? null,
    screenshot: detail?.real_screenshot ?? null,
  };

  const shownPrediction = detail?.predictions.find((p) => p.id === detail.prediction_id) ?? null;
  const predictedKind = detail?.predicted_kind ?? null;
  const tokens = detail?.tokens ?? null;
  const canShade = uncertainty !== "off" && hasUncertainty(tokens, uncertainty);
  const shadeMode: UncertaintyMode = uncertainty === "off" ? "probability" : uncertainty;

  let predictedBody: ReactNode = null;
  if (stream?.running) {
    predictedBody =
      uncertainty !== "off" && hasUncertainty(stream.tokens, uncertainty) ? (
        <ShadedText tokens={stream.tokens} mode={uncertainty} label="Streaming observation" />
      ) : (
        <div className="shaded" role="document" aria-label="Streaming observation">
          <pre className="shaded-text stream-text">{stream.observation || "…"}</pre>
        </div>
      );
  } else if (canShade && tokens) {
    predictedBody = <ShadedText tokens={tokens} mode={shadeMode} label="Predicted observation text shaded by uncertainty" />;
  }

  const hasAuthored = detail?.predicted_kind === "authored" || !!turn?.has_authored;
  const picker =
    detail && (detail.predictions.length > 0 || hasAuthored) ? (
      <select
        className="prediction-picker"
        aria-label="Prediction shown"
        value={detail.prediction_id ?? (hasAuthored ? "authored" : "")}
        onChange={(e) => {
          if (e.target.value === "authored") onChoose(null);
          else if (e.target.value !== "") onChoose(Number(e.target.value));
        }}
      >
        {hasAuthored ? <option value="authored">authored observation</option> : detail.prediction_id === null ? <option value="">—</option> : null}
        {detail.predictions.map((p) => (
          <option key={p.id} value={p.id}>
            #{p.id} {p.engine}
            {p.seed != null ? ` · seed ${p.seed}` : ""} · {p.context} · {formatScore(p.overall)}
            {p.id === detail.chosen_prediction_id ? " · chosen" : ""}
          </option>
        ))}
      </select>
    ) : null;

  const uncertaintyPicker = (
    <select
      className="unc-picker"
      aria-label="Uncertainty"
      value={uncertainty}
      onChange={(e) => setUncertainty(e.target.value as "off" | UncertaintyMode)}
      title={hasUncertainty(tokens, "probability") ? "shade the observation by token uncertainty" : "no token log-probabilities for this prediction"}
    >
      <option value="off">no shading</option>
      <option value="probability">shade: probability</option>
      <option value="entropy">shade: entropy</option>
    </select>
  );

  const predictedEmpty = !detail
    ? null
    : detail.turn === 0
      ? "The initial state is observed, not predicted."
      : detail.predictions.length === 0 && detail.predicted_kind !== "authored"
        ? "No prediction for this turn yet — press Step."
        : shownPrediction && shownPrediction.status !== "ok" && detail.views.every((v) => !v.predicted)
          ? `This prediction has no observation (status ${shownPrediction.status}); its raw output is in the fidelity panel.`
          : null;

  const predictedBanner = stream?.running ? (
    `Streaming from ${controls.engine} — nothing is stored until it finishes.`
  ) : uncertainty !== "off" ? (
    canShade ? (
      <UncertaintyLegend mode={uncertainty} />
    ) : (
      <span>
        No token {uncertainty === "probability" ? "log-probabilities" : "entropies"} for this prediction
        {hasUncertainty(tokens, "probability")
          ? " (its engine reported log-probabilities only: shade by probability)."
          : " (turn on “Token log-probabilities” in the engine and step again)."}
      </span>
    )
  ) : detail?.predicted_kind === "authored" ? (
    "Authored observation (written by hand), not a model prediction."
  ) : null;

  return (
    <div className="compare">
      <Pane
        side="real"
        title="Real observation"
        titleExtra={detail?.views.some((v) => v.real) ? <KindBadge kind="real" /> : <KindBadge kind="empty" label="not recorded" />}
        {...shared}
        banner={detail?.real_error ? `Step error: ${detail.real_error}` : null}
        emptyMessage={
          detail && detail.views.every((v) => !v.real) ? (detail.real_error ? `No observation: ${detail.real_error}` : "This state was not recorded.") : null
        }
      />
      <Pane
        side="predicted"
        title="Predicted observation"
        titleExtra={predictedKind ? <KindBadge kind={predictedKind} /> : null}
        {...shared}
        headerExtra={
          bare ? null : (
            <>
              {picker}
              {uncertaintyPicker}
            </>
          )
        }
        toolbar={
          bare ? null : (
            <StepBar {...controls} canStep={!!detail && detail.turn > 0} stream={stream} reasoningOpen={reasoningOpen} onReasoningOpen={setReasoningOpen} />
          )
        }
        bodyOverride={predictedBody}
        emptyMessage={predictedEmpty}
        banner={predictedBanner}
      />
      {bare ? null : (
        <div className="side-column">
          <NodeInspector view={view} backend={backend} turnRef={turnRef} />
          <FidelityPanel
            fidelity={detail?.fidelity}
            reasoning={detail?.reasoning}
            engine={predictedKind === "authored" ? "authored" : shownPrediction?.engine}
            rawOutput={shownPrediction && shownPrediction.status !== "ok" && detail?.views.every((v) => !v.predicted) ? detail.raw_output : null}
          />
        </div>
      )}
    </div>
  );
}
