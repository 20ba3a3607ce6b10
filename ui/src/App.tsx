/**
 * The studio's main window: trajectory list, timeline, the real | predicted
 * panes and the fidelity panel. All data comes through the `Backend`.
 */
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import type { BranchSummary, TrajectorySummary, TurnDetail, TurnSummary } from "./api/types";
import { normalizeTurn } from "./api/normalize";
import type { Backend } from "./backend/backend";
import { FidelityPanel } from "./components/FidelityPanel";
import { NodeInspector } from "./components/NodeInspector";
import { formatScore } from "./components/format";
import { Pane } from "./components/Pane";
import { Sidebar } from "./components/Sidebar";
import { Timeline } from "./components/Timeline";
import { sideBySideFromOps, sideBySideLines } from "./model/lineDiff";
import { ScrollSyncContext, ScrollSyncStore } from "./state/scrollSync";
import { SelectionContext, SelectionStore } from "./state/selection";
import { pickTab, tabsFor, type ViewTab } from "./views/tabs";

/** Colour theme. */
export type Theme = "light" | "dark";

const PLAY_INTERVAL_MS = 1600;

/** The whole list: the sidebar filters it locally, as the user types. */
const ALL_TRAJECTORIES = { query: null, domain: null, has_branches: null, max_fidelity: null, sort: null };

