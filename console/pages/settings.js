import { html } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { token } from '../api.js';
import { ActionButton, ErrorBox, Field, Form, Loading, ShownOnce, Table, act, distinctNames, fmtTime, parseHeaderLines, useCall } from '../ui.js';

function Collector() {
  const config = useCall('get_otel_configuration', {});
  // Null until the stored configuration fills it: the form shows then, so nothing typed is overwritten by its arrival.
  const [f, setF] = useState(null);
  // The form as the stored configuration last filled it, or as last sent: a configuration
  // read after that (the reload after "Save collector") fills it again only if it still
  // holds just that, so what was ticked or typed meanwhile is kept.
  const untouched = useRef(null);
  useEffect(() => {
    if (!config.data || (f !== null && f !== untouched.current)) return;
    untouched.current = {
      logsCollectorUrl: config.data.logsCollectorUrl ?? '',
      logsFormat: config.data.logsFormat ?? 'otlp',
      tracesCollectorUrl: config.data.tracesCollectorUrl ?? '',
      headers: '',
      clearHeaders: false,
    };
    setF(untouched.current);
  }, [config.data]);
  // A save changes nothing on screen but the headers' hint: it says so, until the form is changed again.
  const [saved, setSaved] = useState(false);
  const set = (k) => (v) => (setSaved(false), setF({ ...f, [k]: v }));
  const action = act('set_otel_configuration', () => {
    untouched.current = f;
    return {
      ...(f.logsCollectorUrl ? { logsCollectorUrl: f.logsCollectorUrl } : {}),
      ...(f.tracesCollectorUrl ? { tracesCollectorUrl: f.tracesCollectorUrl } : {}),
      logsFormat: f.logsFormat,
      // Values are write-only, so an empty box keeps what is sent; removing them all is asked for in so many words (an empty map).
      ...(f.headers.trim() ? { headers: parseHeaderLines(f.headers) } : f.clearHeaders ? { headers: {} } : {}),
    };
  });
  return html`<section aria-labelledby="collector-title">
    <h2 id="collector-title">Collector</h2>
    <${ErrorBox} error=${config.error} />
    ${
      config.data && f
        ? html`<${Form} title="Forward call logs and traces" submit="Save collector" action=${action} onDone=${() => (setSaved(true), config.reload())}>
            <${Field} label="Logs collector URL" name="logsCollectorUrl" type="url" value=${f.logsCollectorUrl} onInput=${set('logsCollectorUrl')} />
            <${Field}
              label="Logs format"
              name="logsFormat"
              as="select"
              value=${f.logsFormat}
              options=${[
                ['otlp', 'OTLP'],
                ['collector_hec', 'Splunk HEC'],
              ]}
              onInput=${set('logsFormat')}
            />
            <${Field} label="Traces collector URL" name="tracesCollectorUrl" type="url" value=${f.tracesCollectorUrl} onInput=${set('tracesCollectorUrl')} />
            <${Field}
              label="Collector headers"
              name="headers"
              as="textarea"
              value=${f.headers}
              onInput=${set('headers')}
              hint=${`Sent now: ${config.data.headerNames.join(', ') || 'none'}. One per line, Name: value; a new set replaces them all, empty keeps them. Values are never shown.`}
            />
            ${
              config.data.headerNames.length > 0
                ? html`<${Field} label="Remove the collector headers" type="checkbox" checked=${f.clearHeaders} value="" onInput=${set('clearHeaders')} />`
                : null
            }
          <//>`
        : null
    }
    ${saved ? html`<div class="notice" role="status">Collector saved: new call logs and traces go to it from now on.</div>` : null}
  </section>`;
}

function Tokens() {
  const tokens = useCall('list_access_tokens', {});
  // svcp_<prefix>_<secret>: the prefix names the token this tab is signed in with.
  const signedInPrefix = token.get()?.split('_')[1];
  // A gateway token's label is its connection's name, which several can share.
  const tokenName = distinctNames(
    tokens.data?.items ?? [],
    (t) => t.label,
    (t) => t.prefix,
  );
  const [label, setLabel] = useState('');
  const [days, setDays] = useState('90');
  const [minted, setMinted] = useState(null);
  return html`<section aria-labelledby="tokens-title">
    <h2 id="tokens-title">Your access tokens</h2>
    <${ErrorBox} error=${tokens.error} />
    ${tokens.loading && !tokens.data ? html`<${Loading} />` : null}
    ${
      tokens.data
        ? html`<${Table}
            caption="Access and gateway tokens"
            rows=${tokens.data.items}
            columns=${[
              { label: 'Label', render: (t) => t.label },
              { label: 'Kind', render: (t) => t.kind },
              { label: 'Prefix', render: (t) => html`<code>${t.prefix}</code>` },
              { label: 'Created', render: (t) => fmtTime(t.createdAt) },
              { label: 'Expires', render: (t) => (t.expiresAt ? fmtTime(t.expiresAt) : 'never') },
              { label: 'Last used', render: (t) => fmtTime(t.lastUsedAt) },
              {
                label: 'Actions',
                render: (t) =>
                  html`<${ActionButton}
                    label=${`Revoke ${tokenName(t)}`}
                    danger
                    warning=${t.kind === 'access' && t.prefix === signedInPrefix ? 'This tab is signed in with this token: revoking it signs you out.' : undefined}
                    action=${act('revoke_access_token', { id: t.id })}
                    onDone=${tokens.reload}
                  />`,
              },
            ]}
          />`
        : null
    }
    <${Form}
      title="Create an access token"
      submit="Create token"
      action=${act('create_access_token', { label, ...(String(days).trim() === '' ? {} : { expiresInDays: Number(days) }) })}
      onDone=${(r) => (setMinted({ ...r, label }), setLabel(''), tokens.reload())}
    >
      <${Field} label="Token label" name="label" value=${label} onInput=${setLabel} required />
      <${Field}
        label="Expires in days"
        name="expiresInDays"
        type="number"
        min="0"
        max="90"
        value=${days}
        onInput=${setDays}
        hint="0 never expires; empty is 90"
      />
    <//>
    ${minted?.token ? html`<${ShownOnce} label="Access token" value=${minted.token} />` : null}
    ${
      minted?.alreadyExisted
        ? html`<div class="notice" role="status">
            You already have a token labelled “${minted.label}”: nothing was created. Its secret was shown once, when it was made; give a new label for a new
            token.
          </div>`
        : null
    }
  </section>`;
}

export function Settings() {
  return html`<section aria-labelledby="settings-title">
    <h1 id="settings-title">Settings</h1>
    <${Collector} />
    <${Tokens} />
  </section>`;
}
