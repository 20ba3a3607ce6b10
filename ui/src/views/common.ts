/** Helpers shared by the views of a pane. */
import type { SelectionState } from "../state/selection";
import { counterpart, type Alignment, type Side } from "../model/tree";

/** The hovered and selected node ids on `side`, following the alignment across panes. */
export function resolveOnSide(state: SelectionState, side: Side, align: Alignment): { hoverId: number | null; selectedId: number | null } {
  const pick = (ref: SelectionState["hover"]): number | null => {
    if (!ref) return null;
    if (ref.side === side) return ref.id;
    return counterpart(align, ref.side, ref.id) ?? null;
  };
  return { hoverId: pick(state.hover), selectedId: pick(state.selected) };
}
