import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { call } from '../api.js';
import { Connections } from '../connections.js';
import { hrefOf, navigate } from '../nav.js';
import {
  ActionButton,
  EnableToggle,
  ErrorBox,
  Field,
  Form,
  Loading,
  RenameButton,
  Table,
  act,
  useAllowed,
  useCall,
  useDetailPanel,
  useNames,
  useOpener,
} from '../ui.js';

/** A host's connections, each with its gateway's name. */
function HostDetail({ host, onClose }) {
  const gateways = useNames([['list_gateways', (g) => g.name]]);
  // Opened below the list of hosts: brought into view, with the focus on its name.
  const panel = useDetailPanel(host.guid, onClose);
  return html`<div class="card" ref=${panel.ref} onKeyDown=${panel.onKeyDown}>
    <div class="page-head">
      <h2 tabindex="-1">${host.name}</h2>
      <button type="button" onClick=${onClose}>Close host</button>
    </div>
    <p>
      ${host.enabled ? 'Enabled' : 'Disabled: the gateways refuse its connections until it is enabled again.'} A token for this host is issued on a gateway's
      page (Gateway token, Host).
    </p>
    <h3>Connections</h3>
    <${Connections}
      filter=${{ hostGuid: host.guid }}
      caption=${`Connections of ${host.name}`}
      reloadKey=${host.name}
      columns=${[{ label: 'Gateway', render: (c) => gateways.get(c.gatewayGuid) ?? c.gatewayGuid }]}
    />
  </div>`;
}

export function Hosts({ params }) {
  const { data, error, loading, reload } = useCall('list_hosts', {});
  // No Actions column for a role that may do none of them.
  const canAct = [useAllowed('rename_host'), useAllowed('disable_host'), useAllowed('delete_host')].some(Boolean);
  const [name, setName] = useState('');
  const open = data?.items.find((h) => h.guid === params.open);
  const opener = useOpener();
  const close = () => (navigate('hosts'), opener.refocus());
  return html`<section aria-labelledby="hosts-title">
    <h1 id="hosts-title">Hosts</h1>
    <p>The apps and agents that connect to gateways. Disabling a host cuts off all its connections at once; deleting it keeps them, without a host.</p>
    <${ErrorBox} error=${error} />
    ${loading && !data ? html`<${Loading} />` : null}
    ${
      data
        ? html`<${Table}
            caption="Hosts"
            rows=${data.items}
            empty="No hosts yet."
            columns=${[
              { label: 'Name', render: (h) => html`<a href=${hrefOf('hosts', { open: h.guid })} onClick=${opener.opened}>${h.name}</a>` },
              { label: 'Authentication', render: (h) => h.authenticationType },
              { label: 'Enabled', render: (h) => (h.enabled ? 'yes' : 'no') },
              {
                label: 'Actions',
                hidden: !canAct,
                render: (h) =>
                  html`<${RenameButton}
                      name=${h.name}
                      op="rename_host"
                      rename=${(newName) => call('rename_host', { hostGuid: h.guid, newName })}
                      onDone=${reload}
                    />
                    <${EnableToggle}
                      name=${h.name}
                      enabled=${h.enabled}
                      resource="host"
                      input=${{ hostGuid: h.guid }}
                      warning="Every connection of this host stops working."
                      onDone=${reload}
                    />
                    <${ActionButton}
                      label=${`Delete ${h.name}`}
                      danger
                      warning="Its connections stay, without a host."
                      action=${act('delete_host', { hostGuid: h.guid })}
                      onDone=${() => (open?.guid === h.guid && navigate('hosts'), reload())}
                    />`,
              },
            ]}
          />`
        : null
    }
    ${open ? html`<${HostDetail} key=${open.guid} host=${open} onClose=${close} />` : null}
    <${Form}
      title="Create a host"
      submit="Create host"
      action=${act('create_host', { name })}
      onDone=${(h) => (setName(''), reload(), navigate('hosts', { open: h.guid }))}
    >
      <${Field} label="Host name" name="name" value=${name} onInput=${setName} required />
    <//>
  </section>`;
}
