import { html } from 'htm/preact';
import { createContext } from 'preact';
import { useCallback, useContext, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ApiError, call, capabilityOf, loadedCapabilityOf } from './api.js';
import { navigate } from './nav.js';

/** What every page may read: the caller (whoami) and the capability labels (list_capabilities). */
export const Session = createContext({ me: null, labels: new Map() });
export const useSession = () => useContext(Session);

/**
 * Calls an operation as `me` may: one the caller's role does not allow is not asked of
 * the service, and fails with the refusal the service would answer.
 */
async function callAsAllowed(me, name, input) {
  const capability = await capabilityOf(name);
  if (capability && me && !me.capabilities.includes(capability))
    throw new ApiError(403, { code: 'missing_capability', capability, detail: `This needs the capability ${capability}.` });
  return call(name, input);
}

/**
 * Calls an operation when the inputs change (and on reload()); `input` null skips the
 * call. Returns {data, error, loading, reload}. An operation the caller's role does not
 * allow is not called: its error is the refusal the service would answer.
 */
export function useCall(name, input, deps = []) {
  const [state, setState] = useState({ data: null, error: null, loading: input !== null });
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((n) => n + 1), []);
  const { me } = useSession();
  const rights = me ? me.capabilities.join(',') : null;
  useEffect(() => {
    if (input === null) return undefined;
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    callAsAllowed(me, name, input).then(
      (data) => live && setState({ data, error: null, loading: false }),
      (error) => live && setState({ data: null, error, loading: false }),
    );
    return () => {
      live = false;
    };
  }, [name, JSON.stringify(input), tick, rights, ...deps]);
  return { ...state, reload };
}

/**
 * The end of a page's "last N" time window: now, as of the view's parameters (another
 * range or filter moves it; paging, `skip`, keeps it so pages do not shift) or the last
 * refresh(). Returns [now, refresh].
 */
export function useWindowEnd(params) {
  const [refreshed, setRefreshed] = useState(0);
  const { skip: _, ...view } = params;
  const now = useMemo(() => Date.now(), [JSON.stringify(view), refreshed]);
  return [now, useCallback(() => setRefreshed((n) => n + 1), [])];
}

/**
 * An operation's call as a control's action: `op` tells the control what it needs
 * (useAllowed). `input` is the input, or a function making it as the action runs, which
 * may refuse it (throw a `refusal`) before anything is sent.
 */
export const act = (op, input = {}) => Object.assign(async () => call(op, typeof input === 'function' ? input() : input), { op });

/** A refusal by the console itself, before anything is sent, shaped as the service's problem so that ErrorBox shows it alike. */
export const refusal = (detail, errors) => Object.assign(new Error(detail), { problem: { detail, ...(errors ? { errors } : {}) } });

/**
 * Whether the signed-in caller may run the operation `op`: the capability the service's
 * OpenAPI document names for it, against those whoami gave. A control for what the
 * caller may not do is not shown (it could only be refused). True while unknown.
 */
export function useAllowed(op) {
  const { me } = useSession();
  const [loaded, setLoaded] = useState(undefined);
  const known = op ? loadedCapabilityOf(op) : null;
  useEffect(() => {
    if (!op || known !== undefined) return undefined;
    let live = true;
    capabilityOf(op).then((c) => live && setLoaded(c));
    return () => {
      live = false;
    };
  }, [op, known]);
  const capability = known ?? loaded;
  if (!capability || !me) return true;
  return me.capabilities.includes(capability);
}

/** Re-runs `fn` every `ms` while the page is shown; `ms` null pauses it. */
export function useInterval(fn, ms) {
  const saved = useRef(fn);
  saved.current = fn;
  useEffect(() => {
    if (ms === null) return undefined;
    const id = setInterval(() => saved.current(), ms);
    return () => clearInterval(id);
  }, [ms]);
}

