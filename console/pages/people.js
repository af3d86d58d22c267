import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { call } from '../api.js';
import { ActionButton, ErrorBox, Field, Form, Loading, RenameButton, SavedSelect, Table, act, useAllowed, useCall } from '../ui.js';

/** Capability checkboxes, grouped as list_capabilities groups them (a group with no key for this workspace, Partner Portal outside a partner workspace, is left out). */
function CapabilityChecks({ groups, selected, onChange, idPrefix }) {
  const toggle = (key, on) => onChange(on ? [...selected, key] : selected.filter((k) => k !== key));
  return html`<div class="capabilities">
    ${groups
      .filter((g) => g.capabilities.length > 0)
      .map(
        (g) =>
          html`<fieldset>
            <legend>${g.name}</legend>
            ${g.capabilities.map(
              (c) =>
                html`<label class="check" title=${c.description}>
                  <input
                    type="checkbox"
                    id=${`${idPrefix}-${c.key}`}
                    checked=${selected.includes(c.key)}
                    onChange=${(e) => toggle(c.key, e.currentTarget.checked)}
                  />
                  ${c.label}
                </label>`,
            )}
          </fieldset>`,
      )}
  </div>`;
}

/** The API's grants map: every capability the page shows, 'true' when checked (modify_role merges, so unchecked ones say 'false'). */
const grantsMap = (groups, selected) =>
  Object.fromEntries(groups.flatMap((g) => g.capabilities.map((c) => [c.key, selected.includes(c.key) ? 'true' : 'false'])));

