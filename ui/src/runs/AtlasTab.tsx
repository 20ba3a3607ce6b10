/**
 * The fidelity atlas of run A (beside B when chosen): what its predictions
 * get wrong, by error kind. A heat map of action type × error kind, then
 * one table at a time (overall, by domain, role / class, attribute, action,
 * turn); every cell opens the rows where it happened (`AtlasRows.tsx`),
 * and a row opens the turn with the nodes in question marked in real | A
 * (| B). Counted by the API (`run_atlas`) from each row's findings, stored
 * once.
 */
import { useState } from "react";
import type { Atlas, AtlasDelta, AtlasTable, ErrorKind, RunAtlasResponse, RunRowView } from "../api/types";
import type { Backend } from "../backend/backend";
import { useRunAtlas, useRunRows, type AtlasCellRef } from "../data/queries";
import { AtlasRows } from "./AtlasRows";
import { ACTION_LABELS, KIND_LABELS, KIND_TITLES, TABLE_LABELS, atlasGrid, deltaOf, formatRate, formatRateDelta, heatColor, heatIsDark } from "./atlasModel";
import { rowsRequest, type RunsState } from "./runsModel";
import "./atlas.css";

const TABLES: AtlasTable[] = ["overall", "domain", "role", "attribute", "action", "turn"];

/** Props of {@link AtlasTab}. */
export interface AtlasTabProps {
  backend: Backend;
  runA: string;
  runB: string | null;
  /** The Runs view's state: its row table's search and filters choose the selection the atlas can be counted over. */
  state: RunsState;
  onOpenRow: (row: RunRowView) => void;
}

/** Whether the row table is narrowed (a search, a domain, status or label filter). */
function filtered(state: RunsState): boolean {
  return state.query.trim() !== "" || state.domain !== null || state.status !== null || state.label !== null;
}

function groupLabel(table: AtlasTable, group: string): string {
  if (table === "action") return ACTION_LABELS[group as keyof typeof ACTION_LABELS] ?? group;
  if (table === "turn") return `turn ${group}`;
  return group;
}

function countsLine(name: string, a: Atlas): string {
  return `${name}: ${a.rows} rows, ${a.scored} scored, ${a.missing} without a prediction, ${a.skipped} not scorable`;
}

