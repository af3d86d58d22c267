import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { hrefOf, navigate } from '../nav.js';
import {
  ErrorBox,
  Field,
  Loading,
  Pager,
  RANGES,
  RangePicker,
  Table,
  TimeZoneNote,
  fmtTime,
  rangeMs,
  useAllowed,
  useCall,
  useDetailPanel,
  useNames,
  useOpener,
  useWindowEnd,
} from '../ui.js';

const PAGE = 50;
/** Alerts are few: by default every one is listed, newest first; a range narrows the list to when they were raised. */
const ANY_TIME = 'all';
const ALERT_RANGES = [[ANY_TIME, 'Any time'], ...RANGES];

/** Where a related resource id leads: its calls in the logs, by what kind of resource it is. */
function ResourceLink({ id, kinds }) {
  const kind = kinds.get(id);
  // Its calls are offered only to a role that may read them (exportLogs): a link would end in a refusal.
  const canReadLogs = useAllowed('query_logs');
  if (!kind || !canReadLogs) return html`<code>${id}</code>`;
  return html`<a href=${hrefOf('logs', { [kind.filter]: id, range: '7d' })}>${kind.label}: calls</a>`;
}

/** The record's structured parts, shown as JSON under these headings when present. */
const RECORD_PARTS = [
  ['dynamicContent', 'Dynamic content'],
  ['debugContext', 'Debug context'],
  ['relatedContext', 'Related context'],
  ['closeDetails', 'Close details'],
];

function AlertDetail({ guid, kinds, onClose }) {
  const { data, error } = useCall('get_alert', { alertGuid: guid });
  const traceId = data?.debugContext?.traceId ?? data?.dynamicContent?.traceId;
  const panel = useDetailPanel(data ? guid : null, onClose);
  const canReadLogs = useAllowed('query_logs');
  return html`<aside class="card detail" aria-label="Alert record" ref=${panel.ref} onKeyDown=${panel.onKeyDown}>
    <div class="page-head">
      <h2 tabindex="-1">${data?.subject ?? 'Alert'}</h2>
      <button type="button" onClick=${onClose}>Close alert</button>
    </div>
    <${ErrorBox} error=${error} />
    ${!data && !error ? html`<${Loading} />` : null}
    ${
      data
        ? html`<dl>
              <dt>Code</dt>
              <dd>${data.code}</dd>
              <dt>Severity</dt>
              <dd>${data.messageType}</dd>
              <dt>Raised</dt>
              <dd>${fmtTime(data.createdAt)}</dd>
              <dt>Message</dt>
              <dd>${data.message}</dd>
              <dt>Resources</dt>
              <dd>${data.relatedResourceIds.map((id) => html`<div><${ResourceLink} id=${id} kinds=${kinds} /></div>`)}</dd>
              ${
                traceId && canReadLogs
                  ? html`<dt>Call</dt>
                      <dd><a href=${hrefOf('logs', { trace_id: traceId, range: '30d' })}>The call behind this alert</a></dd>`
                  : null
              }
            </dl>
            ${RECORD_PARTS.filter(([k]) => data[k] != null).map(
              ([k, label]) =>
                html`<h3>${label}</h3>
                  <pre aria-label=${label}>${JSON.stringify(data[k], null, 2)}</pre>`,
            )}`
        : null
    }
  </aside>`;
}

export function Alerts({ params }) {
  const [draft, setDraft] = useState({ code: params.code ?? '', messageType: params.messageType ?? '', relatedResourceGuid: params.relatedResourceGuid ?? '' });
  const filters = Object.fromEntries(
    Object.entries({ code: params.code, messageType: params.messageType, relatedResourceGuid: params.relatedResourceGuid }).filter(([, v]) => v),
  );
  const skip = Number(params.skip ?? 0);
  const range = params.range ?? ANY_TIME;
  const [now, refresh] = useWindowEnd(params);
  // Up to when the page was opened or refreshed, as Logs and Audit (Refresh brings the newer ones).
  const span = range === ANY_TIME ? { toMs: now } : { fromMs: now - rangeMs(range), toMs: now };
  const { data, error, loading } = useCall('list_alerts', { filters, ...span, skip, take: PAGE });
  const opener = useOpener();
  const servers = useNames([['list_inbound_servers', (s) => s.name]]);
  const gateways = useNames([['list_gateways', (g) => g.name]]);
  const kinds = new Map([
    ...[...servers].map(([id, name]) => [id, { filter: 'inbound_server_guid', label: `Server ${name}` }]),
    ...[...gateways].map(([id, name]) => [id, { filter: 'outbound_gateway_guid', label: `Gateway ${name}` }]),
  ]);
  // A role that may not list the alerts gets why, not filters that could only be refused.
  if (!useAllowed('list_alerts'))
    return html`<section aria-labelledby="alerts-title">
      <h1 id="alerts-title">Alerts</h1>
      <${ErrorBox} error=${error} />
    </section>`;
  return html`<section aria-labelledby="alerts-title">
    <div class="page-head">
      <h1 id="alerts-title">Alerts</h1>
      <${RangePicker} page="alerts" params=${params} range=${range} onRefresh=${refresh} choices=${ALERT_RANGES} />
    </div>
    <${TimeZoneNote} />
    <form class="filters card" aria-label="Alert filters" onSubmit=${(e) => (e.preventDefault(), navigate('alerts', { ...draft, range: params.range ?? '' }))}>
      <${Field} label="Code" value=${draft.code} onInput=${(v) => setDraft({ ...draft, code: v })} />
      <${Field}
        label="Severity"
        as="select"
        value=${draft.messageType}
        options=${[
          ['', 'any'],
          ['info', 'info'],
          ['warning', 'warning'],
          ['error', 'error'],
        ]}
        onInput=${(v) => setDraft({ ...draft, messageType: v })}
      />
      <${Field} label="Related resource" value=${draft.relatedResourceGuid} onInput=${(v) => setDraft({ ...draft, relatedResourceGuid: v })} />
      <div class="buttons"><button type="submit">Apply filters</button></div>
    </form>
    <${ErrorBox} error=${error} />
    ${loading && !data ? html`<${Loading} />` : null}
    ${
      data
        ? html`<${Table}
              caption=${`Alerts, newest first${data.items.length ? `: ${skip + 1}–${skip + data.items.length}` : ''}`}
              rows=${data.items}
              empty=${range === ANY_TIME ? 'No alerts.' : 'No alerts in this range.'}
              columns=${[
                { label: 'Time', render: (a) => fmtTime(a.createdAt) },
                { label: 'Severity', render: (a) => html`<span class=${`status ${a.messageType}`}>${a.messageType}</span>` },
                { label: 'Code', render: (a) => a.code },
                {
                  label: 'Subject',
                  render: (a) =>
                    html`<button type="button" class="link" onClick=${(e) => (opener.opened(e), navigate('alerts', { ...params, open: a.guid }))}>
                      ${a.subject}
                    </button>`,
                },
              ]}
            />
            <${Pager} page="alerts" params=${params} skip=${skip} size=${PAGE} nextSkip=${data.nextSkip} />`
        : null
    }
    ${params.open ? html`<${AlertDetail} guid=${params.open} kinds=${kinds} onClose=${() => (navigate('alerts', { ...params, open: '' }), opener.refocus())} />` : null}
  </section>`;
}