/** The roles (`roles`: the page's one list_roles, which the users' role choices read too). */
function Roles({ groups, roles }) {
  const [name, setName] = useState('');
  const [grants, setGrants] = useState([]);
  const [editing, setEditing] = useState(null);
  const canDelete = useAllowed('delete_role');
  // The role being deleted, and the role its users move to (delete_role requires one).
  const [deleting, setDeleting] = useState(null);
  const [heir, setHeir] = useState('');
  return html`<section aria-labelledby="roles-title">
    <h2 id="roles-title">Roles</h2>
    <${ErrorBox} error=${roles.error} />
    ${
      roles.data
        ? html`<${Table}
            caption="Roles"
            rows=${roles.data.items}
            columns=${[
              { label: 'Role', render: (r) => r.name },
              { label: 'Capabilities', render: (r) => r.grantedCapabilities.length },
              {
                label: 'Actions',
                render: (r) =>
                  html`<button type="button" onClick=${() => setEditing({ ...r })}>Edit ${r.name}</button>
                    ${canDelete ? html`<button type="button" class="danger" onClick=${() => setDeleting(r)}>Delete ${r.name}</button>` : null}`,
              },
            ]}
          />`
        : null
    }
    ${
      editing && groups
        ? html`<${Form}
            key=${editing.guid}
            title=${`Edit role ${editing.name}`}
            submit="Save role"
            action=${act('modify_role', { roleGuid: editing.guid, grants: grantsMap(groups, editing.grantedCapabilities) })}
            onDone=${() => (setEditing(null), roles.reload())}
            onCancel=${() => setEditing(null)}
          >
            <${CapabilityChecks}
              groups=${groups}
              selected=${editing.grantedCapabilities}
              onChange=${(g) => setEditing({ ...editing, grantedCapabilities: g })}
              idPrefix="edit"
            />
          <//>`
        : null
    }
    ${
      deleting && roles.data
        ? html`<${Form}
            key=${deleting.guid}
            title=${`Delete role ${deleting.name}`}
            submit=${`Delete ${deleting.name} and move its users`}
            action=${act('delete_role', { roleGuid: deleting.guid, reassignToRoleGuid: heir })}
            onDone=${() => (setDeleting(null), setHeir(''), roles.reload())}
            onCancel=${() => (setDeleting(null), setHeir(''))}
          >
            <${Field}
              label="Move its users to"
              name="reassignToRoleGuid"
              as="select"
              value=${heir}
              options=${[['', 'choose a role'], ...roles.data.items.filter((r) => r.guid !== deleting.guid).map((r) => [r.guid, r.name])]}
              onInput=${setHeir}
              required
            />
          <//>`
        : null
    }
    ${
      groups
        ? html`<${Form}
            title="Create a role"
            submit="Create role"
            action=${act('create_role', { name, grants: grantsMap(groups, grants) })}
            onDone=${() => (setName(''), setGrants([]), roles.reload())}
          >
            <${Field} label="Role name" name="name" value=${name} onInput=${setName} required />
            <${CapabilityChecks} groups=${groups} selected=${grants} onChange=${setGrants} idPrefix="new" />
          <//>`
        : null
    }
  </section>`;
}

/** The teams (`teams`: the page's one list_teams, which the users' team choices read too). */
function Teams({ teams, onChange }) {
  const [name, setName] = useState('');
  const canAct = [useAllowed('rename_team'), useAllowed('delete_team')].some(Boolean);
  return html`<section aria-labelledby="teams-title">
    <h2 id="teams-title">Teams</h2>
    <${ErrorBox} error=${teams.error} />
    ${
      teams.data
        ? html`<${Table}
            caption="Teams"
            rows=${teams.data.items}
            columns=${[
              { label: 'Team', render: (t) => t.name },
              {
                label: 'Actions',
                hidden: !canAct,
                render: (t) =>
                  html`<${RenameButton}
                      name=${t.name}
                      op="rename_team"
                      rename=${(newName) => call('rename_team', { teamGuid: t.guid, newName })}
                      onDone=${onChange}
                    />
                    <${ActionButton} label=${`Delete ${t.name}`} danger action=${act('delete_team', { teamGuid: t.guid })} onDone=${onChange} />`,
              },
            ]}
          />`
        : null
    }
    <${Form} title="Create a team" submit="Create team" action=${act('create_team', { name })} onDone=${() => (setName(''), onChange())}>
      <${Field} label="Team name" name="name" value=${name} onInput=${setName} required />
    <//>
  </section>`;
}

/** A user's teams, as checkboxes, saved with set_user_teams (exactly the ticked set). */
function UserTeams({ user, teams, onDone, onCancel }) {
  const [ticked, setTicked] = useState(user.teamGuids);
  return html`<${Form}
    title=${`Teams of ${user.emailAddress}`}
    submit="Save teams"
    action=${act('set_user_teams', { userGuid: user.guid, teamGuids: ticked.join(',') })}
    onDone=${onDone}
    onCancel=${onCancel}
  >
    <fieldset>
      <legend>Teams</legend>
      ${teams.map(
        (team) =>
          html`<${Field}
            label=${team.name}
            type="checkbox"
            checked=${ticked.includes(team.guid)}
            value=""
            onInput=${(on) => setTicked(on ? [...ticked, team.guid] : ticked.filter((g) => g !== team.guid))}
          />`,
      )}
    </fieldset>
  <//>`;
}

/** The roles the listed users hold, as list_roles names them ({guid, name}), by name. */
const rolesOfUsers = (users) =>
  [...new Map(users.filter((u) => u.roleGuid).map((u) => [u.roleGuid, { guid: u.roleGuid, name: u.roleName }])).values()].sort((a, b) =>
    a.name.localeCompare(b.name),
  );