/** One atlas table as a grid of groups × kinds; each non-empty cell is a button that opens its rows. */
function AtlasGrid({
  data,
  table,
  label,
  chosen,
  onPick,
}: {
  data: RunAtlasResponse;
  table: AtlasTable;
  label: string;
  chosen: AtlasCellRef | null;
  onPick: (cell: AtlasCellRef) => void;
}) {
  const grid = atlasGrid(data.a, table);
  // With B, B's groups that A lacks get a row too.
  const groups = [...grid.groups];
  if (data.b) for (const g of atlasGrid(data.b, table).groups) if (!groups.includes(g)) groups.push(g);
  const groupsShown = table === "action" ? data.actions.filter((a) => groups.includes(a)) : groups;
  if (groupsShown.length === 0) return <div className="pane-empty">Nothing to count here: no scored row has a finding of this table.</div>;
  return (
    <table className="atlas-grid" aria-label={label}>
      <thead>
        <tr>
          <th scope="col">{TABLE_LABELS[table]}</th>
          {data.kinds.map((k) => (
            <th key={k} scope="col" title={KIND_TITLES[k]}>
              {KIND_LABELS[k]}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {groupsShown.map((g) => (
          <tr key={g}>
            <th scope="row">{groupLabel(table, g)}</th>
            {data.kinds.map((k) => (
              <GridCell key={k} data={data} table={table} group={g} kind={k} chosen={chosen} onPick={onPick} />
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function GridCell({
  data,
  table,
  group,
  kind,
  chosen,
  onPick,
}: {
  data: RunAtlasResponse;
  table: AtlasTable;
  group: string;
  kind: ErrorKind;
  chosen: AtlasCellRef | null;
  onPick: (cell: AtlasCellRef) => void;
}) {
  const c = atlasGrid(data.a, table).cell(group, kind);
  const d: AtlasDelta | undefined = data.b ? deltaOf(data.compare, table, group, kind) : undefined;
  const rate = c?.rate ?? 0;
  if (!c && !d) return <td className="atlas-empty">·</td>;
  const isChosen = chosen !== null && chosen.table === table && chosen.group === group && chosen.kind === kind;
  const title = `${groupLabel(table, group)} · ${KIND_LABELS[kind]}: ${c ? `${c.count} in ${c.rows} of ${c.scored_rows} scored rows` : "none in A"}${
    d ? ` · B ${formatRate(d.rate_b)} (${d.count_b})` : ""
  }`;
  return (
    <td style={{ background: heatColor(rate) }} className={heatIsDark(rate) ? "dark" : undefined}>
      <button
        type="button"
        className="atlas-cell"
        aria-pressed={isChosen}
        aria-label={`${groupLabel(table, group)} ${KIND_LABELS[kind]}`}
        title={title}
        disabled={!c}
        data-group={group}
        data-kind={kind}
        onClick={() => onPick({ table, group, kind })}
      >
        <span className="rate">{formatRate(rate)}</span>
        {c ? <span className="count">{c.count}</span> : null}
        {d ? (
          <span className={`delta ${d.delta > 0 ? "worse" : d.delta < 0 ? "better" : ""}`}>
            B {formatRate(d.rate_b)} · {formatRateDelta(d.delta)}
          </span>
        ) : null}
      </button>
    </td>
  );
}

export function AtlasTab({ backend, runA, runB, state, onOpenRow }: AtlasTabProps) {
  const [selectionOnly, setSelectionOnly] = useState(false);
  const narrowed = filtered(state);
  const selection = useRunRows(backend, narrowed && selectionOnly ? rowsRequest(state) : null);
  const rowIds = narrowed && selectionOnly ? (selection.data?.rows.map((r) => r.row_id) ?? null) : null;
  const waiting = narrowed && selectionOnly && rowIds === null;
  const q = useRunAtlas(backend, waiting ? null : runA, runB, rowIds);
  const [table, setTable] = useState<AtlasTable>("domain");
  const [cell, setCell] = useState<AtlasCellRef | null>(null);
  if (q.error) return <div className="pane-empty">{String(q.error)}</div>;
  const data = q.data;
  if (!data) return <div className="pane-empty">Counting what the alignments found… (the first time, each row is read once)</div>;
  return (
    <div className="atlas" aria-label="Atlas">
      {narrowed ? (
        <label className="atlas-selection">
          <input
            type="checkbox"
            checked={selectionOnly}
            onChange={(e) => {
              setSelectionOnly(e.target.checked);
              setCell(null);
            }}
          />{" "}
          Only the rows the Rows tab shows (its search and filters{rowIds !== null ? `: ${rowIds.length} rows` : ""})
        </label>
      ) : null}
      <p className="muted atlas-counts">
        {countsLine(runB ? "A" : "Run", data.a)}
        {data.b ? ` · ${countsLine("B", data.b)}` : ""}. A cell is the share of scored rows where the error happened (its count under it)
        {data.b ? ", with B's share and A − B in points" : ""}; click it for the rows.
      </p>
      <h4>Action type × error kind</h4>
      <AtlasGrid data={data} table="action" label="Heat map: action type × error kind" chosen={cell} onPick={setCell} />
      <div className="seg atlas-tables" role="tablist" aria-label="Atlas table">
        {TABLES.map((t) => (
          <button key={t} type="button" role="tab" aria-selected={table === t} onClick={() => setTable(t)}>
            {TABLE_LABELS[t]}
          </button>
        ))}
      </div>
      <AtlasGrid data={data} table={table} label={`Atlas ${TABLE_LABELS[table].toLowerCase()}`} chosen={cell} onPick={setCell} />
      {cell ? (
        <AtlasRows
          key={`${cell.table}/${cell.group}/${cell.kind}`}
          backend={backend}
          runA={runA}
          runB={runB}
          cell={cell}
          rowIds={rowIds}
          onClose={() => setCell(null)}
          onOpenRow={onOpenRow}
        />
      ) : null}
    </div>
  );
}