function initialTheme(): Theme {
  try {
    const saved = localStorage.getItem("worldloom.theme");
    if (saved === "light" || saved === "dark") return saved;
  } catch {
    // Storage may be unavailable (private windows); fall through.
  }
  return typeof matchMedia === "function" && matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

/** Reads `#t=<trajectory>&turn=<n>` so a reload (or a link) keeps the place. */
function readHash(): { trajectory: string | null; turn: number | null } {
  const p = new URLSearchParams(window.location.hash.replace(/^#/, ""));
  const turn = p.get("turn");
  return { trajectory: p.get("t"), turn: turn !== null && /^-?\d+$/.test(turn) ? Number(turn) : null };
}

function writeHash(trajectory: string | null, turn: number): void {
  if (!trajectory) return;
  const p = new URLSearchParams({ t: trajectory, turn: String(turn) });
  const next = `#${p.toString()}`;
  if (window.location.hash !== next) window.history.replaceState(window.history.state, "", next);
}

function isTypingTarget(el: EventTarget | null): boolean {
  if (!(el instanceof HTMLElement)) return false;
  const tag = el.tagName;
  return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || el.isContentEditable;
}

/** Props of {@link App}. */
export interface AppProps {
  backend: Backend;
}

export function App({ backend }: AppProps) {
  const [theme, setTheme] = useState<Theme>(initialTheme);
  const [error, setError] = useState<string | null>(null);
  const [trajectories, setTrajectories] = useState<TrajectorySummary[]>([]);
  const [listLoaded, setListLoaded] = useState(false);
  const [trajectoryId, setTrajectoryId] = useState<string | null>(() => readHash().trajectory);
  const [branches, setBranches] = useState<BranchSummary[]>([]);
  const [branchId, setBranchId] = useState<string | null>(null);
  const [turns, setTurns] = useState<TurnSummary[]>([]);
  const [current, setCurrent] = useState(0);
  const [predictionByNode, setPredictionByNode] = useState<Record<number, number>>({});
  const [detail, setDetail] = useState<TurnDetail | null>(null);
  const [loading, setLoading] = useState(false);
  const [tabId, setTabId] = useState<string | null>(null);
  const [playing, setPlaying] = useState(false);
  const [reloadKey, setReloadKey] = useState(0);
  const [live, setLive] = useState(false);
  const selection = useMemo(() => new SelectionStore(), []);
  const scrollSync = useMemo(() => new ScrollSyncStore(), []);
  const pendingTurn = useRef<number | null>(readHash().turn);

  useEffect(() => {
    document.documentElement.dataset.theme = theme;
    try {
      localStorage.setItem("worldloom.theme", theme);
    } catch {
      // Not persisted; the theme still applies.
    }
  }, [theme]);

  const report = useCallback((e: unknown) => setError(e instanceof Error ? e.message : String(e)), []);

  // The trajectory list.
  useEffect(() => {
    backend
      .call("list_trajectories", ALL_TRAJECTORIES)
      .then((r) => {
        setTrajectories(r.trajectories);
        setListLoaded(true);
        setTrajectoryId((id) => (id && r.trajectories.some((t) => t.id === id) ? id : (r.trajectories[0]?.id ?? null)));
      })
      .catch(report);
  }, [backend, report, reloadKey]);

  // Back-end events: refresh what changed.
  useEffect(
    () =>
      backend.subscribe((event) => {
        if (event.type === "hello") setLive(true);
        if (event.type === "workspace_changed" || event.type === "prediction_added") setReloadKey((k) => k + 1);
      }),
    [backend],
  );

  // Branches of the selected trajectory.
  useEffect(() => {
    if (!trajectoryId) return;
    let stale = false;
    backend
      .call("get_trajectory", { trajectory_id: trajectoryId })
      .then((r) => {
        if (stale) return;
        setBranches(r.branches);
        setBranchId((b) => (b && r.branches.some((x) => x.id === b) ? b : (r.branches.find((x) => x.recorded)?.id ?? r.branches[0]?.id ?? null)));
      })
      .catch(report);
    return () => {
      stale = true;
    };
  }, [backend, trajectoryId, report, reloadKey]);

  // Turns of the selected branch.
  useEffect(() => {
    if (!trajectoryId || !branchId) return;
    let stale = false;
    backend
      .call("get_branch", { trajectory_id: trajectoryId, branch_id: branchId })
      .then((r) => {
        if (stale) return;
        setTurns(r.turns);
        const wanted = pendingTurn.current;
        pendingTurn.current = null;
        setCurrent((c) => {
          if (wanted !== null) return Math.max(-1, Math.min(r.turns.length - 1, wanted));
          return c >= r.turns.length ? r.turns.length - 1 : c;
        });
      })
      .catch(report);
    return () => {
      stale = true;
    };
  }, [backend, trajectoryId, branchId, report, reloadKey]);

  const nodeId = current < 0 ? 0 : (turns[current]?.node_id ?? 0);
  const predictionId = predictionByNode[nodeId];

  // The selected turn.
  useEffect(() => {
    if (!trajectoryId || (current >= 0 && turns.length === 0)) return;
    let stale = false;
    setLoading(true);
    backend
      .call("get_turn", { trajectory_id: trajectoryId, node_id: nodeId, prediction_id: predictionId ?? null })
      .then((d) => {
        if (stale) return;
        setDetail(normalizeTurn(d));
        setError(null);
      })
      .catch(report)
      .finally(() => {
        if (!stale) setLoading(false);
      });
    return () => {
      stale = true;
    };
  }, [backend, trajectoryId, nodeId, predictionId, current, turns.length, report, reloadKey]);

  useEffect(() => writeHash(trajectoryId, current), [trajectoryId, current]);
  useEffect(() => selection.clear(), [nodeId, trajectoryId, selection]);
  useEffect(() => scrollSync.reset(), [nodeId, trajectoryId, tabId, scrollSync]);

  const go = useCallback(
    (index: number) => {
      setCurrent(Math.max(-1, Math.min(turns.length - 1, index)));
    },
    [turns.length],
  );

  // Keyboard: ←/→ and j/k between turns, Home/End to the ends.
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.altKey || e.ctrlKey || e.metaKey || isTypingTarget(e.target)) return;
      let handled = true;
      if (e.key === "ArrowRight" || e.key === "j") setCurrent((c) => Math.min(turns.length - 1, c + 1));
      else if (e.key === "ArrowLeft" || e.key === "k") setCurrent((c) => Math.max(-1, c - 1));
      else if (e.key === "Home") setCurrent(-1);
      else if (e.key === "End") setCurrent(turns.length - 1);
      else handled = false;
      if (handled) {
        e.preventDefault();
        setPlaying(false);
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [turns.length]);

  // Play: step through the turns for demos, stopping at the end.
  useEffect(() => {
    if (!playing) return;
    const timer = window.setInterval(() => {
      setCurrent((c) => {
        if (c >= turns.length - 1) {
          setPlaying(false);
          return c;
        }
        return c + 1;
      });
    }, PLAY_INTERVAL_MS);
    return () => window.clearInterval(timer);
  }, [playing, turns.length]);

  const views = useMemo(() => detail?.views ?? [], [detail]);
  const tabs = useMemo(() => tabsFor(views), [views]);
  const active: ViewTab | undefined = pickTab(tabs, tabId);
  const view = active ? views[active.view_index] : undefined;
  const needsLines = active && ["html-source", "ax-source", "source", "text"].includes(active.kind);
  const lines = useMemo(
    () => {
      if (!needsLines || !view) return null;
      const real = view.real?.text ?? "";
      const predicted = view.predicted?.text ?? "";
      // Prefer the back end's line diff, so the view and the line-ratio metric agree.
      return view.line_diff ? sideBySideFromOps(real, predicted, view.line_diff.ops) : sideBySideLines(real, predicted);
    },
    [needsLines, view],
  );

  const trajectory = trajectories.find((t) => t.id === trajectoryId) ?? null;
  const shownPrediction = detail?.predictions.find((p) => p.id === detail.prediction_id) ?? null;

  const picker =
    detail && detail.predictions.length > 0 ? (
      <select
        className="prediction-picker"
        aria-label="Prediction shown"
        value={detail.prediction_id ?? ""}
        onChange={(e) => {
          if (e.target.value !== "") setPredictionByNode((m) => ({ ...m, [nodeId]: Number(e.target.value) }));
        }}
      >
        {detail.prediction_id === null ? <option value="">{detail.predicted_kind === "authored" ? "authored observation" : "—"}</option> : null}
        {detail.predictions.map((p) => (
          <option key={p.id} value={p.id}>
            #{p.id} {p.engine}
            {p.seed != null ? ` · seed ${p.seed}` : ""} · {p.context} · {formatScore(p.overall)}
          </option>
        ))}
      </select>
    ) : null;

  const predictedEmpty = !detail
    ? null
    : detail.turn === 0
      ? "The initial state is observed, not predicted."
      : detail.predictions.length === 0 && detail.predicted_kind !== "authored"
        ? "No prediction for this turn yet."
        : null;

  return (
    <SelectionContext.Provider value={selection}>
      <ScrollSyncContext.Provider value={scrollSync}>
      <div className="app">
        <Sidebar trajectories={trajectories} selectedId={trajectoryId} onSelect={(id) => {
          if (id === trajectoryId) return;
          setTrajectoryId(id);
          setBranchId(null);
          setTurns([]);
          setDetail(null);
          setCurrent(0);
          setPlaying(false);
        }} />
        <main className="main">
          <header className="topbar">
            <div className="title">
              <h1>{trajectory?.name ?? "No trajectory"}</h1>
              {trajectory?.goal ? <p className="goal" title={trajectory.goal}>{trajectory.goal}</p> : null}
            </div>
            {branches.length > 0 ? (
              <select aria-label="Branch" value={branchId ?? ""} onChange={(e) => setBranchId(e.target.value)}>
                {branches.map((b) => (
                  <option key={b.id} value={b.id}>
                    {b.name}
                    {b.recorded && b.name !== "recorded" ? " (recorded)" : ""} · {b.turn_count} turns
                  </option>
                ))}
              </select>
            ) : null}
            <button type="button" className="theme-toggle" aria-label={theme === "dark" ? "Switch to light theme" : "Switch to dark theme"} onClick={() => setTheme(theme === "dark" ? "light" : "dark")}>
              {theme === "dark" ? "☀" : "☾"}
            </button>
          </header>
          <Timeline turns={turns} current={current} onSelect={(i) => { setPlaying(false); go(i); }} playing={playing} onPlay={() => setPlaying((p) => !p)} />
          <div className="action-bar" aria-label="Action">
            <span className="action-label">{detail?.turn ? `Action of turn ${detail.turn}` : "Initial state"}</span>
            {detail?.action ? <code className="action-raw">{detail.action.raw}</code> : null}
            {detail?.real_meta?.url ? <span className="meta-url" title="URL">{detail.real_meta.url}</span> : null}
            {loading ? <span className="loading" aria-live="polite">loading…</span> : null}
          </div>
          {listLoaded && trajectories.length === 0 && !error ? (
            <div className="pane-empty" role="status">
              The workspace holds no trajectory yet. Start the studio with files to import, for example
              <code> worldloom serve samples/</code>.
            </div>
          ) : null}
          <div className="compare">
            <Pane side="real" title="Real observation" tabs={tabs} active={active} onTab={(t) => setTabId(t.id)} view={view} lines={lines} meta={detail?.real_meta} banner={detail?.real_error ? `Step error: ${detail.real_error}` : null} emptyMessage={detail && detail.views.every((v) => !v.real) ? (detail.real_error ? `No observation: ${detail.real_error}` : "This state was not recorded.") : null} />
            <Pane side="predicted" title="Predicted observation" tabs={tabs} active={active} onTab={(t) => setTabId(t.id)} view={view} lines={lines} meta={detail?.real_meta} headerExtra={picker} emptyMessage={predictedEmpty} banner={detail?.predicted_kind === "authored" ? "Authored observation (written by hand), not a model prediction." : null} />
            <div className="side-column">
              <NodeInspector view={view} />
              <FidelityPanel fidelity={detail?.fidelity} reasoning={detail?.reasoning} engine={shownPrediction?.engine} />
            </div>
          </div>
          <footer className="statusbar">
            <span className="legend">
              <span className="lg lg-changed">changed</span>
              <span className="lg lg-moved">moved</span>
              <span className="lg lg-added">added</span>
              <span className="lg lg-removed">removed</span>
            </span>
            <span className="kbd-hint">← → / j k turns · Home End · hover a node to find it in both panes</span>
            <span className="backend-kind" title={live ? "receiving back-end events" : "no event stream"}>
              {live ? <span className="live-dot" aria-label="Live updates">●</span> : null} {backend.kind}
            </span>
            {error ? (
              <span className="error" role="alert">
                {error}
              </span>
            ) : null}
          </footer>
        </main>
      </div>
      </ScrollSyncContext.Provider>
    </SelectionContext.Provider>
  );
}