/**
 * A refused input's errors ({path, message}) and whether ErrorBox lists them: one error
 * the detail already words ("newName: too long") is not said twice.
 */
function errorsOf(error) {
  const problem = error?.problem ?? {};
  const detail = problem.detail ?? error?.message;
  const errors = Array.isArray(problem.errors) ? problem.errors : [];
  const listed = errors.length > 1 || (errors.length === 1 && !String(detail).includes(errors[0].message));
  return { detail, errors, listed };
}

/**
 * An API failure as a person reads it: a missing capability by its label, anything else
 * by the problem's detail. `id` names the box, and its errors `<id>-<n>`, for the fields
 * they are about (a Form's Field points at its own: aria-describedby).
 */
export function ErrorBox({ error, id }) {
  const { labels } = useSession();
  if (!error) return null;
  const problem = error.problem ?? {};
  if (problem.code === 'missing_capability') {
    const label = labels.get(problem.capability) ?? problem.capability;
    return html`<div class="notice" role="alert" id=${id}>
      <strong>Your role does not allow this.</strong> It needs the capability “${label}”, which your role does not grant. Ask an administrator.
    </div>`;
  }
  // A refused input names each field and what is wrong with it: the detail alone ("2 invalid parameters: a, b") says only which.
  const { detail, errors, listed } = errorsOf(error);
  return html`<div class="error" role="alert" id=${id}>
    ${detail}
    ${
      listed
        ? html`<ul>
            ${errors.map((e, i) => html`<li id=${id ? `${id}-${i}` : undefined}><code>${e.path}</code>: ${e.message}</li>`)}
          </ul>`
        : null
    }
  </div>`;
}

/**
 * Within a Form: the ids of the error messages about the input field `name` (the first
 * part of an error's path: "headers.X-Key" is about "headers"), none when it has none.
 */
const FieldErrors = createContext(() => []);

/** A control's attributes for the errors `errorIds` about it: invalid, described by them (after its own `described` ids: a hint). */
function invalidity(errorIds, described = []) {
  const describedBy = [...described, ...errorIds].join(' ');
  return { ...(describedBy ? { 'aria-describedby': describedBy } : {}), ...(errorIds.length ? { 'aria-invalid': 'true' } : {}) };
}

