/**
 * HTTP transport for `worldloom serve`: `POST /api/<command>` with a JSON
 * body and `Authorization: Bearer <token>` (uploads: `POST /api/upload` with
 * the files as a streamed body, `upload`); JSON replies; errors as
 * `{"error": {"code", "message"}}` with a non-2xx status. Events come as
 * server-sent events from `GET /api/events`, read with `fetch` so the token
 * travels in the header rather than in a URL.
 */
import type { CommandName, ImportFilesResponse, RequestOf, ResponseOf, StudioEvent } from "../api/types";
import type { Backend, CallOptions } from "./backend";
import { BackendError, abortedError, errorFromBody } from "./error";

/** Where the access token is kept for this tab (`sessionStorage`: it survives reloads, not the tab). */
export const TOKEN_STORAGE_KEY = "worldloom.token";

/**
 * Reads the `token` query parameter the server printed in its URL, then
 * removes it from the address bar (and history) so it is not left in
 * bookmarks or screenshots. The token is kept in the tab's `sessionStorage`
 * (per origin, gone when the tab closes), so a reload stays signed in; a URL
 * with a token replaces the stored one (a restarted server prints a new one).
 */
export function takeTokenFromLocation(win: Pick<Window, "location" | "history"> & Partial<Pick<Window, "sessionStorage">>): string | null {
  const url = new URL(win.location.href);
  const token = url.searchParams.get("token");
  const storage = win.sessionStorage;
  if (token !== null) {
    url.searchParams.delete("token");
    win.history.replaceState(win.history.state, "", url.pathname + url.search + url.hash);
    try {
      storage?.setItem(TOKEN_STORAGE_KEY, token);
    } catch {
      // Storage refused (privacy mode): the token stays in memory only.
    }
    return token;
  }
  try {
    return storage?.getItem(TOKEN_STORAGE_KEY) ?? null;
  } catch {
    return null;
  }
}

/** Splits a server-sent-events byte stream into `data:` payloads (one per event). */
export function parseSseChunk(buffer: string): { events: string[]; rest: string } {
  const events: string[] = [];
  const normalised = buffer.replace(/\r\n?/g, "\n");
  const blocks = normalised.split("\n\n");
  const rest = blocks.pop() ?? "";
  for (const block of blocks) {
    const data = block
      .split("\n")
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(5).replace(/^ /, ""));
    if (data.length > 0) events.push(data.join("\n"));
  }
  return { events, rest };
}

/** The HTTP back end. */
export class HttpBackend implements Backend {
  readonly kind = "http";
  private readonly listeners = new Set<(event: StudioEvent) => void>();
  private abort: AbortController | null = null;

  constructor(
    private readonly origin: string,
    private readonly token: string | null,
    private readonly fetchImpl: typeof fetch = (...args) => fetch(...args),
  ) {}

  private headers(): Record<string, string> {
    const h: Record<string, string> = { "Content-Type": "application/json" };
    if (this.token) h.Authorization = `Bearer ${this.token}`;
    return h;
  }

  async call<C extends CommandName>(command: C, request: RequestOf<C>, options: CallOptions = {}): Promise<ResponseOf<C>> {
    const { signal } = options;
    if (signal?.aborted) throw abortedError(command);
    let response: Response;
    let text: string;
    try {
      response = await this.fetchImpl(`${this.origin}/api/${command}`, {
        method: "POST",
        headers: this.headers(),
        body: JSON.stringify(request ?? {}),
        signal,
      });
      text = await response.text();
    } catch (e) {
      if (signal?.aborted) throw abortedError(command);
      throw new BackendError("transport", `cannot reach the server for ${command}: ${String(e)}`);
    }
    return this.reply(command, response, text) as ResponseOf<C>;
  }

  /**
   * Uploads picked files for import as one streamed request body
   * (`POST /api/upload`), not as base64 in JSON: per file, its relative path
   * (`encodeURIComponent`), `\n`, its size in bytes, `\n`, then its bytes.
   * The body is a `Blob` of the files themselves, so the browser streams them
   * from disk and the server writes each once as it arrives. Resolves with
   * what `import_files` answers.
   */
  async upload(files: ReadonlyArray<{ relative_path: string; file: Blob }>): Promise<ImportFilesResponse> {
    const parts: BlobPart[] = [];
    for (const f of files) parts.push(`${encodeURIComponent(f.relative_path)}\n${f.file.size}\n`, f.file);
    let response: Response;
    let text: string;
    try {
      response = await this.fetchImpl(`${this.origin}/api/upload`, {
        method: "POST",
        headers: { ...this.headers(), "Content-Type": "application/octet-stream" },
        body: new Blob(parts),
      });
      text = await response.text();
    } catch (e) {
      throw new BackendError("transport", `cannot reach the server for upload: ${String(e)}`);
    }
    return this.reply("upload", response, text) as ImportFilesResponse;
  }

  /**
   * A stored screenshot's bytes (`GET /api/screenshots/<sha256>`, the token
   * in the header, never in the URL), as a `Blob` of their media type.
   */
  async screenshot(sha256: string, options: CallOptions = {}): Promise<Blob> {
    const { signal } = options;
    const what = "screenshot";
    if (signal?.aborted) throw abortedError(what);
    let response: Response;
    try {
      const headers: Record<string, string> = this.token ? { Authorization: `Bearer ${this.token}` } : {};
      response = await this.fetchImpl(`${this.origin}/api/screenshots/${encodeURIComponent(sha256)}`, { headers, signal });
      // Not OK: `reply` throws the error its body names.
      if (!response.ok) this.reply(what, response, await response.text());
      return await response.blob();
    } catch (e) {
      if (e instanceof BackendError) throw e;
      if (signal?.aborted) throw abortedError(what);
      throw new BackendError("transport", `cannot reach the server for ${what}: ${String(e)}`);
    }
  }

  /** A reply's JSON, or the `BackendError` its error body or status gives. */
  private reply(command: string, response: Response, text: string): unknown {
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      throw new BackendError("bad_response", `${command}: the server replied with non-JSON (HTTP ${response.status})`);
    }
    if (!response.ok) {
      throw errorFromBody(body, response.status === 401 ? "unauthorized" : `http_${response.status}`, `${command} failed with HTTP ${response.status}`);
    }
    return body;
  }

  subscribe(listener: (event: StudioEvent) => void): () => void {
    this.listeners.add(listener);
    if (this.listeners.size === 1) this.openEvents();
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) {
        this.abort?.abort();
        this.abort = null;
      }
    };
  }

  private openEvents(): void {
    const abort = new AbortController();
    this.abort = abort;
    const headers: Record<string, string> = { Accept: "text/event-stream" };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    void (async () => {
      try {
        const response = await this.fetchImpl(`${this.origin}/api/events`, { headers, signal: abort.signal });
        if (!response.ok || !response.body) return;
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          const { events, rest } = parseSseChunk(buffer + value);
          buffer = rest;
          for (const data of events) {
            try {
              const event = JSON.parse(data) as StudioEvent;
              for (const l of this.listeners) l(event);
            } catch {
              // A malformed event is dropped; the next one may be fine.
            }
          }
        }
      } catch {
        // Aborted or the server went away: events are an optimisation, the
        // UI still works by polling on navigation.
      }
    })();
  }
}
