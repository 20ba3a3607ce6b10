/** Where a point action landed, as a crosshair (the wireframes and the screenshot draw it alike). */

/** Props of {@link PointMark}. */
export interface PointMarkProps {
  /** The action's point in screen px (named in `data-point`). */
  point: { x_px: number; y_px: number };
  /** Where it is drawn, in the view's px. */
  at: { x: number; y: number };
}

export function PointMark({ point, at }: PointMarkProps) {
  return (
    <g className="wpoint" data-point={`${point.x_px},${point.y_px}`} pointerEvents="none">
      <circle cx={at.x} cy={at.y} r={9} />
      <line x1={at.x - 14} y1={at.y} x2={at.x + 14} y2={at.y} />
      <line x1={at.x} y1={at.y - 14} x2={at.x} y2={at.y + 14} />
      <circle className="wpoint-dot" cx={at.x} cy={at.y} r={2.5} />
    </g>
  );
}
