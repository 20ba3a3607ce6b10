/**
 * An indented, virtualised tree of a turn's `UiTree`, read in windows of
 * rows (`get_tree_rows`: the rows in view, children on expand) so that a
 * 200,000-node tree costs what a small one does: keys (`bid`,
 * `resource-id`), roles, names, values, states, optional bounds; diff colours
 * per row (the marks come with the rows); hover and selection shared with
 * every other view; search on the server (`search_tree`) with previous/next
 * match; "N nodes, showing M" when collapsed nodes hide rows. The node the
 * turn's action landed on is marked ◎ and revealed when the tree opens.
 */
import { memo, useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from "react";
import type { DiffStatus, TreeWindow, UiNode, UiTree } from "../api/types";
import type { Backend } from "../backend/backend";
import { VirtualList } from "../components/VirtualList";
import type { TreeRef } from "../data/keys";
import { TREE_PAGE_ROWS, useTreeRows, useTreeSearch } from "../data/queries";
import type { Alignment, Side } from "../model/tree";
import { classNames } from "../components/dom";
import { isInvertedBounds, isOutsideRoot, screenRoot } from "../model/wireframe";
import { useSelection } from "../state/selection";
import { resolveOnSide } from "./common";

/** Row height of tree lists, px. */
export const TREE_ROW_HEIGHT_PX = 20;

const MAX_INDENT_LEVELS = 48;
const INDENT_PX = 12;

/** Props of {@link TreeView}. */
export interface TreeViewProps {
  side: Side;
  backend: Backend;
  /** The turn, view and side the rows are fetched for. */
  treeRef: TreeRef;
  /** The first window of rows, from `get_turn` (`SideDocument.rows`). */
  first: TreeWindow;
  representation: UiTree["representation"];
  align: Alignment;
  /** Accessible name of the tree (`Real accessibility tree`…). */
  label: string;
  /** Show each node's bounds in px. */
  showBounds?: boolean;
  /** The node the turn's action landed on: marked, and revealed when the tree opens. */
  landingId?: number | null;
}

/** Roles of BrowserGym frames, which should carry a `bid`. */
const FRAME_ROLES = /^(i?frame)$/i;

const DIFF_MARK: Record<DiffStatus, string> = { unchanged: "", changed: "~", moved: "↕", added: "+", removed: "−" };

const SKIP_PROPS = new Set([
  "bid",
  "value",
  "focused",
  "checked",
  "selected",
  "style",
  "text",
  "content-desc",
  "resource-id",
  "class",
  "bounds",
  "name",
  "index",
  "package",
]);

/**
 * Short property labels for a row: BrowserGym properties (`clickable`,
 * `visible`, `url=…`), HTML attributes, Android flags that are `true`, AT-SPI
 * states (`st:…`) that are `true`. States shown as badges are left out.
 */
export function propsOf(node: UiNode, representation: UiTree["representation"], max = 6): string[] {
  const out: string[] = [];
  for (const a of node.attributes ?? []) {
    if (out.length >= max) break;
    const name = a.name;
    if (SKIP_PROPS.has(name)) continue;
    const short = a.value.length > 48 ? `${a.value.slice(0, 47)}…` : a.value;
    if (representation === "axtree") out.push(a.value === "" || a.value === "true" ? name : `${name}=${short}`);
    else if (representation === "html") out.push(a.value === "" ? name : `${name}=${short}`);
    else if (representation === "android-xml") {
      if (a.value === "true" && !["enabled", "focusable", "checkable"].includes(name)) out.push(name);
    } else if (name.startsWith("st:")) {
      const st = name.slice(3);
      if (a.value === "true" && !["focused", "checked", "enabled", "sensitive", "showing", "visible"].includes(st)) out.push(st);
    }
  }
  return out;
}

/**
 * A key short enough for a row: the last step of an AT-SPI path
 * (`…/frame:Calculator/push-button:7` → `push-button:7`), the id part of an
 * Android `resource-id` (`com.android.settings:id/title` → `title`). The full
 * key is in the row's tooltip and in the node inspector.
 */
export function shortKey(key: string, representation: UiTree["representation"]): string {
  if (representation === "android-xml") {
    const i = key.indexOf(":id/");
    return i >= 0 ? key.slice(i + 4) : key;
  }
  if (representation === "os-xml" || representation === "os-table") {
    const parts = key.split("/").filter(Boolean);
    return parts[parts.length - 1] ?? key;
  }
  return key;
}

function statesOf(node: UiNode): string[] {
  const s = node.states ?? {};
  const out: string[] = [];
  if (s.checked === true) out.push("checked");
  if (s.checked === false) out.push("unchecked");
  if (s.selected) out.push("selected");
  if (s.focused) out.push("focused");
  if (s.enabled === false) out.push("disabled");
  if (s.expanded === true) out.push("expanded");
  if (s.editable) out.push("editable");
  return out;
}

interface RowProps {
  node: UiNode;
  representation: UiTree["representation"];
  status: DiffStatus;
  collapsed: boolean;
  hasChildren: boolean;
  hovered: boolean;
  selected: boolean;
  matched: boolean;
  landed: boolean;
  showBounds: boolean;
  /** The node's bounds reach outside the root's bounds. */
  outsideRoot: boolean;
  onToggle: (id: number) => void;
  onHover: (id: number) => void;
  onSelect: (id: number) => void;
}

const TreeRow = memo(function TreeRow({
  node,
  representation,
  status,
  collapsed,
  hasChildren,
  hovered,
  selected,
  matched,
  landed,
  showBounds,
  outsideRoot,
  onToggle,
  onHover,
  onSelect,
}: RowProps) {
  const depth = Math.min(node.depth, MAX_INDENT_LEVELS);
  const b = node.bounds_px;
  const props = propsOf(node, representation);
  const cls = classNames(
    "trow",
    `diff-${status}`,
    hovered && "is-hover",
    selected && "is-selected",
    matched && "is-match",
    landed && "is-landed",
    node.synthetic && "is-synthetic",
  );
  return (
    <div
      role="treeitem"
      aria-level={node.depth + 1}
      aria-selected={selected}
      aria-expanded={hasChildren ? !collapsed : undefined}
      data-node-id={node.id}
      data-diff={status}
      data-landed={landed ? "" : undefined}
      className={cls}
      style={{ paddingLeft: 4 + depth * INDENT_PX }}
      onMouseEnter={() => onHover(node.id)}
      onClick={() => onSelect(node.id)}
      title={node.depth > MAX_INDENT_LEVELS ? `depth ${node.depth}` : undefined}
    >
      <span className="tmark" aria-hidden="true">
        {DIFF_MARK[status]}
      </span>
      {landed ? (
        <span className="tlanded" title="The turn's action landed on this element">
          ◎
        </span>
      ) : null}
      {hasChildren ? (
        <span
          className="twisty"
          aria-hidden="true"
          onClick={(e) => {
            e.stopPropagation();
            onToggle(node.id);
          }}
        >
          {collapsed ? "▸" : "▾"}
        </span>
      ) : (
        <span className="twisty" aria-hidden="true" />
      )}
      {node.key ? (
        <span className="tkey" title={node.key}>
          [{shortKey(node.key, representation)}]
        </span>
      ) : representation === "axtree" && FRAME_ROLES.test(node.role) ? (
        <span className="tkey is-missing" title="This frame has no bid: actions cannot name it">
          (no bid)
        </span>
      ) : null}
      <span className="trole" title={node.role}>
        {representation === "android-xml" ? node.role.slice(node.role.lastIndexOf(".") + 1) : node.role}
      </span>
      {node.name ? <span className="tname">“{node.name.length > 160 ? `${node.name.slice(0, 159)}…` : node.name}”</span> : null}
      {node.value != null && node.value !== "" && node.value !== node.name ? <span className="tvalue">value=“{node.value.slice(0, 80)}”</span> : null}
      {statesOf(node).map((s) => (
        <span key={s} className={`tstate st-${s}`}>
          {s}
        </span>
      ))}
      {isInvertedBounds(node) ? (
        <span className="tgeom is-invalid" title="Inverted bounds: right < left or bottom < top">
          invalid
        </span>
      ) : null}
      {outsideRoot ? (
        <span className="tgeom is-outside" title="Bounds reach outside the root's bounds (off-screen)">
          outside root bounds
        </span>
      ) : null}
      {props.length ? <span className="tprops">{props.join(" ")}</span> : null}
      {showBounds && b ? (
        <span className="tbounds">
          {b.left},{b.top} {b.right - b.left}×{b.bottom - b.top}
        </span>
      ) : null}
    </div>
  );
});

export function TreeView({ side, backend, treeRef, first, representation, align, label, showBounds = false, landingId = null }: TreeViewProps) {
  const [state, store] = useSelection();
  // Collapsed node ids, ascending (the key of the rows fetched).
  const [collapsed, setCollapsed] = useState<number[]>([]);
  const [range, setRange] = useState<readonly [number, number]>([0, TREE_PAGE_ROWS]);
  const [query, setQuery] = useState("");
  // Index into the matches of the last jump; -1 before the first jump.
  const [matchIndex, setMatchIndex] = useState(-1);
  // The row to scroll to (a revealed selection).
  const [scrollRow, setScrollRow] = useState<number | null>(null);

  const { byRow, rowOf, visibleCount } = useTreeRows(backend, treeRef, first, collapsed, range);
  const search = useTreeSearch(backend, treeRef, query).data;
  const matches = useMemo(() => (query.trim() && search ? search.matches : []), [query, search]);
  const matchSet = useMemo(() => new Set(matches), [matches]);
  // Rows carry their counterpart: without the whole diff (a large tree), the
  // loaded rows align the panes.
  const rowAlign = useMemo(() => {
    if (align.realToPredicted.size > 0) return align;
    const own = new Map<number, number>();
    const other = new Map<number, number>();
    for (const r of byRow.values()) {
      if (r.counterpart == null) continue;
      own.set(r.node.id, r.counterpart);
      other.set(r.counterpart, r.node.id);
    }
    return side === "real" ? { realToPredicted: own, predictedToReal: other } : { realToPredicted: other, predictedToReal: own };
  }, [align, byRow, side]);
  const { hoverId, selectedId } = resolveOnSide(state, side, rowAlign);
  // Android dumps' root spans the screen; elsewhere the root's frame is not a screen.
  const root = useMemo(() => (representation === "android-xml" ? screenRoot(first.rows.map((r) => r.node)) : undefined), [representation, first]);

  // A new tree opens fully expanded, scrolled to the top.
  const [seen, setSeen] = useState(first);
  if (seen !== first) {
    setSeen(first);
    setCollapsed([]);
    setScrollRow(null);
  }

  // A node selected elsewhere (other pane, wireframe, source, search) is
  // revealed — only when the selection changes, so collapsing a node that
  // holds it sticks. The server expands its collapsed ancestors and gives
  // its row.
  const latest = useRef({ collapsed, rowOf });
  useLayoutEffect(() => {
    latest.current = { collapsed, rowOf };
  });
  // Reveals a node: its row when loaded, else the server expands its
  // collapsed ancestors and gives its row. Returns a canceller.
  const reveal = useCallback(
    (id: number) => {
      const known = latest.current.rowOf.get(id);
      if (known !== undefined) {
        setScrollRow(known);
        return () => {};
      }
      let live = true;
      backend
        .call("get_tree_rows", { ...treeRef, offset: 0, limit: 0, collapsed: latest.current.collapsed, reveal: id })
        .then((w) => {
          if (!live) return;
          if (w.collapsed.join(",") !== latest.current.collapsed.join(",")) setCollapsed(w.collapsed);
          setScrollRow(w.revealed_row);
        })
        .catch(() => {
          // A node the other side has no counterpart for: nothing to reveal.
        });
      return () => {
        live = false;
      };
    },
    [backend, treeRef],
  );
  useEffect(() => {
    if (selectedId == null) return;
    return reveal(selectedId);
    // Only when the selection (or the tree) changes.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [selectedId, treeRef.trajectory_id, treeRef.node_id, treeRef.prediction_id, treeRef.view_index, treeRef.side, first]);
  // Where the action landed is revealed when the tree opens (a selection
  // made afterwards takes over).
  useEffect(() => {
    if (landingId == null) return;
    return reveal(landingId);
    // Only when the landing (or the tree) changes.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [landingId, treeRef.trajectory_id, treeRef.node_id, treeRef.prediction_id, treeRef.view_index, treeRef.side, first]);

  const onToggle = useCallback((id: number) => {
    setCollapsed((prev) => (prev.includes(id) ? prev.filter((x) => x !== id) : [...prev, id].sort((a, b) => a - b)));
  }, []);
  const onHover = useCallback((id: number) => store.hover({ side, id }), [store, side]);
  const onSelect = useCallback((id: number) => store.select({ side, id }), [store, side]);
  const onRange = useCallback((a: number, b: number) => setRange((prev) => (prev[0] === a && prev[1] === b ? prev : [a, b])), []);

  const jump = (delta: number) => {
    if (matches.length === 0) return;
    const n = matches.length;
    const next = matchIndex < 0 ? (delta > 0 ? 0 : n - 1) : (((matchIndex + delta) % n) + n) % n;
    setMatchIndex(next);
    store.select({ side, id: matches[next]! });
  };

  const onKeyDown = (e: React.KeyboardEvent) => {
    if ((e.key === "Enter" || e.key === " ") && selectedId != null) {
      e.preventDefault();
      onToggle(selectedId);
      return;
    }
    if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
    e.preventDefault();
    const cur = selectedId != null ? (rowOf.get(selectedId) ?? -1) : -1;
    const next = Math.max(0, Math.min(visibleCount - 1, cur + (e.key === "ArrowDown" ? 1 : -1)));
    const id = byRow.get(next)?.node.id;
    if (id !== undefined) store.select({ side, id });
  };

  const total = search?.total ?? 0;
  const count = query.trim()
    ? `${matchIndex + 1}/${total}${total > matches.length ? ` (first ${matches.length} listed)` : ""}`
    : visibleCount < first.node_count
      ? `${first.node_count} nodes, showing ${visibleCount}`
      : `${first.node_count} nodes`;

  return (
    <div className="treeview">
      <div className="tree-toolbar" role="search">
        <input
          type="search"
          aria-label={`Search ${label}`}
          placeholder="Search role, name, bid…"
          value={query}
          onChange={(e) => {
            setQuery(e.target.value);
            setMatchIndex(-1);
          }}
          onKeyDown={(e) => {
            if (e.key === "Enter") jump(e.shiftKey ? -1 : 1);
          }}
        />
        <span className="tree-count" aria-live="polite">
          {count}
        </span>
        <button type="button" aria-label="Previous match" disabled={!matches.length} onClick={() => jump(-1)}>
          ↑
        </button>
        <button type="button" aria-label="Next match" disabled={!matches.length} onClick={() => jump(1)}>
          ↓
        </button>
      </div>
      <VirtualList
        role="tree"
        aria-label={label}
        tabIndex={0}
        className="tree-list"
        count={visibleCount}
        rowHeight={TREE_ROW_HEIGHT_PX}
        scrollToIndex={scrollRow}
        onRange={onRange}
        onKeyDown={onKeyDown}
        onMouseLeave={() => store.hover(null)}
        renderRow={(i) => {
          const r = byRow.get(i);
          if (!r) return <div className="trow is-loading" aria-hidden="true" />;
          const id = r.node.id;
          return (
            <TreeRow
              node={r.node}
              representation={representation}
              status={r.status ?? "unchanged"}
              collapsed={collapsed.includes(id)}
              hasChildren={r.child_count > 0}
              hovered={hoverId === id}
              selected={selectedId === id}
              matched={matchSet.has(id)}
              landed={landingId === id}
              showBounds={showBounds}
              outsideRoot={isOutsideRoot(root, r.node)}
              onToggle={onToggle}
              onHover={onHover}
              onSelect={onSelect}
            />
          );
        }}
      />
    </div>
  );
}
