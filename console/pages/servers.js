import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { call } from '../api.js';
import { navigate } from '../nav.js';
import {
  ActionButton,
  EnableToggle,
  ErrorBox,
  Field,
  Form,
  Loading,
  RenameButton,
  SavedSelect,
  Table,
  act,
  parseHeaderLines,
  useAllowed,
  useCall,
  useDetailPanel,
  useInterval,
  useOpener,
} from '../ui.js';

const POLL_MS = 2000;
const AUTH_TYPES = [
  ['none', 'No authentication'],
  ['headers', 'Static headers'],
  ['oauth', 'OAuth'],
];

const EMPTY_SERVER = {
  name: '',
  url: '',
  authType: 'none',
  headers: '',
  oauthClientId: '',
  oauthClientSecret: '',
  oauthAccessToken: '',
  oauthRefreshToken: '',
  oauthTokenEndpoint: '',
  oauthScope: '',
};

/** Registers a server; `servers`: the page's list, whose status tells when a server's authorization has been given. */
function CreateServer({ onCreated, servers }) {
  const [f, setF] = useState(EMPTY_SERVER);
  const [authorization, setAuthorization] = useState(null);
  const set = (k) => (v) => setF({ ...f, [k]: v });
  const action = async () => {
    const input = { name: f.name, url: f.url, authType: f.authType };
    if (f.authType === 'headers') input.headers = parseHeaderLines(f.headers);
    if (f.authType === 'oauth') {
      for (const k of ['oauthClientId', 'oauthClientSecret', 'oauthAccessToken', 'oauthRefreshToken', 'oauthTokenEndpoint', 'oauthScope'])
        if (f[k]) input[k] = f[k];
    }
    return call('create_inbound_server', input);
  };
  action.op = 'create_inbound_server';
  return html`<div>
    <${Form}
      title="Register a server"
      submit="Register server"
      action=${action}
      onDone=${(server) => {
        setAuthorization(server.authorizationUrl ? { url: server.authorizationUrl, name: server.name, guid: server.guid } : null);
        // The form empties: what was typed (secrets included) does not stay on screen.
        setF(EMPTY_SERVER);
        onCreated();
      }}
    >
      <${Field} label="Server name" name="name" value=${f.name} onInput=${set('name')} required />
      <${Field} label="Server URL" name="url" type="url" value=${f.url} onInput=${set('url')} required placeholder="https://mcp.example.com/mcp" />
      <${Field} label="Authentication" name="authType" as="select" value=${f.authType} options=${AUTH_TYPES} onInput=${set('authType')} />
      ${
        f.authType === 'headers'
          ? html`<${Field}
              label="Headers"
              name="headers"
              as="textarea"
              value=${f.headers}
              onInput=${set('headers')}
              hint="One per line: Name: value. Values are write-only."
            />`
          : null
      }
      ${
        f.authType === 'oauth'
          ? html`<p>
                <small
                  >Leave the token fields empty to authorize in the browser; with an access token, client id and token endpoint, no browser step is
                  needed.</small
                >
              </p>
              <${Field} label="OAuth client id" name="oauthClientId" value=${f.oauthClientId} onInput=${set('oauthClientId')} />
              <${Field} label="OAuth client secret" name="oauthClientSecret" type="password" value=${f.oauthClientSecret} onInput=${set('oauthClientSecret')} />
              <${Field} label="OAuth scope" name="oauthScope" value=${f.oauthScope} onInput=${set('oauthScope')} />
              <${Field} label="OAuth access token" name="oauthAccessToken" type="password" value=${f.oauthAccessToken} onInput=${set('oauthAccessToken')} />
              <${Field} label="OAuth refresh token" name="oauthRefreshToken" type="password" value=${f.oauthRefreshToken} onInput=${set('oauthRefreshToken')} />
              <${Field} label="OAuth token endpoint" name="oauthTokenEndpoint" value=${f.oauthTokenEndpoint} onInput=${set('oauthTokenEndpoint')} />`
          : null
      }
    <//>
    <${AuthorizationNotice} authorization=${authorization && awaitsApproval(servers, authorization.guid) ? authorization : null} />
  </div>`;
}

