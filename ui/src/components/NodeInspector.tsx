/**
 * The selected node on both sides: role, name, value, key, states, bounds and
 * every attribute, real next to predicted, with the fields that differ marked.
 */
import { useMemo } from "react";
import type { ComparedView, FieldChange, UiNode, UiTree } from "../api/types";
import type { Backend } from "../backend/backend";
import type { TreeRef } from "../data/keys";
import { useTreeRow } from "../data/queries";
import { alignment, counterpart } from "../model/tree";
import { isInvertedBounds, outsideRootIds } from "../model/wireframe";
import { useSelection } from "../state/selection";

/** One compared field. */
export interface FieldRow {
  field: string;
  real: string | null;
  predicted: string | null;
  differs: boolean;
}

function describeStates(n: UiNode): string {
  return Object.entries(n.states ?? {})
    .filter(([, v]) => v !== undefined && v !== null)
    .map(([k, v]) => `${k}=${v}`)
    .join(" ");
}

function describeBounds(n: UiNode): string {
  const b = n.bounds_px;
  return b ? `[${b.left},${b.top}][${b.right},${b.bottom}]` : "";
}

/**
 * What is wrong with a node's geometry, for the inspector's `geometry` row:
 * `invalid (inverted)` for an inverted rectangle, `outside root bounds` for an
 * Android node reaching past the root (the screen); `""` when nothing is.
 */
export function geometryNote(tree: UiTree | null | undefined, node: UiNode | undefined): string {
  if (!tree || !node) return "";
  const notes: string[] = [];
  if (isInvertedBounds(node)) notes.push("invalid (inverted)");
  if (tree.representation === "android-xml" && outsideRootIds(tree).has(node.id)) notes.push("outside root bounds");
  return notes.join(", ");
}

/** The inspector row a back-end field name (`name`, `state:checked`, `attr:href`) belongs to. */
export function rowOfField(field: string): string {
  if (field.startsWith("state:")) return "states";
  if (field.startsWith("attr:")) return `@${field.slice(5)}`;
  return field;
}

/**
 * The field-by-field comparison of two aligned nodes (either may be missing).
 * With `changes` from the back end's diff, a row differs exactly when the
 * diff says so (it compares with whitespace collapsed and ignores positional
 * attributes such as Android `index`); without, by plain equality.
 */
export function compareNodes(real: UiNode | undefined, predicted: UiNode | undefined, changes?: readonly FieldChange[] | null): FieldRow[] {
  const rows: FieldRow[] = [];
  const add = (field: string, get: (n: UiNode) => string | null | undefined) => {
    const r = real ? (get(real) ?? "") : null;
    const p = predicted ? (get(predicted) ?? "") : null;
    if ((r ?? "") === "" && (p ?? "") === "") return;
    rows.push({ field, real: r, predicted: p, differs: r !== p });
  };
  const changed = real && predicted && changes ? new Set(changes.map((c) => rowOfField(c.field))) : null;
  add("role", (n) => n.role);
  add("name", (n) => n.name);
  add("value", (n) => n.value);
  add("key", (n) => n.key);
  add("states", describeStates);
  add("bounds", describeBounds);
  const names: string[] = [];
  for (const n of [real, predicted]) for (const a of n?.attributes ?? []) if (!names.includes(a.name)) names.push(a.name);
  for (const name of names) add(`@${name}`, (n) => n.attributes?.find((a) => a.name === name)?.value ?? null);
  if (changed) for (const row of rows) row.differs = changed.has(row.field);
  return rows;
}

/** Props of {@link NodeInspector}. */
export interface NodeInspectorProps {
  view: ComparedView | undefined;
  /** Where rows of trees too large to come whole are read from. */
  backend?: Backend;
  /** The turn as shown and the active view (see `TreeRef`). */
  turnRef?: Omit<TreeRef, "side"> | null;
}

/** A stand-in for a missing back end (its reads are never enabled). */
const NO_BACKEND: Backend = {
  kind: "none",
  call: () => Promise.reject(new Error("no back end")),
  subscribe: () => () => {},
};

export function NodeInspector({ view, backend, turnRef }: NodeInspectorProps) {
  const [state, store] = useSelection();
  const align = useMemo(() => alignment(view?.diff), [view]);
  const sel = state.selected;
  // A tree too large to come whole: the selected node and its counterpart
  // are read as rows (`get_tree_rows`), marks included.
  const selDoc = sel ? (sel.side === "real" ? view?.real : view?.predicted) : undefined;
  const byRows = !!sel && !selDoc?.tree && !!selDoc?.rows && !!backend && !!turnRef;
  const selRow = useTreeRow(backend ?? NO_BACKEND, byRows && sel && turnRef ? { ...turnRef, side: sel.side } : null, byRows && sel ? sel.id : null);
  const other = sel?.side === "real" ? "predicted" : "real";
  const otherRow = useTreeRow(
    backend ?? NO_BACKEND,
    byRows && turnRef && selRow?.counterpart != null ? { ...turnRef, side: other } : null,
    selRow?.counterpart ?? null,
  );
  if (!sel || !view) return null;
  const realTree = view.real?.tree;
  const predTree = view.predicted?.tree;
  const realRow = sel.side === "real" ? selRow : otherRow;
  const predRow = sel.side === "predicted" ? selRow : otherRow;
  const realId = byRows ? realRow?.node.id : sel.side === "real" ? sel.id : counterpart(align, "predicted", sel.id);
  const predId = byRows ? predRow?.node.id : sel.side === "predicted" ? sel.id : counterpart(align, "real", sel.id);
  const real = byRows ? realRow?.node : realId !== undefined ? realTree?.nodes[realId] : undefined;
  const predicted = byRows ? predRow?.node : predId !== undefined ? predTree?.nodes[predId] : undefined;
  if (!real && !predicted) return null;
  // Differing fields first, then the rest in their usual order.
  const changes = byRows ? (selRow?.changes ?? null) : realId !== undefined ? view.diff?.real_changes?.[realId] : null;
  const all = compareNodes(real, predicted, changes);
  const rows = [...all.filter((r) => r.differs), ...all.filter((r) => !r.differs)];
  const geoReal = geometryNote(realTree, real);
  const geoPred = geometryNote(predTree, predicted);
  if (geoReal || geoPred) rows.push({ field: "geometry", real: real ? geoReal : null, predicted: predicted ? geoPred : null, differs: false });
  const status = byRows ? selRow?.status : sel.side === "real" ? view.diff?.real[sel.id] : view.diff?.predicted[sel.id];
  return (
    <section className="inspector" role="region" aria-label="Selected node">
      <header>
        <h2>Node</h2>
        {status ? <span className={`istatus s-${status}`}>{status}</span> : null}
        <button type="button" aria-label="Clear selection" onClick={() => store.select(null)}>
          ×
        </button>
      </header>
      <table className="inspector-table">
        <thead>
          <tr>
            <th scope="col" />
            <th scope="col">real</th>
            <th scope="col">predicted</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.field} className={r.differs ? "differs" : undefined}>
              <th scope="row">{r.field}</th>
              <td>{r.real ?? <span className="muted">∅</span>}</td>
              <td>{r.predicted ?? <span className="muted">∅</span>}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