/** `error`'s errors by field: from a field's name to the ids of the messages about it, in the ErrorBox `boxId`. */
function fieldErrorsOf(error, boxId) {
  const { errors, listed } = errorsOf(error);
  return (name) =>
    name && error?.problem?.code !== 'missing_capability'
      ? errors.flatMap((e, i) => (String(e.path).split(/[.[]/)[0] === name ? [listed ? `${boxId}-${i}` : boxId] : []))
      : [];
}

/**
 * A detail panel: brought into view with the focus on its heading (its first h2 or h3,
 * tabindex -1) whenever `key` changes (null: not yet shown); Escape closes it, unless a
 * control inside took that Escape for itself (an editor, a confirmation, a rename box).
 */
export function useDetailPanel(key, onClose) {
  const ref = useRef(null);
  useEffect(() => {
    if (key === null) return;
    ref.current?.scrollIntoView?.({ block: 'start' });
    ref.current?.querySelector('h2, h3')?.focus();
  }, [key]);
  return { ref, onKeyDown: (e) => e.key === 'Escape' && !e.defaultPrevented && onClose() };
}

/** Escape closes what `close` closes, and no panel around it (useDetailPanel). */
const onEscape = (close) => (e) => {
  if (e.key !== 'Escape') return;
  e.preventDefault();
  close();
};

/** The control that opened a detail gets the focus back when it closes: `opened(event)` as it opens, `refocus()` once closed. */
export function useOpener() {
  const opener = useRef(null);
  return {
    opened: (e) => {
      opener.current = e.currentTarget;
    },
    refocus: () => opener.current?.focus(),
  };
}

export const Loading = () => html`<p class="loading" role="status">Loading…</p>`;

/**
 * A table: columns [{label, render(row), num, hidden}]; `num` columns hold figures
 * (aligned right, never wrapped); a `hidden` one is left out (an Actions column for a
 * role that may do none of them).
 */
export function Table({ caption, columns: all, rows, empty = 'Nothing here yet.', rowKey = (r) => r.guid ?? r.id }) {
  if (!rows) return null;
  const columns = all.filter((c) => !c.hidden);
  return html`<div class="table-wrap">
    <table>
      <caption>
        ${caption}
      </caption>
      <thead>
        <tr>
          ${columns.map((c) => html`<th scope="col" class=${c.num ? 'num' : undefined}>${c.label}</th>`)}
        </tr>
      </thead>
      <tbody>
        ${
          rows.length === 0
            ? html`<tr>
                <td colspan=${columns.length} class="empty">${empty}</td>
              </tr>`
            : rows.map(
                (row) =>
                  html`<tr key=${rowKey(row)}>
                    ${columns.map((c) => html`<td class=${c.num ? 'num' : undefined}>${c.render(row)}</td>`)}
                  </tr>`,
              )
        }
      </tbody>
    </table>
  </div>`;
}

/**
 * Previous and Next for a list read `size` rows at a time from `skip` (`nextSkip`: the
 * API's, null on the last page): the view's `params` in the URL, with `skip` changed.
 */
export function Pager({ page, params, skip, size, nextSkip }) {
  const previous = useRef(null);
  const next = useRef(null);
  // The button last pressed: on the first or last page it is disabled, and the focus it
  // held would fall to <body>; it goes to the other button instead.
  const pressed = useRef(null);
  useEffect(() => {
    if (!pressed.current) return;
    const [button, other] = pressed.current === next ? [next.current, previous.current] : [previous.current, next.current];
    if (!button?.disabled) return;
    const doc = button.ownerDocument;
    // Moved elsewhere meanwhile: left there.
    if (doc.activeElement !== doc.body && doc.activeElement !== button) pressed.current = null;
    // The other one may still wait for the new page's answer (Next, until it says whether there is more).
    else if (other && !other.disabled) {
      pressed.current = null;
      other.focus();
    }
  }, [skip, nextSkip]);
  const go = (which, to) => () => {
    pressed.current = which;
    navigate(page, { ...params, skip: to });
  };
  return html`<div class="pager">
    <button ref=${previous} type="button" disabled=${skip === 0} onClick=${go(previous, Math.max(0, skip - size))}>Previous page</button>
    <button ref=${next} type="button" disabled=${nextSkip === null} onClick=${go(next, nextSkip)}>Next page</button>
  </div>`;
}

/**
 * A labelled input; `as` picks input, select or textarea. `name` is the input field of
 * the operation it fills: in a Form whose action was refused, an error about that field
 * marks it invalid and describes it (the message, said with the label).
 */
export function Field({ label, as = 'input', options, value, onInput, hint, name, ...rest }) {
  const id = useRef(`f-${Math.random().toString(36).slice(2, 9)}`).current;
  const errorIds = useContext(FieldErrors)(name);
  const set = (e) => onInput(e.currentTarget.type === 'checkbox' ? e.currentTarget.checked : e.currentTarget.value);
  // The hint is the control's description: a screen reader says it with the label, as the eye reads it below.
  const described = { name, ...invalidity(errorIds, hint ? [`${id}-hint`] : []) };
  // A checkbox reads best with its label beside it.
  if (rest.type === 'checkbox')
    return html`<label class="check"
      ><input type="checkbox" checked=${rest.checked} onChange=${set} disabled=${rest.disabled} ...${described} />${label}</label
    >`;
  let control;
  if (as === 'select') {
    control = html`<select id=${id} value=${value} onChange=${set} ...${described} ...${rest}>
      ${options.map(([v, text]) => html`<option value=${v} selected=${v === value}>${text}</option>`)}
    </select>`;
  } else if (as === 'textarea') {
    control = html`<textarea id=${id} value=${value} onInput=${set} ...${described} ...${rest} />`;
  } else {
    control = html`<input id=${id} value=${value} onInput=${set} ...${described} ...${rest} />`;
  }
  return html`<div class="field"><label for=${id}>${label}</label>${control}${hint ? html`<small id=${`${id}-hint`}>${hint}</small>` : null}</div>`;
}

/**
 * A select whose choice is saved at once (`save(value)`): the stored value is shown
 * again, with why, when saving fails (a refusal must not look saved).
 */
export function SavedSelect({ label, value, options, save, op, onSaved }) {
  const [error, setError] = useState(null);
  const [shown, setShown] = useState(value);
  useEffect(() => setShown(value), [value]);
  // What the caller may not change is shown as text.
  if (!useAllowed(op)) return html`<span aria-label=${label}>${options.find(([v]) => v === value)?.[1] ?? value}</span>`;
  const choose = async (next) => {
    setError(null);
    setShown(next);
    try {
      await save(next);
      onSaved?.();
    } catch (err) {
      setShown(value);
      setError(err);
    }
  };
  return html`<div class="saved-select">
    <${Field} label=${label} as="select" value=${shown} options=${options} onInput=${choose} />${error ? html`<${ErrorBox} error=${error} />` : null}
  </div>`;
}

/**
 * A form whose submit runs `action` and shows its error; `children` are the fields. An
 * error whose path names a Field's `name` marks that field invalid, described by it,
 * until the next submit. With `onCancel` it is an editor opened by a button: it takes
 * the focus, offers "Cancel" (Escape too), and gives the focus back to that button when
 * it closes.
 */
export function Form({ title, submit, action, children, onDone, onCancel }) {
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const allowed = useAllowed(action.op);
  const ref = useRef(null);
  const errorBox = useRef(`e-${Math.random().toString(36).slice(2, 9)}`).current;
  useEffect(() => {
    const form = ref.current;
    if (!onCancel || !form) return undefined;
    const opener = form.ownerDocument.activeElement;
    form.scrollIntoView?.({ block: 'nearest' });
    form.querySelector('input, select, textarea, button')?.focus();
    return () => keepFocusOnLeave(form, opener, true);
  }, []);
  const run = async (e) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const result = await action();
      onDone?.(result);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  if (!allowed) return null;
  return html`<form class="card" ref=${ref} onSubmit=${run} aria-label=${title} onKeyDown=${onCancel ? onEscape(onCancel) : undefined}>
    ${title ? html`<h3>${title}</h3>` : null}
    <${FieldErrors.Provider} value=${fieldErrorsOf(error, errorBox)}>${children}<//>
    <${ErrorBox} error=${error} id=${errorBox} />
    <div class="buttons">
      <button type="submit" disabled=${busy}>${submit}</button>
      ${onCancel ? html`<button type="button" onClick=${onCancel}>Cancel</button>` : null}
    </div>
  </form>`;
}

/**
 * When `element` leaves the page holding the focus, the focus goes to `next` if it is
 * still there, else to the caption of the table `element` was in, else to the page's
 * heading: never to <body>, where a keyboard user would start again from the top.
 * `orBody`: also when nothing holds the focus (a form's submit button, disabled while
 * it runs, may have lost it).
 */
function keepFocusOnLeave(element, next, orBody = false) {
  const doc = element.ownerDocument;
  if (!element.contains(doc.activeElement) && !(orBody && doc.activeElement === doc.body)) return;
  const caption = element.closest('table')?.querySelector('caption');
  // Once it has left (this runs as it leaves): unless something else has taken the focus meanwhile.
  setTimeout(() => {
    if (doc.activeElement && doc.activeElement !== doc.body) return;
    const target = [next, caption, doc.querySelector('main h1')].find((e) => e?.isConnected && e !== doc.body);
    if (!target) return;
    if (target !== next) target.setAttribute('tabindex', '-1');
    target.focus();
  });
}

/**
 * A control that opens in place of its button: while `open` the focus goes to the
 * `inside` element (`enter` it, focus by default); once closed, back to the `trigger`
 * button (if it is still there). Returns [inside, trigger] refs.
 */
function useFocusSwap(open, enter = (element) => element.focus()) {
  const inside = useRef(null);
  const trigger = useRef(null);
  const wasOpen = useRef(false);
  useEffect(() => {
    if (open) {
      wasOpen.current = true;
      if (inside.current) enter(inside.current);
    } else if (wasOpen.current) {
      wasOpen.current = false;
      trigger.current?.focus();
    }
  }, [open]);
  return [inside, trigger];
}

/**
 * A button that runs an operation and shows its failure next to it. A `danger` one
 * (the operations that delete, archive, revoke, deactivate, disable or remove) asks
 * first, in place: "Yes, <label>" runs it, "Cancel" puts the button back; `warning`
 * says what else it does (revoking the token this tab is signed in with, say).
 */
export function ActionButton({ label, action, onDone, danger = false, warning, done }) {
  const [error, setError] = useState(null);
  const [asking, setAsking] = useState(false);
  const [said, setSaid] = useState(null);
  // The question takes the focus, and gives it back to the button when answered.
  const [confirmRef, triggerRef] = useFocusSwap(asking);
  const allowed = useAllowed(action.op);
  // What it did may remove it with its row (delete, revoke, archive): the focus then goes to the table's caption or the page's heading.
  const root = useRef(null);
  useEffect(() => () => root.current && keepFocusOnLeave(root.current), []);
  const run = async () => {
    setAsking(false);
    setError(null);
    setSaid(null);
    try {
      const result = await action();
      // What happened, when the page shows no state that would say it (`done`: a text, or one made from the result).
      if (done) setSaid(typeof done === 'function' ? done(result) : done);
      onDone?.(result);
    } catch (err) {
      setError(err);
    }
  };
  if (!allowed) return null;
  const failure = error ? html`<${ErrorBox} error=${error} />` : said ? html`<span class="done" role="status">${said}</span>` : null;
  if (asking)
    return html`<span ref=${root} class="action confirm" role="group" aria-label=${`Confirm: ${label}`} onKeyDown=${onEscape(() => setAsking(false))}
      >${warning ? html`<span class="warning">${warning}</span>` : null}<button ref=${confirmRef} type="button" class="danger" onClick=${run}>
        Yes, ${label}</button
      ><button type="button" onClick=${() => setAsking(false)}>Cancel</button></span
    >`;
  return html`<span ref=${root} class="action"
    ><button ref=${triggerRef} type="button" class=${danger ? 'danger' : ''} onClick=${danger ? () => setAsking(true) : run}>${label}</button>${failure}</span
  >`;
}

/**
 * "Rename <name>": opens a box with the name in place of the button; Enter or "Save name"
 * runs `rename(newName)`, Escape or "Cancel" puts the button back (focus returns to it).
 * `op` tells whether the caller may rename (useAllowed).
 */
export function RenameButton({ name, op, rename, onDone }) {
  const allowed = useAllowed(op);
  const [editing, setEditing] = useState(false);
  const [value, setValue] = useState(name);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const [inputRef, triggerRef] = useFocusSwap(editing, (input) => input.select());
  const id = useRef(`r-${Math.random().toString(36).slice(2, 9)}`).current;
  if (!allowed) return null;
  const close = () => (setEditing(false), setError(null));
  const save = async (e) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const result = await rename(value.trim());
      setEditing(false);
      onDone?.(result);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  if (!editing)
    return html`<span class="action"
      ><button ref=${triggerRef} type="button" onClick=${() => (setValue(name), setEditing(true))}>Rename ${name}</button></span
    >`;
  return html`<form class="action rename" aria-label=${`Rename ${name}`} onSubmit=${save} onKeyDown=${onEscape(close)}>
    <label for=${id}>New name for ${name}</label>
    <input
      id=${id}
      ref=${inputRef}
      value=${value}
      onInput=${(e) => setValue(e.currentTarget.value)}
      required
      ...${invalidity(fieldErrorsOf(error, `${id}-error`)('newName'))}
    />
    <button type="submit" disabled=${busy}>Save name</button>
    <button type="button" onClick=${close}>Cancel</button>
    <${ErrorBox} error=${error} id=${`${id}-error`} />
  </form>`;
}

/**
 * "Disable <name>" or "Enable <name>", as the thing is now: `resource` names its two
 * operations (`enable_<resource>`, `disable_<resource>`), `input` their input.
 * Disabling asks first (`warning`: what else it does); enabling does not.
 */
export function EnableToggle({ name, enabled, resource, input, warning, onDone }) {
  return html`<${ActionButton}
    label=${`${enabled ? 'Disable' : 'Enable'} ${name}`}
    danger=${enabled}
    warning=${enabled ? warning : undefined}
    action=${act(`${enabled ? 'disable' : 'enable'}_${resource}`, input)}
    onDone=${onDone}
  />`;
}

export function CopyButton({ text, label = 'Copy' }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      // Without clipboard access (an http page, a headless browser) the text stays selectable.
    }
    setCopied(true);
  };
  return html`<button type="button" onClick=${copy}>${copied ? 'Copied' : label}</button>`;
}

