/**
 * Tauri transport for the desktop app (`src-tauri/`).
 *
 * - Every API command goes through the shell's one generic command `api`
 *   (`{ command, request }`), which forwards to `worldloom_api::dispatch` on
 *   a blocking thread: a command added to the API works here unchanged.
 *   Errors come back as `{error: {code, message}}`, as over HTTP.
 * - Events arrive on a `Channel<StudioEvent>` handed to `subscribe_events`.
 * - `chooseImportPaths` opens the native Import dialog (`choose_import_paths`).
 * - `onFileDrop` reports paths of files dropped on the window (the webview's
 *   native drag-and-drop, which gives real paths, unlike HTML5 drops).
 * - Menu items that act in the page (Go › Previous turn / Next turn) arrive
 *   as the `worldloom://menu` event and are replayed as the ←/→ key the page
 *   already handles.
 */
import { Channel, invoke } from "@tauri-apps/api/core";
import { listen, type UnlistenFn } from "@tauri-apps/api/event";
import { getCurrentWebview } from "@tauri-apps/api/webview";
import type { CommandName, RequestOf, ResponseOf, StudioEvent } from "../api/types";
import { errorFromBody, type Backend } from "./backend";

/** The event the shell sends menu actions under (`src-tauri/src/shell.rs`, `MENU_EVENT`). */
export const MENU_EVENT = "worldloom://menu";

/** The key each page-side menu action stands for. */
const MENU_KEYS: Record<string, string> = { next_turn: "ArrowRight", previous_turn: "ArrowLeft" };

/** Subscribes to a Tauri event source that resolves its unlisten function later; the returned function works at any time. */
function lateUnlisten(start: Promise<UnlistenFn>): () => void {
  let unlisten: UnlistenFn | null = null;
  let cancelled = false;
  start
    .then((fn) => {
      if (cancelled) fn();
      else unlisten = fn;
    })
    .catch(() => {
      // No event permission (an older shell): nothing to undo.
    });
  return () => {
    cancelled = true;
    unlisten?.();
    unlisten = null;
  };
}

/** The Tauri back end. */
export class TauriBackend implements Backend {
  readonly kind = "tauri";
  private readonly listeners = new Set<(event: StudioEvent) => void>();
  private channel: Channel<StudioEvent> | null = null;

  constructor() {
    // Registered once, at start-up, so a menu click is never missed.
    lateUnlisten(
      listen<string>(MENU_EVENT, (event) => {
        const key = MENU_KEYS[event.payload];
        if (key) window.dispatchEvent(new KeyboardEvent("keydown", { key, bubbles: true, cancelable: true }));
      }),
    );
  }

  async call<C extends CommandName>(command: C, request: RequestOf<C>): Promise<ResponseOf<C>> {
    try {
      return await invoke<ResponseOf<C>>("api", { command, request: request ?? {} });
    } catch (e) {
      // The shell rejects with `{error: {code, message}}`; Tauri itself with a string.
      throw errorFromBody(typeof e === "string" ? { error: { code: "ipc", message: e } } : e, "ipc", `${command} failed: ${String(e)}`);
    }
  }

  subscribe(listener: (event: StudioEvent) => void): () => void {
    this.listeners.add(listener);
    if (!this.channel) {
      const channel = new Channel<StudioEvent>();
      channel.onmessage = (event) => {
        for (const l of this.listeners) l(event);
      };
      this.channel = channel;
      void invoke("subscribe_events", { channel }).catch(() => {
        // Without events the UI still works (it reloads on navigation).
        this.channel = null;
      });
    }
    return () => {
      this.listeners.delete(listener);
    };
  }

  async chooseImportPaths(options?: { folders?: boolean }): Promise<string[]> {
    try {
      return await invoke<string[]>("choose_import_paths", { folders: options?.folders ?? false });
    } catch (e) {
      throw errorFromBody(typeof e === "string" ? { error: { code: "ipc", message: e } } : e, "ipc", `the Import dialog failed: ${String(e)}`);
    }
  }

  onFileDrop(cb: (paths: string[]) => void): () => void {
    return lateUnlisten(
      getCurrentWebview().onDragDropEvent((event) => {
        if (event.payload.type === "drop" && event.payload.paths.length > 0) cb(event.payload.paths);
      }),
    );
  }
}
