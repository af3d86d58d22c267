import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { navigate } from '../nav.js';
import {
  ErrorBox,
  Field,
  Loading,
  NamedFilter,
  Pager,
  RangePicker,
  Table,
  TimeZoneNote,
  choicesOf,
  fmtTime,
  rangeMs,
  short,
  useAllowed,
  useCall,
  useDetailPanel,
  useNames,
  useOpener,
  useWindowEnd,
} from '../ui.js';

const PAGE = 50;
const FILTERS = [
  ['operation', 'Operation'],
  ['actor_user_guid', 'Actor'],
  ['target_guid', 'Target'],
  ['outcome', 'Outcome'],
];
/** The lists that name what a record's targets may be (an operation's targets are of any of these kinds). */
const TARGET_NAMES = [
  ['list_inbound_servers', (s) => s.name],
  ['list_gateways', (g) => g.name],
  ['list_users', (u) => u.emailAddress],
  ['list_teams', (t) => t.name],
  ['list_hosts', (h) => h.name],
  ['list_roles', (r) => r.name],
];

export function Audit({ params }) {
  const range = params.range ?? '7d';
  const [now, refresh] = useWindowEnd(params);
  const [draft, setDraft] = useState(() => Object.fromEntries([...FILTERS.map(([k]) => [k, params[k] ?? '']), ['surface', params.surface ?? '']]));
  const [open, setOpen] = useState(null);
  const opener = useOpener();
  const filters = Object.fromEntries([...FILTERS.map(([k]) => k), 'surface'].filter((k) => params[k]).map((k) => [k, params[k]]));
  const skip = Number(params.skip ?? 0);
  const { data, error, loading } = useCall('query_audit_log', { filters, fromMs: now - rangeMs(range), toMs: now, skip, take: PAGE });
  // An actor is picked by email, as the table shows it (a guid box took an email and found nothing); targets are shown by name.
  const names = useNames(TARGET_NAMES);
  const name = (guid) => names.get(guid) ?? short(guid);
  // A role that may not read the audit log gets why, not a range and filters that could only be refused.
  if (!useAllowed('query_audit_log'))
    return html`<section aria-labelledby="audit-title">
      <h1 id="audit-title">Audit</h1>
      <${ErrorBox} error=${error} />
    </section>`;
  return html`<section aria-labelledby="audit-title">
    <div class="page-head">
      <h1 id="audit-title">Audit</h1>
      <${RangePicker} page="audit" params=${params} range=${range} onRefresh=${refresh} />
    </div>
    <${TimeZoneNote} />
    <form class="filters card" aria-label="Audit filters" onSubmit=${(e) => (e.preventDefault(), navigate('audit', { ...draft, range }))}>
      ${FILTERS.map(([k, label]) =>
        k === 'actor_user_guid'
          ? html`<${NamedFilter} label=${label} value=${draft[k]} choices=${choicesOf(names, 'list_users')} onInput=${(v) => setDraft({ ...draft, [k]: v })} />`
          : html`<${Field} label=${label} value=${draft[k]} onInput=${(v) => setDraft({ ...draft, [k]: v })} />`,
      )}
      <${Field}
        label="Surface"
        as="select"
        value=${draft.surface}
        options=${[
          ['', 'any'],
          ['rest', 'REST'],
          ['mcp', 'MCP'],
          ['cli', 'CLI'],
        ]}
        onInput=${(v) => setDraft({ ...draft, surface: v })}
      />
      <div class="buttons"><button type="submit">Apply filters</button></div>
    </form>
    <${ErrorBox} error=${error} />
    ${loading && !data ? html`<${Loading} />` : null}
    ${
      data
        ? html`<${Table}
              caption=${`Admin operations, newest first${data.items.length ? `: ${skip + 1}–${skip + data.items.length}` : ''}`}
              rows=${data.items}
              empty="No operations in this range."
              columns=${[
                {
                  label: 'Time',
                  render: (r) => html`<button type="button" class="link" onClick=${(e) => (opener.opened(e), setOpen(r))}>${fmtTime(r.created_at)}</button>`,
                },
                { label: 'Operation', render: (r) => r.operation },
                { label: 'Outcome', render: (r) => html`<span class=${`status ${r.outcome === 'ok' ? 'ok' : 'error'}`}>${r.outcome}</span>` },
                { label: 'Surface', render: (r) => r.surface },
                { label: 'Actor', render: (r) => (r.actor_user_guid ? name(r.actor_user_guid) : 'operator') },
                { label: 'From', render: (r) => r.source_ip ?? '—' },
                { label: 'Targets', render: (r) => r.target_guids.map(name).join(', ') || '—' },
              ]}
            />
            <${Pager} page="audit" params=${params} skip=${skip} size=${PAGE} nextSkip=${data.nextSkip} />`
        : null
    }
    ${open ? html`<${AuditRecord} record=${open} onClose=${() => (setOpen(null), opener.refocus())} />` : null}
  </section>`;
}

/** One audit record, whole: focus on its heading, Escape or Close gives it back to the row. */
function AuditRecord({ record, onClose }) {
  const panel = useDetailPanel(record, onClose);
  return html`<aside class="card detail" aria-label="Audit record" ref=${panel.ref} onKeyDown=${panel.onKeyDown}>
    <div class="page-head">
      <h2 tabindex="-1">${record.operation}</h2>
      <button type="button" onClick=${onClose}>Close record</button>
    </div>
    <pre aria-label="Audit record">${JSON.stringify(record, null, 2)}</pre>
  </aside>`;
}