/** A secret shown once, with a copy button. */
export function ShownOnce({ label, value }) {
  return html`<div class="once" role="status">
    <p><strong>${label}</strong> (shown only now: copy it)</p>
    <code aria-label=${label}>${value}</code>
    <${CopyButton} text=${value} label=${`Copy ${label.toLowerCase()}`} />
  </div>`;
}

/**
 * How each of `items` is named to a person: by `nameOf`, with `idOf` added where two
 * share a name (a user's connections to one gateway are all "<email> via <gateway>"), so
 * that no two controls read the same.
 */
export function distinctNames(items, nameOf, idOf) {
  const counts = new Map();
  for (const item of items) counts.set(nameOf(item), (counts.get(nameOf(item)) ?? 0) + 1);
  return (item) => (counts.get(nameOf(item)) > 1 ? `${nameOf(item)} (${idOf(item)})` : nameOf(item));
}

/** Epoch milliseconds as an ISO text of the browser's local time (no offset): the wall clock there, at that date. */
const localIso = (ms) => new Date(ms - new Date(ms).getTimezoneOffset() * 60_000).toISOString();
/** A time as "YYYY-MM-DD HH:MM:SS" in the browser's time zone (the one the Logs window's From/To boxes use; TimeZoneNote says which). */
export const fmtTime = (iso) => (iso ? localIso(Date.parse(iso)).replace('T', ' ').slice(0, 19) : '—');
/** Says once, where times are shown, that they are in the browser's time zone. */
export const TimeZoneNote = () =>
  html`<p class="tz-note"><small>Times are in your time zone (${Intl.DateTimeFormat().resolvedOptions().timeZone}).</small></p>`;