/** Whether the server still waits for a human's approval (while the list is unknown, it is taken to). */
const awaitsApproval = (servers, guid) => {
  const server = servers?.find((s) => s.guid === guid);
  return !servers || (server !== undefined && server.authenticationStatus === 'needs-authentication');
};

/** The link to an OAuth server's authorization page, for the human who approves it. */
function AuthorizationNotice({ authorization }) {
  return authorization
    ? html`<div class="notice" role="status">
        ${authorization.name} needs your authorization:${' '}
        <a href=${authorization.url} target="_blank" rel="noopener noreferrer">Open the authorization page</a>, approve, then come back here: the status updates
        by itself.
      </div>`
    : null;
}

function Identities({ server, onClose }) {
  const { data, error, reload } = useCall('list_identities', { inboundServerGuid: server.guid });
  const [headers, setHeaders] = useState('');
  const [label, setLabel] = useState('');
  // An OAuth server's identity is made when a human approves it: the link to do so, as long as this panel is open.
  const [authorization, setAuthorization] = useState(null);
  const canSetHeaders = useAllowed('set_identity_headers');
  // No Actions column for a role that may list identities (accessAllIdentities) but do none of their actions.
  const canAct = [useAllowed('disable_identity'), useAllowed('delete_identity'), canSetHeaders].some(Boolean);
  // The identity whose headers are being replaced (values are write-only: the box starts empty).
  const [replacing, setReplacing] = useState(null);
  const [newHeaders, setNewHeaders] = useState('');
  // Opened below the list of servers: brought into view, with the focus on its heading.
  const panel = useDetailPanel(server.guid, onClose);
  return html`<div class="card" ref=${panel.ref} onKeyDown=${panel.onKeyDown}>
    <div class="page-head">
      <h3 tabindex="-1">Identities of ${server.name}</h3>
      <button type="button" onClick=${onClose}>Close server</button>
    </div>
    <${ErrorBox} error=${error} />
    ${
      data
        ? html`<${Table}
            caption=${`Identities of ${server.name}`}
            rows=${data.items}
            columns=${[
              { label: 'Name', render: (i) => i.name },
              {
                label: 'Access',
                render: (i) =>
                  html`<${SavedSelect}
                    label=${`Access to ${i.name}`}
                    value=${i.accessControl}
                    options=${[
                      ['private', 'private: its creator only'],
                      ['global', 'global: anyone may use it'],
                    ]}
                    op="set_identity_availability"
                    save=${(availability) => call('set_identity_availability', { identityGuid: i.guid, availability })}
                    onSaved=${reload}
                  />`,
              },
              { label: 'Enabled', render: (i) => (i.enabled ? 'yes' : 'no') },
              {
                label: 'Actions',
                hidden: !canAct,
                render: (i) =>
                  html`<${EnableToggle} name=${i.name} enabled=${i.enabled} resource="identity" input=${{ identityGuid: i.guid }} onDone=${reload} />
                    <${ActionButton}
                      label=${`Delete ${i.name}`}
                      danger
                      warning="Gateway assignments that use it stop working until another identity is chosen."
                      action=${act('delete_identity', { identityGuid: i.guid })}
                      onDone=${() => (replacing?.guid === i.guid && setReplacing(null), reload())}
                    />
                    ${
                      server.authenticationType === 'headers' && canSetHeaders
                        ? html`<button type="button" onClick=${() => setReplacing(i)}>Replace headers of ${i.name}</button>`
                        : null
                    }`,
              },
            ]}
          />`
        : null
    }
    ${
      replacing
        ? html`<${Form}
            key=${replacing.guid}
            title=${`Replace the headers of ${replacing.name}`}
            submit="Replace headers"
            action=${act('set_identity_headers', () => ({ identityGuid: replacing.guid, headers: parseHeaderLines(newHeaders) }))}
            onDone=${() => (setReplacing(null), setNewHeaders(''), reload())}
            onCancel=${() => (setReplacing(null), setNewHeaders(''))}
          >
            <${Field}
              label="New headers"
              name="headers"
              as="textarea"
              value=${newHeaders}
              onInput=${setNewHeaders}
              hint="One per line: Name: value. They replace every header the identity has; values are write-only."
            />
          <//>`
        : null
    }
    ${
      server.authenticationType === 'oauth'
        ? html`<${Form}
              title="Authorize an identity"
              submit="Get an authorization link"
              action=${act('add_identity', { inboundServerGuid: server.guid, ...(label ? { identityLabel: label } : {}) })}
              onDone=${(r) => (setAuthorization(r.authorizationUrl ? { url: r.authorizationUrl, name: server.name } : null), reload())}
            >
              <${Field} label="Identity name" name="identityLabel" value=${label} onInput=${setLabel} />
            <//>
            <${AuthorizationNotice} authorization=${authorization} />`
        : null
    }
    ${
      server.authenticationType === 'headers'
        ? html`<${Form}
            title="Add an identity"
            submit="Add identity"
            action=${act('add_identity', () => ({
              inboundServerGuid: server.guid,
              headers: parseHeaderLines(headers),
              ...(label ? { identityLabel: label } : {}),
            }))}
            onDone=${() => (setHeaders(''), reload())}
          >
            <${Field} label="Identity name" name="identityLabel" value=${label} onInput=${setLabel} />
            <${Field} label="Identity headers" name="headers" as="textarea" value=${headers} onInput=${setHeaders} hint="One per line: Name: value" />
          <//>`
        : null
    }
  </div>`;
}

export function Servers({ params }) {
  const { data, error, loading, reload } = useCall('list_inbound_servers', {});
  // The server whose identities are shown is in the URL (#/servers?open=<guid>), as a gateway is.
  const open = data?.items.find((s) => s.guid === params.open);
  const opener = useOpener();
  const close = () => (navigate('servers'), opener.refocus());
  // No Actions column for a role that may do none of them.
  const canAct = [useAllowed('rename_inbound_server'), useAllowed('disable_inbound_server'), useAllowed('delete_inbound_server')].some(Boolean);
  // Validation (and a human's OAuth approval) runs in the background: while a server
  // waits for it the list is read again, so its outcome shows without a reload.
  const validating = Boolean(data?.items.some((s) => s.authenticationStatus === 'needs-authentication'));
  useInterval(reload, validating ? POLL_MS : null);
  return html`<section aria-labelledby="servers-title">
    <h1 id="servers-title">Servers</h1>
    <${ErrorBox} error=${error} />
    ${loading && !data ? html`<${Loading} />` : null}
    ${
      data
        ? html`<${Table}
            caption="Inbound servers"
            rows=${data.items}
            empty="No servers registered yet."
            columns=${[
              {
                label: 'Name',
                render: (s) =>
                  html`<button type="button" class="link" onClick=${(e) => (opener.opened(e), navigate('servers', { open: s.guid }))}>${s.name}</button>`,
              },
              { label: 'URL', render: (s) => html`<code>${s.url}</code>` },
              { label: 'Authentication', render: (s) => s.authenticationType },
              { label: 'Status', render: (s) => html`<span class=${`status ${s.authenticationStatus}`}>${s.authenticationStatus}</span>` },
              { label: 'Enabled', render: (s) => (s.enabled ? 'yes' : 'no') },
              {
                label: 'Actions',
                hidden: !canAct,
                render: (s) =>
                  html`<${RenameButton}
                      name=${s.name}
                      op="rename_inbound_server"
                      rename=${(newName) => call('rename_inbound_server', { inboundServerGuid: s.guid, newName })}
                      onDone=${reload}
                    />
                    <${EnableToggle}
                      name=${s.name}
                      enabled=${s.enabled}
                      resource="inbound_server"
                      input=${{ inboundServerGuid: s.guid }}
                      warning="Its tools leave every gateway it is assigned to."
                      onDone=${reload}
                    />
                    <${ActionButton}
                      label=${`Delete ${s.name}`}
                      danger
                      warning="Its tools leave every gateway it is assigned to, for good: it cannot be restored."
                      action=${act('delete_inbound_server', { inboundServerGuid: s.guid })}
                      onDone=${() => (open?.guid === s.guid && navigate('servers'), reload())}
                    />`,
              },
            ]}
          />`
        : null
    }
    ${open ? html`<${Identities} key=${open.guid} server=${open} onClose=${close} />` : null}
    <${CreateServer} onCreated=${reload} servers=${data?.items} />
  </section>`;
}
