// Inline SVG charts computed on the server: bars for volume, a line for success rate. Only
// numbers and escaped labels go into the markup.
import { escapeHtml, trusted, type Html } from './html.ts';

const W = 640;
const H = 160;
const PAD = { left: 48, right: 8, top: 8, bottom: 22 };

export interface Point {
  label: string;
  value: number;
}

function frame(title: string, inner: string, yLabels: [string, string]): Html {
  return trusted(
    `<figure class="chart"><figcaption>${escapeHtml(title)}</figcaption><svg viewBox="0 0 ${W} ${H}" role="img" aria-label="${escapeHtml(title)}">` +
      `<line x1="${PAD.left}" y1="${H - PAD.bottom}" x2="${W - PAD.right}" y2="${H - PAD.bottom}" class="axis"/>` +
      `<text x="${PAD.left - 4}" y="${PAD.top + 8}" text-anchor="end">${escapeHtml(yLabels[1])}</text>` +
      `<text x="${PAD.left - 4}" y="${H - PAD.bottom}" text-anchor="end">${escapeHtml(yLabels[0])}</text>` +
      inner +
      `</svg></figure>`,
  );
}

function xLabels(points: Point[], x: (i: number) => number): string {
  const step = Math.max(1, Math.ceil(points.length / 8));
  return points
    .map((p, i) =>
      i % step === 0
        ? `<text x="${x(i).toFixed(1)}" y="${H - 6}" text-anchor="middle">${escapeHtml(p.label)}</text>`
        : '',
    )
    .join('');
}

export function barChart(title: string, points: Point[], format: (n: number) => string): Html {
  const max = Math.max(1, ...points.map((p) => p.value));
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const slot = plotW / Math.max(1, points.length);
  const x = (i: number) => PAD.left + slot * i + slot / 2;
  const bars = points
    .map((p, i) => {
      const h = (p.value / max) * plotH;
      return `<rect x="${(PAD.left + slot * i + slot * 0.15).toFixed(1)}" y="${(PAD.top + plotH - h).toFixed(1)}" width="${(slot * 0.7).toFixed(1)}" height="${h.toFixed(1)}"><title>${escapeHtml(`${p.label}: ${format(p.value)}`)}</title></rect>`;
    })
    .join('');
  return frame(title, bars + xLabels(points, x), ['0', format(max)]);
}

/** Values from 0 to 1; null points (no payments that day) leave a gap. */
export function rateChart(title: string, points: { label: string; value: number | null }[]): Html {
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const slot = plotW / Math.max(1, points.length);
  const x = (i: number) => PAD.left + slot * i + slot / 2;
  const y = (v: number) => PAD.top + plotH - v * plotH;
  let path = '';
  let pen = false;
  const dots: string[] = [];
  points.forEach((p, i) => {
    if (p.value === null) {
      pen = false;
      return;
    }
    path += `${pen ? 'L' : 'M'}${x(i).toFixed(1)},${y(p.value).toFixed(1)}`;
    pen = true;
    dots.push(
      `<circle cx="${x(i).toFixed(1)}" cy="${y(p.value).toFixed(1)}" r="2.5"><title>${escapeHtml(`${p.label}: ${(p.value * 100).toFixed(1)}%`)}</title></circle>`,
    );
  });
  return frame(title, `<path d="${path}" class="line"/>${dots.join('')}${xLabels(points as Point[], x)}`, [
    '0%',
    '100%',
  ]);
}
