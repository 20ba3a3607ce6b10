/**
 * Tauri transport for the desktop app: every API command is a Tauri command
 * of the same name taking `{ request }`; events arrive on a
 * `Channel<StudioEvent>` handed to the `subscribe_events` command.
 */
import { Channel, invoke } from "@tauri-apps/api/core";
import type { CommandName, RequestOf, ResponseOf, StudioEvent } from "../api/types";
import { errorFromBody, type Backend } from "./backend";

/** The Tauri back end. */
export class TauriBackend implements Backend {
  readonly kind = "tauri";
  private readonly listeners = new Set<(event: StudioEvent) => void>();
  private channel: Channel<StudioEvent> | null = null;

  async call<C extends CommandName>(command: C, request: RequestOf<C>): Promise<ResponseOf<C>> {
    try {
      return await invoke<ResponseOf<C>>(command, { request });
    } catch (e) {
      // Tauri rejects with the serialised error value: `{error: {code, message}}` or a string.
      throw errorFromBody(typeof e === "string" ? { error: e } : e, "ipc", `${command} failed: ${String(e)}`);
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
        // Older shells without events: the UI still works without them.
      });
    }
    return () => {
      this.listeners.delete(listener);
    };
  }
}
