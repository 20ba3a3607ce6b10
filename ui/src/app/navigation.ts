/**
 * Navigation: which trajectory, branch and turn are shown, and in which main
 * view. A pure reducer; the replies it is reconciled with (the list, the
 * trajectory's branches, the branch's turns) come from the query layer, and
 * `resolveTrajectory` / `resolveBranch` pick what is shown when the chosen
 * one is not (or no longer) there. The place is kept in the URL hash.
 */

/** The main area: the turn's panes, the branch tree, two branches compared, or the runs. */
export type MainView = "turn" | "tree" | "compare" | "runs";

/** What is shown. */
export interface NavState {
  /** The chosen trajectory (`resolveTrajectory` gives the one shown). */
  trajectoryId: string | null;
  /** The chosen branch (`resolveBranch` gives the one shown); `null`: the recorded one. */
  branchId: string | null;
  /** Index into the branch's turns, or -1 for the initial state. */
  current: number;
  /** The turn to show once the next branch's turns arrive (clamped to them). */
  pendingTurn: number | null;
  mainView: MainView;
  /** Branches ticked in the tree for comparison (at most two). */
  compareSel: string[];
  /** Stepping through the turns for demos. */
  playing: boolean;
  /** The prediction the turn shows when a run's row was opened (`null`: the chosen one); any move clears it. */
  prediction: number | null;
}

/** What can happen to the place shown. */
export type NavAction =
  | { type: "select_trajectory"; trajectoryId: string }
  | { type: "open_trajectory"; trajectoryId: string }
  | { type: "select_branch"; branchId: string | null; pendingTurn?: number | null }
  | { type: "branch_lost" }
  | { type: "turns_loaded"; count: number }
  | { type: "go"; index: number; count: number }
  | { type: "step"; by: 1 | -1; count: number }
  | { type: "tick"; count: number }
  | { type: "play"; playing: boolean }
  | { type: "jump"; branchId: string; turnIndex: number; count: number; sameBranch: boolean }
  | { type: "view"; mainView: MainView }
  | { type: "compare"; selection: string[] }
  | { type: "open_row"; trajectoryId: string; turnIndex: number; predictionId: number };

function clamp(index: number, count: number): number {
  return Math.max(-1, Math.min(count - 1, index));
}

/** The navigation reducer (pure). Every move but a view switch shows the chosen prediction again. */
export function navigate(state: NavState, action: NavAction): NavState {
  const next = move(state, action);
  if (next === state || action.type === "view" || action.type === "open_row" || action.type === "turns_loaded" || action.type === "compare") return next;
  return next.prediction === null ? next : { ...next, prediction: null };
}

function move(state: NavState, action: NavAction): NavState {
  switch (action.type) {
    case "open_row":
      // A run's row: its trajectory's recorded branch at the row's turn, with the row's prediction.
      return {
        ...state,
        trajectoryId: action.trajectoryId,
        branchId: null,
        pendingTurn: action.turnIndex,
        playing: false,
        compareSel: [],
        mainView: "turn",
        prediction: action.predictionId,
      };
    case "select_trajectory":
      if (action.trajectoryId === state.trajectoryId) return state;
      return {
        ...state,
        trajectoryId: action.trajectoryId,
        branchId: null,
        current: 0,
        pendingTurn: null,
        playing: false,
        compareSel: [],
        mainView: state.mainView === "compare" ? "tree" : state.mainView === "runs" ? "turn" : state.mainView,
      };
    case "open_trajectory":
      return { ...state, trajectoryId: action.trajectoryId, branchId: null };
    case "select_branch":
      return { ...state, branchId: action.branchId, pendingTurn: action.pendingTurn ?? null };
    case "branch_lost":
      // The recorded branch is shown instead; a wanted turn waits for its turns.
      return { ...state, branchId: null };
    case "turns_loaded": {
      if (state.pendingTurn !== null) return { ...state, current: clamp(state.pendingTurn, action.count), pendingTurn: null };
      return state.current >= action.count ? { ...state, current: action.count - 1 } : state;
    }
    case "go":
      return { ...state, current: clamp(action.index, action.count), playing: false };
    case "step":
      return { ...state, current: action.by > 0 ? Math.min(action.count - 1, state.current + 1) : Math.max(-1, state.current - 1), playing: false };
    case "tick":
      return state.current >= action.count - 1 ? { ...state, playing: false } : { ...state, current: state.current + 1 };
    case "play":
      return { ...state, playing: action.playing };
    case "jump":
      return action.sameBranch
        ? { ...state, current: clamp(action.turnIndex, action.count), pendingTurn: null, mainView: "turn" }
        : { ...state, branchId: action.branchId, pendingTurn: action.turnIndex, mainView: "turn" };
    case "view":
      return { ...state, mainView: action.mainView };
    case "compare":
      return { ...state, compareSel: action.selection };
  }
}

/**
 * The trajectory shown: the chosen one when the list has it; while the list
 * is loading (or reloading after an import) the chosen one as it is;
 * otherwise the list's first.
 */
export function resolveTrajectory(chosen: string | null, list: ReadonlyArray<{ id: string }> | undefined, listFetching: boolean): string | null {
  if (!list || (chosen !== null && list.some((t) => t.id === chosen))) return chosen;
  return listFetching && chosen !== null ? chosen : (list[0]?.id ?? null);
}

/**
 * The branch shown: the chosen one when the trajectory has it; while the
 * trajectory is loading (or reloading after an edit) the chosen one as it
 * is; otherwise the recorded branch (or the first).
 */
export function resolveBranch(chosen: string | null, branches: ReadonlyArray<{ id: string; recorded: boolean }> | undefined, fetching: boolean): string | null {
  if (!branches || (chosen !== null && branches.some((b) => b.id === chosen))) return chosen;
  if (fetching && chosen !== null) return chosen;
  return branches.find((b) => b.recorded)?.id ?? branches[0]?.id ?? null;
}

/**
 * Reads `#t=<trajectory>&b=<branch>&turn=<n>` so a reload (or a link) keeps
 * the place; a run row's link adds `&p=<prediction>` (the prediction shown).
 */
export function readHash(hash: string): { trajectory: string | null; branch: string | null; turn: number | null; prediction: number | null } {
  const p = new URLSearchParams(hash.replace(/^#/, ""));
  const turn = p.get("turn");
  const prediction = p.get("p");
  return {
    trajectory: p.get("t"),
    branch: p.get("b"),
    turn: turn !== null && /^-?\d+$/.test(turn) ? Number(turn) : null,
    prediction: prediction !== null && /^\d+$/.test(prediction) ? Number(prediction) : null,
  };
}

/** Writes the place into the URL hash (without a history entry). */
export function writeHash(trajectory: string | null, branch: string | null, turn: number): void {
  if (!trajectory) return;
  const p = new URLSearchParams({ t: trajectory });
  if (branch) p.set("b", branch);
  p.set("turn", String(turn));
  const next = `#${p.toString()}`;
  if (window.location.hash !== next) window.history.replaceState(window.history.state, "", next);
}

/** The place at start-up: from the URL hash; the hash's turn waits for the branch's turns. */
export function initialNav(hash: string): NavState {
  const h = readHash(hash);
  return {
    trajectoryId: h.trajectory,
    branchId: h.branch,
    current: 0,
    pendingTurn: h.turn,
    mainView: "turn",
    compareSel: [],
    playing: false,
    prediction: h.trajectory !== null ? h.prediction : null,
  };
}
