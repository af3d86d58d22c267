import { html } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
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
  SavedSelect,
  ShownOnce,
  Table,
  act,
  refusal,
  useAllowed,
  useCall,
  useDetailPanel,
  useNames,
  useOpener,
} from '../ui.js';

const SCHEMES = [
  ['', 'none (open servers)'],
  ['userIdentity', 'each user brings an identity'],
  ['sharedIdentity', 'one shared identity'],
];

/** The identity a sharedIdentity assignment authenticates with: the server's identities the caller can see. */
function SharedIdentityField({ serverGuid, value, onInput }) {
  const identities = useCall('list_identities', { inboundServerGuid: serverGuid });
  if (identities.error) return html`<${ErrorBox} error=${identities.error} />`;
  if (!identities.data) return html`<${Loading} />`;
  const options = identities.data.items.map((i) => [i.guid, `${i.name}${i.accessControl === 'private' ? ' (private: yours)' : ''}`]);
  if (options.length === 0) return html`<p class="notice">This server has no identity you can share: add one on the Servers page first.</p>`;
  return html`<${Field}
    label="Shared identity"
    name="sharedIdentityGuid"
    as="select"
    value=${value}
    options=${[['', 'choose an identity'], ...options]}
    onInput=${onInput}
  />`;
}

/** `echo → shout, add (new description)`: what each override changes, at a glance. */
const overridesSummary = (overrides) =>
  overrides && Object.keys(overrides).length
    ? Object.entries(overrides)
        .map(([upstream, o]) => `${upstream}${o.name ? ` → ${o.name}` : ''}${o.description ? ' (new description)' : ''}`)
        .join(', ')
    : '—';

function CurationEditor({ assignment, serverName, onSaved, onCancel }) {
  const [mode, setMode] = useState(assignment.toolFilter?.mode ?? '');
  const [tools, setTools] = useState((assignment.toolFilter?.tools ?? []).join(', '));
  const [overrides, setOverrides] = useState(assignment.toolOverrides ? JSON.stringify(assignment.toolOverrides, null, 2) : '');
  const action = () => {
    let parsed = null;
    if (overrides.trim()) {
      try {
        parsed = JSON.parse(overrides);
      } catch {
        throw refusal('Tool overrides must be JSON: {"upstream_name": {"name": "...", "description": "..."}}');
      }
    }
    return call('modify_gateway_assignment', {
      assignmentGuid: assignment.guid,
      toolFilter: mode
        ? {
            mode,
            tools: tools
              .split(',')
              .map((t) => t.trim())
              .filter(Boolean),
          }
        : null,
      toolOverrides: parsed,
    });
  };
  action.op = 'modify_gateway_assignment';
  return html`<${Form}
    title=${`Tool filter and overrides of ${serverName}`}
    submit="Save tool curation"
    action=${action}
    onDone=${onSaved}
    onCancel=${onCancel}
  >
    <${Field}
      label="Tool filter"
      name="toolFilter"
      as="select"
      value=${mode}
      options=${[
        ['', 'every tool'],
        ['allow', 'only these tools'],
        ['deny', 'all but these tools'],
      ]}
      onInput=${setMode}
    />
    <${Field} label="Filtered tools" name="toolFilter" value=${tools} onInput=${setTools} hint="Upstream tool names or globs with *, comma-separated" />
    <${Field}
      label="Tool overrides"
      name="toolOverrides"
      as="textarea"
      value=${overrides}
      onInput=${setOverrides}
      hint='JSON: {"upstream_name": {"name": "shown_name", "description": "…"}}'
    />
    ${assignment.toolCurationHint ? html`<p class="notice">${assignment.toolCurationHint}</p>` : null}
  <//>`;
}

/** Which of the caller's identities of a server a gateway token uses (the server's assignment is userIdentity). */
function IdentityChoice({ serverGuid, serverName, value, onInput }) {
  const identities = useCall('list_identities', { inboundServerGuid: serverGuid });
  const items = identities.data?.items.filter((i) => i.enabled) ?? [];
  return html`<${Field}
    label=${`Your identity for ${serverName}`}
    as="select"
    value=${value}
    options=${[['', items.length ? 'choose one' : 'none of yours: add one on the Servers page'], ...items.map((i) => [i.guid, i.name])]}
    onInput=${onInput}
  />`;
}

