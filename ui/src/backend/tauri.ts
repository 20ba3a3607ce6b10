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
 * - Menu items that act in the page arrive as the `worldloom://menu` event
 *   and are replayed as the keys the page already handles: Go › Previous /
 *   Next turn as ←/→; Edit › Undo / Redo as Ctrl+Z / Ctrl+Shift+Z, sent to the
 *   focused text field when there is one (so it undoes its own edit: the menu
 *   shortcut reaches the shell before the page), else to the window (the
 *   workspace's undo).
 */
import { Channel, invoke } from "@tauri-apps/api/core";
import { listen, type UnlistenFn } from "@tauri-apps/api/event";
import { getCurrentWebview } from "@tauri-apps/api/webview";
import type { CommandName, RequestOf, ResponseOf, StudioEvent } from "../api/types";
import type { Backend, CallOptions } from "./backend";
import { BackendError, abortedError, errorFromBody } from "./error";

/** The event the shell sends menu actions under (`src-tauri/src/shell.rs`, `MENU_EVENT`). */
export const MENU_EVENT = "worldloom://menu";

/** The key each page-side menu action stands for; `focused`: sent to a focused text field first. */
const MENU_KEYS: Record<string, { key: string; ctrlKey?: boolean; shiftKey?: boolean; focused?: boolean }> = {
  next_turn: { key: "ArrowRight" },
  previous_turn: { key: "ArrowLeft" },
  present: { key: "p" },
  undo: { key: "z", ctrlKey: true, focused: true },
  redo: { key: "z", ctrlKey: true, shiftKey: true, focused: true },
};

function editableFocus(): HTMLElement | null {
  const el = document.activeElement;
  if (!(el instanceof HTMLElement)) return null;
  return el.isContentEditable || el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement ? el : null;
}

/** Replays a menu action as its key. Exported for tests. */
export function replayMenuAction(action: string): void {
  const k = MENU_KEYS[action];
  if (!k) return;
  const field = k.focused ? editableFocus() : null;
  const event = new KeyboardEvent("keydown", { key: k.key, ctrlKey: k.ctrlKey ?? false, shiftKey: k.shiftKey ?? false, bubbles: true, cancelable: true });
  const unhandled = (field ?? window).dispatchEvent(event);
  // A plain text field has no key handler of its own for a synthetic key: run its edit command.
  if (field && unhandled) document.execCommand(k.shiftKey ? "redo" : "undo");
}

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
    lateUnlisten(listen<string>(MENU_EVENT, (event) => replayMenuAction(event.payload)));
  }

  async call<C extends CommandName>(command: C, request: RequestOf<C>, options: CallOptions = {}): Promise<ResponseOf<C>> {
    const { signal } = options;
    if (signal?.aborted) throw abortedError(command);
    // The IPC cannot cancel a command: an aborted call settles at once and its reply is dropped.
    let onAbort = () => {};
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(abortedError(command));
      signal?.addEventListener("abort", onAbort, { once: true });
    });
    try {
      return await Promise.race([invoke<ResponseOf<C>>("api", { command, request: request ?? {} }), aborted]);
    } catch (e) {
      if (e instanceof BackendError) throw e;
      // The shell rejects with `{error: {code, message}}`; Tauri itself with a string.
      throw errorFromBody(typeof e === "string" ? { error: { code: "ipc", message: e } } : e, "ipc", `${command} failed: ${String(e)}`);
    } finally {
      signal?.removeEventListener("abort", onAbort);
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
