/**
 * How real, predicted and authored states are marked everywhere (timeline,
 * panes, tree view, compare view): a badge with a letter and a colour, and one
 * legend.
 */
import type { ObservationKind } from "../api/types";

/** A state's kind; `empty` when nothing is known yet. */
export type StateKind = ObservationKind | "empty";

const LETTER: Record<StateKind, string> = { real: "R", predicted: "P", authored: "A", empty: "∅" };

/** Human name of a kind. */
export function kindName(kind: StateKind): string {
  return kind === "empty" ? "empty" : kind;
}

/** The kind a turn summary shows: authored over predicted; real when recorded. */
export function kindOfTurn(t: { has_real: boolean; has_authored: boolean; prediction_count: number }, side: "state" | "right" = "state"): StateKind {
  if (side === "state" && t.has_real) return "real";
  if (t.has_authored) return "authored";
  if (t.prediction_count > 0) return "predicted";
  return t.has_real ? "real" : "empty";
}

/** A small badge: letter + colour, with the kind as its accessible name. */
export function KindBadge({ kind, label }: { kind: StateKind; label?: string }) {
  return (
    <span className={`kind-badge kind-${kind}`} title={label ?? kindName(kind)} aria-label={label ?? kindName(kind)}>
      {LETTER[kind]}
    </span>
  );
}

/** The legend of the kinds. */
export function KindLegend() {
  return (
    <span className="kind-legend" aria-label="State kinds">
      {(["real", "predicted", "authored", "empty"] as StateKind[]).map((k) => (
        <span key={k} className="kind-legend-item">
          <KindBadge kind={k} /> {kindName(k)}
        </span>
      ))}
    </span>
  );
}
