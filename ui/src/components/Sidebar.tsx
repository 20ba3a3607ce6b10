/** The trajectory list: search, filters (domain, has branches, live episodes, lowest fidelity) and the list itself. */
import { useEffect, useMemo, useState } from "react";
import type { Domain, TrajectorySummary } from "../api/types";
import { VirtualList } from "./VirtualList";
import { fidelityClass, formatScore } from "./format";

/** Filter settings of the list. */
export interface TrajectoryFilter {
  query: string;
  domain: Domain | "all";
  has_branches: boolean;
  /** Keep only episodes recorded by `worldloom serve-env` (source `openenv-episode`, tag `live-episode`). */
  live_episodes: boolean;
  /** Keep trajectories whose lowest fidelity is at most this, in percent (100 = no filter). */
  max_lowest_fidelity_pct: number;
  sort: "name" | "lowest-fidelity";
}

export const DEFAULT_FILTER: TrajectoryFilter = {
  query: "",
  domain: "all",
  has_branches: false,
  live_episodes: false,
  max_lowest_fidelity_pct: 100,
  sort: "name",
};

/** The source format of episodes recorded by `worldloom serve-env`. */
export const EPISODE_SOURCE_FORMAT = "openenv-episode";
/** The tag `worldloom serve-env` sets on every episode it records. */
export const LIVE_EPISODE_TAG = "live-episode";

/** Whether a trajectory is an episode recorded by `worldloom serve-env`. */
export function isLiveEpisode(t: TrajectorySummary): boolean {
  return t.source_format === EPISODE_SOURCE_FORMAT || t.tags.includes(LIVE_EPISODE_TAG);
}

/** Applies a filter to the list (pure; tested). */
export function filterTrajectories(items: readonly TrajectorySummary[], f: TrajectoryFilter): TrajectorySummary[] {
  const words = f.query.toLowerCase().split(/\s+/).filter(Boolean);
  const out = items.filter((t) => {
    if (f.domain !== "all" && t.domain !== f.domain) return false;
    if (f.has_branches && t.branch_count < 2) return false;
    if (f.live_episodes && !isLiveEpisode(t)) return false;
    if (f.max_lowest_fidelity_pct < 100) {
      if (t.lowest_fidelity == null || t.lowest_fidelity * 100 > f.max_lowest_fidelity_pct + 1e-9) return false;
    }
    const hay = `${t.name} ${t.id} ${t.goal ?? ""} ${t.domain} ${t.source_format}`.toLowerCase();
    return words.every((w) => hay.includes(w));
  });
  if (f.sort === "lowest-fidelity") out.sort((a, b) => (a.lowest_fidelity ?? 2) - (b.lowest_fidelity ?? 2));
  else out.sort((a, b) => a.name.localeCompare(b.name));
  return out;
}

/** Height of one trajectory entry, px. */
const TRAJ_ROW_HEIGHT_PX = 46;

const DOMAINS: Domain[] = ["web", "os", "android", "mcp", "search", "terminal", "swe"];

/** While the live-episodes filter is on, the list (and the open trajectory) is refetched this often, ms. */
export const LIVE_REFRESH_MS = 3000;

/** Props of {@link Sidebar}. */
export interface SidebarProps {
  trajectories: TrajectorySummary[];
  selectedId: string | null;
  onSelect: (id: string) => void;
  /** Called every {@link LIVE_REFRESH_MS} while the live-episodes filter is on (episodes grow as `serve-env` records them). */
  onLiveRefresh?: () => void;
}

export function Sidebar({ trajectories, selectedId, onSelect, onLiveRefresh }: SidebarProps) {
  const [filter, setFilter] = useState<TrajectoryFilter>(DEFAULT_FILTER);
  const live = filter.live_episodes;
  useEffect(() => {
    if (!live || !onLiveRefresh) return;
    const timer = setInterval(onLiveRefresh, LIVE_REFRESH_MS);
    return () => clearInterval(timer);
  }, [live, onLiveRefresh]);
  const shown = useMemo(() => filterTrajectories(trajectories, filter), [trajectories, filter]);
  const set = (patch: Partial<TrajectoryFilter>) => setFilter((f) => ({ ...f, ...patch }));
  return (
    <nav className="sidebar" aria-label="Trajectories">
      <div className="brand">
        <span className="logo" aria-hidden="true">
          ◧
        </span>{" "}
        Worldloom
      </div>
      <div className="filters">
        <input
          type="search"
          aria-label="Search trajectories"
          placeholder="Search trajectories…"
          value={filter.query}
          onChange={(e) => set({ query: e.target.value })}
        />
        <div className="filter-row">
          <select aria-label="Domain filter" value={filter.domain} onChange={(e) => set({ domain: e.target.value as TrajectoryFilter["domain"] })}>
            <option value="all">All domains</option>
            {DOMAINS.map((d) => (
              <option key={d} value={d}>
                {d}
              </option>
            ))}
          </select>
          <select aria-label="Sort trajectories" value={filter.sort} onChange={(e) => set({ sort: e.target.value as TrajectoryFilter["sort"] })}>
            <option value="name">Sort: name</option>
            <option value="lowest-fidelity">Sort: lowest fidelity</option>
          </select>
        </div>
        <label className="filter-check">
          <input type="checkbox" checked={filter.has_branches} onChange={(e) => set({ has_branches: e.target.checked })} /> Has branches
        </label>
        <label className="filter-check">
          <input type="checkbox" checked={filter.live_episodes} onChange={(e) => set({ live_episodes: e.target.checked })} /> Live episodes
        </label>
        <label className="filter-range">
          Lowest fidelity ≤ {filter.max_lowest_fidelity_pct}%
          <input
            type="range"
            min={0}
            max={100}
            step={5}
            aria-label="Lowest fidelity at most (percent)"
            value={filter.max_lowest_fidelity_pct}
            onChange={(e) => set({ max_lowest_fidelity_pct: Number(e.target.value) })}
          />
        </label>
      </div>
      {shown.length === 0 ? (
        <p className="empty">No trajectory matches.</p>
      ) : (
        // Windowed: an AgentWorldBench import can hold thousands of trajectories.
        <VirtualList
          role="list"
          aria-label="Trajectory list"
          className="traj-list"
          count={shown.length}
          rowHeight={TRAJ_ROW_HEIGHT_PX}
          fallbackHeight={480}
          renderRow={(i) => {
            const t = shown[i]!;
            return (
              <div role="listitem" className="traj-item">
                <button
                  type="button"
                  className={t.id === selectedId ? "traj is-active" : "traj"}
                  aria-current={t.id === selectedId ? "true" : undefined}
                  onClick={() => onSelect(t.id)}
                >
                  <span className="traj-top">
                    <span className={`domain d-${t.domain}`}>{t.domain}</span>
                    <span className="traj-name" title={t.name}>
                      {t.name}
                    </span>
                  </span>
                  <span className="traj-meta">
                    {t.turn_count} {t.turn_count === 1 ? "turn" : "turns"}
                    {t.branch_count > 1 ? ` · ${t.branch_count} branches` : ""} · {t.source_format}
                    <span className={`score ${fidelityClass(t.lowest_fidelity)}`} title="lowest per-turn fidelity">
                      min {formatScore(t.lowest_fidelity)}
                    </span>
                  </span>
                </button>
              </div>
            );
          }}
        />
      )}
      <div className="sidebar-foot">
        {shown.length} of {trajectories.length}
      </div>
    </nav>
  );
}
