import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { navigate, hrefOf } from '../nav.js';
import {
  ErrorBox,
  Field,
  Loading,
  NamedFilter,
  Pager,
  RANGES,
  Table,
  TimeZoneNote,
  choicesOf,
  fmtMs,
  fmtTime,
  fromLocalInput,
  rangeMs,
  refusal,
  short,
  toLocalInput,
  useAllowed,
  useCall,
  useDetailPanel,
  useNames,
  useOpener,
  useWindowEnd,
} from '../ui.js';

/** The query_logs filters the page offers, with their labels; each lives in the URL. */
/** The filters: key, label, and for those the caller may pick by name, the list that names them. */
const FILTERS = [
  ['inbound_server_guid', 'Server', ['list_inbound_servers', (s) => s.name]],
  ['outbound_gateway_guid', 'Gateway', ['list_gateways', (g) => g.name]],
  ['user_guid', 'User', ['list_users', (u) => u.emailAddress]],
  ['gateway_connection_guid', 'Connection'],
  ['host_guid', 'Host', ['list_hosts', (h) => h.name]],
  ['team_guid', 'Team', ['list_teams', (t) => t.name]],
  ['server_container_guid', 'Container'],
  ['trace_id', 'Trace id'],
  ['span_id', 'Span id'],
];
const NAMED = FILTERS.filter((f) => f[2]);

const TYPES = ['', 'tool_call', 'tool_list', 'resource_read', 'prompt_get', 'initialize', 'other'];
const PAGE = 50;

function Detail({ row, onClose }) {
  const { data, error } = useCall('query_logs', {
    filters: { trace_id: row.trace_id, span_id: row.span_id },
    fromMs: Date.parse(row.created_at),
    toMs: Date.parse(row.created_at),
    includeDetail: true,
    take: 1,
  });
  const detail = data?.items.find((i) => i.guid === row.guid) ?? data?.items[0];
  const pretty = (text) => {
    if (text == null) return '—';
    try {
      return JSON.stringify(JSON.parse(text), null, 2);
    } catch {
      return text;
    }
  };
  // Shown below the page's rows: brought into view, with focus on its heading; Escape closes it.
  const panel = useDetailPanel(row.guid, onClose);
  return html`<aside class="card detail" aria-label="Call detail" ref=${panel.ref} onKeyDown=${panel.onKeyDown}>
    <div class="page-head">
      <h2 tabindex="-1">${row.method} ${row.tool_name ?? ''}</h2>
      <button type="button" onClick=${onClose}>Close detail</button>
    </div>
    <dl>
      <dt>Time</dt>
      <dd>${fmtTime(row.created_at)}</dd>
      <dt>Status</dt>
      <dd>${row.status}${row.error_message ? ` — ${row.error_message}` : ''}</dd>
      <dt>Duration</dt>
      <dd>${fmtMs(row.duration_ms)}</dd>
      <dt>Protocol revision</dt>
      <dd>${row.protocol_version ?? '—'}</dd>
      <dt>Trace</dt>
      <dd><a href=${hrefOf('logs', { trace_id: row.trace_id, range: '30d' })}>All calls of trace ${row.trace_id}</a></dd>
    </dl>
    <${ErrorBox} error=${error} />
    ${!data && !error ? html`<${Loading} />` : null}
    ${
      detail
        ? html`<h3>Request body</h3>
            <pre aria-label="Request body">${pretty(detail.request_body)}</pre>
            <h3>Response body</h3>
            <pre aria-label="Response body">${pretty(detail.response_body)}</pre>
            <h3>Request headers</h3>
            <pre aria-label="Request headers">${pretty(detail.request_headers)}</pre>
            <h3>Response headers</h3>
            <pre aria-label="Response headers">${pretty(detail.response_headers)}</pre>
            ${detail.detail_truncated ? html`<p><small>Bodies and headers are cut at 4 KiB.</small></p>` : null}`
        : null
    }
  </aside>`;
}

/** The window: a preset (`range`) or a custom one (`fromMs`, `toMs` in the URL, range=custom). */
function TimeWindow({ params, range, fromMs, toMs }) {
  const [draft, setDraft] = useState({ from: toLocalInput(fromMs), to: toLocalInput(toMs) });
  const [error, setError] = useState(null);
  useEffect(() => setDraft({ from: toLocalInput(fromMs), to: toLocalInput(toMs) }), [fromMs, toMs]);
  const choose = (key) =>
    key === 'custom'
      ? navigate('logs', { ...params, range: key, skip: 0, fromMs, toMs })
      : navigate('logs', { ...params, range: key, skip: 0, fromMs: '', toMs: '' });
  const apply = (e) => {
    e.preventDefault();
    const from = fromLocalInput(draft.from);
    const to = fromLocalInput(draft.to);
    if (from === null || to === null || from > to) {
      setError(refusal('Give a From time before the To time.'));
      return;
    }
    setError(null);
    // The inputs hold minutes: To covers its whole minute.
    navigate('logs', { ...params, range: 'custom', skip: 0, fromMs: from, toMs: to + 59_999 });
  };
  return html`<form class="window" onSubmit=${apply} aria-label="Time window">
    <${Field} label="Time range" as="select" value=${range} options=${[...RANGES.map(([k, l]) => [k, l]), ['custom', 'Custom range']]} onInput=${choose} />
    <${Field} label="From" type="datetime-local" value=${draft.from} onInput=${(v) => setDraft({ ...draft, from: v })} required />
    <${Field} label="To" type="datetime-local" value=${draft.to} onInput=${(v) => setDraft({ ...draft, to: v })} required />
    <button type="submit">Apply time range</button>
    <${ErrorBox} error=${error} />
    <${TimeZoneNote} />
  </form>`;
}

