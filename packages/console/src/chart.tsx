import { useEffect, useRef } from 'react';
import uPlot from 'uplot';

export interface Series {
  label: string;
  values: Array<number | null>;
  color: string;
}

/** A line chart (uPlot: small, canvas) over unix-second `x`; a table beside it carries the same numbers for screen readers. */
export function LineChart({ title, x, series, height = 220 }: { title: string; x: number[]; series: Series[]; height?: number }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const plot = new uPlot(
      {
        title,
        width: Math.max(320, el.clientWidth),
        height,
        series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.color, width: 2 }))],
        axes: [{}, {}],
      },
      [x, ...series.map((s) => s.values)],
      el,
    );
    return () => plot.destroy();
  }, [title, x, series, height]);
  return <div className="chart" ref={box} role="img" aria-label={`${title}: ${series.map((s) => s.label).join(', ')}`} />;
}
