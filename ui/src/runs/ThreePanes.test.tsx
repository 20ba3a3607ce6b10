import { QueryClientProvider } from "@tanstack/react-query";
import { cleanup, render, waitFor } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";
import type { TurnDetail } from "../api/types";
import type { Backend } from "../backend/backend";
import { createQueryClient } from "../data/queries";
import { RUNS } from "../mocks/golden";
import runsFile from "../mocks/golden/runs.json";
import { ThreePanes } from "./ThreePanes";

afterEach(cleanup);

/** `get_turn` answered from the recorded runs (`"<trajectory>/<node>/<prediction>"`). */
function turnsBackend(): Backend {
  const turns = (runsFile as unknown as { turns: Record<string, TurnDetail> }).turns;
  return {
    kind: "mock",
    call: ((command: string, request: { trajectory_id: string; node_id: number; prediction_id: number | null }) => {
      if (command !== "get_turn") return Promise.reject(new Error(command));
      const t = turns[`${request.trajectory_id}/${request.node_id}/${request.prediction_id}`];
      return t ? Promise.resolve(t) : Promise.reject(new Error("no such turn"));
    }) as Backend["call"],
    subscribe: () => () => {},
  };
}

describe("ThreePanes: where the action landed", () => {
  it("outlines the line of the element the action names, and says why a prediction lacks it", async () => {
    // The web row: fill('33', '2'); A's prediction dropped the spin button.
    const pair = RUNS!.compare.pairs.find((p) => p.a.domain === "web" && p.a.node_id === 1)!;
    const { container, getByLabelText } = render(
      <QueryClientProvider client={createQueryClient()}>
        <ThreePanes backend={turnsBackend()} pair={pair} onClose={() => {}} />
      </QueryClientProvider>,
    );
    await waitFor(() => expect(getByLabelText("Real action target")).toBeTruthy());
    expect(getByLabelText("Real action target").textContent).toBe('◎ fill bid 33 → spinbutton "Quantity"');
    const real = getByLabelText("Real observation");
    const landed = real.querySelectorAll(".line.landed");
    expect(landed.length).toBe(1);
    expect(landed[0]!.textContent).toContain("[33] spinbutton 'Quantity'");
    expect(getByLabelText("A's action target").textContent).toBe("◎ fill bid 33: bid 33 not in the predicted tree");
    expect(getByLabelText("A's prediction").querySelectorAll(".line.landed").length).toBe(0);
    expect(container.querySelectorAll("[data-landed]").length).toBe(1);
    // The element's own markup is highlighted within its line.
    const mark = real.querySelectorAll("mark.landed-span");
    expect(mark.length).toBe(1);
    expect(mark[0]!.textContent).toBe("\t[33] spinbutton 'Quantity', clickable, visible, focused, value='2'");
  });

  it("highlights the tapped element inside a one-line Android dump", async () => {
    const pair = RUNS!.compare.pairs.find((p) => p.a.domain === "android" && p.a.node_id === 1)!;
    const { getByLabelText } = render(
      <QueryClientProvider client={createQueryClient()}>
        <ThreePanes backend={turnsBackend()} pair={pair} onClose={() => {}} />
      </QueryClientProvider>,
    );
    await waitFor(() => expect(getByLabelText("Real action target")).toBeTruthy());
    expect(getByLabelText("Real action target").textContent).toBe("◎ click at (976, 450) → android.widget.Switch");
    const mark = getByLabelText("Real observation").querySelectorAll("mark.landed-span");
    expect(mark.length).toBe(1);
    const text = mark[0]!.textContent!;
    expect(text.startsWith('<node index="1"')).toBe(true);
    expect(text).toContain('class="android.widget.Switch"');
    expect(text.endsWith("/>")).toBe(true);
  });
});
