/**
 * Hover and selection shared by every view of both panes. A tiny external
 * store (read with `useSyncExternalStore`) so that hovering a tree row does
 * not re-render the whole app: only views that read the store update.
 */
import { createContext, useContext, useSyncExternalStore } from "react";
import type { Side } from "../model/tree";

/** A node on one side. */
export interface NodeRef {
  side: Side;
  id: number;
}

/** The store's state. */
export interface SelectionState {
  hover: NodeRef | null;
  selected: NodeRef | null;
}

/** Hover/selection store. */
export class SelectionStore {
  private state: SelectionState = { hover: null, selected: null };
  private readonly listeners = new Set<() => void>();

  getSnapshot = (): SelectionState => this.state;

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  private set(next: SelectionState): void {
    if (next.hover === this.state.hover && next.selected === this.state.selected) return;
    this.state = next;
    for (const l of this.listeners) l();
  }

  hover(ref: NodeRef | null): void {
    const h = this.state.hover;
    if (h === ref || (h && ref && h.side === ref.side && h.id === ref.id)) return;
    this.set({ ...this.state, hover: ref });
  }

  select(ref: NodeRef | null): void {
    const s = this.state.selected;
    if (s === ref || (s && ref && s.side === ref.side && s.id === ref.id)) return;
    this.set({ ...this.state, selected: ref });
  }

  clear(): void {
    this.set({ hover: null, selected: null });
  }
}

export const SelectionContext = createContext<SelectionStore>(new SelectionStore());

/** The current hover/selection. */
export function useSelection(): [SelectionState, SelectionStore] {
  const store = useContext(SelectionContext);
  const state = useSyncExternalStore(store.subscribe, store.getSnapshot, store.getSnapshot);
  return [state, store];
}
