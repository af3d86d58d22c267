import { html } from 'htm/preact';
import { useEffect, useRef } from 'preact/hooks';
import { navigate, hrefOf } from '../nav.js';
import { ErrorBox, Field, Loading, RANGES, Table, fmtBytes, fmtMs, rangeMs, short, useAllowed, useCall, useNames, useWindowEnd } from '../ui.js';

// Not a static import: the pages start their API calls while the chart library (the
// largest module) still loads; index.html has already asked for it (modulepreload).
const uPlotModule = import('uplot');

/** The bucket each window is drawn in: about 60 to 720 points. */
const INTERVAL = { '15m': 'minute', '1h': 'minute', '24h': 'hour', '7d': 'hour', '30d': 'day' };

/** The width a plot fills: its box's, never so small that the axes crowd out the data. */
const widthOf = (box) => Math.max(240, box.clientWidth);

/** Calls and errors over time, drawn by uPlot. */
function CallsChart({ items, fromMs, toMs, interval }) {
  const box = useRef(null);
  useEffect(() => {
    let live = true;
    let cleanup = () => undefined;
    uPlotModule.then(({ default: uPlot }) => {
      if (live && box.current) cleanup = draw(uPlot);
    });
    return () => {
      live = false;
      cleanup();
    };
  }, [items, fromMs, toMs, interval]);
  /** Draws the plot into the box; returns what undoes it. */
  const draw = (uPlot) => {
    const step = { minute: 60, hour: 3600, day: 86400 }[interval];
    const byBucket = new Map(items.map((i) => [Date.parse(i.bucket) / 1000, i]));
    // Every bucket of the window, so a quiet hour shows as zero rather than a gap.
    const xs = [];
    for (let x = Math.floor(fromMs / 1000 / step) * step; x <= toMs / 1000; x += step) xs.push(x);
    const calls = xs.map((x) => byBucket.get(x)?.calls ?? 0);
    const errors = xs.map((x) => byBucket.get(x)?.errors ?? 0);
    const plot = new uPlot(
      {
        title: 'Calls and errors',
        width: widthOf(box.current),
        height: 240,
        series: [{}, { label: 'Calls', stroke: '#2563eb', fill: 'rgba(37,99,235,0.12)' }, { label: 'Errors', stroke: '#dc2626' }],
        axes: [{}, { label: 'calls' }],
      },
      [xs, calls, errors],
      box.current,
    );
    const resize = () => plot.setSize({ width: widthOf(box.current), height: 240 });
    addEventListener('resize', resize);
    return () => {
      removeEventListener('resize', resize);
      plot.destroy();
    };
  };
  // The plot is sized from an inner box: the figure's padding is not the plot's to fill.
  return html`<figure class="chart" aria-label="Calls and errors over time" role="img"><div ref=${box}></div></figure>`;
}

/** What a row without the grouped column stands for: calls that are no tool call (initialize, lists), that the gateway answered itself (no one server: an unknown tool, a list of all), or that no user made. */
const NO_GROUP = {
  tool_name: 'not a tool call',
  inbound_server_guid: 'the gateway itself',
  user_guid: 'no user',
};

function Top({ title, groupBy, window, range, names }) {
  const { data, error } = useCall('get_usage_report', { ...window, groupBy: [groupBy], take: 10 });
  // A row links to its calls only for a role that may read them (a role that may see usage only would find a refusal there).
  const canReadLogs = useAllowed('query_logs');
  if (error) return html`<${ErrorBox} error=${error} />`;
  if (!data) return html`<${Loading} />`;
  return html`<${Table}
    caption=${title}
    rows=${data.items}
    rowKey=${(r) => r[groupBy] ?? 'none'}
    columns=${[
      {
        label: title.replace(/^Top (\w)(\w*)s$/, (_, a, rest) => a.toUpperCase() + rest),
        render: (r) =>
          r[groupBy] === null
            ? html`<em>${NO_GROUP[groupBy]}</em>`
            : groupBy === 'tool_name'
              ? r[groupBy]
              : !canReadLogs
                ? (names.get(r[groupBy]) ?? short(r[groupBy]))
                : html`<a href=${hrefOf('logs', { [groupBy]: r[groupBy], range })}>${names.get(r[groupBy]) ?? short(r[groupBy])}</a>`,
      },
      { label: 'Calls', render: (r) => r.calls, num: true },
      { label: 'Errors', render: (r) => r.errors, num: true },
      { label: 'p50', render: (r) => fmtMs(r.p50Ms), num: true },
      { label: 'p95', render: (r) => fmtMs(r.p95Ms), num: true },
    ]}
  />`;
}

export function Overview({ params }) {
  const range = params.range ?? '24h';
  const [now, refresh] = useWindowEnd(params);
  const window = { fromMs: now - rangeMs(range), toMs: now };
  const interval = INTERVAL[range] ?? 'hour';
  const series = useCall('get_usage_report', { ...window, interval, take: 10_000 });
  const names = useNames([
    ['list_inbound_servers', (s) => s.name],
    ['list_users', (u) => u.emailAddress],
    ['list_gateways', (g) => g.name],
  ]);
  const totals = series.data?.totals;
  return html`<section aria-labelledby="overview-title">
    <div class="page-head">
      <h1 id="overview-title">Overview</h1>
      <${Field} label="Time range" as="select" value=${range} options=${RANGES.map(([k, l]) => [k, l])} onInput=${(v) => navigate('overview', { range: v })} />
      <button type="button" onClick=${refresh}>Refresh</button>
    </div>
    <${ErrorBox} error=${series.error} />
    ${series.loading && !series.data ? html`<${Loading} />` : null}
    ${
      totals
        ? html`<ul class="stats" aria-label="Totals">
              <li><span>Calls</span><strong>${totals.calls}</strong></li>
              <li><span>Errors</span><strong>${totals.errors}</strong></li>
              <li><span>Error rate</span><strong>${totals.calls ? ((100 * totals.errors) / totals.calls).toFixed(1) : '0.0'} %</strong></li>
              <li><span>p50 latency</span><strong>${fmtMs(totals.p50Ms)}</strong></li>
              <li><span>p95 latency</span><strong>${fmtMs(totals.p95Ms)}</strong></li>
              <li><span>Traffic</span><strong>${fmtBytes(totals.requestBytes + totals.responseBytes)}</strong></li>
            </ul>
            <${CallsChart} items=${series.data.items} fromMs=${window.fromMs} toMs=${window.toMs} interval=${interval} />
            <div class="grid">
              <${Top} title="Top tools" groupBy="tool_name" window=${window} range=${range} names=${names} />
              <${Top} title="Top servers" groupBy="inbound_server_guid" window=${window} range=${range} names=${names} />
              <${Top} title="Top users" groupBy="user_guid" window=${window} range=${range} names=${names} />
            </div>`
        : null
    }
  </section>`;
}
