// Chart.js, registered once with only the parts the dashboard uses (keeps
// the bundle small), plus the shared palette.
import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  Filler,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  Tooltip,
} from 'chart.js';

Chart.register(
  BarController,
  BarElement,
  CategoryScale,
  Filler,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  Tooltip,
);

Chart.defaults.font.family = getComputedStyle(document.documentElement).getPropertyValue('--font').trim() || 'system-ui, sans-serif';
Chart.defaults.font.size = 12;
Chart.defaults.color = '#475467';
Chart.defaults.borderColor = '#e4e7ec';
Chart.defaults.animation = false;
Chart.defaults.maintainAspectRatio = false;
Chart.defaults.responsive = true;

export const palette = {
  blue: '#2563eb',
  blueFill: 'rgba(37, 99, 235, 0.12)',
  orange: '#ea580c',
  slate: '#94a3b8',
  teal: '#0d9488',
  violet: '#7c3aed',
};

export { Chart };

/** A canvas inside a fixed-height box, as Chart.js wants for responsive charts. */
export function chartBox(testid: string, height = 240): { box: HTMLDivElement; canvas: HTMLCanvasElement } {
  const box = document.createElement('div');
  box.className = 'chart-box';
  box.style.height = `${height}px`;
  box.dataset.testid = testid;
  const canvas = document.createElement('canvas');
  box.append(canvas);
  return { box, canvas };
}