function Users({ roles, reloadRoles, teams, reloadTeams }) {
  // A control for what the caller may not do is not offered (its form would show nothing).
  const canSetTeams = useAllowed('set_user_teams');
  const canDeactivate = useAllowed('deactivate_user');
  const users = useCall('list_users', {});
  // The roles a user may be given: list_roles needs manageRoles, which a role that may only
  // invite users or set their roles lacks; it still knows, from the users' list, the roles they hold.
  const choices = roles ?? rolesOfUsers(users.data?.items ?? []);
  const [invite, setInvite] = useState({ email: '', roleGuid: '' });
  const [editingTeams, setEditingTeams] = useState(null);
  // The user last invited: the interface gives nobody a token for someone else, so the page says how they get one.
  const [invited, setInvited] = useState(null);
  const teamName = (guid) => teams?.find((t) => t.guid === guid)?.name ?? guid;
  return html`<section aria-labelledby="users-title">
    <h2 id="users-title">Users</h2>
    <${ErrorBox} error=${users.error} />
    ${
      users.data
        ? html`<${Table}
            caption="Users"
            rows=${users.data.items}
            columns=${[
              { label: 'Email', render: (u) => u.emailAddress },
              { label: 'Name', render: (u) => u.displayName },
              {
                label: 'Role',
                render: (u) =>
                  choices.length > 0
                    ? html`<${SavedSelect}
                        label=${`Role of ${u.emailAddress}`}
                        value=${u.roleGuid}
                        options=${choices.map((r) => [r.guid, r.name])}
                        op="set_user_role"
                        save=${(roleGuid) => call('set_user_role', { userGuid: u.guid, roleGuid })}
                        onSaved=${users.reload}
                      />`
                    : u.roleName,
              },
              {
                label: 'Teams',
                render: (u) =>
                  html`${u.teamGuids.map(teamName).join(', ') || '—'}
                  ${teams && canSetTeams ? html` <button type="button" class="link" onClick=${() => setEditingTeams(u)}>Edit teams of ${u.emailAddress}</button>` : null}`,
              },
              { label: 'Active', render: (u) => (u.isActive ? 'yes' : 'no') },
              {
                label: 'Actions',
                hidden: !canDeactivate,
                render: (u) =>
                  u.isActive
                    ? html`<${ActionButton}
                        label=${`Deactivate ${u.emailAddress}`}
                        danger
                        action=${act('deactivate_user', { userGuid: u.guid })}
                        onDone=${users.reload}
                      />`
                    : null,
              },
            ]}
          />`
        : null
    }
    ${
      editingTeams && teams
        ? html`<${UserTeams}
            key=${editingTeams.guid}
            user=${editingTeams}
            teams=${teams}
            onDone=${() => (setEditingTeams(null), users.reload(), reloadTeams())}
            onCancel=${() => setEditingTeams(null)}
          />`
        : null
    }
    ${
      users.data
        ? html`<${Form}
            title="Invite a user"
            submit="Invite user"
            action=${act('invite_user', { email: invite.email, ...(invite.roleGuid ? { roleGuid: invite.roleGuid } : {}) })}
            onDone=${(r) => (setInvite({ email: '', roleGuid: '' }), setInvited(r), users.reload(), reloadRoles())}
          >
            <${Field} label="Email" name="email" type="email" value=${invite.email} onInput=${(v) => setInvite({ ...invite, email: v })} required />
            <${Field}
              label="Role"
              name="roleGuid"
              as="select"
              value=${invite.roleGuid}
              options=${[['', 'Member (no capabilities)'], ...choices.map((r) => [r.guid, r.name])]}
              onInput=${(v) => setInvite({ ...invite, roleGuid: v })}
              hint="An invited user starts with no capabilities unless you pick a role."
            />
          <//>`
        : null
    }
    ${invited ? html`<${Invited} email=${invited.email} userGuid=${invited.userGuid} />` : null}
  </section>`;
}

/** After an invitation: nothing is sent, and only the operator's CLI makes a first token for another user. */
function Invited({ email, userGuid }) {
  return html`<div class="notice" role="status">
    <p>${email} is invited. Nothing is sent to them: they sign in with an access token of their own, which the operator of this service makes with</p>
    <pre><code>npm run admin -- create-token --user ${userGuid} --label console</code></pre>
    <p>Once signed in, they make further tokens under Settings, and gateway tokens on a gateway's page.</p>
  </div>`;
}

export function People() {
  const capabilities = useCall('list_capabilities', {});
  const roles = useCall('list_roles', {});
  const teams = useCall('list_teams', {});
  return html`<section aria-labelledby="people-title">
    <h1 id="people-title">People</h1>
    ${capabilities.loading ? html`<${Loading} />` : null}
    <${Users} roles=${roles.data?.items} reloadRoles=${roles.reload} teams=${teams.data?.items} reloadTeams=${teams.reload} />
    <${Teams} teams=${teams} onChange=${teams.reload} />
    <${Roles} groups=${capabilities.data?.groups} roles=${roles} />
  </section>`;
}
