/**
 * The branch tree (`region "Branch tree"`) drawn with React Flow (xyflow):
 * one node per state, coloured by kind (real / predicted / authored / empty)
 * with its fidelity, one edge per action labelled with its summary (dashed
 * when the action was edited from another, marked ⚡ when the edge carries a
 * control instruction). Clicking a node jumps to that
 * branch and turn. Leaves carry a checkbox; with two checked, "Compare"
 * opens the side-by-side comparison.
 */
import { Background, Controls, Handle, Position, ReactFlow, type Edge, type Node, type NodeProps } from "@xyflow/react";
import "@xyflow/react/dist/style.css";
import { useMemo } from "react";
import type { BranchSummary, TreeEdgeView, TreeNodeView } from "../api/types";
import { formatScore } from "../components/format";
import { layoutTree, pathToRoot } from "../model/treeLayout";
import { KindBadge, KindLegend, kindName, type StateKind } from "./Kinds";

/** Grid of the layout, px. */
const GRID = { column_px: 250, row_px: 80 };

interface StateData extends Record<string, unknown> {
  node: TreeNodeView;
  kind: StateKind;
  current: boolean;
  onPath: boolean;
  leafOf: BranchSummary | null;
  checked: boolean;
  perturbed: string | null;
  onCheck: (branchId: string) => void;
}

function StateNode({ data }: NodeProps<Node<StateData>>) {
  const { node, kind, current, onPath, leafOf, checked, onCheck, perturbed } = data;
  const label = `State ${node.node_id}, turn ${node.turn}, ${kindName(kind)}${node.fidelity != null ? `, fidelity ${formatScore(node.fidelity)}` : ""}`;
  return (
    <div
      className={`flow-state kind-${kind}${current ? " is-current" : ""}${onPath ? " on-path" : ""}`}
      aria-label={label}
      title={label}
      data-node-id={node.node_id}
    >
      <Handle type="target" position={Position.Left} isConnectable={false} />
      <KindBadge kind={kind} />
      <span className="flow-turn">t{node.turn}</span>
      <span className="flow-fid">{node.fidelity != null ? formatScore(node.fidelity) : "–"}</span>
      {node.has_authored && kind !== "authored" ? <KindBadge kind="authored" label="also authored" /> : null}
      {node.prediction_count > 0 ? (
        <span className="flow-preds" title="predictions">
          {node.prediction_count}P
        </span>
      ) : null}
      {perturbed ? (
        <span className="flow-perturbed" title={`control instruction: ${perturbed}`} aria-label={`control instruction: ${perturbed}`}>
          ⚡
        </span>
      ) : null}
      {leafOf ? (
        <label className="flow-check nodrag" onClick={(e) => e.stopPropagation()}>
          <input type="checkbox" aria-label={`Select branch ${leafOf.name}`} checked={checked} onChange={() => onCheck(leafOf.id)} />
        </label>
      ) : null}
      <Handle type="source" position={Position.Right} isConnectable={false} />
    </div>
  );
}

const NODE_TYPES = { state: StateNode };

/** Props of {@link BranchTree}. */
export interface BranchTreeProps {
  nodes: TreeNodeView[];
  edges: TreeEdgeView[];
  branches: BranchSummary[];
  currentNode: number | null;
  /** The branch shown: the nodes and edges on its path from the root are marked. */
  currentBranch: string | null;
  selected: string[];
  onSelect: (branchIds: string[]) => void;
  onJump: (nodeId: number) => void;
  onCompare: () => void;
  colorMode: "light" | "dark";
}

export function BranchTree({ nodes, edges, branches, currentNode, currentBranch, selected, onSelect, onJump, onCompare, colorMode }: BranchTreeProps) {
  const pathNodes = useMemo(() => {
    const branch = branches.find((b) => b.id === currentBranch);
    return new Set(branch ? pathToRoot(branch.leaf_node, nodes, edges) : []);
  }, [branches, currentBranch, nodes, edges]);
  const flow = useMemo(() => {
    const placed = layoutTree(nodes, edges, GRID);
    const perturbation = new Map(edges.map((e) => [e.edge_id, e.perturbation]));
    const leafOf = new Map(branches.map((b) => [b.leaf_node, b]));
    const toggle = (id: string) => onSelect(selected.includes(id) ? selected.filter((x) => x !== id) : [...selected.slice(-1), id]);
    const fnodes: Array<Node<StateData>> = nodes.map((n) => {
      const p = placed.get(n.node_id)!;
      return {
        id: String(n.node_id),
        type: "state",
        position: { x: p.x_px, y: p.y_px },
        draggable: false,
        connectable: false,
        data: {
          node: n,
          kind: (n.kind ?? "empty") as StateKind,
          current: n.node_id === currentNode,
          onPath: pathNodes.has(n.node_id),
          leafOf: leafOf.get(n.node_id) ?? null,
          checked: selected.includes(String(n.node_id)),
          perturbed: n.parent_edge !== null ? (perturbation.get(n.parent_edge) ?? null) : null,
          onCheck: toggle,
        },
      };
    });
    const fedges: Edge[] = edges.map((e) => {
      const summary = e.action.summary.length > 19 ? `${e.action.summary.slice(0, 18)}…` : e.action.summary;
      return {
        id: `e${e.edge_id}`,
        source: String(e.from),
        target: String(e.to),
        label: e.perturbation ? `⚡ ${summary}` : summary,
        className: `flow-edge${e.edited_from !== null ? " is-edited" : ""}${pathNodes.has(e.to) ? " on-path" : ""}`,
        labelBgPadding: [4, 2] as [number, number],
        labelBgBorderRadius: 3,
        style: e.edited_from !== null ? { strokeDasharray: "5 3" } : undefined,
      };
    });
    return { fnodes, fedges };
  }, [nodes, edges, branches, currentNode, pathNodes, selected, onSelect]);

  return (
    <section className="branch-tree" role="region" aria-label="Branch tree">
      <header className="branch-tree-head">
        <h2>Branch tree</h2>
        <span className="muted">
          {branches.length} branch{branches.length === 1 ? "" : "es"} · click a state to open it · tick two leaves to compare
        </span>
        <KindLegend />
        <button type="button" disabled={selected.length !== 2} onClick={onCompare}>
          Compare
        </button>
      </header>
      <div className="flow-host">
        <ReactFlow
          nodes={flow.fnodes}
          edges={flow.fedges}
          nodeTypes={NODE_TYPES}
          colorMode={colorMode}
          fitView
          fitViewOptions={{ padding: 0.12, maxZoom: 1.3 }}
          minZoom={0.1}
          nodesDraggable={false}
          nodesConnectable={false}
          elementsSelectable={false}
          onNodeClick={(_, n) => onJump(Number(n.id))}
          proOptions={{ hideAttribution: true }}
        >
          <Background gap={24} size={1} />
          <Controls showInteractive={false} />
        </ReactFlow>
      </div>
    </section>
  );
}
