/**
 * The real `worldloom serve` for tests: a fresh workspace in a temporary
 * folder, the given trajectory files imported into it, and an
 * {@link HttpBackend} pointed at it. Every command a view test sends is
 * answered by the API itself. Tests only; the binary and the fixture files
 * come from `globalSetup.ts`.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inject } from "vitest";
import type { CommandName, PaneSide, TurnDetail } from "../api/types";
import type { Backend } from "../backend/backend";
import { BackendError } from "../backend/error";
import { HttpBackend } from "../backend/http";
import type { TreeRef } from "../data/keys";

/** A running server and a back end talking to it. */
export interface TestServer {
  backend: HttpBackend;
  /** `http://127.0.0.1:PORT`. */
  origin: string;
  /** The workspace id of the trajectory with this name (a fixture id such as `web-harbor-books`); throws when there is none. */
  trajectoryId(name: string): Promise<string>;
  /** `get_turn` of a state of the named trajectory with its chosen prediction, and the reference of each side of its first view. */
  turn(name: string, nodeId: number): Promise<{ detail: TurnDetail; ref: (side: PaneSide) => TreeRef }>;
  /** Stops the server and removes its workspace. */
  stop(): Promise<void>;
}

/** The dev fixtures as native files (`globalSetup.ts`), by fixture id; all of them without ids. `large-tree` names the 20,000-line tree (never in "all"). */
export function fixturePaths(...ids: string[]): string[] {
  const all = { ...inject("fixturePaths") };
  if (ids.includes("large-tree")) all["large-tree"] = inject("largeTreePath");
  if (ids.length === 0) return Object.values(all).sort();
  return ids.map((id) => {
    const p = all[id];
    if (!p) throw new Error(`no fixture \`${id}\` (have ${Object.keys(all).join(", ")})`);
    return p;
  });
}

/**
 * Starts `worldloom serve --port 0` on a new workspace holding `paths`
 * (default: every dev fixture), with keys kept in memory rather than the OS
 * keyring; resolves once it printed its URL (rejects with its output when it
 * exits or prints none within 60 s).
 */
export async function startServer(paths: string[] = fixturePaths(), env: Record<string, string> = {}): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), "worldloom-vitest-"));
  const child = spawn(inject("worldloomBin"), ["serve", "--port", "0", "--workspace", join(dir, "test.worldloom"), ...paths], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, WORLDLOOM_KEY_STORE: "memory", ...env },
  });
  const url = await new Promise<URL>((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => reject(new Error(`worldloom serve printed no URL within 60 s:\n${seen}`)), 60_000);
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      const m = seen.match(/Worldloom studio: (http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]+)/);
      if (m) {
        clearTimeout(timer);
        resolve(new URL(m[1]!));
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`worldloom serve exited with ${code}:\n${seen}`));
    });
  });
  const backend = new HttpBackend(url.origin, url.searchParams.get("token"));
  const trajectoryId = async (name: string): Promise<string> => {
    const list = await backend.call("list_trajectories", { query: null, domain: null, has_branches: null, max_fidelity: null, sort: null });
    const t = list.trajectories.find((x) => x.name === name);
    if (!t) throw new Error(`no trajectory named \`${name}\` (have ${list.trajectories.map((x) => x.name).join(", ")})`);
    return t.id;
  };
  return {
    backend,
    origin: url.origin,
    trajectoryId,
    async turn(name, nodeId) {
      const id = await trajectoryId(name);
      const detail = await backend.call("get_turn", { trajectory_id: id, node_id: nodeId, prediction_id: null });
      const ref = (side: PaneSide): TreeRef => ({ trajectory_id: id, node_id: nodeId, prediction_id: detail.prediction_id, view_index: 0, side });
      return { detail, ref };
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) {
          rmSync(dir, { recursive: true, force: true });
          resolve();
          return;
        }
        child.once("exit", () => {
          rmSync(dir, { recursive: true, force: true });
          resolve();
        });
        child.kill("SIGTERM");
      }),
  };
}

/** A back end that forwards to another and records each command it is asked, with its request. */
export interface Recording extends Backend {
  calls: Array<{ command: string; request: unknown }>;
}

/** Wraps `inner` so the test can see what the UI asked; `extra` adds the desktop-only methods. */
export function recording(inner: Backend, extra: Pick<Backend, "chooseImportPaths" | "onFileDrop"> = {}): Recording {
  const calls: Recording["calls"] = [];
  return {
    kind: inner.kind,
    calls,
    call: ((command: CommandName, request: unknown) => {
      calls.push({ command, request });
      return inner.call(command, request as never);
    }) as Backend["call"],
    subscribe: (listener) => inner.subscribe(listener),
    ...extra,
  };
}

/** A back end for a view that must not call one (its data came with the props): every call rejects, naming the command. */
export const noBackend: Backend = {
  kind: "none",
  call: ((command: string) => Promise.reject(new BackendError("unexpected", `no call was expected, got \`${command}\``))) as Backend["call"],
  subscribe: () => () => {},
};
