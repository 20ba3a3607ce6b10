/**
 * Keeps the two panes' source and text views scrolled together. Their rows
 * are aligned (filler rows pad one-sided runs), so equal scroll offsets show
 * facing lines.
 */
import { createContext, useContext, useSyncExternalStore } from "react";
import type { Side } from "../model/tree";

/** The last scroll offset and which side made it. */
export interface ScrollState {
  side: Side | null;
  top_px: number;
}

/** Scroll-sync store. */
export class ScrollSyncStore {
  private state: ScrollState = { side: null, top_px: 0 };
  private readonly listeners = new Set<() => void>();
  getSnapshot = (): ScrollState => this.state;
  subscribe = (l: () => void): (() => void) => {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  };
  /** Forgets the last offset (a new turn or view starts at the top). */
  reset(): void {
    this.state = { side: null, top_px: 0 };
    for (const l of this.listeners) l();
  }
  publish(side: Side, top_px: number): void {
    if (Math.abs(top_px - this.state.top_px) < 1) return;
    this.state = { side, top_px };
    for (const l of this.listeners) l();
  }
}

export const ScrollSyncContext = createContext<ScrollSyncStore | null>(null);

const UNLINKED: ScrollState = { side: null, top_px: 0 };
const noSubscribe = () => () => {};
const unlinked = () => UNLINKED;

/** The offset the other pane asked for (or null), and a publisher for this pane. */
export function useScrollSync(side: Side): [number | null, (top_px: number) => void] {
  const store = useContext(ScrollSyncContext);
  const state = useSyncExternalStore(store ? store.subscribe : noSubscribe, store ? store.getSnapshot : unlinked, store ? store.getSnapshot : unlinked);
  const wanted = state.side !== null && state.side !== side ? state.top_px : null;
  return [wanted, (top) => store?.publish(side, top)];
}
