/**
 * The studio's main window: trajectory list, timeline, the real | predicted
 * panes and the fidelity panel, and the laboratory around them (engine,
 * streaming steps, action edits and branches, rollouts, authored
 * observations, perturbations, the branch tree, branch comparison, undo /
 * redo, curriculum export, import). All data comes through the `Backend`.
 */
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { asLabEvent, type EngineStatus } from "./api/lab";
import type { BranchSummary, ContextMode, ImportFilesResponse, StudioEvent, TrajectorySummary, TreeEdgeView, TreeNodeView, TurnDetail, TurnSummary } from "./api/types";
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
import { ActionDialog } from "./lab/ActionDialog";
import { AuthorDialog } from "./lab/AuthorDialog";
import { BranchTree } from "./lab/BranchTree";
import { CompareView } from "./lab/CompareView";
import { EngineDialog } from "./lab/EngineDialog";
import { ExportDialog } from "./lab/ExportDialog";
import { HistoryDialog } from "./lab/HistoryDialog";
import { ImportDialog, ImportResult } from "./lab/ImportDialog";
import { KindBadge, KindLegend } from "./lab/Kinds";
import { RolloutDialog } from "./lab/RolloutDialog";
import { ShadedText, UncertaintyLegend } from "./lab/ShadedText";
import { StepBar, type StepStream } from "./lab/StepBar";
import { branchForNode, pathToRoot } from "./model/treeLayout";
import { hasUncertainty, type UncertaintyMode } from "./model/tokens";
import { filesFromDrop, readUploads, type PickedFile } from "./model/upload";

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

