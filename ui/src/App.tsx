/**
 * The studio's main window: trajectory list, top bar, timeline, the turn's
 * tools and panes (or the branch tree, or two branches compared), the status
 * bar and the dialogs. This file only composes them:
 *
 * - data: the query layer (`data/`), keyed by command and ids; back-end
 *   events and this window's commands invalidate the keys they touch;
 * - what is shown: `app/navigation.ts` (a reducer) via `app/useNavigation.ts`;
 * - steps and rollouts streaming: `app/stepStream.ts` (a reducer over step
 *   events) via `app/useStepRunner.ts`;
 * - edits of the place shown (undo / redo, choosing a prediction, control
 *   instructions, imports, jumps): `app/useEdits.ts`;
 * - the parts on screen: `app/TopBar.tsx`, `app/TurnTools.tsx`,
 *   `app/TurnPanes.tsx`, `app/StatusBar.tsx`, `app/Dialogs.tsx`; the runs
 *   (dashboard, row table, two runs compared): `runs/RunsView.tsx`.
 */
import { QueryClientProvider, useQueryClient } from "@tanstack/react-query";
import { useCallback, useEffect, useMemo, useState } from "react";
import type { EngineStatus, LabEvent } from "./api/lab";
import type { BranchSummary, ContextMode } from "./api/types";
import { Dialogs, type DialogName } from "./app/Dialogs";
import { StatusBar } from "./app/StatusBar";
import { TopBar, engineName } from "./app/TopBar";
import { TurnPanes, shownView } from "./app/TurnPanes";
import { TurnTools } from "./app/TurnTools";
import { useStepContext, useTheme } from "./app/preferences";
import { useImport } from "./app/useImport";
import { useNavigation } from "./app/useNavigation";
import { useStepRunner } from "./app/useStepRunner";
import { useStudioEvents } from "./app/useStudioEvents";
import { useTurnKeys } from "./app/useTurnKeys";
import { useEdits } from "./app/useEdits";
import { LessonDialog } from "./present/LessonDialog";
import { Presentation, type PresentTarget } from "./present/Presentation";
import type { Backend } from "./backend/backend";
import { Sidebar } from "./components/Sidebar";
import { Timeline } from "./components/Timeline";
import { invalidate, keysTouchedByChange } from "./data/invalidation";
import { keys } from "./data/keys";
import { createQueryClient, useEngineStatus, useWorkspaceInfo } from "./data/queries";
import { BranchTree } from "./lab/BranchTree";
import { CompareView } from "./lab/CompareView";
import { RunsView, useRunsState } from "./runs/RunsView";
import type { UncertaintyMode } from "./model/tokens";
import { ScrollSyncContext, ScrollSyncStore } from "./state/scrollSync";
import { SelectionContext, SelectionStore } from "./state/selection";

export type { Theme } from "./app/preferences";

/** Props of {@link App}. */
export interface AppProps {
  backend: Backend;
}

