import { html } from 'htm/preact';
import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { call, onRightsMayHaveChanged, onUnauthenticated, token } from './api.js';
import { ErrorBox, Session } from './ui.js';
import { Overview } from './pages/overview.js';
import { Logs } from './pages/logs.js';
import { Alerts } from './pages/alerts.js';
import { Servers } from './pages/servers.js';
import { Gateways } from './pages/gateways.js';
import { Hosts } from './pages/hosts.js';
import { People } from './pages/people.js';
import { Audit } from './pages/audit.js';
import { Settings } from './pages/settings.js';

const PAGES = [
  ['overview', 'Overview', Overview],
  ['logs', 'Logs', Logs],
  ['alerts', 'Alerts', Alerts],
  ['servers', 'Servers', Servers],
  ['gateways', 'Gateways', Gateways],
  ['hosts', 'Hosts', Hosts],
  ['people', 'People', People],
  ['audit', 'Audit', Audit],
  ['settings', 'Settings', Settings],
];

/** The page and its parameters, from the URL's hash (see nav.js). */
function parseHash() {
  const [path, query = ''] = location.hash.replace(/^#\/?/, '').split('?');
  return { page: PAGES.some((p) => p[0] === path) ? path : 'overview', params: Object.fromEntries(new URLSearchParams(query)) };
}

/** Why the console is back at sign-in, when it is not the first visit or a sign-out. */
const ENDED = 'Your session ended: the access token is no longer accepted (revoked, expired, or its user deactivated). Sign in again.';

function SignIn({ onSignedIn, notice }) {
  const [value, setValue] = useState('');
  const [error, setError] = useState(null);
  // The page is there to take a token: its box has the focus, as the page opens and after a session ends.
  const input = useRef(null);
  useEffect(() => input.current?.focus(), []);
  const submit = async (e) => {
    e.preventDefault();
    setError(null);
    token.set(value.trim());
    try {
      onSignedIn(await call('whoami'));
    } catch (err) {
      token.clear();
      // The API's words for a refused token are for programs; a person at the form is told plainly.
      setError(err.status === 401 ? { problem: { detail: 'This access token is not accepted: check it, or create a new one.' } } : err);
    }
  };
  return html`<main class="signin">
    <form onSubmit=${submit} aria-label="Sign in" class="card">
      <h1>MCP gateway manager</h1>
      ${notice ? html`<div class="notice" role="alert">${notice}</div>` : null}
      <p>Sign in with an access token (svcp_…). It is kept in this tab only.</p>
      <div class="field">
        <label for="access-token">Access token</label>
        <input id="access-token" ref=${input} type="password" autocomplete="off" value=${value} onInput=${(e) => setValue(e.currentTarget.value)} required />
      </div>
      <${ErrorBox} error=${error} />
      <button type="submit">Sign in</button>
    </form>
  </main>`;
}

function Shell({ me, labels, onSignOut, signedInHere }) {
  const [route, setRoute] = useState(parseHash());
  useEffect(() => {
    const update = () => setRoute(parseHash());
    addEventListener('hashchange', update);
    return () => removeEventListener('hashchange', update);
  }, []);
  // After moving to another page (not on the first one, unless the sign-in form just went
  // with the focus in it), focus goes to its heading, so a keyboard or screen-reader user
  // starts there rather than back at the top (or nowhere: <body>).
  const main = useRef(null);
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      if (!signedInHere) return;
    }
    const heading = main.current?.querySelector('h1');
    heading?.setAttribute('tabindex', '-1');
    heading?.focus();
  }, [route.page]);
  const Page = PAGES.find((p) => p[0] === route.page)[2];
  return html`<${Session.Provider} value=${{ me, labels }}>
    <div class="shell">
      <header>
        <span class="brand">MCP gateway manager</span>
        <nav aria-label="Main">
          ${PAGES.map(([key, label]) => html`<a href=${`#/${key}`} aria-current=${route.page === key ? 'page' : undefined}>${label}</a>`)}
        </nav>
        <span class="who" title=${`${me.user.emailAddress} · ${me.organization.name}`}>
          <span>${me.user.emailAddress}</span>
          <span>${me.organization.name}</span>
        </span>
        <button type="button" class="signout" onClick=${onSignOut}>Sign out</button>
      </header>
      <main id="page" ref=${main}>
        <${Page} params=${route.params} />
      </main>
    </div>
  <//>`;
}

function App() {
  const [me, setMe] = useState(null);
  const [labels, setLabels] = useState(new Map());
  const [checking, setChecking] = useState(Boolean(token.get()));
  const [notice, setNotice] = useState(null);
  // Signed in by the form in this document (not a token kept from before a reload).
  const [signedInHere, setSignedInHere] = useState(false);
  // The check of a kept token failed for another reason than the token (the service unreachable): retried, not signed out.
  const [unreachable, setUnreachable] = useState(null);
  const signOut = () => {
    token.clear();
    setNotice(null);
    setMe(null);
  };
  const check = () => {
    setUnreachable(null);
    setChecking(true);
    call('whoami')
      .then(setMe, (err) => (err.status === 401 ? setNotice(ENDED) : setUnreachable(err)))
      .finally(() => setChecking(false));
  };
  // Whether a session is on (a 401 then ends it, which the sign-in form says; a wrong token at sign-in is its own error).
  const signedIn = useRef(false);
  signedIn.current = me !== null;
  useEffect(() => {
    onUnauthenticated(() => {
      if (signedIn.current) setNotice(ENDED);
      setMe(null);
    });
    // What the console offers follows the caller's capabilities: read them again when they may have changed.
    onRightsMayHaveChanged(() => {
      // Kept as it was when nothing changed: the pages then have nothing to redraw.
      if (signedIn.current)
        call('whoami').then(
          (next) => setMe((prev) => (JSON.stringify(prev) === JSON.stringify(next) ? prev : next)),
          () => undefined,
        );
    });
    if (token.get()) check();
  }, []);
  useEffect(() => {
    if (!me) return;
    call('list_capabilities').then(
      (r) => setLabels(new Map(r.groups.flatMap((g) => g.capabilities.map((c) => [c.key, c.label])))),
      () => undefined,
    );
  }, [me]);
  if (checking && !me) return html`<p class="loading" role="status">Loading…</p>`;
  if (unreachable && !me)
    return html`<main class="signin">
      <div class="card">
        <${ErrorBox} error=${unreachable} />
        <button type="button" onClick=${check}>Try again</button>
      </div>
    </main>`;
  if (!me)
    return html`<${SignIn}
      notice=${notice}
      onSignedIn=${(who) => {
        setNotice(null);
        setSignedInHere(true);
        setMe(who);
        setChecking(false);
      }}
    />`;
  return html`<${Shell} me=${me} labels=${labels} onSignOut=${signOut} signedInHere=${signedInHere} />`;
}

const root = document.getElementById('root');
// The static "Loading" placeholder goes: Preact diffs against what it finds in the container.
root.textContent = '';
render(html`<${App} />`, root);
