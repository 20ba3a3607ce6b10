/**
 * One interface for talking to the Worldloom back end, with two transports:
 * HTTP (`worldloom serve`, see `http.ts`) and Tauri IPC (the desktop app, see
 * `tauri.ts`); `create.ts` picks one at start-up and `error.ts` holds the
 * error type both reject with. The UI only ever sees this interface. This
 * file imports no implementation, so none of them imports it back in a cycle.
 */
import type { CommandName, ImportFilesResponse, RequestOf, ResponseOf, StudioEvent } from "../api/types";

/** Options of one {@link Backend.call}. */
export interface CallOptions {
  /**
   * Aborts the call when the reply is no longer wanted (a superseded query:
   * the query layer passes its own); the call then rejects with a
   * `BackendError` of code `aborted`. Over HTTP the request is cancelled; the
   * desktop IPC cannot cancel a command, so its reply is dropped.
   */
  signal?: AbortSignal;
}

/** The back end as the UI sees it. */
export interface Backend {
  /** Transport name, shown in the status bar (`http`, `tauri`). */
  readonly kind: string;
  /** Runs one API command. Rejects with `BackendError` (`error.ts`). */
  call<C extends CommandName>(command: C, request: RequestOf<C>, options?: CallOptions): Promise<ResponseOf<C>>;
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
  /**
   * Uploads picked files for import as a streamed body and resolves with what
   * `import_files` answers. Only the HTTP transport has it (the desktop app
   * imports by path: `chooseImportPaths`, `onFileDrop`).
   */
  upload?(files: ReadonlyArray<{ relative_path: string; file: Blob }>): Promise<ImportFilesResponse>;
  /**
   * A stored screenshot's bytes as they are (`GET /api/screenshots/<sha256>`).
   * Only the HTTP transport has it; without it the bytes come from the
   * `get_screenshot` command in base64 (`data/screenshot.ts`).
   */
  screenshot?(sha256: string, options?: CallOptions): Promise<Blob>;
}