function GatewayDetail({ gateway, archived, servers, onChange, onClose, archivedHere }) {
  // Opened below the list (which may be hundreds of gateways long): brought into view, with the focus on its name.
  const panel = useDetailPanel(gateway.guid, onClose);
  // Archived from here (`archivedHere`: the guid, kept by the page, as the list reloads without it and this detail comes back):
  // the focus goes to what undoes it, not to the name.
  const unarchive = useRef(null);
  useEffect(() => {
    if (!archived || archivedHere.current !== gateway.guid) return;
    archivedHere.current = null;
    unarchive.current?.querySelector('button')?.focus();
  }, [archived]);
  // A control for what the caller may not do is not offered (its editor would show nothing).
  const canCurate = useAllowed('modify_gateway_assignment');
  const canToggle = useAllowed('disable_gateway_assignment');
  const canRemove = useAllowed('remove_gateway_assignment');
  // A section whose every control the role lacks goes with its heading.
  const canProvision = useAllowed('assign_team_to_gateway');
  const canUnprovision = useAllowed('remove_team_from_gateway');
  const canIssue = useAllowed('issue_gateway_token');
  const assignments = useCall('list_gateway_assignments', { gatewayGuid: gateway.guid });
  const naming = useCall('get_gateway_tool_naming', { gatewayGuid: gateway.guid });
  const teams = useCall('list_teams', canProvision || canUnprovision ? {} : null);
  const hosts = useCall('list_hosts', {});
  const [assign, setAssign] = useState({ inboundServerGuid: '', identityScheme: '', sharedIdentityGuid: '' });
  // What an assignment still needs, as the API says it (configurationHint), after one is made.
  const [assignHint, setAssignHint] = useState(null);
  const [issued, setIssued] = useState(null);
  const [hostGuid, setHostGuid] = useState('');
  // The identity of each server whose assignment asks every user for their own (userIdentity), by server guid.
  const [chosen, setChosen] = useState({});
  const [editing, setEditing] = useState(null);
  const serverName = (guid) => servers.get(guid) ?? guid;
  // An archived gateway's paragraph goes above its buttons, not among them: beside it they shrank to a letter a line at 375 px.
  return html`<div class="card" ref=${panel.ref} onKeyDown=${panel.onKeyDown}>
    <div class="page-head">
      <h2 tabindex="-1">${gateway.name}</h2>
      <button type="button" onClick=${onClose}>Close gateway</button>
    </div>
    <p>Connect URL: <code>${gateway.url}</code></p>
    ${archived ? html`<p>This gateway is archived: nothing new attaches to it until it is unarchived (it stays disabled then).</p>` : null}
    <div class="buttons">
      ${
        archived
          ? html`<span ref=${unarchive}
              ><${ActionButton} label="Unarchive gateway" action=${act('unarchive_gateway', { gatewayGuid: gateway.guid })} onDone=${onChange}
            /></span>`
          : html`<${EnableToggle}
                name="gateway"
                enabled=${gateway.enabled}
                resource="gateway"
                input=${{ gatewayGuid: gateway.guid }}
                warning="Every connection through it stops working."
                onDone=${onChange}
              />
              <${ActionButton}
                label="Archive gateway"
                danger
                warning="Every connection through it stops working, and it takes nothing new until unarchived."
                action=${act('archive_gateway', { gatewayGuid: gateway.guid })}
                onDone=${() => ((archivedHere.current = gateway.guid), onChange())}
              />`
      }
      <${RenameButton}
        name=${gateway.name}
        op="rename_gateway"
        rename=${(newName) => call('rename_gateway', { gatewayGuid: gateway.guid, newName })}
        onDone=${onChange}
      />
    </div>

    <h3>Tool naming</h3>
    <${ErrorBox} error=${naming.error} />
    ${
      naming.data
        ? html`<${SavedSelect}
            label="Tool naming mode"
            value=${naming.data.mode}
            options=${[
              ['prefixed', 'prefixed: server__tool'],
              ['when-needed', 'when needed: only names two servers share'],
            ]}
            op="set_gateway_tool_naming"
            save=${(mode) => call('set_gateway_tool_naming', { gatewayGuid: gateway.guid, mode })}
            onSaved=${naming.reload}
          />`
        : null
    }

    <h3>Assignments</h3>
    <${ErrorBox} error=${assignments.error} />
    ${
      assignments.data
        ? html`<${Table}
            caption=${`Servers of ${gateway.name}`}
            rows=${assignments.data.items}
            empty="No server assigned."
            columns=${[
              { label: 'Server', render: (a) => serverName(a.serverGuids[0]) },
              { label: 'Identity scheme', render: (a) => a.identityScheme ?? 'none' },
              { label: 'Configured', render: (a) => (a.configured ? 'yes' : 'no') },
              { label: 'Enabled', render: (a) => (a.enabled ? 'yes' : 'no') },
              {
                label: 'Tool filter',
                render: (a) =>
                  !a.toolFilter
                    ? 'all tools'
                    : a.toolFilter.tools.length
                      ? `${a.toolFilter.mode}: ${a.toolFilter.tools.join(', ')}`
                      : a.toolFilter.mode === 'allow'
                        ? 'no tools (an empty allow list)'
                        : 'all tools (an empty deny list)',
              },
              { label: 'Overrides', render: (a) => overridesSummary(a.toolOverrides) },
              {
                label: 'Actions',
                hidden: !canCurate && !canToggle && !canRemove,
                render: (a) =>
                  html`${canCurate ? html`<button type="button" onClick=${() => setEditing(a)}>Edit tools of ${serverName(a.serverGuids[0])}</button>` : null}
                    <${EnableToggle}
                      name=${serverName(a.serverGuids[0])}
                      enabled=${a.enabled}
                      resource="gateway_assignment"
                      input=${{ assignmentGuid: a.guid }}
                      warning="Its tools leave this gateway; the assignment stays."
                      onDone=${assignments.reload}
                    />
                    <${ActionButton}
                      label=${`Remove ${serverName(a.serverGuids[0])}`}
                      danger
                      action=${act('remove_gateway_assignment', { assignmentGuid: a.guid })}
                      onDone=${assignments.reload}
                    />`,
              },
            ]}
          />`
        : null
    }
    ${
      editing
        ? html`<${CurationEditor}
            key=${editing.guid}
            assignment=${editing}
            serverName=${serverName(editing.serverGuids[0])}
            onCancel=${() => setEditing(null)}
            onSaved=${() => {
              setEditing(null);
              assignments.reload();
            }}
          />`
        : null
    }
    ${
      archived
        ? html`<p class="notice">An archived gateway takes no new server, team or token: unarchive it first.</p>`
        : html` <${Form}
            title="Assign a server"
            submit="Assign server"
            action=${act('assign_server_to_gateway', {
              gatewayGuid: gateway.guid,
              inboundServerGuid: assign.inboundServerGuid,
              ...(assign.identityScheme ? { identityScheme: assign.identityScheme } : {}),
              ...(assign.identityScheme === 'sharedIdentity' && assign.sharedIdentityGuid ? { sharedIdentityGuid: assign.sharedIdentityGuid } : {}),
            })}
            onDone=${(r) => (setAssignHint(r.configured ? null : (r.configurationHint ?? null)), assignments.reload())}
          >
            <${Field}
              label="Server to assign"
              name="inboundServerGuid"
              as="select"
              value=${assign.inboundServerGuid}
              options=${[['', 'choose a server'], ...servers]}
              onInput=${(v) => setAssign({ ...assign, inboundServerGuid: v })}
            />
            <${Field}
              label="Identity scheme"
              name="identityScheme"
              as="select"
              value=${assign.identityScheme}
              options=${SCHEMES}
              onInput=${(v) => setAssign({ ...assign, identityScheme: v })}
            />
            ${
              assign.identityScheme === 'sharedIdentity' && assign.inboundServerGuid
                ? html`<${SharedIdentityField}
                    serverGuid=${assign.inboundServerGuid}
                    value=${assign.sharedIdentityGuid}
                    onInput=${(v) => setAssign({ ...assign, sharedIdentityGuid: v })}
                  />`
                : null
            }
          <//>`
    }
    ${assignHint ? html`<div class="notice" role="status">Assigned, not configured yet: ${assignHint}</div>` : null}
    ${
      archived || !(canProvision || canUnprovision)
        ? null
        : html` <h3>Teams</h3>
            <p>
              Provisioning records which teams this gateway is for: their members' calls count under the team in Logs and the Overview. It grants nothing:
              whoever holds a gateway token for it may call it.
            </p>
            ${
              teams.data?.items.length === 0
                ? html`<p>No teams yet: create one on the <a href=${hrefOf('people')}>People</a> page, then provision it here.</p>`
                : teams.data
                  ? html`<ul class="checks" aria-label="Teams provisioned">
                      ${teams.data.items.map(
                        (team) =>
                          html`<li>
                            <${ActionButton}
                              label=${`Provision ${team.name}`}
                              action=${act('assign_team_to_gateway', { gatewayGuid: gateway.guid, teamGuid: team.guid })}
                              done=${`${team.name} is provisioned to this gateway.`}
                            />
                            <${ActionButton}
                              label=${`Unprovision ${team.name}`}
                              danger
                              action=${act('remove_team_from_gateway', { gatewayGuid: gateway.guid, teamGuid: team.guid })}
                              done=${(result) => (result.removed ? `${team.name} is no longer provisioned to this gateway.` : `${team.name} was not provisioned to this gateway.`)}
                            />
                          </li>`,
                      )}
                    </ul>`
                  : null
            }`
    }
    ${
      archived || !canIssue
        ? null
        : html` <h3>Gateway token</h3>
            <${Form}
              title="Issue a gateway token"
              submit="Issue gateway token"
              action=${act('issue_gateway_token', {
                gatewayGuid: gateway.guid,
                ...(hostGuid ? { hostGuid } : {}),
                ...(Object.keys(chosen).length ? { serverIdentities: chosen } : {}),
              })}
              onDone=${setIssued}
            >
              ${(assignments.data?.items ?? [])
                .filter((a) => a.identityScheme === 'userIdentity')
                .map(
                  (a) =>
                    html`<${IdentityChoice}
                      key=${a.guid}
                      serverGuid=${a.serverGuids[0]}
                      serverName=${serverName(a.serverGuids[0])}
                      value=${chosen[a.serverGuids[0]] ?? ''}
                      onInput=${(identity) => setChosen({ ...chosen, [a.serverGuids[0]]: identity })}
                    />`,
                )}
              ${
                hosts.data
                  ? html`<${Field}
                      label="Host"
                      name="hostGuid"
                      as="select"
                      value=${hostGuid}
                      options=${[['', 'no host'], ...hosts.data.items.map((h) => [h.guid, h.name])]}
                      onInput=${setHostGuid}
                    />`
                  : null
              }
            <//>`
    }
    ${
      issued
        ? html`<${ShownOnce} label="Gateway token" value=${issued.token} />
            <p>Connect URL: <code>${issued.url}</code></p>`
        : null
    }

    <h3>Connections</h3>
    <${Connections}
      filter=${{ gatewayGuid: gateway.guid }}
      caption=${`Connections of ${gateway.name}`}
      reloadKey=${issued}
      columns=${[{ label: 'Host', render: (c) => (c.hostGuid ? (hosts.data?.items.find((h) => h.guid === c.hostGuid)?.name ?? c.hostGuid) : '—') }]}
    />
  </div>`;
}

export function Gateways({ params }) {
  const [includeArchived, setIncludeArchived] = useState(false);
  const { data, error, loading, reload: reloadList } = useCall('list_gateways', includeArchived ? { includeArchived: true } : {});
  // list_gateways names no gateway archived: with archived ones shown, they are those missing from the default list.
  const live = useCall('list_gateways', includeArchived ? {} : null);
  const archived = (g) => includeArchived && live.data !== null && !live.data.items.some((l) => l.guid === g.guid);
  const reload = () => (reloadList(), live.reload());
  const [name, setName] = useState('');
  const servers = useNames([['list_inbound_servers', (s) => s.name]]);
  const opener = useOpener();
  const archivedHere = useRef(null);
  const close = () => (navigate('gateways'), opener.refocus());
  const open = data?.items.find((g) => g.guid === params.open);
  // A gateway the URL opens but the list lacks is archived (just now, or before a link to it was shared): shown with the archived ones, once.
  const missing = Boolean(data && !loading && params.open && !open);
  const showedArchived = useRef(null);
  useEffect(() => {
    if (missing && !includeArchived && showedArchived.current !== params.open) {
      showedArchived.current = params.open;
      setIncludeArchived(true);
    }
  }, [missing, includeArchived, params.open]);
  // Whether it is archived is known once the default list is in too.
  const known = !includeArchived || live.data !== null;
  return html`<section aria-labelledby="gateways-title">
    <h1 id="gateways-title">Gateways</h1>
    <${Field} label="Show archived gateways" type="checkbox" checked=${includeArchived} value="" onInput=${setIncludeArchived} />
    <${ErrorBox} error=${error} />
    ${loading && !data ? html`<${Loading} />` : null}
    ${
      data
        ? html`<${Table}
            caption="Gateways"
            rows=${data.items}
            empty="No gateways yet."
            columns=${[
              { label: 'Name', render: (g) => html`<a href=${hrefOf('gateways', { open: g.guid })} onClick=${opener.opened}>${g.name}</a>` },
              { label: 'Enabled', render: (g) => (g.enabled ? 'yes' : 'no') },
              ...(includeArchived ? [{ label: 'Archived', render: (g) => (archived(g) ? 'yes' : 'no') }] : []),
              { label: 'Connect URL', render: (g) => html`<code class="url">${g.url}</code>` },
            ]}
          />`
        : null
    }
    ${
      open && known
        ? html`<${GatewayDetail}
            key=${open.guid}
            gateway=${open}
            archived=${archived(open)}
            servers=${servers}
            onChange=${reload}
            onClose=${close}
            archivedHere=${archivedHere}
          />`
        : null
    }
    ${missing && includeArchived ? html`<p class="notice" role="status">The gateway this link opens is not one of this workspace's.</p>` : null}
    <${Form}
      title="Create a gateway"
      submit="Create gateway"
      action=${act('create_gateway', { name })}
      onDone=${(g) => (setName(''), reload(), navigate('gateways', { open: g.guid }))}
    >
      <${Field} label="Gateway name" name="name" value=${name} onInput=${setName} required />
    <//>
  </section>`;
}