/** The studio on one back end, with its own query cache. */
export function App({ backend }: AppProps) {
  const [client] = useState(createQueryClient);
  return (
    <QueryClientProvider client={client}>
      <Studio backend={backend} />
    </QueryClientProvider>
  );
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function Studio({ backend }: AppProps) {
  const client = useQueryClient();
  const [theme, setTheme] = useTheme();
  const [context, setContext] = useStepContext();
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [dialog, setDialog] = useState<DialogName>(null);
  const [tabId, setTabId] = useState<string | null>(null);
  const [uncertainty, setUncertainty] = useState<"off" | UncertaintyMode>("off");
  const [reasoningOpen, setReasoningOpen] = useState(true);
  const [presenting, setPresenting] = useState<PresentTarget | null>(null);
  const runsState = useRunsState();
  const selection = useMemo(() => new SelectionStore(), []);
  const scrollSync = useMemo(() => new ScrollSyncStore(), []);

  const report = useCallback((e: unknown) => setError(message(e)), []);
  const clearError = useCallback(() => setError(null), []);
  /** A command of this window changed a trajectory (`null`: the workspace): refetch what it touched. */
  const changed = useCallback((trajectoryId: string | null) => void invalidate(client, keysTouchedByChange(trajectoryId)), [client]);

  const place = useNavigation(backend, report, clearError);
  const { nav, dispatch, trajectoryId, branchId, turns, current, nodeId, detail, branches, treeNodes, treeEdges } = place;
  const refreshLive = useCallback(() => changed(trajectoryId), [changed, trajectoryId]);
  const engine = useEngineStatus(backend).data ?? null;
  const undoState = useWorkspaceInfo(backend).data;
  const runner = useStepRunner(backend, report, changed);

  // Back-end events refetch what they touched; a finished rollout shows its last state on its branch.
  const { onLabEvent } = runner;
  const onLab = useCallback(
    (event: LabEvent) => {
      const landed = onLabEvent(event);
      if (landed !== null) {
        dispatch({ type: "select_branch", branchId: String(landed), pendingTurn: 1_000_000 });
        dispatch({ type: "view", mainView: "turn" });
      }
    },
    [onLabEvent, dispatch],
  );
  const live = useStudioEvents(backend, onLab);

  const edits = useEdits({ backend, place, report, setNotice, changed });
  const { undoRedo } = edits;
  const undoRedoNow = useCallback((which: "undo" | "redo") => void undoRedo(which), [undoRedo]);
  const presentBranch = useCallback(() => {
    if (trajectoryId) setPresenting({ lesson: null, trajectoryId, branchId });
  }, [trajectoryId, branchId]);
  const exitPresentation = useCallback(() => setPresenting(null), []);
  useTurnKeys(turns.length, nav.playing, dialog !== null || presenting !== null, dispatch, undoRedoNow, presentBranch);
  const importer = useImport(backend, report, edits.onImported);

  // Keep the selection and the scroll positions to one state and tab.
  useEffect(() => selection.clear(), [nodeId, trajectoryId, selection]);
  useEffect(() => scrollSync.reset(), [nodeId, trajectoryId, tabId, scrollSync]);

  const trajectory = place.trajectory;
  const compareBranches = nav.compareSel.map((id) => branches.find((b) => b.id === id)).filter((b): b is BranchSummary => !!b);
  const stream = runner.stream && runner.stream.trajectory_id === trajectoryId && runner.stream.node_id === nodeId ? runner.stream : null;
  const authorSource = (() => {
    const v = shownView(detail, tabId) ?? detail?.views[0];
    if (!v) return { representation: "text" as const, text: "" };
    return { representation: v.representation, text: v.predicted?.text ?? v.real?.text ?? "" };
  })();

  return (
    <SelectionContext.Provider value={selection}>
      <ScrollSyncContext.Provider value={scrollSync}>
        <div className={importer.dragging ? "app is-dragging" : "app"}>
          <Sidebar
            trajectories={place.trajectories}
            selectedId={trajectoryId}
            onSelect={(id) => id !== trajectoryId && dispatch({ type: "select_trajectory", trajectoryId: id })}
            onLiveRefresh={refreshLive}
          />
          <main className="main">
            <TopBar
              trajectory={trajectory}
              branches={branches}
              branchId={branchId}
              onBranch={(id) => dispatch({ type: "select_branch", branchId: id })}
              mainView={nav.mainView}
              onView={(mainView) => dispatch({ type: "view", mainView })}
              canUndo={!!undoState?.can_undo}
              canRedo={!!undoState?.can_redo}
              onUndoRedo={undoRedoNow}
              engine={engine}
              onDialog={setDialog}
              onImport={() => {
                importer.setResult(null);
                setDialog("import");
              }}
              canExport={!!trajectoryId}
              onPresent={presentBranch}
              theme={theme}
              onTheme={setTheme}
            />
            {nav.mainView !== "runs" ? (
              <>
                <Timeline
                  turns={turns}
                  current={current}
                  onSelect={(i) => dispatch({ type: "go", index: i, count: turns.length })}
                  playing={nav.playing}
                  onPlay={() => dispatch({ type: "play", playing: !nav.playing })}
                  settled={place.turnsSettled}
                />
                <TurnTools
                  key={`${trajectoryId}/${nodeId}`}
                  detail={detail}
                  loading={place.loading}
                  atLeaf={current === turns.length - 1}
                  notice={notice}
                  onDialog={setDialog}
                  onPerturbation={edits.savePerturbation}
                />
              </>
            ) : null}
            {place.listLoaded && place.trajectories.length === 0 && !error ? (
              <div className="pane-empty" role="status">
                The workspace holds no trajectory yet. Use Import… or drop files onto the window, or start the studio with files to import, for example
                <code> worldloom serve samples/</code>.
              </div>
            ) : null}
            {nav.mainView === "runs" ? (
              <RunsView
                backend={backend}
                runs={runsState}
                theme={theme}
                onOpenRow={(row) => dispatch({ type: "open_row", trajectoryId: row.trajectory_id, turnIndex: row.turn - 1, predictionId: row.prediction_id })}
              />
            ) : nav.mainView === "tree" ? (
              <BranchTree
                nodes={treeNodes}
                edges={treeEdges}
                branches={branches}
                currentNode={nodeId}
                currentBranch={branchId}
                selected={nav.compareSel}
                onSelect={(selection) => dispatch({ type: "compare", selection })}
                onJump={edits.jumpToNode}
                onCompare={() => dispatch({ type: "view", mainView: "compare" })}
                colorMode={theme}
              />
            ) : nav.mainView === "compare" && trajectoryId && compareBranches.length === 2 ? (
              <CompareView
                backend={backend}
                trajectoryId={trajectoryId}
                left={compareBranches[0]!}
                right={compareBranches[1]!}
                onClose={() => dispatch({ type: "view", mainView: "tree" })}
              />
            ) : (
              <TurnPanes
                detail={detail}
                turn={turns[current]}
                stream={stream}
                engine={engineName(engine)}
                context={context}
                onContext={setContext}
                onStep={() => {
                  if (trajectoryId && detail && detail.turn > 0) void runner.step(trajectoryId, detail.node_id, context);
                }}
                onStop={() => void runner.stop()}
                onEngine={() => setDialog("engine")}
                onChoose={(id) => void edits.chooseShown(id)}
                settings={{ tabId, setTabId, uncertainty, setUncertainty, reasoningOpen, setReasoningOpen }}
                backend={backend}
              />
            )}
            <StatusBar kind={backend.kind} live={live} error={error} />
          </main>
          {importer.dragging ? (
            <div className="drop-overlay" aria-hidden="true">
              Drop trajectory files or folders to import them
            </div>
          ) : null}
          <Dialogs
            backend={backend}
            dialog={dialog}
            onClose={() => setDialog(null)}
            trajectory={trajectory}
            trajectoryId={trajectoryId}
            detail={detail}
            authorSource={authorSource}
            branches={branches}
            exportSelection={nav.compareSel.length ? nav.compareSel : branchId ? [branchId] : []}
            engine={engine}
            onEngineSaved={(st: EngineStatus) => {
              client.setQueryData(keys.engine(), st);
              setDialog(null);
              setNotice(`Engine: ${st.description ?? st.name ?? "saved"}`);
            }}
            onBranch={(id, at, text) => {
              setDialog(null);
              changed(trajectoryId);
              dispatch({ type: "select_branch", branchId: id, pendingTurn: at === "same" ? current : current + 1 });
              if (text) setNotice(text);
            }}
            onAuthored={() => {
              setDialog(null);
              setNotice("Authored observation saved.");
              changed(trajectoryId);
            }}
            rollout={runner.rollout}
            onStartRollout={(actions: string[], ctx: ContextMode) =>
              trajectoryId ? runner.startRollout(trajectoryId, nodeId, actions, ctx) : Promise.resolve()
            }
            onStopRollout={() => void runner.stopRollout(trajectoryId)}
            importer={importer}
            onUndoRedo={undoRedoNow}
          />
          {dialog === "lesson" && trajectoryId ? (
            <LessonDialog
              backend={backend}
              trajectoryId={trajectoryId}
              branchId={branchId}
              nodeId={nodeId}
              stateIndex={current + 1}
              onClose={() => setDialog(null)}
              onPresent={(target) => {
                setDialog(null);
                setPresenting(target);
              }}
              onChanged={() => changed(trajectoryId)}
            />
          ) : null}
          {presenting ? <Presentation backend={backend} target={presenting} onExit={exitPresentation} /> : null}
        </div>
      </ScrollSyncContext.Provider>
    </SelectionContext.Provider>
  );
}