export function Logs({ params }) {
  const custom = Boolean(params.fromMs && params.toMs);
  const range = custom ? 'custom' : RANGES.some((r) => r[0] === params.range) ? params.range : '24h';
  const skip = Number(params.skip ?? 0);
  const [now, refresh] = useWindowEnd(params);
  const filters = Object.fromEntries([...FILTERS.map(([k]) => k), 'type'].filter((k) => params[k]).map((k) => [k, params[k]]));
  const draftOf = () => Object.fromEntries([...FILTERS.map(([k]) => [k, params[k] ?? '']), ['type', params.type ?? '']]);
  const [draft, setDraft] = useState(draftOf);
  // A link to another view (a trace, a connection) replaces what the boxes show.
  useEffect(() => setDraft(draftOf()), [JSON.stringify(filters)]);
  const [open, setOpen] = useState(null);
  // The control that opened the detail gets focus back when it closes.
  const opener = useOpener();
  const show = (row, e) => {
    opener.opened(e);
    setOpen(row);
  };
  const close = () => {
    setOpen(null);
    opener.refocus();
  };
  const fromMs = custom ? Number(params.fromMs) : now - rangeMs(range);
  const toMs = custom ? Number(params.toMs) : now;
  const { data, error, loading } = useCall('query_logs', { filters, fromMs, toMs, skip, take: PAGE });
  const names = useNames(NAMED.map((f) => f[2]));
  // Filters change, the window stays.
  const windowParams = { range, fromMs: custom ? params.fromMs : '', toMs: custom ? params.toMs : '' };
  const apply = (e) => {
    e.preventDefault();
    navigate('logs', { ...draft, ...windowParams });
  };
  const name = (guid) => (guid ? (names.get(guid) ?? short(guid)) : '—');
  // A role that may not read the calls gets why, not a window and filters that could only be refused.
  if (!useAllowed('query_logs'))
    return html`<section aria-labelledby="logs-title">
      <h1 id="logs-title">Logs</h1>
      <${ErrorBox} error=${error} />
    </section>`;
  return html`<section aria-labelledby="logs-title">
    <div class="page-head">
      <h1 id="logs-title">Logs</h1>
      <${TimeWindow} params=${params} range=${range} fromMs=${fromMs} toMs=${toMs} />
    </div>
    <form class="filters card" onSubmit=${apply} aria-label="Log filters">
      ${FILTERS.map(
        ([key, label, list]) =>
          html`<${NamedFilter}
            label=${label}
            value=${draft[key]}
            choices=${list ? choicesOf(names, list[0]) : []}
            onInput=${(v) => setDraft({ ...draft, [key]: v })}
          />`,
      )}
      <${Field} label="Type" as="select" value=${draft.type} options=${TYPES.map((t) => [t, t || 'any'])} onInput=${(v) => setDraft({ ...draft, type: v })} />
      <div class="buttons">
        <button type="submit">Apply filters</button>
        <button type="button" onClick=${() => navigate('logs', windowParams)}>Clear filters</button>
        <button type="button" onClick=${refresh} disabled=${custom} title=${custom ? 'A fixed time range does not move' : undefined}>Refresh</button>
      </div>
    </form>
    <${ErrorBox} error=${error} />
    ${loading && !data ? html`<${Loading} />` : null}
    ${
      data
        ? html`<${Table}
              caption=${data.items.length ? `Calls ${skip + 1}–${skip + data.items.length}` : 'Calls'}
              rows=${data.items}
              empty="No calls in this range."
              columns=${[
                {
                  label: 'Time',
                  render: (r) =>
                    html`<button
                      type="button"
                      class="link"
                      onClick=${(e) => show(r, e)}
                      aria-label=${`Details of the call at ${fmtTime(r.created_at)}: ${r.tool_name ?? r.method}, ${r.status} (${short(r.guid)})`}
                    >
                      ${fmtTime(r.created_at)}
                    </button>`,
                },
                { label: 'Tool', render: (r) => r.tool_name ?? r.method },
                { label: 'Status', render: (r) => html`<span class=${`status ${r.status}`}>${r.status}</span>` },
                { label: 'Duration', render: (r) => fmtMs(r.duration_ms), num: true },
                { label: 'Server', render: (r) => name(r.inbound_server_guid) },
                { label: 'Gateway', render: (r) => name(r.outbound_gateway_guid) },
                { label: 'User', render: (r) => name(r.user_guid) },
              ]}
            />
            <${Pager} page="logs" params=${params} skip=${skip} size=${PAGE} nextSkip=${data.nextSkip} />`
        : null
    }
    ${open ? html`<${Detail} row=${open} onClose=${close} />` : null}
  </section>`;
}
