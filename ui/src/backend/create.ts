/**
 * Picks the back end at start-up. Kept apart from `backend.ts` (the
 * interface) so the implementations, which import the interface, are never
 * imported back by it.
 */
import type { Backend } from "./backend";

/** Whether the page runs inside the Tauri webview. */
export function isTauri(): boolean {
  return typeof window !== "undefined" && "__TAURI_INTERNALS__" in window;
}

/**
 * Picks the transport at start-up: Tauri IPC inside the desktop app; the mock
 * back end in the dev server when the URL has `?mock` (never in a production
 * build: the branch is removed there); HTTP otherwise.
 */
export async function createBackend(): Promise<Backend> {
  if (isTauri()) {
    const { TauriBackend } = await import("./tauri");
    return new TauriBackend();
  }
  if (import.meta.env.DEV && new URLSearchParams(window.location.search).has("mock")) {
    const { MockBackend } = await import("../mocks/mockBackend");
    return new MockBackend();
  }
  const { HttpBackend, takeTokenFromLocation } = await import("./http");
  return new HttpBackend(window.location.origin, takeTokenFromLocation(window));
}
