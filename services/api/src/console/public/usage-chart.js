// The dashboard's usage charts, drawn as SVG by this script (no chart library, nothing from other
// sites): tasks per day stacked by kind, credits spent per day, and the failure rate per day. Colours
// come from console.css classes and geometry from attributes, never style strings (CSP style-src
// 'self'). Each chart is one `role="img"` with a title and a description; the figures are also
// offered as a table.
import { el, svgEl as svg, table } from './common.js';
import { KIND_LABEL } from './tasks-view.js';

const KINDS = ['image-generation', 'video-generation', 'face-detection'];

// Dates are UTC days: format them in UTC, or a browser west of Greenwich shows the day before.
const dayLabel = new Intl.DateTimeFormat(undefined, { day: 'numeric', month: 'short', timeZone: 'UTC' });
const longDay = new Intl.DateTimeFormat(undefined, { weekday: 'short', day: 'numeric', month: 'short', year: 'numeric', timeZone: 'UTC' });
const number = new Intl.NumberFormat();
const percent = new Intl.NumberFormat(undefined, { style: 'percent', maximumFractionDigits: 1 });

const asDate = (iso) => new Date(`${iso}T00:00:00Z`);
const formatDay = (iso) => dayLabel.format(asDate(iso));
const formatRate = (rate) => (rate === null ? '—' : percent.format(rate));
const plural = (n, one, many = `${one}s`) => `${number.format(n)} ${n === 1 ? one : many}`;

/** A round upper bound for an axis and its step: 0, 1, 2, 5 × 10^k. */
function niceScale(max, ticks = 4) {
  if (max <= 0) return { top: ticks, step: 1 };
  const raw = max / ticks;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  // Whole steps: the values counted here (tasks, credits) are integers.
  const step = Math.max(1, [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= raw) ?? 10 * magnitude);
  return { top: Math.ceil(max / step) * step, step };
}

let chartCount = 0;

/**
 * The frame every chart shares: `<svg role="img">` with a labelled title and description, the
 * horizontal grid with its value labels, and date labels under the days that have room for one.
 */
