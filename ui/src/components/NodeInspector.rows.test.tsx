import { QueryClientProvider } from "@tanstack/react-query";
import { act, cleanup, render, waitFor } from "@testing-library/react";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ComparedView } from "../api/types";
import { createQueryClient } from "../data/queries";
import { SelectionContext, SelectionStore } from "../state/selection";
import { fixturePaths, recording, startServer, type TestServer } from "../testing/server";
import { NodeInspector } from "./NodeInspector";

let server: TestServer;
beforeAll(async () => {
  server = await startServer(fixturePaths("web-harbor-books"));
});
afterAll(() => server.stop());
afterEach(cleanup);

describe("NodeInspector on a tree sent only as rows", () => {
  it("reads the selected node and its counterpart as rows, with the field changes", async () => {
    // The web fixture's third turn (two changed nodes), as if its trees were too large to come whole.
    const { detail, ref } = await server.turn("web-harbor-books", 3);
    const whole = detail.views[0]!;
    const diff = whole.diff!;
    const [realId, predId] = diff.pairs.find(([r]) => (diff.real_changes[r] ?? []).length > 0)!;
    const view: ComparedView = {
      ...whole,
      real: { ...whole.real!, tree: null },
      predicted: { ...whole.predicted!, tree: null },
      diff: null,
    };
    const backend = recording(server.backend);
    const { side: _side, ...turnRef } = ref("real");
    const store = new SelectionStore();
    const { container } = render(
      <QueryClientProvider client={createQueryClient()}>
        <SelectionContext.Provider value={store}>
          <NodeInspector view={view} backend={backend} turnRef={turnRef} />
        </SelectionContext.Provider>
      </QueryClientProvider>,
    );
    expect(container.querySelector(".inspector")).toBeNull();
    act(() => store.select({ side: "predicted", id: predId }));
    await waitFor(() => expect(container.querySelector(".inspector-table")).not.toBeNull());
    await waitFor(() => expect(container.querySelectorAll("tr.differs").length).toBeGreaterThan(0));
    const realNode = whole.real!.tree!.nodes[realId]!;
    const predNode = whole.predicted!.tree!.nodes[predId]!;
    // Each side's row arrives on its own: wait until both columns are filled.
    const roleCells = () => {
      const role = Array.from(container.querySelectorAll("tbody tr")).find((tr) => tr.querySelector("th")?.textContent === "role");
      return Array.from(role?.querySelectorAll("td") ?? []).map((td) => td.textContent);
    };
    await waitFor(() => expect(roleCells()).toEqual([realNode.role, predNode.role]));
    expect(container.querySelector(".istatus")!.textContent).toBe(diff.predicted[predId]);
    const asked = backend.calls.map((c) => [(c.request as { side: string }).side, (c.request as { offset: number }).offset]);
    expect(asked).toContainEqual(["predicted", Math.floor(predId / 200) * 200]);
    expect(asked).toContainEqual(["real", Math.floor(realId / 200) * 200]);
  });
});
