/**
 * One chart, drawn by Apache ECharts (only the parts used are bundled: bar,
 * scatter and line charts, grid, tooltip and legend, the canvas and SVG
 * renderers), with PNG and SVG export. The chart follows the studio's theme
 * (ECharts' built-in `dark` theme, colours from `runsModel.chartColors`).
 */
import { BarChart, LineChart, ScatterChart } from "echarts/charts";
import { GridComponent, LegendComponent, TooltipComponent } from "echarts/components";
import * as echarts from "echarts/core";
import { CanvasRenderer, SVGRenderer } from "echarts/renderers";
import { useEffect, useRef } from "react";
import { downloadUrl, saveFile } from "../components/dom";
import { exportFileName, type ChartOption } from "./runsModel";

echarts.use([BarChart, LineChart, ScatterChart, GridComponent, LegendComponent, TooltipComponent, CanvasRenderer, SVGRenderer]);

/** Props of {@link EChart}. */
export interface EChartProps {
  /** The chart's title (its heading, accessible name and export file name). */
  title: string;
  option: ChartOption;
  theme: "light" | "dark";
  /** Height, px. */
  height?: number;
  /** Spans the whole row of the dashboard's grid. */
  wide?: boolean;
  /** Called with the index of a clicked data point of the first series. */
  onPoint?: (index: number) => void;
}

/** The chart as an SVG document, rendered off screen at `width` × `height`. */
export function chartSvg(option: ChartOption, theme: "light" | "dark", width: number, height: number): string {
  const chart = echarts.init(null, theme === "dark" ? "dark" : undefined, { renderer: "svg", ssr: true, width, height });
  chart.setOption({ ...option, animation: false });
  const svg = chart.renderToSVGString();
  chart.dispose();
  return svg;
}

export function EChart({ title, option, theme, height = 280, wide = false, onPoint }: EChartProps) {
  const ref = useRef<HTMLDivElement>(null);
  const chart = useRef<echarts.ECharts | null>(null);
  const pointHandler = useRef(onPoint);
  useEffect(() => {
    pointHandler.current = onPoint;
  }, [onPoint]);

  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const c = echarts.init(el, theme === "dark" ? "dark" : undefined, { renderer: "canvas" });
    chart.current = c;
    c.on("click", (p) => {
      if (p.seriesIndex === 0 && typeof p.dataIndex === "number") pointHandler.current?.(p.dataIndex);
    });
    const ro = typeof ResizeObserver === "undefined" ? null : new ResizeObserver(() => c.resize());
    ro?.observe(el);
    return () => {
      ro?.disconnect();
      c.dispose();
      chart.current = null;
    };
  }, [theme]);

  useEffect(() => {
    chart.current?.setOption(option, { notMerge: true });
  }, [option, theme]);

  const exportPng = () => {
    const c = chart.current;
    if (!c) return;
    const background = theme === "dark" ? "#15181e" : "#ffffff";
    downloadUrl(exportFileName(title, "png"), c.getDataURL({ type: "png", pixelRatio: 2, backgroundColor: background }));
  };
  const exportSvg = () => {
    const el = ref.current;
    const svg = chartSvg(option, theme, el?.clientWidth || 800, height);
    saveFile(svg, exportFileName(title, "svg"), "image/svg+xml");
  };

  return (
    <figure className={wide ? "chart wide" : "chart"}>
      <figcaption>
        <span>{title}</span>
        <span className="chart-export">
          <button type="button" onClick={exportPng} title={`Save “${title}” as PNG`}>
            PNG
          </button>
          <button type="button" onClick={exportSvg} title={`Save “${title}” as SVG`}>
            SVG
          </button>
        </span>
      </figcaption>
      <div ref={ref} className="chart-canvas" role="img" aria-label={title} style={{ height }} />
    </figure>
  );
}
