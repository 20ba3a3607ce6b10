/**
 * One interface for talking to the Worldloom back end, with two transports:
 * HTTP (`worldloom serve`, see `http.ts`) and Tauri IPC (the desktop app, see
 * `tauri.ts`). The UI only ever sees this interface.
 */
import type { CommandName, RequestOf, ResponseOf, StudioEvent } from "../api/types";

/** An error reply, classified by the back end's `code` so the UI never matches message strings. */
export class BackendError extends Error {
  /** Machine-readable code from `{"error": {"code", "message"}}` (`not_found`, `bad_request`, `unauthorized`, `transport`…). */
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = "BackendError";
    this.code = code;
  }
}

/** The back end as the UI sees it. */
export interface Backend {
  /** Transport name, shown in the status bar (`http`, `tauri`, `mock`). */
  readonly kind: string;
  /** Runs one API command. Rejects with {@link BackendError}. */
  call<C extends CommandName>(command: C, request: RequestOf<C>): Promise<ResponseOf<C>>;
  /** Subscribes to back-end events; returns the unsubscribe function. */
  subscribe(listener: (event: StudioEvent) => void): () => void;
  /**
   * Opens a native dialog to pick trajectory files (or, with `folders: true`,
   * folders: Android and OS trajectories are folders) and resolves with their
   * absolute paths, empty when cancelled; pass them to `import_files`. Only
   * the desktop app has it (a browser page cannot learn file paths).
   */
  chooseImportPaths?(options?: { folders?: boolean }): Promise<string[]>;
  /**
   * Calls `cb` with the absolute paths of files or folders dropped on the
   * window (native drag-and-drop); returns the function that stops it. Only
   * the desktop app has it.
   */
  onFileDrop?(cb: (paths: string[]) => void): () => void;
}

/** Turns an `{"error": {"code", "message"}}` body (or anything else) into a {@link BackendError}. */
export function errorFromBody(body: unknown, fallbackCode: string, fallbackMessage: string): BackendError {
  if (body && typeof body === "object" && "error" in body) {
    const err = (body as { error: unknown }).error;
    if (err && typeof err === "object") {
      const { code, message } = err as { code?: unknown; message?: unknown };
      return new BackendError(
        typeof code === "string" ? code : fallbackCode,
        typeof message === "string" ? message : fallbackMessage,
      );
    }
    if (typeof err === "string") return new BackendError(fallbackCode, err);
  }
  return new BackendError(fallbackCode, fallbackMessage);
}

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
