/**
 * Presentation mode, for teaching: full screen (the Fullscreen API on this
 * element; without it, a layer over the whole window), large type, and only
 * the real | predicted panes, the turn strip and the caption. It walks a
 * lesson's steps (each branch's initial state, then its turns, branch after
 * branch; `lessonModel.ts`), or one branch with its notes as captions.
 * ←/→ (also PageUp/PageDown, Space, j/k) step, Home/End go to the ends,
 * Esc (or leaving full screen) leaves.
 */
import { useQuery } from "@tanstack/react-query";
import { useEffect, useMemo, useRef, useState } from "react";
import type { Backend } from "../backend/backend";
import { Timeline } from "../components/Timeline";
import { keys } from "../data/keys";
import { commandQuery, useTurn } from "../data/queries";
import { TurnPanes, type StepControls } from "../app/TurnPanes";
import { clampStep, lessonSteps, stepOfTurn } from "./lessonModel";
import "./present.css";

/** What is presented: a lesson by name, or (`lesson` `null`) one branch of a trajectory. */
export interface PresentTarget {
  lesson: string | null;
  trajectoryId: string | null;
  branchId: string | null;
}

/** Props of {@link Presentation}. */
export interface PresentationProps {
  backend: Backend;
  target: PresentTarget;
  onExit: () => void;
}

const PLAY_INTERVAL_MS = 2500;
const noop = () => undefined;
/** The step bar's controls, inert: presentation mode shows the panes bare and never steps. */
const STILL: StepControls = { engine: "", context: "teacher-forced", onContext: noop, onStep: noop, onStop: noop, onEngine: noop };

export function Presentation({ backend, target, onExit }: PresentationProps) {
  const root = useRef<HTMLDivElement>(null);
  const lesson = useQuery(
    commandQuery(backend, keys.lesson(target.lesson, target.trajectoryId, target.branchId), "get_lesson", {
      lesson: target.lesson,
      trajectory_id: target.trajectoryId,
      branch_id: target.branchId,
    }),
  );
  const steps = useMemo(() => lessonSteps(lesson.data), [lesson.data]);
  const [index, setIndex] = useState(0);
  const [playing, setPlaying] = useState(false);
  const [tabId, setTabId] = useState<string | null>(null);
  const at = Math.min(index, Math.max(0, steps.length - 1));
  const step = steps[at];
  const branch = step ? lesson.data?.branches[step.branch] : undefined;
  const turn = useTurn(backend, step?.trajectoryId ?? null, step?.nodeId ?? 0, null, !!step);

  // Full screen while presenting; leaving full screen (the browser's own Esc) leaves presentation mode.
  useEffect(() => {
    const el = root.current;
    let entered = false;
    const onChange = () => {
      if (document.fullscreenElement === el) entered = true;
      else if (entered) onExit();
    };
    document.addEventListener("fullscreenchange", onChange);
    el?.requestFullscreen?.().catch(() => undefined);
    return () => {
      document.removeEventListener("fullscreenchange", onChange);
      if (document.fullscreenElement) document.exitFullscreen?.().catch(() => undefined);
    };
  }, [onExit]);

  // The keys, ahead of the studio's own (which presentation mode turns off).
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      const by: Record<string, number> = { ArrowRight: 1, PageDown: 1, " ": 1, j: 1, ArrowLeft: -1, PageUp: -1, k: -1 };
      if (e.key === "Escape") onExit();
      else if (e.key in by) setIndex((i) => clampStep(i, by[e.key]!, steps.length));
      else if (e.key === "Home") setIndex(0);
      else if (e.key === "End") setIndex(Math.max(0, steps.length - 1));
      else return;
      e.preventDefault();
      e.stopPropagation();
    };
    window.addEventListener("keydown", onKey, true);
    return () => window.removeEventListener("keydown", onKey, true);
  }, [steps.length, onExit]);

  useEffect(() => {
    if (!playing) return;
    const timer = window.setInterval(() => setIndex((i) => (i + 1 < steps.length ? i + 1 : i)), PLAY_INTERVAL_MS);
    return () => window.clearInterval(timer);
  }, [playing, steps.length]);

  // A lesson names the branch shown; one branch is already the title, so its goal is shown instead.
  const where = !branch ? "" : lesson.data?.lesson != null ? `${branch.trajectory_name} · ${branch.branch.name}` : (branch.goal ?? "");
  return (
    <div ref={root} className="presentation" role="dialog" aria-modal="true" aria-label="Presentation">
      <header className="present-head">
        <h1>{lesson.data?.title ?? "Presentation"}</h1>
        <span className="present-where" title={branch?.goal ?? undefined}>
          {where}
          {lesson.data && lesson.data.branches.length > 1 && step ? ` · branch ${step.branch + 1} of ${lesson.data.branches.length}` : ""}
        </span>
        <span className="present-pos" aria-label="Step">
          {steps.length > 0 ? `step ${at + 1} / ${steps.length}` : lesson.isLoading ? "loading…" : "no step"}
        </span>
        <button type="button" onClick={onExit} title="Leave presentation mode (Esc)">
          Exit
        </button>
      </header>
      {lesson.error ? (
        <p className="error" role="alert">
          {lesson.error.message}
        </p>
      ) : null}
      {branch && step ? (
        <Timeline
          turns={branch.turns}
          current={step.turnIndex}
          onSelect={(i) => setIndex(stepOfTurn(steps, at, i))}
          playing={playing}
          onPlay={() => setPlaying((p) => !p)}
          settled
        />
      ) : null}
      <p className={step?.caption ? "present-caption" : "present-caption is-empty"} aria-label="Caption" aria-live="polite">
        {step?.caption ?? ""}
      </p>
      <div className="present-panes">
        <TurnPanes
          bare
          detail={turn.data ?? null}
          turn={step && branch ? branch.turns[step.turnIndex] : undefined}
          stream={null}
          {...STILL}
          onChoose={noop}
          settings={{ tabId, setTabId, uncertainty: "off", setUncertainty: noop, reasoningOpen: false, setReasoningOpen: noop }}
          backend={backend}
        />
      </div>
    </div>
  );
}
