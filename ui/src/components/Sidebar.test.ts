import { describe, expect, it } from "vitest";
import type { TrajectorySummary } from "../api/types";
import { DEFAULT_FILTER, filterTrajectories } from "./Sidebar";
import { sparklinePoints } from "./Timeline";

const t = (id: string, domain: TrajectorySummary["domain"], branch_count: number, lowest_fidelity: number | null): TrajectorySummary => ({
  id,
  name: id,
  domain,
  source_format: "native",
  source_path: null,
  goal: null,
  turn_count: 3,
  branch_count,
  prediction_count: 0,
  lowest_fidelity,
  tags: [],
  imported_at: "2026-01-01T00:00:00Z",
});
const items = [t("shop", "web", 1, 0.9), t("calc", "os", 3, 0.4), t("settings", "android", 1, null), t("mail", "web", 2, 0.55)];
const episode: TrajectorySummary = { ...t("ep-1", "web", 1, null), source_format: "openenv-episode", tags: ["live-episode"] };
const tagged: TrajectorySummary = { ...t("ep-2", "os", 1, null), tags: ["live-episode"] };

describe("filterTrajectories", () => {
  it("filters by domain, branches, lowest fidelity and search words", () => {
    expect(filterTrajectories(items, DEFAULT_FILTER).map((x) => x.id)).toEqual(["calc", "mail", "settings", "shop"]);
    expect(filterTrajectories(items, { ...DEFAULT_FILTER, domain: "web" }).map((x) => x.id)).toEqual(["mail", "shop"]);
    expect(filterTrajectories(items, { ...DEFAULT_FILTER, has_branches: true }).map((x) => x.id)).toEqual(["calc", "mail"]);
    expect(filterTrajectories(items, { ...DEFAULT_FILTER, max_lowest_fidelity_pct: 55 }).map((x) => x.id)).toEqual(["calc", "mail"]);
    expect(filterTrajectories(items, { ...DEFAULT_FILTER, query: "WEB sh" }).map((x) => x.id)).toEqual(["shop"]);
  });
  it("keeps only the episodes serve-env recorded with the live-episodes filter", () => {
    const all = [...items, episode, tagged];
    expect(filterTrajectories(all, { ...DEFAULT_FILTER, live_episodes: true }).map((x) => x.id)).toEqual(["ep-1", "ep-2"]);
    expect(filterTrajectories(all, DEFAULT_FILTER)).toHaveLength(6);
  });
  it("sorts by lowest fidelity with unknown scores last", () => {
    expect(filterTrajectories(items, { ...DEFAULT_FILTER, sort: "lowest-fidelity" }).map((x) => x.id)).toEqual(["calc", "mail", "shop", "settings"]);
  });
});

describe("sparklinePoints", () => {
  it("maps turns to x and fidelity to y, leaving gaps for unknown values", () => {
    expect(sparklinePoints([1, null, 0], 106, 26, 3)).toEqual([[3, 3], null, [103, 23]]);
    expect(sparklinePoints([0.5], 100, 20, 0)).toEqual([[50, 10]]);
  });
});
