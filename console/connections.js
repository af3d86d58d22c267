import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { hrefOf } from './nav.js';
import { EnableToggle, ErrorBox, Loading, Table, distinctNames, fmtTime, useAllowed, useCall } from './ui.js';

/**
 * The connections list_connections gives for `filter` (a gateway's, a host's), each
 * opening its detail, with enable/disable; `columns` adds columns before Enabled; a
 * change of `reloadKey` reads them again.
 */
export function Connections({ filter, caption, columns = [], reloadKey }) {
  const connections = useCall('list_connections', filter, [reloadKey]);
  const [open, setOpen] = useState(null);
  // Ids are time-ordered (UUIDv7): their end, not their start, tells two made together apart.
  const nameOf = distinctNames(
    connections.data?.items ?? [],
    (c) => c.name,
    (c) => `…${c.guid.slice(-6)}`,
  );
  return html`<${ErrorBox} error=${connections.error} /> ${
      connections.data
        ? html`<${Table}
            caption=${caption}
            rows=${connections.data.items}
            empty="No connections yet."
            columns=${[
              { label: 'Name', render: (c) => html`<button type="button" class="link" onClick=${() => setOpen(c.guid)}>${nameOf(c)}</button>` },
              ...columns,
              { label: 'Enabled', render: (c) => (c.enabled ? 'yes' : 'no') },
              {
                label: 'Actions',
                render: (c) =>
                  html`<${EnableToggle}
                    name=${nameOf(c)}
                    enabled=${c.enabled}
                    resource="connection"
                    input=${{ connectionGuid: c.guid }}
                    onDone=${connections.reload}
                  />`,
              },
            ]}
          />`
        : null
    }
    ${open ? html`<${ConnectionDetail} guid=${open} reloadKey=${reloadKey} />` : null}`;
}

function ConnectionDetail({ guid, reloadKey }) {
  const { data, error } = useCall('get_connection', { connectionGuid: guid }, [reloadKey]);
  // Its calls are offered only to a role that may read them (exportLogs): a link would end in a refusal.
  const canReadLogs = useAllowed('query_logs');
  if (error) return html`<${ErrorBox} error=${error} />`;
  if (!data) return html`<${Loading} />`;
  return html`<aside class="card detail" aria-label="Connection detail">
    <h3>${data.name}</h3>
    <dl>
      <dt>Gateway</dt>
      <dd>${data.gatewayName}</dd>
      <dt>Host</dt>
      <dd>${data.hostName ?? '—'}</dd>
      <dt>Created by</dt>
      <dd>${data.creatorEmail}</dd>
      <dt>Servers</dt>
      <dd>${data.serverCount}</dd>
      <dt>Last successful call</dt>
      <dd>${fmtTime(data.lastSuccessfulCallAt)}</dd>
      ${
        canReadLogs
          ? html`<dt>Calls</dt>
              <dd><a href=${hrefOf('logs', { gateway_connection_guid: data.guid, range: '7d' })}>Calls of this connection</a></dd>`
          : null
      }
    </dl>
    <${Table}
      caption="Recent errors"
      rows=${data.recentErrors}
      rowKey=${(e) => e.traceId}
      empty="No recent errors."
      columns=${[
        { label: 'Time', render: (e) => fmtTime(e.createdAt) },
        { label: 'Tool', render: (e) => e.toolName ?? '—' },
        {
          label: 'Message',
          render: (e) => (canReadLogs ? html`<a href=${hrefOf('logs', { trace_id: e.traceId, range: '30d' })}>${e.message}</a>` : e.message),
        },
      ]}
    />
  </aside>`;
}
