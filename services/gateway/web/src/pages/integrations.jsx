// Integrations: personal API tokens, webhooks and bulk link creation
// (CONTRACT § Integrators' API).
import { useState } from 'preact/hooks';
import { del, get, post, query, seg } from '../api.js';
import { Alert, Button, Card, Copy, Dialog, Empty, Field, Loading, Page, Pager, useAction, useForm, useLoad, when } from '../ui.jsx';

// The scopes and events exactly as the API spells them, in its order.
const SCOPES = [
  ['links:read', 'list your links and read the dashboard'],
  ['links:write', 'create, edit, renew and delete links (bulk creation too)'],
  ['analytics:read', 'read analytics and export them'],
  ['webhooks:write', 'manage webhooks'],
];
const EVENTS = [
  ['link.created', 'a link was created'],
  ['link.updated', 'its destination was edited'],
  ['link.renewed', 'it was renewed'],
  ['link.deleted', 'it was deleted'],
  ['link.disabled', 'a moderator disabled it'],
  ['link.enabled', 'a moderator enabled it again'],
  ['link.purged', 'it was removed for good'],
  ['link.expired', 'it expired'],
];

export function IntegrationsPage() {
  return (
    <Page title="Integrations">
      <p class="muted">Use linkmesh from your own programs: see the <a href="/api/openapi.yaml">REST API (OpenAPI)</a>.</p>
      <Tokens />
      <Webhooks />
      <Bulk />
    </Page>
  );
}

// ---- shared pieces ----------------------------------------------------------------------

// Checks is a group of checkboxes labelled by their values; `picked` is an array.
function Checks({ legend, options, picked, onChange, idPrefix }) {
  const toggle = (v, on) => onChange(on ? options.map(([o]) => o).filter((o) => o === v || picked.includes(o)) : picked.filter((p) => p !== v));
  return (
    <fieldset class="checks">
      <legend>{legend}</legend>
      {options.map(([v, what]) => {
        const id = `${idPrefix}-${v.replace(/[^a-z]/g, '-')}`;
        return (
          <div class="check" key={v}>
            <input type="checkbox" id={id} checked={picked.includes(v)} onChange={(e) => toggle(v, e.currentTarget.checked)} aria-describedby={`${id}-what`} />
            <label for={id} class="code">{v}</label>
            <small id={`${id}-what`} class="muted">{what}</small>
          </div>
        );
      })}
    </fieldset>
  );
}

// Secret shows a secret the API returns once, read-only, with a Copy button.
function Secret({ label, value, testid, onDone }) {
  return (
    <div class="alert alert-success stack">
      <p role="status"><strong>Copy this {label.toLowerCase()} now: it will not be shown again</strong></p>
      <div class="row">
        <Field label={label} class="secret" readOnly value={value} data-testid={testid} onFocus={(e) => e.currentTarget.select()} />
        <Copy text={value} />
      </div>
      <button type="button" class="btn btn-secondary btn-small" onClick={onDone}>I have copied it</button>
    </div>
  );
}

// Confirm is a yes/no Dialog around one action.
function Confirm({ title, text, yes, open, onClose, action }) {
  return (
    <Dialog title={title} open={open} onClose={onClose}>
      <p>{text}</p>
      <Alert error={action.error} />
      <div class="toolbar">
        <Button kind="danger" type="button" busy={action.busy} onClick={() => action.run()}>{yes}</Button>
        <button type="button" class="btn btn-secondary" onClick={onClose}>Cancel</button>
      </div>
    </Dialog>
  );
}

const ListState = ({ list, what, empty, count }) => (
  <>
    <Alert error={list.error} />
    {list.loading && !list.data && <Loading what={`Loading ${what}`} />}
    {list.data && count === 0 && <Empty>{empty}</Empty>}
  </>
);

// ---- API tokens -------------------------------------------------------------------------

