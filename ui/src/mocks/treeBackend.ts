/**
 * A back end for view tests that answers only `get_tree_rows` and
 * `search_tree`, over given trees and diff (see `treeWindow.ts`), and counts
 * the calls. Tests only.
 */
import type { PaneSide, TreeDiff, TreeWindow, UiTree } from "../api/types";
import type { Backend } from "../backend/backend";
import { BackendError } from "../backend/error";
import type { TreeRef } from "../data/keys";
import { MOCK_FIRST_WINDOW_ROWS, searchOf, windowOf } from "./treeWindow";

/** A {@link Backend} over one turn's trees, with the commands it was asked. */
export interface TreeBackend extends Backend {
  calls: Array<{ command: string; request: Record<string, unknown> }>;
  /** The first window `get_turn` would send for a side. */
  first(side: PaneSide): TreeWindow;
  /** The reference of a side. */
  ref(side: PaneSide): TreeRef;
}

export function treeBackend(trees: Partial<Record<PaneSide, UiTree>>, diff: TreeDiff | null = null): TreeBackend {
  const calls: TreeBackend["calls"] = [];
  const tree = (side: PaneSide) => {
    const t = trees[side];
    if (!t) throw new BackendError("not_found", `no ${side} tree`);
    return t;
  };
  return {
    kind: "test",
    calls,
    first: (side) => windowOf(tree(side), diff, side, 0, MOCK_FIRST_WINDOW_ROWS, []),
    ref: (side) => ({ trajectory_id: "t", node_id: 1, prediction_id: null, view_index: 0, side }),
    subscribe: () => () => {},
    call: (async (command: string, request: Record<string, unknown>) => {
      calls.push({ command, request });
      const side = request.side as PaneSide;
      if (command === "search_tree") return searchOf(tree(side), String(request.query), Number(request.limit));
      if (command === "get_tree_rows") {
        try {
          return windowOf(
            tree(side),
            diff,
            side,
            Number(request.offset),
            Number(request.limit),
            (request.collapsed as number[]) ?? [],
            (request.reveal as number | null) ?? null,
          );
        } catch (e) {
          throw new BackendError("bad_request", String((e as Error).message));
        }
      }
      throw new BackendError("unknown_command", command);
    }) as Backend["call"],
  };
}
