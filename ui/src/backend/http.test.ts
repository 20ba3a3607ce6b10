import { describe, expect, it, vi } from "vitest";
import { BackendError } from "./error";
import { HttpBackend, parseSseChunk, takeTokenFromLocation } from "./http";

const ALL = { query: null, domain: null, has_branches: null, max_fidelity: null, sort: null };

describe("takeTokenFromLocation", () => {
  it("reads the token and removes it from the address bar", () => {
    const replaceState = vi.fn();
    const win = { location: { href: "http://127.0.0.1:4100/?token=s3cret&x=1#t=a" }, history: { state: null, replaceState } };
    expect(takeTokenFromLocation(win as unknown as Window)).toBe("s3cret");
    expect(replaceState).toHaveBeenCalledWith(null, "", "/?x=1#t=a");
  });
  it("keeps the token for the tab so a reload stays signed in, and a new URL token replaces it", () => {
    const store = new Map<string, string>();
    const sessionStorage = { getItem: (k: string) => store.get(k) ?? null, setItem: (k: string, v: string) => void store.set(k, v) };
    const history = { state: null, replaceState: vi.fn() };
    const first = { location: { href: "http://127.0.0.1:4100/?token=one" }, history, sessionStorage };
    expect(takeTokenFromLocation(first as unknown as Window)).toBe("one");
    const reload = { location: { href: "http://127.0.0.1:4100/#t=a" }, history, sessionStorage };
    expect(takeTokenFromLocation(reload as unknown as Window)).toBe("one");
    const restarted = { location: { href: "http://127.0.0.1:4100/?token=two" }, history, sessionStorage };
    expect(takeTokenFromLocation(restarted as unknown as Window)).toBe("two");
    expect(takeTokenFromLocation(reload as unknown as Window)).toBe("two");
  });
  it("returns null and leaves the URL alone without a token", () => {
    const replaceState = vi.fn();
    const win = { location: { href: "http://127.0.0.1:4100/" }, history: { state: null, replaceState } };
    expect(takeTokenFromLocation(win as unknown as Window)).toBeNull();
    expect(replaceState).not.toHaveBeenCalled();
  });
});

describe("HttpBackend.call", () => {
  it("posts JSON with the bearer token to /api/<command>", async () => {
    const fetchImpl = vi.fn(async () => new Response(JSON.stringify({ trajectories: [] }), { status: 200 }));
    const b = new HttpBackend("http://127.0.0.1:4100", "tok", fetchImpl as unknown as typeof fetch);
    await expect(b.call("list_trajectories", ALL)).resolves.toEqual({ trajectories: [] });
    const [url, init] = fetchImpl.mock.calls[0] as unknown as [string, RequestInit];
    expect(url).toBe("http://127.0.0.1:4100/api/list_trajectories");
    expect(init.method).toBe("POST");
    expect((init.headers as Record<string, string>).Authorization).toBe("Bearer tok");
    expect(JSON.parse(init.body as string)).toEqual(ALL);
  });
  it("turns an error body into a BackendError with its code", async () => {
    const fetchImpl = vi.fn(async () => new Response(JSON.stringify({ error: { code: "not_found", message: "no trajectory `x`" } }), { status: 404 }));
    const b = new HttpBackend("", "tok", fetchImpl as unknown as typeof fetch);
    const err = await b.call("get_trajectory", { trajectory_id: "x" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BackendError);
    expect((err as BackendError).code).toBe("not_found");
    expect((err as BackendError).message).toBe("no trajectory `x`");
  });
  it("reports non-JSON replies and unreachable servers", async () => {
    const html = new HttpBackend("", null, (async () => new Response("<html>", { status: 502 })) as unknown as typeof fetch);
    await expect(html.call("list_trajectories", ALL)).rejects.toMatchObject({ code: "bad_response" });
    const down = new HttpBackend("", null, (async () => {
      throw new TypeError("connection refused");
    }) as unknown as typeof fetch);
    await expect(down.call("list_trajectories", ALL)).rejects.toMatchObject({ code: "transport" });
  });
});

describe("HttpBackend.upload", () => {
  it("streams the files as one raw body to /api/upload, each after its encoded path and size", async () => {
    const reply = { imported: [], runs: [], failed: [], warnings: [] };
    const fetchImpl = vi.fn(async () => new Response(JSON.stringify(reply), { status: 200 }));
    const b = new HttpBackend("http://127.0.0.1:4100", "tok", fetchImpl as unknown as typeof fetch);
    await expect(
      b.upload([
        { relative_path: "run/a b.jsonl", file: new Blob(["{}\n"]) },
        { relative_path: "empty.json", file: new Blob([]) },
      ]),
    ).resolves.toEqual(reply);
    const [url, init] = fetchImpl.mock.calls[0] as unknown as [string, RequestInit];
    expect(url).toBe("http://127.0.0.1:4100/api/upload");
    expect(init.method).toBe("POST");
    const headers = init.headers as Record<string, string>;
    expect(headers.Authorization).toBe("Bearer tok");
    expect(headers["Content-Type"]).toBe("application/octet-stream");
    expect(init.body).toBeInstanceOf(Blob);
    expect(await (init.body as Blob).text()).toBe("run%2Fa%20b.jsonl\n3\n{}\nempty.json\n0\n");
  });
});

describe("parseSseChunk", () => {
  it("splits complete events and keeps the incomplete rest", () => {
    const { events, rest } = parseSseChunk('data: {"type":"a"}\n\n: comment\n\ndata: {"type":\ndata: "b"}\r\n\r\ndata: {"par');
    expect(events).toEqual(['{"type":"a"}', '{"type":\n"b"}']);
    expect(rest).toBe('data: {"par');
  });
});

describe("HttpBackend.call with an abort signal", () => {
  it("cancels the request when the signal aborts and rejects with `aborted`", async () => {
    const { createServer } = await import("node:http");
    let closed = false;
    // A server that never answers: only the abort can end the call.
    const server = createServer((req) => req.on("close", () => (closed = true)));
    await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
    const { port } = server.address() as { port: number };
    try {
      const b = new HttpBackend(`http://127.0.0.1:${port}`, "tok");
      const abort = new AbortController();
      const call = b.call("list_trajectories", ALL, { signal: abort.signal });
      await new Promise((r) => setTimeout(r, 100));
      abort.abort();
      await expect(call).rejects.toMatchObject({ code: "aborted" });
      await vi.waitFor(() => expect(closed).toBe(true));
      // An already aborted signal sends nothing.
      await expect(b.call("list_trajectories", ALL, { signal: abort.signal })).rejects.toMatchObject({ code: "aborted" });
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