function Tokens() {
  const list = useLoad(() => get('/api/user/tokens'), []);
  const f = useForm({ name: '', days: '90' });
  const [scopes, setScopes] = useState([]);
  const [created, setCreated] = useState(null); // {token, secret}, shown once
  const [revoking, setRevoking] = useState(null);

  const create = useAction(async () => {
    const r = await post('/api/user/tokens', { name: f.values.name.trim(), scopes, expires_in_days: Number(f.values.days) });
    setCreated(r);
    f.reset();
    setScopes([]);
    list.reload();
  });
  const revoke = useAction(async () => {
    await del(`/api/user/tokens/${seg(revoking.id)}`);
    setRevoking(null);
    list.reload();
  });
  const submit = (e) => {
    e.preventDefault();
    setCreated(null);
    create.run();
  };
  const tokens = (list.data && list.data.tokens) || [];

  return (
    <Card title="API tokens" id="tokens">
      <p class="muted">A token lets a program call the API as you, with the scopes you give it: send it as <span class="code">Authorization: Bearer lm_…</span>. At most 20 live tokens.</p>
      <ListState list={list} what="tokens" empty="No API tokens yet." count={tokens.length} />
      {tokens.length > 0 && (
        <div class="table-wrap">
          <table class="data">
            <caption class="sr-only">Your API tokens</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Starts with</th>
                <th scope="col">Scopes</th>
                <th scope="col">Created</th>
                <th scope="col">Expires</th>
                <th scope="col">Last used</th>
                <th scope="col"><span class="sr-only">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              {tokens.map((t) => (
                <tr key={t.id} data-testid={`token-${t.id}`}>
                  <td>{t.name}</td>
                  <td class="code">{t.prefix}</td>
                  <td class="code">{t.scopes.join(', ')}</td>
                  <td>{when(t.created_at)}</td>
                  <td>{when(t.expires_at)}</td>
                  <td>{t.last_used_at ? when(t.last_used_at) : 'never'}</td>
                  <td>
                    <button type="button" class="btn btn-danger btn-small" onClick={() => { revoke.clear(); setRevoking(t); }}>Revoke</button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Confirm
        title="Revoke this token?"
        text={revoking ? `Programs using “${revoking.name}” (${revoking.prefix}…) will be refused at once.` : ''}
        yes="Revoke token"
        open={!!revoking}
        onClose={() => setRevoking(null)}
        action={revoke}
      />

      <h3>New token</h3>
      <form onSubmit={submit}>
        <div class="row">
          <Field label="Token name" required maxLength={64} autoComplete="off" placeholder="release pipeline" {...f.bind('name')} />
          <Field label="Expires in days" type="number" required min={1} max={365} hint="1 to 365 days" {...f.bind('days')} />
        </div>
        <Checks legend="Scopes" options={SCOPES} picked={scopes} onChange={setScopes} idPrefix="scope" />
        <Alert error={create.error} />
        <Button busy={create.busy} type="submit">Create token</Button>
      </form>
      {created && <Secret label="Token" value={created.secret} testid="token-secret" onDone={() => setCreated(null)} />}
    </Card>
  );
}

// ---- webhooks ---------------------------------------------------------------------------

function Webhooks() {
  const list = useLoad(() => get('/api/user/webhooks'), []);
  const f = useForm({ url: '' });
  const [events, setEvents] = useState([]);
  const [created, setCreated] = useState(null); // {webhook, secret}, shown once
  const [deleting, setDeleting] = useState(null);
  const [log, setLog] = useState(null); // the webhook whose deliveries are shown
  const [tested, setTested] = useState(null); // id of the webhook a ping was queued for

  const create = useAction(async () => {
    const r = await post('/api/user/webhooks', { url: f.values.url.trim(), events });
    setCreated(r);
    f.reset();
    setEvents([]);
    list.reload();
  });
  const remove = useAction(async () => {
    await del(`/api/user/webhooks/${seg(deleting.id)}`);
    if (log && log.id === deleting.id) setLog(null);
    setDeleting(null);
    list.reload();
  });
  const test = useAction(async (w) => {
    setTested(null);
    await post(`/api/user/webhooks/${seg(w.id)}/test`);
    setTested(w.id);
  });
  const submit = (e) => {
    e.preventDefault();
    setCreated(null);
    create.run();
  };
  const hooks = (list.data && list.data.webhooks) || [];

  return (
    <Card title="Webhooks" id="webhooks">
      <p class="muted">linkmesh sends a signed <span class="code">POST</span> (Standard Webhooks) to your HTTPS endpoint when something happens to your links. At most 5 webhooks.</p>
      <ListState list={list} what="webhooks" empty="No webhooks yet." count={hooks.length} />
      {tested && <Alert kind="success">A test ping was queued: see its delivery in the log.</Alert>}
      <Alert error={test.error} />
      {hooks.length > 0 && (
        <div class="table-wrap">
          <table class="data">
            <caption class="sr-only">Your webhooks</caption>
            <thead>
              <tr>
                <th scope="col">URL</th>
                <th scope="col">Events</th>
                <th scope="col">Status</th>
                <th scope="col">Created</th>
                <th scope="col"><span class="sr-only">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              {hooks.map((w) => (
                <tr key={w.id} data-testid={`webhook-${w.id}`}>
                  <td class="url">{w.url}</td>
                  <td class="code">{w.events.join(', ')}</td>
                  <td>
                    {w.active ? <span class="badge badge-active">active</span> : <span class="badge badge-disabled">disabled</span>}
                    {w.disabled_reason && <div class="muted">{w.disabled_reason}</div>}
                  </td>
                  <td>{when(w.created_at)}</td>
                  <td>
                    <div class="actions-cell">
                      <button type="button" class="btn btn-secondary btn-small" disabled={test.busy} onClick={() => test.run(w)}>Send test</button>
                      <button type="button" class="btn btn-secondary btn-small" aria-expanded={log && log.id === w.id ? 'true' : 'false'} aria-controls="deliveries" onClick={() => setLog(log && log.id === w.id ? null : w)}>Deliveries</button>
                      <button type="button" class="btn btn-danger btn-small" onClick={() => { remove.clear(); setDeleting(w); }}>Delete</button>
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div id="deliveries">{log && <Deliveries hook={log} key={log.id} onClose={() => setLog(null)} />}</div>
      <Confirm
        title="Delete this webhook?"
        text={deleting ? `${deleting.url} will get no more events; its delivery log goes too.` : ''}
        yes="Delete webhook"
        open={!!deleting}
        onClose={() => setDeleting(null)}
        action={remove}
      />

      <h3>New webhook</h3>
      <form onSubmit={submit}>
        <Field label="Endpoint URL" type="url" required maxLength={2048} autoComplete="off" placeholder="https://hooks.example.com/linkmesh" hint="An https:// address reachable from the internet" {...f.bind('url')} />
        <Checks legend="Events" options={EVENTS} picked={events} onChange={setEvents} idPrefix="event" />
        <Alert error={create.error} />
        <Button busy={create.busy} type="submit">Add webhook</Button>
      </form>
      {created && <Secret label="Signing secret" value={created.secret} testid="webhook-secret" onDone={() => setCreated(null)} />}
    </Card>
  );
}

// Deliveries is one webhook's delivery log, a page at a time, newest first.
function Deliveries({ hook, onClose }) {
  const [page, setPage] = useState(1);
  const list = useLoad(() => get(`/api/user/webhooks/${seg(hook.id)}/deliveries${query({ page, page_size: 20 })}`), [hook.id, page]);
  const rows = (list.data && list.data.deliveries) || [];
  return (
    <section class="stack" aria-labelledby="deliveries-title" data-testid="deliveries">
      <h3 id="deliveries-title">Deliveries to <span class="url">{hook.url}</span></h3>
      <div class="toolbar">
        <button type="button" class="btn btn-secondary btn-small" onClick={list.reload}>Refresh</button>
        <button type="button" class="btn btn-secondary btn-small" onClick={onClose}>Close the log</button>
      </div>
      <ListState list={list} what="deliveries" empty="Nothing was sent to this webhook in the last 30 days." count={rows.length} />
      {rows.length > 0 && (
        <div class="table-wrap">
          <table class="data">
            <caption class="sr-only">Deliveries to {hook.url}</caption>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Status</th>
                <th scope="col" class="num">Attempts</th>
                <th scope="col">Last answer</th>
                <th scope="col">Queued</th>
                <th scope="col">Delivered</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((d) => (
                <tr key={d.id} data-testid={`delivery-${d.id}`}>
                  <td class="code">{d.type}</td>
                  <td><span class={`badge badge-${d.status === 'delivered' ? 'active' : d.status === 'failed' ? 'disabled' : 'role'}`}>{d.status}</span></td>
                  <td class="num">{d.attempts}</td>
                  <td>{d.last_error || (d.last_status_code ? `answered ${d.last_status_code}` : '—')}</td>
                  <td>{when(d.created_at)}</td>
                  <td>{d.delivered_at ? when(d.delivered_at) : '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {list.data && <Pager page={list.data.page} pageSize={list.data.page_size} total={list.data.total} onPage={setPage} />}
    </section>
  );
}

// ---- bulk creation ----------------------------------------------------------------------

const MAX_BULK = 100;

// uuid is crypto.randomUUID where the browser offers it (secure contexts only), else a
// version-4 UUID from getRandomValues.
function uuid() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

// linesOf returns the non-blank lines with their line numbers (1-based).
const linesOf = (text) => text.split('\n').map((l, i) => ({ line: i + 1, url: l.trim() })).filter((l) => l.url);

function Bulk() {
  const f = useForm({ text: '', days: '30' });
  const [problem, setProblem] = useState('');
  const [out, setOut] = useState(null); // {items, results}
  // One Idempotency-Key per request body: sending the same lines again (after a timeout or
  // a 503) reuses it, so nothing is created twice; a changed body gets a new key.
  const [key, setKey] = useState({ body: '', key: '' });

  const items = linesOf(f.values.text);
  const create = useAction(async () => {
    const body = { links: items.map((l) => ({ url: l.url, expiration_days: Number(f.values.days) })) };
    const sig = JSON.stringify(body);
    const k = key.body === sig ? key.key : uuid();
    setKey({ body: sig, key: k });
    const r = await post('/api/links/bulk', body, { 'Idempotency-Key': k });
    setOut({ items, results: r.results || [] });
  });
  const submit = (e) => {
    e.preventDefault();
    setProblem('');
    if (items.length === 0) return setProblem('Enter at least one destination URL.');
    if (items.length > MAX_BULK) return setProblem(`At most ${MAX_BULK} links at once: you entered ${items.length}.`);
    setOut(null);
    create.run();
  };
  const made = out ? out.results.filter((r) => r.status === 201).length : 0;

  return (
    <Card title="Create many links" id="bulk">
      <form onSubmit={submit}>
        <Field
          label="Destinations, one per line"
          as="textarea"
          rows={8}
          required
          spellcheck={false}
          placeholder={'https://example.com/spring\nhttps://example.com/summer'}
          hint={`One destination URL per line, up to ${MAX_BULK} (${items.length} entered). Each counts against your quota.`}
          {...f.bind('text')}
        />
        <Field label="Days until the links expire" type="number" required min={1} max={365} hint="1 to 365 days" {...f.bind('days')} />
        <Alert error={problem || create.error} />
        <Button busy={create.busy} type="submit">Create links</Button>
      </form>
      {out && (
        <div class="stack" data-testid="bulk-results">
          <p role="status">{made} of {out.results.length} links created.</p>
          <div class="table-wrap">
            <table class="data">
              <caption class="sr-only">Results of the bulk creation</caption>
              <thead>
                <tr>
                  <th scope="col" class="num">Line</th>
                  <th scope="col">Destination</th>
                  <th scope="col">Status</th>
                  <th scope="col">Short link or error</th>
                </tr>
              </thead>
              <tbody>
                {out.results.map((r) => {
                  const item = out.items[r.index] || {};
                  const ok = r.status === 201 && r.link;
                  return (
                    <tr key={r.index} data-testid={`bulk-${r.index}`}>
                      <td class="num">{item.line}</td>
                      <td class="url">{item.url}</td>
                      <td>{ok ? <span class="badge badge-active">created</span> : <span class="badge badge-disabled">{r.status}</span>}</td>
                      <td>
                        {ok ? (
                          <span class="row"><a href={r.link.short_url} class="url">{r.link.short_url}</a> <Copy text={r.link.short_url} /></span>
                        ) : (
                          <span class="muted">{r.error}</span>
                        )}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        </div>
      )}
    </Card>
  );
}