function frame({ width, height, days, top, step, format, title, description, className }) {
  const id = `chart-${++chartCount}`;
  const m = { left: 48, right: 10, top: 10, bottom: 26 };
  const plot = { x: m.left, y: m.top, w: Math.max(10, width - m.left - m.right), h: height - m.top - m.bottom };
  const band = plot.w / days.length;
  const root = svg(
    'svg',
    { class: `chart ${className}`, width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-labelledby': `${id}-title ${id}-desc` },
    svg('title', { id: `${id}-title`, text: title }),
    svg('desc', { id: `${id}-desc`, text: description }),
  );
  const grid = svg('g', { class: 'grid', 'aria-hidden': 'true' });
  for (let i = 0; i <= Math.round(top / step); i++) {
    const v = i * step;
    const y = plot.y + plot.h - (v / top) * plot.h;
    grid.append(
      svg('line', { x1: plot.x, x2: plot.x + plot.w, y1: y, y2: y, class: v === 0 ? 'axis' : 'gridline' }),
      svg('text', { x: plot.x - 6, y: y + 4, 'text-anchor': 'end', class: 'tick', text: format(v) }),
    );
  }
  // A label every `every` days, counted back from today so the newest day is always labelled.
  const every = Math.max(1, Math.ceil(56 / band));
  days.forEach((day, i) => {
    if ((days.length - 1 - i) % every !== 0) return;
    grid.append(svg('text', { x: plot.x + band * (i + 0.5), y: height - 8, 'text-anchor': 'middle', class: 'tick', text: formatDay(day.date) }));
  });
  root.append(grid);
  const y = (v) => plot.y + plot.h - (v / top) * plot.h;
  return { root, plot, band, y };
}

/** Tasks per day, one bar per day stacked by kind; hovering a day shows its figures. */
function taskBars(report, width) {
  const days = report.data;
  const busiest = days.reduce((a, b) => (b.created > a.created ? b : a), days[0]);
  const { top, step } = niceScale(busiest.created);
  const byKind = KINDS.filter((k) => report.totals.by_kind[k] > 0).map((k) => `${plural(report.totals.by_kind[k], KIND_LABEL[k].toLowerCase())}`);
  const { root, plot, band, y } = frame({
    width,
    height: 240,
    days,
    top,
    step,
    format: (v) => number.format(v),
    className: 'chart-tasks',
    title: `Tasks created per day, by kind, ${formatDay(report.from)} to ${formatDay(report.to)}`,
    description:
      `${plural(report.totals.created, 'task')} in ${plural(report.days, 'day')}: ${byKind.join(', ')}. ` +
      `Busiest day: ${longDay.format(asDate(busiest.date))}, ${plural(busiest.created, 'task')}.`,
  });
  const barWidth = Math.max(2, Math.min(28, band * 0.72));
  const bars = svg('g', { class: 'bars' });
  days.forEach((day, i) => {
    const x = plot.x + band * i + (band - barWidth) / 2;
    const parts = KINDS.filter((k) => day.by_kind[k] > 0).map((k) => `${KIND_LABEL[k]} ${number.format(day.by_kind[k])}`);
    const summary = day.created === 0
      ? `${longDay.format(asDate(day.date))}: no tasks`
      : `${longDay.format(asDate(day.date))}: ${plural(day.created, 'task')} (${parts.join(', ')}); ${number.format(day.failed)} failed`;
    // The whole column answers hover, so a short bar (or none) still shows its day.
    const group = svg('g', { class: 'day', 'data-date': day.date }, svg('title', { text: summary }), svg('rect', { class: 'hover', x: plot.x + band * i, y: plot.y, width: band, height: plot.h }));
    let base = 0;
    for (const kind of KINDS) {
      const n = day.by_kind[kind];
      if (n === 0) continue;
      group.append(svg('rect', { class: `bar kind-${kind}`, 'data-kind': kind, 'data-count': n, x, y: y(base + n), width: barWidth, height: Math.max(1, y(base) - y(base + n)) }));
      base += n;
    }
    bars.append(group);
  });
  root.append(bars);
  return root;
}

/**
 * One value per day as a line with dots (credits, failure rate). A day without a value (`null`: no
 * finished task to have a rate) breaks the line rather than pretending to be zero.
 */
function lineChart(report, width, { value, top, step, format, className, title, description, pointTitle }) {
  const days = report.data;
  const { root, plot, band, y } = frame({ width, height: 170, days, top, step, format, className, title, description });
  const x = (i) => plot.x + band * (i + 0.5);
  let path = '';
  let pen = false;
  const dots = svg('g', { class: 'points' });
  days.forEach((day, i) => {
    const v = value(day);
    if (v === null) {
      pen = false;
      return;
    }
    path += `${pen ? 'L' : 'M'}${x(i).toFixed(1)},${y(v).toFixed(1)}`;
    pen = true;
    dots.append(svg('circle', { cx: x(i), cy: y(v), r: days.length > 45 ? 2 : 3, class: 'point', 'data-date': day.date }, svg('title', { text: pointTitle(day) })));
  });
  if (path) root.append(svg('path', { d: path, class: 'line' }));
  else root.append(svg('text', { x: plot.x + plot.w / 2, y: plot.y + plot.h / 2, 'text-anchor': 'middle', class: 'chart-note', text: 'No task has finished in this period.' }));
  root.append(dots);
  return root;
}

function creditsChart(report, width) {
  const busiest = report.data.reduce((a, b) => (b.credits_spent > a.credits_spent ? b : a), report.data[0]);
  const { top, step } = niceScale(busiest.credits_spent, 3);
  return lineChart(report, width, {
    value: (d) => d.credits_spent,
    top,
    step,
    format: (v) => number.format(v),
    className: 'chart-credits',
    title: 'Credits spent per day, net of refunds',
    description: `${plural(report.totals.credits_spent, 'credit')} spent in ${plural(report.days, 'day')}; most on ${longDay.format(asDate(busiest.date))}: ${number.format(busiest.credits_spent)}.`,
    pointTitle: (d) => `${longDay.format(asDate(d.date))}: ${plural(d.credits_spent, 'credit')}`,
  });
}

function failureChart(report, width) {
  const rated = report.data.filter((d) => d.failure_rate !== null);
  const worst = rated.reduce((a, b) => (b.failure_rate > a.failure_rate ? b : a), rated[0]);
  // Failure rates are usually small: scale to the worst day (at least 10 %) so a change is visible.
  const max = Math.max(0.1, worst ? worst.failure_rate : 0);
  const top = Math.min(1, Math.ceil(max * 10) / 10);
  return lineChart(report, width, {
    value: (d) => d.failure_rate,
    top,
    step: top / 2,
    format: (v) => percent.format(v),
    className: 'chart-failures',
    title: 'Failure rate per day: failed of finished tasks',
    description: worst
      ? `${formatRate(report.totals.failure_rate)} of the tasks that finished failed; the worst day was ${longDay.format(asDate(worst.date))} at ${formatRate(worst.failure_rate)}.`
      : 'No task has finished in this period.',
    pointTitle: (d) => `${longDay.format(asDate(d.date))}: ${formatRate(d.failure_rate)} (${number.format(d.failed)} of ${number.format(d.completed + d.failed)} failed)`,
  });
}

/** The legend of the stacked bars: HTML, so it wraps and reads as a list. */
function legend(report) {
  return el(
    'ul',
    { class: 'legend', 'aria-label': 'Kinds' },
    KINDS.map((k) => el('li', {}, el('span', { class: `swatch kind-${k}`, 'aria-hidden': 'true' }), `${KIND_LABEL[k]} (${number.format(report.totals.by_kind[k])})`)),
  );
}

/** The same figures as a table, for screen readers and anyone who wants the numbers. */
function figuresTable(report) {
  const active = report.data.filter((d) => d.created > 0).reverse();
  return el(
    'details',
    { class: 'usage-table' },
    el('summary', { text: 'Show the figures as a table' }),
    el('p', { class: 'muted', text: 'Newest day first; days without tasks are left out. Credits are net of refunds.' }),
    table(
      [
        { label: 'Day (UTC)', render: (d) => el('time', { datetime: d.date, text: longDay.format(asDate(d.date)) }) },
        { label: 'Tasks', render: (d) => number.format(d.created) },
        ...KINDS.map((k) => ({ label: KIND_LABEL[k], render: (d) => number.format(d.by_kind[k]) })),
        { label: 'Completed', render: (d) => number.format(d.completed) },
        { label: 'Failed', render: (d) => number.format(d.failed) },
        { label: 'Cancelled', render: (d) => number.format(d.cancelled) },
        { label: 'Credits', render: (d) => number.format(d.credits_spent) },
        { label: 'Failure rate', render: (d) => formatRate(d.failure_rate) },
      ],
      active,
      { caption: 'Usage per day' },
    ),
  );
}

/** Headline figures of the period. */
function stats(report) {
  const t = report.totals;
  const stat = (label, value, note) => el('div', { class: 'stat' }, el('dt', { text: label }), el('dd', {}, el('span', { class: 'stat-value', text: value }), note ? el('span', { class: 'muted', text: ` ${note}` }) : null));
  return el(
    'dl',
    { class: 'stats' },
    stat('Tasks', number.format(t.created), t.in_progress ? `(${number.format(t.in_progress)} in progress)` : null),
    stat('Credits spent', number.format(t.credits_spent)),
    stat('Failure rate', formatRate(t.failure_rate), t.failed ? `(${number.format(t.failed)} failed)` : null),
    stat('Cancelled', number.format(t.cancelled)),
  );
}

/**
 * Draws `report` (GET /api/console/usage) into `container`, sized to its width; call again to
 * redraw (on resize). An empty period shows a message instead of empty axes.
 */
export function drawUsage(container, report) {
  if (report.totals.created === 0) {
    container.replaceChildren(
      el(
        'div',
        { class: 'empty', id: 'usage-empty' },
        el('p', {}, el('strong', { text: `No tasks in the last ${plural(report.days, 'day')}.` })),
        el('p', { class: 'muted', text: 'Tasks created with a paid or trial API key appear here per day, with the credits they cost and how many failed.' }),
      ),
    );
    return;
  }
  const width = Math.max(280, Math.floor(container.clientWidth));
  // Side by side when there is room for both small charts, else one under the other.
  const half = width >= 760 ? Math.floor((width - 24) / 2) : width;
  container.replaceChildren(
    stats(report),
    el('figure', { class: 'chart-figure' }, taskBars(report, width), legend(report)),
    el(
      'div',
      { class: 'chart-pair' },
      el('figure', { class: 'chart-figure' }, el('figcaption', { text: 'Credits spent per day' }), creditsChart(report, half)),
      el('figure', { class: 'chart-figure' }, el('figcaption', { text: 'Failure rate per day' }), failureChart(report, half)),
    ),
    figuresTable(report),
  );
}
