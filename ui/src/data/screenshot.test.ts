// @vitest-environment node
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Backend } from "../backend/backend";
import { startServer, type TestServer } from "../testing/server";
import { screenshotBlob } from "./screenshot";

/** The committed Android sample that has a screenshot per state. */
const SAMPLE = join(dirname(fileURLToPath(import.meta.url)), "../../../samples/android/settings_airplane-mode_trajectory");

describe("screenshotBlob against the real server", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer([SAMPLE]);
  }, 60_000);
  afterAll(() => server.stop());

  it("gives the file's bytes over HTTP and through the command the desktop IPC uses, alike", async () => {
    const { detail } = await server.turn("settings_airplane-mode_trajectory", 0);
    const shot = detail.real_screenshot!;
    expect(shot).toMatchObject({ media_type: "image/png", width_px: 270, height_px: 600 });
    const file = new Uint8Array(readFileSync(join(SAMPLE, "step_00.png")));
    expect(shot.byte_length).toBe(file.length);
    // HTTP: GET /api/screenshots/<sha256>, the bytes as they are.
    const http = await screenshotBlob(server.backend, shot);
    expect(http.type).toBe("image/png");
    expect(new Uint8Array(await http.arrayBuffer())).toEqual(file);
    // A transport without the route (the desktop app): get_screenshot in base64.
    const ipcLike: Backend = { kind: "ipc-like", call: (c, r, o) => server.backend.call(c, r, o), subscribe: () => () => {} };
    const viaCommand = await screenshotBlob(ipcLike, shot);
    expect(viaCommand.type).toBe("image/png");
    expect(new Uint8Array(await viaCommand.arrayBuffer())).toEqual(file);
  });

  it("rejects a screenshot the workspace does not hold with the server's error", async () => {
    const missing = { media_type: "image/png" as const, width_px: 1, height_px: 1, byte_length: 1, sha256: "0".repeat(64) };
    await expect(screenshotBlob(server.backend, missing)).rejects.toMatchObject({ code: "not_found" });
  });
});
