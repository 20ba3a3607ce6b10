/**
 * Preferences kept in `localStorage` between runs: the colour theme and the
 * step context. Storage may be unavailable (private windows): then the
 * defaults apply and nothing is persisted.
 */
import { useEffect, useState } from "react";
import type { ContextMode } from "../api/types";

/** Colour theme. */
export type Theme = "light" | "dark";

function initialTheme(): Theme {
  try {
    const saved = localStorage.getItem("worldloom.theme");
    if (saved === "light" || saved === "dark") return saved;
  } catch {
    // Storage may be unavailable (private windows); fall through.
  }
  return typeof matchMedia === "function" && matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

function initialContext(): ContextMode {
  try {
    return localStorage.getItem("worldloom.context") === "free-running" ? "free-running" : "teacher-forced";
  } catch {
    return "teacher-forced";
  }
}

/** The theme (applied to the document and saved). */
export function useTheme(): [Theme, (t: Theme) => void] {
  const [theme, setTheme] = useState<Theme>(initialTheme);
  useEffect(() => {
    document.documentElement.dataset.theme = theme;
    try {
      localStorage.setItem("worldloom.theme", theme);
    } catch {
      // Not persisted; the theme still applies.
    }
  }, [theme]);
  return [theme, setTheme];
}

/** The context a step uses (teacher-forced or free-running), saved. */
export function useStepContext(): [ContextMode, (c: ContextMode) => void] {
  const [context, setContext] = useState<ContextMode>(initialContext);
  useEffect(() => {
    try {
      localStorage.setItem("worldloom.context", context);
    } catch {
      // Not persisted.
    }
  }, [context]);
  return [context, setContext];
}
