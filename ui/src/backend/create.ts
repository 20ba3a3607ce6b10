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
 * Picks the transport at start-up: Tauri IPC inside the desktop app; HTTP
 * otherwise (`worldloom serve`; in the Vite dev server, the page is opened
 * with a running server's `?token=…` and `/api` is proxied to it, see
 * `vite.config.ts`).
 */
export async function createBackend(): Promise<Backend> {
  if (isTauri()) {
    const { TauriBackend } = await import("./tauri");
    return new TauriBackend();
  }
  const { HttpBackend, takeTokenFromLocation } = await import("./http");
  return new HttpBackend(window.location.origin, takeTokenFromLocation(window));
}