/** Reads `#t=<trajectory>&b=<branch>&turn=<n>` so a reload (or a link) keeps the place. */
function readHash(): { trajectory: string | null; branch: string | null; turn: number | null } {
  const p = new URLSearchParams(window.location.hash.replace(/^#/, ""));
  const turn = p.get("turn");
  return { trajectory: p.get("t"), branch: p.get("b"), turn: turn !== null && /^-?\d+$/.test(turn) ? Number(turn) : null };
}

function writeHash(trajectory: string | null, branch: string | null, turn: number): void {
  if (!trajectory) return;
  const p = new URLSearchParams({ t: trajectory });
  if (branch) p.set("b", branch);
  p.set("turn", String(turn));
  const next = `#${p.toString()}`;
  if (window.location.hash !== next) window.history.replaceState(window.history.state, "", next);
}

function isTypingTarget(el: EventTarget | null): boolean {
  if (!(el instanceof HTMLElement)) return false;
  const tag = el.tagName;
  return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || el.isContentEditable || !!el.closest(".cm-editor");
}

/** Props of {@link App}. */
export interface AppProps {
  backend: Backend;
}

/** Which dialog is open. */
type DialogName = "engine" | "edit" | "append" | "rollout" | "author" | "export" | "history" | "import" | null;

/** The main area: the turn's panes, the branch tree, or two branches compared. */
type MainView = "turn" | "tree" | "compare";

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function initialContext(): ContextMode {
  try {
    return localStorage.getItem("worldloom.context") === "free-running" ? "free-running" : "teacher-forced";
  } catch {
    return "teacher-forced";
  }
}

/** A placeholder action list for the rollout dialog, in the domain's action language. */
function rolloutPlaceholder(domain: string | undefined): string {
  switch (domain) {
    case "web":
      return "click('12')\nfill('41', 'hello')\nscroll(0, 300)";
    case "os":
      return "pyautogui.click(640, 360)\npyautogui.write('report.txt')\npyautogui.press('enter')";
    case "android":
      return '{"action_type": "click", "x": 540, "y": 1200}\n{"action_type": "navigate_back"}';
    case "mcp":
    case "swe":
      return '{"name": "list_files", "arguments": {"path": "."}}';
    default:
      return "ls -la\ncat README.md";
  }
}

export function App({ backend }: AppProps) {
  const [theme, setTheme] = useState<Theme>(initialTheme);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [trajectories, setTrajectories] = useState<TrajectorySummary[]>([]);
  const [listLoaded, setListLoaded] = useState(false);
  const [trajectoryId, setTrajectoryId] = useState<string | null>(() => readHash().trajectory);
  const [branches, setBranches] = useState<BranchSummary[]>([]);
  const [treeNodes, setTreeNodes] = useState<TreeNodeView[]>([]);
  const [treeEdges, setTreeEdges] = useState<TreeEdgeView[]>([]);
  const [branchId, setBranchId] = useState<string | null>(() => readHash().branch);
  const [turns, setTurns] = useState<TurnSummary[]>([]);
  const [current, setCurrent] = useState(0);
  const [predictionByNode, setPredictionByNode] = useState<Record<number, number>>({});
  const [detail, setDetail] = useState<TurnDetail | null>(null);
  const [loading, setLoading] = useState(false);
  const [tabId, setTabId] = useState<string | null>(null);
  const [playing, setPlaying] = useState(false);
  const [reloadKey, setReloadKey] = useState(0);
  const [live, setLive] = useState(false);
  const [dialog, setDialog] = useState<DialogName>(null);
  const [mainView, setMainView] = useState<MainView>("turn");
  const [compareSel, setCompareSel] = useState<string[]>([]);
  const [engine, setEngine] = useState<EngineStatus | null>(null);
  const [context, setContext] = useState<ContextMode>(initialContext);
  const [stream, setStream] = useState<StepStream | null>(null);
  const [reasoningOpen, setReasoningOpen] = useState(true);
  const [uncertainty, setUncertainty] = useState<"off" | UncertaintyMode>("off");
  const [rollout, setRollout] = useState<{ job_id: string | null; done: number; total: number; running: boolean; status: string | null } | null>(null);
  const [undoState, setUndoState] = useState({ can_undo: false, can_redo: false });
  const [importResult, setImportResult] = useState<ImportFilesResponse | null>(null);
  const [dragging, setDragging] = useState(false);
  const [perturbationDraft, setPerturbationDraft] = useState<string | null>(null);
  const [treePerturbations, setTreePerturbations] = useState<Map<number, string>>(new Map());
  const selection = useMemo(() => new SelectionStore(), []);
  const scrollSync = useMemo(() => new ScrollSyncStore(), []);
  const pendingTurn = useRef<number | null>(readHash().turn);
  const streamRef = useRef<StepStream | null>(null);
  streamRef.current = stream;
  const rolloutRef = useRef(rollout);
  rolloutRef.current = rollout;

  useEffect(() => {
    document.documentElement.dataset.theme = theme;
    try {
      localStorage.setItem("worldloom.theme", theme);
    } catch {
      // Not persisted; the theme still applies.
    }
  }, [theme]);
  useEffect(() => {
    try {
      localStorage.setItem("worldloom.context", context);
    } catch {
      // Not persisted.
    }
  }, [context]);

  const report = useCallback((e: unknown) => setError(message(e)), []);
  const reload = useCallback(() => setReloadKey((k) => k + 1), []);

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

  // The engine and the undo state.
  useEffect(() => {
    backend
      .call("engine_status", {})
      .then(setEngine)
      .catch(() => setEngine(null));
  }, [backend]);
  useEffect(() => {
    backend
      .call("workspace_info", {})
      .then((w) => setUndoState({ can_undo: w.can_undo, can_redo: w.can_redo }))
      .catch(() => {});
  }, [backend, reloadKey]);

  // Back-end events: refresh what changed; stream steps and rollouts.
  const onEvent = useCallback((event: StudioEvent) => {
    if (event.type === "hello") setLive(true);
    if (event.type === "workspace_changed" || event.type === "prediction_added") setReloadKey((k) => k + 1);
    const lab = asLabEvent(event);
    if (!lab) return;
    const ro = rolloutRef.current;
    if (lab.type === "rollout_progress") {
      if (ro && (ro.job_id === null || ro.job_id === lab.job_id)) {
        const finished = lab.done >= lab.total;
        setRollout({ job_id: lab.job_id, done: lab.done, total: lab.total, running: !finished, status: finished ? "done" : null });
        if (finished) {
          // Show the rollout's last state on its branch.
          setBranchId(String(lab.node_id));
          pendingTurn.current = 1_000_000;
          setMainView("turn");
        }
      }
      setReloadKey((k) => k + 1);
      return;
    }
    // A rollout's events can arrive before its `rollout` call has returned the job id.
    if (ro?.running && (ro.job_id === null || ro.job_id === lab.job_id)) {
      if (lab.type === "step_finished" && lab.status !== "ok" && lab.status !== "truncated") {
        setRollout({ ...ro, running: false, status: lab.status === "cancelled" ? "stopped" : `${lab.status}${lab.error ? `: ${lab.error}` : ""}` });
      }
      return;
    }
    setStream((s) => {
      if (!s || s.trajectory_id !== lab.trajectory_id || s.node_id !== lab.node_id) return s;
      if (s.job_id !== null && s.job_id !== lab.job_id) return s;
      if (!s.running) return s;
      if (lab.type === "step_delta") {
        return { ...s, job_id: lab.job_id, reasoning: s.reasoning + lab.reasoning, observation: s.observation + lab.observation, tokens: lab.tokens.length ? [...s.tokens, ...lab.tokens] : s.tokens };
      }
      return { ...s, job_id: lab.job_id, running: false, status: lab.status, error: lab.error, stats: lab.stats, finished_ms: Date.now() };
    });
    if (lab.type === "step_finished") {
      setPredictionByNode((m) => {
        const { [lab.node_id]: _dropped, ...rest } = m;
        return rest;
      });
      setReloadKey((k) => k + 1);
    }
  }, []);
  useEffect(() => backend.subscribe(onEvent), [backend, onEvent]);

  // Branches and the tree of the selected trajectory.
  useEffect(() => {
    if (!trajectoryId) return;
    let stale = false;
    backend
      .call("get_trajectory", { trajectory_id: trajectoryId })
      .then((r) => {
        if (stale) return;
        setBranches(r.branches);
        setTreeNodes(r.nodes);
        setTreeEdges(r.edges);
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
      .catch((e) => {
        if (stale) return;
        // A branch that no longer exists (undone): fall back to the recorded one.
        setBranchId(null);
        report(e);
      });
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
        setDetail(d);
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

  // The tree view marks every perturbed edge: collect them from each branch's turns.
  useEffect(() => {
    if (mainView !== "tree" || !trajectoryId) return;
    let stale = false;
    Promise.all(branches.slice(0, 64).map((b) => backend.call("get_branch", { trajectory_id: trajectoryId, branch_id: b.id }).catch(() => null)))
      .then((replies) => {
        if (stale) return;
        const out = new Map<number, string>();
        for (const r of replies) for (const t of r?.turns ?? []) if (t.perturbation) out.set(t.edge_id, t.perturbation);
        setTreePerturbations(out);
      })
      .catch(() => {});
    return () => {
      stale = true;
    };
  }, [backend, mainView, trajectoryId, branches]);

  useEffect(() => writeHash(trajectoryId, branchId, current), [trajectoryId, branchId, current]);
  useEffect(() => selection.clear(), [nodeId, trajectoryId, selection]);
  useEffect(() => scrollSync.reset(), [nodeId, trajectoryId, tabId, scrollSync]);
  useEffect(() => setPerturbationDraft(null), [nodeId, trajectoryId]);

  const go = useCallback(
    (index: number) => {
      setCurrent(Math.max(-1, Math.min(turns.length - 1, index)));
    },
    [turns.length],
  );

  const undoRedo = useCallback(
    async (which: "undo" | "redo") => {
      try {
        const r = await backend.call(which, {});
        // The undo log is the workspace's: say so when the change was in another trajectory.
        const other = r.change?.trajectory_id != null && r.change.trajectory_id !== trajectoryId ? trajectories.find((t) => t.id === r.change?.trajectory_id) : undefined;
        const where = other ? ` (in ${other.name})` : "";
        setNotice(r.change ? `${which === "undo" ? "Undid" : "Redid"}: ${r.change.summary}${where}` : `Nothing to ${which}.`);
        reload();
      } catch (e) {
        report(e);
      }
    },
    [backend, reload, report, trajectoryId, trajectories],
  );

  // Keyboard: ←/→ and j/k between turns, Home/End to the ends; Ctrl/Cmd+Z undo, Ctrl/Cmd+Shift+Z (or Ctrl+Y) redo.
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (isTypingTarget(e.target)) return;
      if ((e.ctrlKey || e.metaKey) && !e.altKey) {
        const k = e.key.toLowerCase();
        if (k === "z" || k === "y") {
          if (dialog) return;
          e.preventDefault();
          void undoRedo(k === "y" || e.shiftKey ? "redo" : "undo");
        }
        return;
      }
      if (e.altKey || dialog) return;
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
  }, [turns.length, undoRedo, dialog]);

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

  // Import: native paths in the desktop app, uploaded contents in a browser.
  const afterImport = useCallback(
    (r: ImportFilesResponse) => {
      setImportResult(r);
      setNotice(`Imported ${r.imported.filter((i) => i.added).length} trajectories${r.failed.length ? `, ${r.failed.length} failed` : ""}.`);
      reload();
      const first = r.imported[0];
      if (first) {
        setTrajectoryId(first.trajectory_id);
        setBranchId(null);
      }
    },
    [reload],
  );
  const importPaths = useCallback(
    async (paths: string[]) => {
      if (paths.length === 0) return;
      try {
        afterImport(await backend.call("import_files", { paths }));
      } catch (e) {
        report(e);
      }
    },
    [backend, afterImport, report],
  );
  const upload = useCallback(
    async (files: PickedFile[]) => {
      const body = await readUploads(files);
      if (body.length === 0) throw new Error("no file to import (paths with .. are refused)");
      afterImport(await backend.call("import_uploaded", { files: body }));
    },
    [backend, afterImport],
  );
  const openImport = () => {
    setImportResult(null);
    setDialog("import");
  };
  /** Desktop app: the native dialog gives paths for `import_files`. */
  const chooseNative = backend.chooseImportPaths
    ? async (folders: boolean) => {
        const paths = await backend.chooseImportPaths!({ folders });
        if (paths.length > 0) afterImport(await backend.call("import_files", { paths }));
      }
    : undefined;
  useEffect(() => {
    if (backend.onFileDrop) return backend.onFileDrop((paths) => void importPaths(paths));
    const hasFiles = (e: DragEvent) => Array.from(e.dataTransfer?.types ?? []).includes("Files");
    const over = (e: DragEvent) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      setDragging(true);
    };
    const leave = (e: DragEvent) => {
      if (e.relatedTarget === null) setDragging(false);
    };
    const drop = (e: DragEvent) => {
      if (!hasFiles(e) || !e.dataTransfer) return;
      e.preventDefault();
      setDragging(false);
      filesFromDrop(e.dataTransfer)
        .then(upload)
        .catch(report);
    };
    window.addEventListener("dragover", over);
    window.addEventListener("dragleave", leave);
    window.addEventListener("drop", drop);
    return () => {
      window.removeEventListener("dragover", over);
      window.removeEventListener("dragleave", leave);
      window.removeEventListener("drop", drop);
    };
  }, [backend, importPaths, upload, report]);

  const views = useMemo(() => detail?.views ?? [], [detail]);
  const tabs = useMemo(() => tabsFor(views), [views]);
  const active: ViewTab | undefined = pickTab(tabs, tabId, views);
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
  const branch = branches.find((b) => b.id === branchId) ?? null;
  const atLeaf = current === turns.length - 1;

  // ---- laboratory actions ----

  const stepNow = async () => {
    if (!trajectoryId || !detail || detail.turn === 0) return;
    const target = detail.node_id;
    setStream({ job_id: null, trajectory_id: trajectoryId, node_id: target, reasoning: "", observation: "", tokens: [], running: true, status: null, error: null, stats: null, started_ms: Date.now(), finished_ms: null });
    try {
      const r = await backend.call("step", { trajectory_id: trajectoryId, node_id: target, context });
      setStream((s) => (s && s.node_id === target && s.job_id === null ? { ...s, job_id: r.job_id } : s));
    } catch (e) {
      setStream((s) => (s ? { ...s, running: false, status: "error", error: message(e) } : s));
    }
  };

  const stopNow = async () => {
    const s = streamRef.current;
    if (!s?.running) return;
    if (!s.job_id) {
      // The job id is not back yet: wait for it briefly.
      await new Promise((r) => window.setTimeout(r, 150));
    }
    const job = streamRef.current?.job_id;
    if (!job) return;
    try {
      await backend.call("cancel_step", { job_id: job });
      setStream((x) => (x && x.job_id === job && x.running ? { ...x, running: false, status: "cancelled", finished_ms: Date.now() } : x));
    } catch (e) {
      report(e);
    }
  };

  const chooseShown = async (id: number | null) => {
    if (!trajectoryId) return;
    try {
      await backend.call("choose_prediction", { trajectory_id: trajectoryId, node_id: nodeId, prediction_id: id });
      setPredictionByNode((m) => {
        const { [nodeId]: _dropped, ...rest } = m;
        return rest;
      });
      reload();
    } catch (e) {
      report(e);
    }
  };

  const jumpToNode = (node: number) => {
    const hit = branchForNode(node, branches, treeNodes, treeEdges, branchId);
    if (!hit) return;
    pendingTurn.current = hit.turn_index;
    if (hit.branch_id === branchId) setCurrent(Math.max(-1, Math.min(turns.length - 1, hit.turn_index)));
    else setBranchId(hit.branch_id);
    setMainView("turn");
  };

  const savePerturbation = async (instruction: string | null) => {
    if (!trajectoryId || detail?.edge_id == null) return;
    try {
      await backend.call("set_perturbation", { trajectory_id: trajectoryId, edge_id: detail.edge_id, instruction });
      setPerturbationDraft(null);
      reload();
    } catch (e) {
      report(e);
    }
  };

  const startRollout = async (actions: string[], ctx: ContextMode) => {
    if (!trajectoryId) return;
    setRollout({ job_id: null, done: 0, total: actions.length, running: true, status: null });
    try {
      const r = await backend.call("rollout", { trajectory_id: trajectoryId, node_id: nodeId, actions, context: ctx });
      setRollout((x) => (x ? { ...x, job_id: r.job_id } : x));
    } catch (e) {
      setRollout({ job_id: null, done: 0, total: actions.length, running: false, status: message(e) });
      throw e;
    }
  };
  const stopRollout = async () => {
    const job = rolloutRef.current?.job_id;
    if (!job) return;
    try {
      await backend.call("cancel_step", { job_id: job });
      setRollout((x) => (x ? { ...x, running: false, status: "stopped" } : x));
      reload();
    } catch (e) {
      report(e);
    }
  };

  // ---- the predicted pane ----

  const streamHere = stream && stream.trajectory_id === trajectoryId && stream.node_id === nodeId ? stream : null;
  const tokens = detail?.tokens ?? null;
  const canShade = uncertainty !== "off" && hasUncertainty(tokens, uncertainty);
  const shadeMode: UncertaintyMode = uncertainty === "off" ? "probability" : uncertainty;
  let predictedBody: React.ReactNode = null;
  if (streamHere?.running) {
    predictedBody =
      uncertainty !== "off" && hasUncertainty(streamHere.tokens, uncertainty) ? (
        <ShadedText tokens={streamHere.tokens} mode={uncertainty} label="Streaming observation" />
      ) : (
        <div className="shaded" role="document" aria-label="Streaming observation">
          <pre className="shaded-text stream-text">{streamHere.observation || "…"}</pre>
        </div>
      );
  } else if (canShade && tokens) {
    predictedBody = <ShadedText tokens={tokens} mode={shadeMode} label="Predicted observation text shaded by uncertainty" />;
  }

  const hasAuthored = detail?.predicted_kind === "authored" || !!turns[current]?.has_authored;
  const picker =
    detail && (detail.predictions.length > 0 || hasAuthored) ? (
      <select
        className="prediction-picker"
        aria-label="Prediction shown"
        value={detail.prediction_id ?? (hasAuthored ? "authored" : "")}
        onChange={(e) => {
          if (e.target.value === "authored") void chooseShown(null);
          else if (e.target.value !== "") void chooseShown(Number(e.target.value));
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
    <select className="unc-picker" aria-label="Uncertainty" value={uncertainty} onChange={(e) => setUncertainty(e.target.value as "off" | UncertaintyMode)} title={hasUncertainty(tokens, "probability") ? "shade the observation by token uncertainty" : "no token log-probabilities for this prediction"}>
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

  const engineName = engine?.name ?? (engine?.settings?.kind === "baseline" ? engine.settings.name : engine?.settings?.kind) ?? "engine";
  const predictedBanner = streamHere?.running ? (
    `Streaming from ${engineName} — nothing is stored until it finishes.`
  ) : uncertainty !== "off" ? (
      canShade ? (
        <UncertaintyLegend mode={uncertainty} />
      ) : (
        <span>
          No token {uncertainty === "probability" ? "log-probabilities" : "entropies"} for this prediction
          {hasUncertainty(tokens, "probability") ? " (its engine reported log-probabilities only: shade by probability)." : " (turn on “Token log-probabilities” in the engine and step again)."}
        </span>
      )
    ) : detail?.predicted_kind === "authored" ? (
      "Authored observation (written by hand), not a model prediction."
    ) : null;

    const pathNodes = useMemo(() => new Set(branch ? pathToRoot(branch.leaf_node, treeNodes, treeEdges) : []), [branch, treeNodes, treeEdges]);
  const perturbedEdges = useMemo(() => {
    const out = new Map(treePerturbations);
    for (const t of turns) {
      if (t.perturbation) out.set(t.edge_id, t.perturbation);
      else out.delete(t.edge_id);
    }
    return out;
  }, [turns, treePerturbations]);
  const compareBranches = compareSel.map((id) => branches.find((b) => b.id === id)).filter((b): b is BranchSummary => !!b);
  const predictedKind = detail?.predicted_kind ?? null;
  const authorSource = (() => {
    const v = view ?? views[0];
    if (!v) return { representation: "text" as const, text: "" };
    return { representation: v.representation, text: v.predicted?.text ?? v.real?.text ?? "" };
  })();

  return (
    <SelectionContext.Provider value={selection}>
      <ScrollSyncContext.Provider value={scrollSync}>
      <div className={dragging ? "app is-dragging" : "app"}>
        <Sidebar trajectories={trajectories} selectedId={trajectoryId} onSelect={(id) => {
          if (id === trajectoryId) return;
          setTrajectoryId(id);
          setBranchId(null);
          setTurns([]);
          setDetail(null);
          setCurrent(0);
          setPlaying(false);
          setCompareSel([]);
          if (mainView === "compare") setMainView("tree");
        }} />
        <main className="main">
          <header className="topbar">
            <div className="title">
              <h1>{trajectory?.name ?? "No trajectory"}</h1>
              {trajectory?.goal ? <p className="goal" title={trajectory.goal}>{trajectory.goal}</p> : null}
            </div>
            {branches.length > 0 ? (
              <select className="branch-picker" aria-label="Branch" value={branchId ?? ""} onChange={(e) => setBranchId(e.target.value)}>
                {branches.map((b) => (
                  <option key={b.id} value={b.id}>
                    {b.name}
                    {b.recorded && b.name !== "recorded" ? " (recorded)" : ""} · {b.turn_count} turns
                  </option>
                ))}
              </select>
            ) : null}
            <div className="seg" role="group" aria-label="Main view">
              <button type="button" aria-pressed={mainView === "turn"} onClick={() => setMainView("turn")}>
                Turn
              </button>
              <button type="button" aria-pressed={mainView === "tree"} onClick={() => setMainView("tree")}>
                Branch tree
              </button>
            </div>
            <div className="toolbar-group" role="group" aria-label="Edit history">
              <button type="button" aria-label="Undo" title="Undo (Ctrl/Cmd+Z)" disabled={!undoState.can_undo} onClick={() => void undoRedo("undo")}>
                ↶
              </button>
              <button type="button" aria-label="Redo" title="Redo (Ctrl/Cmd+Shift+Z)" disabled={!undoState.can_redo} onClick={() => void undoRedo("redo")}>
                ↷
              </button>
              <button type="button" onClick={() => setDialog("history")}>
                History
              </button>
            </div>
            <button type="button" className={engine && !engine.ready ? "engine-button not-ready" : "engine-button"} onClick={() => setDialog("engine")} title={engine?.error ?? engine?.description ?? "choose the engine"}>
              Engine: {engineName}
              {engine && !engine.ready ? " ⚠" : ""}
            </button>
            <button type="button" onClick={openImport}>
              Import…
            </button>
            <button type="button" disabled={!trajectoryId} onClick={() => setDialog("export")}>
              Export curriculum…
            </button>
            <button type="button" className="theme-toggle" aria-label={theme === "dark" ? "Switch to light theme" : "Switch to dark theme"} onClick={() => setTheme(theme === "dark" ? "light" : "dark")}>
              {theme === "dark" ? "☀" : "☾"}
            </button>
          </header>
          <Timeline turns={turns} current={current} onSelect={(i) => { setPlaying(false); go(i); }} playing={playing} onPlay={() => setPlaying((p) => !p)} />
          <div className="action-bar" aria-label="Action">
            <span className="action-label">{detail?.turn ? `Action of turn ${detail.turn}` : "Initial state"}</span>
            {detail?.action ? <code className="action-raw">{detail.action.raw}</code> : null}
            {detail?.perturbation ? (
              <span className="perturbation-chip" role="note" aria-label="Control instruction" title="added to the world model's prompt for this turn">
                ⚡ {detail.perturbation}
              </span>
            ) : null}
            {detail?.real_meta?.url ? <span className="meta-url" title="URL">{detail.real_meta.url}</span> : null}
            {loading ? <span className="loading" aria-live="polite">loading…</span> : null}
          </div>
          <div className="turn-tools" role="toolbar" aria-label="Turn tools">
            <button type="button" disabled={!detail?.edge_id && detail?.edge_id !== 0} onClick={() => setDialog("edit")} title="Edit this turn's action: a new branch from the previous state">
              Edit action
            </button>
            <button type="button" disabled={!detail} onClick={() => setDialog("append")} title={atLeaf ? "Add a turn after this one" : "Add a turn from this state (a new branch)"}>
              Add turn
            </button>
            <button type="button" disabled={!detail} onClick={() => setDialog("rollout")} aria-label="Roll out N" title="Continue this branch for N turns with actions you write">
              Roll out N…
            </button>
            <button type="button" disabled={!detail || detail.turn === 0} onClick={() => setDialog("author")} title="Write this state's observation by hand">
              Author observation
            </button>
            {perturbationDraft === null ? (
              <button type="button" disabled={detail?.edge_id == null} onClick={() => setPerturbationDraft(detail?.perturbation ?? "")} title="A control instruction added to the world model's prompt for this turn">
                {detail?.perturbation ? "Edit control instruction" : "Add control instruction"}
              </button>
            ) : (
              <form
                className="perturbation-form"
                onSubmit={(e) => {
                  e.preventDefault();
                  void savePerturbation(perturbationDraft.trim() || null);
                }}
              >
                <input aria-label="Control instruction" autoFocus value={perturbationDraft} placeholder="e.g. the server returns an error page" onChange={(e) => setPerturbationDraft(e.target.value)} />
                <button type="submit">Save instruction</button>
                {detail?.perturbation ? (
                  <button type="button" onClick={() => void savePerturbation(null)}>
                    Clear
                  </button>
                ) : null}
                <button type="button" onClick={() => setPerturbationDraft(null)}>
                  Cancel
                </button>
              </form>
            )}
            {notice ? (
              <span className="notice" role="status" aria-label="Notice">
                {notice}
              </span>
            ) : null}
          </div>
          {listLoaded && trajectories.length === 0 && !error ? (
            <div className="pane-empty" role="status">
              The workspace holds no trajectory yet. Use Import… or drop files onto the window, or start the studio with files to import, for example
              <code> worldloom serve samples/</code>.
            </div>
          ) : null}
          {mainView === "tree" ? (
            <BranchTree
              nodes={treeNodes}
              edges={treeEdges}
              branches={branches}
              currentNode={nodeId}
              currentBranch={branchId}
              pathNodes={pathNodes}
              perturbedEdges={perturbedEdges}
              selected={compareSel}
              onSelect={setCompareSel}
              onJump={jumpToNode}
              onCompare={() => setMainView("compare")}
              colorMode={theme}
            />
          ) : mainView === "compare" && trajectoryId && compareBranches.length === 2 ? (
            <CompareView backend={backend} trajectoryId={trajectoryId} left={compareBranches[0]!} right={compareBranches[1]!} onClose={() => setMainView("tree")} />
          ) : (
            <div className="compare">
              <Pane side="real" title="Real observation" titleExtra={detail?.views.some((v) => v.real) ? <KindBadge kind="real" /> : <KindBadge kind="empty" label="not recorded" />} tabs={tabs} active={active} onTab={(t) => setTabId(t.id)} view={view} lines={lines} meta={detail?.real_meta} banner={detail?.real_error ? `Step error: ${detail.real_error}` : null} emptyMessage={detail && detail.views.every((v) => !v.real) ? (detail.real_error ? `No observation: ${detail.real_error}` : "This state was not recorded.") : null} />
              <Pane
                side="predicted"
                title="Predicted observation"
                titleExtra={predictedKind ? <KindBadge kind={predictedKind} /> : null}
                tabs={tabs}
                active={active}
                onTab={(t) => setTabId(t.id)}
                view={view}
                lines={lines}
                meta={detail?.real_meta}
                headerExtra={
                  <>
                    {picker}
                    {uncertaintyPicker}
                  </>
                }
                toolbar={
                  <StepBar
                    engine={engineName}
                    context={context}
                    onContext={setContext}
                    onStep={() => void stepNow()}
                    onStop={() => void stopNow()}
                    canStep={!!detail && detail.turn > 0}
                    stream={streamHere}
                    reasoningOpen={reasoningOpen}
                    onReasoningOpen={setReasoningOpen}
                    onEngine={() => setDialog("engine")}
                  />
                }
                bodyOverride={predictedBody}
                emptyMessage={predictedEmpty}
                banner={predictedBanner}
              />
              <div className="side-column">
                <NodeInspector view={view} />
                <FidelityPanel fidelity={detail?.fidelity} reasoning={detail?.reasoning} engine={predictedKind === "authored" ? "authored" : shownPrediction?.engine} rawOutput={shownPrediction && shownPrediction.status !== "ok" && detail?.views.every((v) => !v.predicted) ? detail.raw_output : null} />
              </div>
            </div>
          )}
          <footer className="statusbar">
            <KindLegend />
            <span className="legend">
              <span className="lg lg-changed">changed</span>
              <span className="lg lg-moved">moved</span>
              <span className="lg lg-added">added</span>
              <span className="lg lg-removed">removed</span>
            </span>
            <span className="kbd-hint">← → / j k turns · Ctrl+Z undo · drop files to import</span>
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
        {dragging ? (
          <div className="drop-overlay" aria-hidden="true">
            Drop trajectory files or folders to import them
          </div>
        ) : null}
        {dialog === "engine" ? (
          <EngineDialog
            backend={backend}
            status={engine}
            onClose={() => setDialog(null)}
            onSaved={(st) => {
              setEngine(st);
              setDialog(null);
              setNotice(`Engine: ${st.description ?? st.name ?? "saved"}`);
            }}
          />
        ) : null}
        {dialog === "edit" && detail?.action && trajectory && detail.edge_id != null ? (
          <ActionDialog
            backend={backend}
            title="Edit action"
            domain={trajectory.domain}
            initialRaw={detail.action.raw}
            saveLabel="Save as new branch"
            onClose={() => setDialog(null)}
            onSave={async (raw) => {
              const r = await backend.call("edit_action", { trajectory_id: trajectory.id, edge_id: detail.edge_id!, raw });
              setDialog(null);
              pendingTurn.current = current;
              setBranchId(r.branch_id);
              setNotice(`New branch at turn ${detail.turn}.`);
              reload();
            }}
          />
        ) : null}
        {dialog === "append" && detail && trajectory ? (
          <ActionDialog
            backend={backend}
            title="Add turn"
            domain={trajectory.domain}
            initialRaw=""
            saveLabel="Add turn"
            onClose={() => setDialog(null)}
            onSave={async (raw) => {
              const r = await backend.call("append_turn", { trajectory_id: trajectory.id, node_id: detail.node_id, raw });
              setDialog(null);
              pendingTurn.current = current + 1;
              setBranchId(r.branch_id);
              reload();
            }}
          />
        ) : null}
        {dialog === "rollout" ? (
          <RolloutDialog placeholder={rolloutPlaceholder(trajectory?.domain)} progress={rollout} onStart={startRollout} onStop={() => void stopRollout()} onClose={() => setDialog(null)} />
        ) : null}
        {dialog === "author" && detail && trajectoryId ? (
          <AuthorDialog
            backend={backend}
            trajectoryId={trajectoryId}
            nodeId={detail.node_id}
            representation={authorSource.representation}
            initialText={authorSource.text}
            basedOnPrediction={detail.prediction_id}
            onClose={() => setDialog(null)}
            onSaved={async () => {
              setDialog(null);
              // Authoring clears the node's chosen prediction (same change), so
              // the state shows what was just written; drop any local pick too.
              setPredictionByNode((m) => {
                const { [detail.node_id]: _dropped, ...rest } = m;
                return rest;
              });
              setNotice("Authored observation saved.");
              reload();
            }}
          />
        ) : null}
        {dialog === "export" && trajectoryId ? (
          <ExportDialog backend={backend} trajectoryId={trajectoryId} trajectoryName={trajectory?.name ?? trajectoryId} branches={branches} initialSelection={compareSel.length ? compareSel : branchId ? [branchId] : []} onClose={() => setDialog(null)} />
        ) : null}
        {dialog === "history" ? <HistoryDialog backend={backend} version={reloadKey} onClose={() => setDialog(null)} onUndo={() => void undoRedo("undo")} onRedo={() => void undoRedo("redo")} /> : null}
        {dialog === "import" ? <ImportDialog onUpload={upload} onChooseNative={chooseNative} result={importResult} onClose={() => setDialog(null)} /> : null}
        {dialog !== "import" && importResult && importResult.failed.length > 0 ? (
          <div className="toast" role="alert">
            <ImportResult result={importResult} />
            <button type="button" onClick={() => setImportResult(null)}>
              Dismiss
            </button>
          </div>
        ) : null}
      </div>
      </ScrollSyncContext.Provider>
    </SelectionContext.Provider>
  );
}
