/**
 * Moving between turns without the mouse: ←/→ and j/k, Home/End; Ctrl/Cmd+Z
 * undo, Ctrl/Cmd+Shift+Z (or Ctrl+Y) redo; and Play, which steps through the
 * turns for demos and stops at the end; P enters presentation mode. Keys
 * typed into a field, or while a dialog (or presentation mode) is open, are
 * left alone.
 */
import { useEffect, type Dispatch } from "react";
import type { NavAction } from "./navigation";

const PLAY_INTERVAL_MS = 1600;

function isTypingTarget(el: EventTarget | null): boolean {
  if (!(el instanceof HTMLElement)) return false;
  const tag = el.tagName;
  return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || el.isContentEditable || !!el.closest(".cm-editor");
}

/** Binds the keys and the Play timer. `count`: turns of the branch shown. */
export function useTurnKeys(
  count: number,
  playing: boolean,
  dialogOpen: boolean,
  dispatch: Dispatch<NavAction>,
  undoRedo: (which: "undo" | "redo") => void,
  present: () => void = () => undefined,
) {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (isTypingTarget(e.target)) return;
      if ((e.ctrlKey || e.metaKey) && !e.altKey) {
        const k = e.key.toLowerCase();
        if (k === "z" || k === "y") {
          if (dialogOpen) return;
          e.preventDefault();
          undoRedo(k === "y" || e.shiftKey ? "redo" : "undo");
        }
        return;
      }
      if (e.altKey || dialogOpen) return;
      if (e.key === "ArrowRight" || e.key === "j") dispatch({ type: "step", by: 1, count });
      else if (e.key === "ArrowLeft" || e.key === "k") dispatch({ type: "step", by: -1, count });
      else if (e.key === "Home") dispatch({ type: "go", index: -1, count });
      else if (e.key === "End") dispatch({ type: "go", index: count - 1, count });
      else if (e.key === "p" || e.key === "P") present();
      else return;
      e.preventDefault();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [count, undoRedo, dialogOpen, dispatch, present]);

  useEffect(() => {
    if (!playing) return;
    const timer = window.setInterval(() => dispatch({ type: "tick", count }), PLAY_INTERVAL_MS);
    return () => window.clearInterval(timer);
  }, [playing, count, dispatch]);
}
