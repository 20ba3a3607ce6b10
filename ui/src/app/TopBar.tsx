/**
 * The top bar: the trajectory's name and goal, the branch picker, the main
 * view switch (turn / branch tree), undo / redo / history, the engine, import,
 * curriculum export, the lesson dialog and presentation mode, and the theme
 * toggle.
 */
import type { EngineStatus } from "../api/lab";
import type { BranchSummary, TrajectorySummary } from "../api/types";
import { RadioSeg } from "../lab/DialogParts";
import type { DialogName } from "./Dialogs";
import type { MainView } from "./navigation";
import type { Theme } from "./preferences";

/** The engine's short name, as the top bar and the step bar show it. */
export function engineName(engine: EngineStatus | null | undefined): string {
  return engine?.name ?? (engine?.settings?.kind === "baseline" ? engine.settings.name : engine?.settings?.kind) ?? "engine";
}

/** Props of {@link TopBar}. */
export interface TopBarProps {
  trajectory: TrajectorySummary | null;
  branches: BranchSummary[];
  branchId: string | null;
  onBranch: (branchId: string) => void;
  mainView: MainView;
  onView: (view: MainView) => void;
  canUndo: boolean;
  canRedo: boolean;
  onUndoRedo: (which: "undo" | "redo") => void;
  engine: EngineStatus | null;
  onDialog: (dialog: DialogName) => void;
  onImport: () => void;
  canExport: boolean;
  /** Enters presentation mode on the branch shown. */
  onPresent: () => void;
  theme: Theme;
  onTheme: (theme: Theme) => void;
}

export function TopBar({
  trajectory,
  branches,
  branchId,
  onBranch,
  mainView,
  onView,
  canUndo,
  canRedo,
  onUndoRedo,
  engine,
  onDialog,
  onImport,
  canExport,
  onPresent,
  theme,
  onTheme,
}: TopBarProps) {
  return (
    <header className="topbar">
      <div className="title">
        <h1>{trajectory?.name ?? "No trajectory"}</h1>
        {trajectory?.goal ? (
          <p className="goal" title={trajectory.goal}>
            {trajectory.goal}
          </p>
        ) : null}
      </div>
      {branches.length > 0 ? (
        <select className="branch-picker" aria-label="Branch" value={branchId ?? ""} onChange={(e) => onBranch(e.target.value)}>
          {branches.map((b) => (
            <option key={b.id} value={b.id}>
              {b.name}
              {b.recorded && b.name !== "recorded" ? " (recorded)" : ""} · {b.turn_count} {b.turn_count === 1 ? "turn" : "turns"}
            </option>
          ))}
        </select>
      ) : null}
      <RadioSeg<MainView>
        as="pressed"
        label="Main view"
        options={[
          ["turn", "Turn"],
          ["tree", "Branch tree"],
          ["runs", "Runs"],
        ]}
        value={mainView}
        onChange={onView}
      />
      <div className="toolbar-group" role="group" aria-label="Edit history">
        <button type="button" aria-label="Undo" title="Undo (Ctrl/Cmd+Z)" disabled={!canUndo} onClick={() => onUndoRedo("undo")}>
          ↶
        </button>
        <button type="button" aria-label="Redo" title="Redo (Ctrl/Cmd+Shift+Z)" disabled={!canRedo} onClick={() => onUndoRedo("redo")}>
          ↷
        </button>
        <button type="button" onClick={() => onDialog("history")}>
          History
        </button>
      </div>
      <button
        type="button"
        className={engine && !engine.ready ? "engine-button not-ready" : "engine-button"}
        onClick={() => onDialog("engine")}
        title={engine?.error ?? engine?.description ?? "choose the engine"}
      >
        Engine: {engineName(engine)}
        {engine && !engine.ready ? " ⚠" : ""}
      </button>
      <button type="button" onClick={onImport}>
        Import…
      </button>
      <button type="button" disabled={!canExport} onClick={() => onDialog("export")}>
        Export curriculum…
      </button>
      <button type="button" disabled={!canExport} onClick={() => onDialog("lesson")} title="Captions, lessons and their HTML export">
        Lesson…
      </button>
      <button type="button" disabled={!canExport} onClick={onPresent} title="Presentation mode: full screen, ←/→ step, Esc leaves (P)">
        Present
      </button>
      <button
        type="button"
        className="theme-toggle"
        aria-label={theme === "dark" ? "Switch to light theme" : "Switch to dark theme"}
        onClick={() => onTheme(theme === "dark" ? "light" : "dark")}
      >
        {theme === "dark" ? "☀" : "☾"}
      </button>
    </header>
  );
}