export const fmtMs = (ms) => (ms == null ? '—' : ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms * 10) / 10} ms`);
export const fmtBytes = (n) => (n >= 1e6 ? `${(n / 1e6).toFixed(1)} MB` : n >= 1e3 ? `${(n / 1e3).toFixed(1)} kB` : `${n} B`);
export const short = (guid) => (guid ? `${guid.slice(0, 8)}…` : '—');

/** Time windows offered by the range pickers, in milliseconds. */
export const RANGES = [
  ['15m', 'Last 15 minutes', 15 * 60_000],
  ['1h', 'Last hour', 3_600_000],
  ['24h', 'Last 24 hours', 86_400_000],
  ['7d', 'Last 7 days', 7 * 86_400_000],
  ['30d', 'Last 30 days', 30 * 86_400_000],
];
export const rangeMs = (key) => (RANGES.find((r) => r[0] === key) ?? RANGES[2])[2];

/**
 * A page's time range and its Refresh: a range chosen goes into the page's URL, back
 * to its first page. `choices`: the ranges offered (RANGES, or more).
 */
export function RangePicker({ page, params, range, onRefresh, choices = RANGES }) {
  return html`<${Field}
      label="Time range"
      as="select"
      value=${range}
      options=${choices.map(([key, label]) => [key, label])}
      onInput=${(v) => navigate(page, { ...params, range: v, skip: '' })}
    />
    <button type="button" onClick=${onRefresh}>Refresh</button>`;
}

/**
 * Epoch milliseconds as a datetime-local input's value (the browser's time zone, to
 * the minute) and back; an empty or invalid value gives null.
 */
export const toLocalInput = (ms) => localIso(ms).slice(0, 16);
export const fromLocalInput = (value) => {
  // A date-time without an offset is read in the local time zone (ECMAScript Date.parse).
  const ms = value ? new Date(value).getTime() : NaN;
  return Number.isFinite(ms) ? ms : null;
};

/**
 * Lines of `Name: value` as a header map. A line that is not one (no colon, no name) is
 * refused rather than dropped, named by its number and its first word only: what
 * follows may be the secret value.
 */
export function parseHeaderLines(text) {
  const out = {};
  const errors = [];
  text.split(/\r?\n/).forEach((line, i) => {
    const at = line.indexOf(':');
    const name = at < 0 ? '' : line.slice(0, at).trim();
    if (name) out[name] = line.slice(at + 1).trim();
    else if (line.trim()) {
      const words = line.trim().split(/\s+/);
      const start = words.length > 1 ? ` (it starts “${words[0]}”)` : '';
      errors.push({ path: 'headers', message: `line ${i + 1} ${at < 0 ? 'has no colon' : 'has no name before its colon'}${start}` });
    }
  });
  if (errors.length) throw refusal('Write each header on a line of its own as Name: value.', errors);
  return out;
}

/**
 * Names for guids, from lists the caller may read (failures leave the guid); the map's
 * `listOf(guid)` tells which list named it.
 */
export function useNames(ops) {
  const [names, setNames] = useState(() => namesFrom([]));
  const { me } = useSession();
  useEffect(() => {
    let live = true;
    Promise.all(
      ops.map(([name, label]) =>
        callAsAllowed(me, name, {}).then(
          (r) => r.items.map((i) => [i.guid, label(i), name]),
          () => [],
        ),
      ),
    ).then((lists) => live && setNames(namesFrom(lists.flat())));
    return () => {
      live = false;
    };
  }, []);
  return names;
}

/** The [guid, name] pairs of `names` (useNames) that the list `op` named, in the order of their names. */
export const choicesOf = (names, op) => [...names.entries()].filter(([guid]) => names.listOf(guid) === op).sort((a, b) => a[1].localeCompare(b[1]));

/**
 * A filter on a guid: a choice by name when its list named anything the caller may read
 * (the value a link brought is kept among the choices), else a box for the id.
 */
export function NamedFilter({ label, value, onInput, choices }) {
  if (choices.length === 0) return html`<${Field} label=${label} value=${value} onInput=${onInput} />`;
  const options = [['', 'any'], ...choices];
  if (value && !choices.some(([guid]) => guid === value)) options.push([value, short(value)]);
  return html`<${Field} label=${label} as="select" value=${value} options=${options} onInput=${onInput} />`;
}

/** A guid-to-name map of [guid, name, list] entries, which also says which list named a guid. */
function namesFrom(entries) {
  const lists = new Map(entries.map(([guid, , list]) => [guid, list]));
  return Object.assign(new Map(entries.map(([guid, name]) => [guid, name])), { listOf: (guid) => lists.get(guid) });
}
