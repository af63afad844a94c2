// The admin console: counters, users, links, the two moderation queues and (for super admins)
// login records and the audit log. Each section is its own fragment route (#/admin/users).
// The page only offers what the caller's role suggests; the API decides every call.
import { useEffect, useRef, useState } from 'preact/hooks';
import { get, post, del, query, seg } from '../api.js';
import {
  Page, Alert, Loading, Empty, Field, useForm, useAction, useLoad, Button, Dialog, Pager,
  when, day, num, StateBadge, useMe, isSuperAdmin, roleName,
} from '../ui.jsx';
import './admin.css';

const PAGE_SIZE = 20;

const SECTIONS = [
  { path: '', label: 'Overview', view: Overview },
  { path: 'users', label: 'Users', view: Users },
  { path: 'links', label: 'Links', view: Links },
  { path: 'reports', label: 'Reports', view: Reports },
  { path: 'requests', label: 'Permanent requests', view: Requests },
  { path: 'logins', label: 'Login records', view: Logins, superOnly: true },
  { path: 'audit', label: 'Audit log', view: Audit, superOnly: true },
];

export function AdminPage({ route }) {
  const { user } = useMe();
  const sup = isSuperAdmin(user);
  const sub = route.path.replace(/^\/admin\/?/, '').replace(/\/$/, '');
  const section = SECTIONS.find((s) => s.path === sub);
  let body;
  if (!section) body = <p>There is no admin section “{sub}”.</p>;
  else if (section.superOnly && !sup) body = <p>This section is for super admins.</p>;
  else {
    const View = section.view;
    // Keyed by the query too, so a link such as #/admin/links?owner_id=… starts fresh filters.
    body = <View key={`${sub}?${route.params}`} params={route.params} me={user} />;
  }
  return (
    <Page title="Admin">
      <div class="admin">
        <nav class="admin-nav" aria-label="Admin sections">
          {SECTIONS.filter((s) => sup || !s.superOnly).map((s) => (
            <a key={s.path} href={`#/admin${s.path ? '/' + s.path : ''}`} aria-current={s === section ? 'page' : undefined}>
              {s.label}
            </a>
          ))}
        </nav>
        {section && <h2>{section.label}</h2>}
        {body}
      </div>
    </Page>
  );
}

// ---- shared pieces ----------------------------------------------------------------------

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// useListing keeps a section's filters and page and loads the matching page of `path`.
// Typing applies after a short pause (one request per pause, not per key); submitting the
// filter form applies at once. Changing a filter goes back to page 1.
function useListing(path, initial) {
  const [draft, setDraft] = useState(initial);
  const [state, setState] = useState({ filters: initial, page: 1 });
  const apply = (f) => setState((s) => (same(s.filters, f) ? s : { filters: f, page: 1 }));
  useEffect(() => {
    const t = setTimeout(() => apply(draft), 300);
    return () => clearTimeout(t);
  }, [draft]);
  const qs = query({ ...state.filters, page: state.page, page_size: PAGE_SIZE });
  const list = useLoad(() => get(path + qs), [path, qs]);
  const set = (name) => (e) => {
    const t = e.currentTarget;
    const v = t.type === 'checkbox' ? (t.checked ? 'true' : '') : t.value;
    setDraft((d) => ({ ...d, [name]: v }));
  };
  // bind works for inputs and selects alike (some browsers only send change for a select).
  const bind = (name) => ({ value: draft[name], onInput: set(name), onChange: set(name) });
  const check = (name) => ({ type: 'checkbox', checked: draft[name] === 'true', onChange: set(name) });
  const submit = (e) => { e.preventDefault(); apply(draft); };
  const setPage = (page) => setState((s) => ({ ...s, page }));
  return { bind, check, submit, list, page: state.page, setPage, filters: state.filters };
}

function Filters({ label, onSubmit, children }) {
  return (
    <form class="filters" role="search" aria-label={label} onSubmit={onSubmit}>
      {children}
      <Button kind="secondary" type="submit">Search</Button>
    </form>
  );
}

// Listing shows a list's error, loading and empty states, then its table and pager.
// Old rows stay on screen while a reload runs, so actions do not make the table jump.
function Listing({ listing, items, empty, caption, cols, row }) {
  const { list, page, setPage } = listing;
  const d = list.data;
  const rows = d ? d[items] || [] : [];
  // Each cell carries its column's name, which a phone shows above it (table.cards).
  const table = useRef();
  useEffect(() => {
    if (!table.current) return;
    for (const tr of table.current.tBodies[0].rows) {
      [...tr.cells].forEach((td, i) => td.setAttribute('data-label', cols[i] || ''));
    }
  });
  return (
    <>
      <Alert error={list.error} />
      {!d && list.loading && <Loading />}
      {d && rows.length === 0 && <Empty>{empty}</Empty>}
      {rows.length > 0 && (
        <div class="table-wrap">
          <table class="data cards" ref={table}>
            <caption class="sr-only">{caption}</caption>
            <thead>
              <tr>{cols.map((c) => <th scope="col" key={c}>{c}</th>)}</tr>
            </thead>
            <tbody>{rows.map(row)}</tbody>
          </table>
        </div>
      )}
      {d && <Pager page={page} pageSize={d.page_size || PAGE_SIZE} total={d.total} onPage={setPage} />}
    </>
  );
}

// useNotice is a section's latest success message; done() shows it and reloads the list.
function useNotice(list) {
  const [notice, setNotice] = useState('');
  const done = (msg) => { setNotice(msg); list.reload(); };
  return { notice, done, show: <Alert kind="success">{notice}</Alert> };
}

// Small is a Button for table rows.
const Small = ({ kind = 'secondary', ...rest }) => <Button kind={`${kind} btn-small`} type="button" {...rest} />;

const Actions = ({ children }) => <div class="row-actions">{children}</div>;

function Cancel({ onClick }) {
  return <button type="button" class="btn btn-secondary" onClick={onClick}>Cancel</button>;
}

const Sub = ({ children }) => <span class="sub muted">{children}</span>;

// ---- overview ---------------------------------------------------------------------------

const GROUPS = [
  ['users', 'Users', [['total', 'Total'], ['active', 'Active'], ['suspended', 'Suspended'], ['banned', 'Banned']]],
  ['links', 'Links', [['total', 'Total'], ['active', 'Active'], ['expired', 'Expired'], ['disabled', 'Disabled'], ['deleted', 'Deleted']]],
  ['clicks', 'Clicks', [['total', 'Total'], ['last_24h', 'Last 24 hours']]],
  ['reports', 'Reports', [['pending', 'Pending']]],
  ['permanent_requests', 'Permanent requests', [['pending', 'Pending']]],
];

function Overview() {
  const o = useLoad(() => get('/api/admin/overview'), []);
  if (o.error) return <Alert error={o.error} />;
  if (!o.data) return <Loading />;
  return (
    <div class="overview">
      {GROUPS.map(([key, title, fields]) => (
        <section key={key} class="card" aria-labelledby={`overview-${key}`}>
          <h3 id={`overview-${key}`}>{title}</h3>
          <dl class="stats">
            {fields.map(([f, label]) => (
              <div key={f}>
                <dt>{label}</dt>
                <dd data-testid={`overview-${key}-${f}`}>{num(o.data[key] && o.data[key][f])}</dd>
              </div>
            ))}
          </dl>
        </section>
      ))}
    </div>
  );
}

// ---- users ------------------------------------------------------------------------------

function Users({ params, me }) {
  const l = useListing('/api/admin/users', { q: params.get('q') || '', role: '', status: '' });
  const n = useNotice(l.list);
  const [dialog, setDialog] = useState(null); // {kind: 'timeout'|'ban', user}
  const close = () => setDialog(null);
  const finish = (msg) => { close(); n.done(msg); };
  const sup = isSuperAdmin(me);
  return (
    <>
      <Filters label="Filter users" onSubmit={l.submit}>
        <Field label="Search e-mail or name" type="search" {...l.bind('q')} />
        <Field label="Role" as="select" {...l.bind('role')}>
          <option value="">Any role</option>
          <option value="user">User</option>
          <option value="moderator">Moderator</option>
          <option value="super_admin">Super admin</option>
        </Field>
        <Field label="Status" as="select" {...l.bind('status')}>
          <option value="">Any status</option>
          <option value="active">Active</option>
          <option value="suspended">Suspended (timed out)</option>
          <option value="banned">Banned</option>
        </Field>
      </Filters>
      {n.show}
      <Listing
        listing={l}
        items="users"
        empty="No users match."
        caption="Users"
        cols={['E-mail', 'Name', 'Role', 'Status', 'Joined', 'Last sign-in', 'Actions']}
        row={(u) => (
          <UserRow key={u.id} u={u} self={me && me.id === u.id} sup={sup} onDialog={(kind) => setDialog({ kind, user: u })} onDone={n.done} />
        )}
      />
      <Dialog
        open={!!dialog}
        onClose={close}
        title={dialog && (dialog.kind === 'ban' ? `Ban ${dialog.user.email}` : `Time out ${dialog.user.email}`)}
      >
        {dialog && dialog.kind === 'timeout' && <TimeoutForm user={dialog.user} onDone={finish} onCancel={close} />}
        {dialog && dialog.kind === 'ban' && <BanForm user={dialog.user} onDone={finish} onCancel={close} />}
      </Dialog>
    </>
  );
}

function UserRow({ u, self, sup, onDialog, onDone }) {
  const [role, setRole] = useState(u.role);
  useEffect(() => setRole(u.role), [u.role]); // the list reloaded with a new role
  const act = useAction(async (call, msg) => { await call(); onDone(msg); });
  const path = `/api/admin/users/${seg(u.id)}`;
  const name = [u.first_name, u.last_name].filter(Boolean).join(' ');
  return (
    <tr data-testid={`row-${u.id}`}>
      <td>{u.email}</td>
      <td>{name || '—'}</td>
      <td>{roleName(u.role)}</td>
      <td>
        <span class={`badge badge-${u.status}`}>{u.status}</span>
        {u.status === 'suspended' && <Sub>until {when(u.timeout_until)}{u.timeout_reason ? `: ${u.timeout_reason}` : ''}</Sub>}
        {u.status === 'banned' && u.ban_reason && <Sub>{u.ban_reason}</Sub>}
      </td>
      <td>{day(u.created_at)}</td>
      <td>{when(u.last_login_at)}</td>
      {/* Row buttons say just "Ban" etc.: the row is the context, and a name with the e-mail in
          it would also match any search for a verb that the address happens to contain. */}
      <td>
        {self ? <span class="muted">You</span> : (
          <Actions>
            <a class="btn btn-secondary btn-small" href={`#/admin/links?owner_id=${encodeURIComponent(u.id)}`} aria-label={`Links of ${u.email}`}>Links</a>
            {u.status !== 'banned' && (
              <Small onClick={() => onDialog('timeout')}>Time out</Small>
            )}
            {u.status !== 'banned' && (
              <Small kind="danger" onClick={() => onDialog('ban')}>Ban</Small>
            )}
            {u.status !== 'active' && (
              <Small busy={act.busy}
                onClick={() => act.run(() => post(`${path}/unban`), `${u.email} is active again.`)}>Unban</Small>
            )}
            {sup && (
              <>
                <select aria-label={`Role of ${u.email}`} value={role} onChange={(e) => setRole(e.currentTarget.value)}>
                  <option value="user">user</option>
                  <option value="moderator">moderator</option>
                  <option value="super_admin">super admin</option>
                </select>
                <Small busy={act.busy}
                  onClick={() => act.run(() => post(`${path}/role`, { role }), `${u.email} is now ${roleName(role)}.`)}>Save role</Small>
              </>
            )}
          </Actions>
        )}
        <Alert error={act.error} />
      </td>
    </tr>
  );
}

const DURATIONS = [['3600', '1 hour'], ['86400', '1 day'], ['604800', '7 days']];

function TimeoutForm({ user, onDone, onCancel }) {
  const f = useForm({ preset: '3600', minutes: '', reason: '' });
  // A number of minutes, when given, wins over the preset (the API takes 30 s to 7 days).
  const seconds = () => (f.values.minutes !== '' ? Math.round(Number(f.values.minutes) * 60) : Number(f.values.preset));
  const act = useAction(() => post(`/api/admin/users/${seg(user.id)}/timeout`, { duration_seconds: seconds(), reason: f.values.reason }));
  const submit = async (e) => {
    e.preventDefault();
    const r = await act.run();
    if (r) onDone(`${user.email} is timed out until ${when(r.user && r.user.timeout_until)}.`);
  };
  return (
    <form onSubmit={submit}>
      <Field label="Duration" as="select" {...f.bind('preset')}>
        {DURATIONS.map(([v, t]) => <option key={v} value={v}>{t}</option>)}
      </Field>
      <Field label="Or a number of minutes" type="number" min="0.5" max="10080" step="any" hint="Leave empty to use the duration above." {...f.bind('minutes')} />
      <Field label="Reason" required maxLength={2000} {...f.bind('reason')} />
      <Alert error={act.error} />
      <div class="toolbar">
        <Button type="submit" busy={act.busy}>Time out</Button>
        <Cancel onClick={onCancel} />
      </div>
    </form>
  );
}

function BanForm({ user, onDone, onCancel }) {
  const f = useForm({ reason: '' });
  const [links, setLinks] = useState(false);
  const act = useAction(() => post(`/api/admin/users/${seg(user.id)}/ban`, { reason: f.values.reason, deactivate_links: links }));
  const submit = async (e) => {
    e.preventDefault();
    const r = await act.run();
    if (!r) return;
    const k = r.links_disabled || 0;
    onDone(`${user.email} is banned.${links ? ` ${k} link${k === 1 ? '' : 's'} disabled.` : ''}`);
  };
  return (
    <form onSubmit={submit}>
      <Field label="Reason" required maxLength={2000} {...f.bind('reason')} />
      <label class="check">
        <input type="checkbox" checked={links} onChange={(e) => setLinks(e.currentTarget.checked)} />
        Also disable their links
      </label>
      <Alert error={act.error} />
      <div class="toolbar">
        <Button kind="danger" type="submit" busy={act.busy}>Ban</Button>
        <Cancel onClick={onCancel} />
      </div>
    </form>
  );
}

// ---- links ------------------------------------------------------------------------------

function Links({ params }) {
  const l = useListing('/api/admin/links', {
    q: params.get('q') || '', status: 'all', owner_id: params.get('owner_id') || '', include_deleted: '',
  });
  const n = useNotice(l.list);
  const [dialog, setDialog] = useState(null); // {kind: 'disable'|'delete', link}
  const close = () => setDialog(null);
  const finish = (msg) => { close(); n.done(msg); };
  const code = dialog && dialog.link.short_code;
  return (
    <>
      <Filters label="Filter links" onSubmit={l.submit}>
        <Field label="Search code or destination" type="search" {...l.bind('q')} />
        <Field label="State" as="select" {...l.bind('status')}>
          <option value="all">Any state</option>
          <option value="active">Active</option>
          <option value="expired">Expired</option>
          <option value="disabled">Disabled</option>
        </Field>
        <Field label="Owner id" {...l.bind('owner_id')} />
        <label class="check">
          <input {...l.check('include_deleted')} />
          Include deleted
        </label>
      </Filters>
      {n.show}
      <Listing
        listing={l}
        items="links"
        empty="No links match."
        caption="Links"
        cols={['Code', 'Destination', 'Owner id', 'State', 'Clicks', 'Expires', 'Actions']}
        row={(link) => <LinkRow key={link.short_code} link={link} onDialog={(kind) => setDialog({ kind, link })} onDone={n.done} />}
      />
      <Dialog open={!!dialog} onClose={close} title={dialog && (dialog.kind === 'delete' ? `Delete ${code} for good` : `Disable ${code}`)}>
        {dialog && dialog.kind === 'disable' && <DisableForm code={code} onDone={finish} onCancel={close} />}
        {dialog && dialog.kind === 'delete' && <DeleteForm code={code} onDone={finish} onCancel={close} />}
      </Dialog>
    </>
  );
}

function LinkRow({ link, onDialog, onDone }) {
  const code = link.short_code;
  const act = useAction(async () => {
    await post(`/api/admin/links/${seg(code)}/enable`);
    onDone(`Link ${code} is enabled.`);
  });
  return (
    <tr data-testid={`row-${code}`}>
      <td><code>{code}</code></td>
      {/* The destination is text, not a link: a moderator should not open a reported URL by a stray click. */}
      <td>
        <span class="dest">{link.destination_url}</span>
        {link.destination_changed_at && <Sub>changed {when(link.destination_changed_at)}</Sub>}
      </td>
      <td><span class="ident">{link.owner_id || '—'}</span></td>
      <td><StateBadge link={link} /></td>
      <td>{num(link.click_count)}</td>
      <td>{link.auto_renew ? 'never' : day(link.expires_at)}</td>
      <td>
        <Actions>
          {!link.deleted_at && link.status === 'DISABLED' && (
            <Small busy={act.busy} aria-label={`Enable link ${code}`} onClick={() => act.run()}>Enable</Small>
          )}
          {!link.deleted_at && link.status !== 'DISABLED' && (
            <Small aria-label={`Disable link ${code}`} onClick={() => onDialog('disable')}>Disable</Small>
          )}
          <Small kind="danger" aria-label={`Delete link ${code} permanently`} onClick={() => onDialog('delete')}>Delete</Small>
        </Actions>
        <Alert error={act.error} />
      </td>
    </tr>
  );
}

function DisableForm({ code, onDone, onCancel }) {
  const f = useForm({ reason: '' });
  const act = useAction(() => post(`/api/admin/links/${seg(code)}/disable`, f.values.reason ? { reason: f.values.reason } : {}));
  const submit = async (e) => {
    e.preventDefault();
    if (await act.run()) onDone(`Link ${code} is disabled.`);
  };
  return (
    <form onSubmit={submit}>
      <Field label="Reason (optional)" maxLength={2000} {...f.bind('reason')} />
      <Alert error={act.error} />
      <div class="toolbar">
        <Button type="submit" busy={act.busy}>Disable link</Button>
        <Cancel onClick={onCancel} />
      </div>
    </form>
  );
}

// DeleteForm asks for the code typed out: the deletion takes the link, its clicks and its
// reports for good.
function DeleteForm({ code, onDone, onCancel }) {
  const f = useForm({ confirm: '' });
  const act = useAction(() => del(`/api/admin/links/${seg(code)}`));
  const ok = f.values.confirm === code;
  const submit = async (e) => {
    e.preventDefault();
    if (ok && await act.run()) onDone(`Link ${code} is deleted for good.`);
  };
  return (
    <form onSubmit={submit}>
      <p>The link, its clicks and its reports are removed for good, and <code>{code}</code> will answer 404.</p>
      <Field label="Type the code to confirm" autoComplete="off" spellcheck={false} {...f.bind('confirm')} />
      <Alert error={act.error} />
      <div class="toolbar">
        <Button kind="danger" type="submit" busy={act.busy} disabled={!ok || act.busy}>Delete</Button>
        <Cancel onClick={onCancel} />
      </div>
    </form>
  );
}

// ---- reports and permanent requests -----------------------------------------------------

// CodeLink opens the short link itself in a new tab, where the visitor's page shows its state.
const CodeLink = ({ code }) => <a href={`/${seg(code)}`} target="_blank" rel="noopener noreferrer"><code>{code}</code></a>;

// Resolved shows how a handled queue item ended.
function Resolved({ item }) {
  return (
    <Sub>
      {item.status} {when(item.resolved_at)}{item.resolved_by ? ` by ${item.resolved_by}` : ''}
      {item.resolution_note ? `: ${item.resolution_note}` : ''}
    </Sub>
  );
}

function StatusFilter({ listing, label, options }) {
  return (
    <Filters label={label} onSubmit={listing.submit}>
      <Field label="Status" as="select" {...listing.bind('status')}>
        {options.map((o) => <option key={o} value={o}>{o[0].toUpperCase() + o.slice(1)}</option>)}
      </Field>
    </Filters>
  );
}

function Reports() {
  const l = useListing('/api/admin/reports', { status: 'pending' });
  const n = useNotice(l.list);
  const s = l.filters.status;
  return (
    <>
      <StatusFilter listing={l} label="Filter reports" options={['pending', 'resolved', 'dismissed', 'all']} />
      {n.show}
      <Listing
        listing={l}
        items="reports"
        empty={s === 'all' ? 'No reports.' : `No ${s} reports.`}
        caption="Reports"
        cols={['Code', 'Reason', 'Details', 'Reported', 'Status', 'Actions']}
        row={(r) => <ReportRow key={r.id} r={r} onDone={n.done} />}
      />
    </>
  );
}

function ReportRow({ r, onDone }) {
  const [note, setNote] = useState('');
  const act = useAction(async (body, msg) => {
    await post(`/api/admin/reports/${seg(r.id)}/resolve`, note ? { ...body, note } : body);
    onDone(msg);
  });
  const code = r.short_code;
  return (
    <tr data-testid={`row-${r.id}`}>
      <td><CodeLink code={code} /></td>
      <td>{r.reason}</td>
      <td><span class="prose">{r.details || '—'}</span></td>
      <td>{when(r.created_at)}</td>
      <td>{r.status === 'pending' ? r.status : <Resolved item={r} />}</td>
      <td>
        {r.status === 'pending' && (
          <>
            <Field label="Note (optional)" maxLength={2000} value={note} onInput={(e) => setNote(e.currentTarget.value)} />
            <Actions>
              <Small kind="danger" busy={act.busy}
                onClick={() => act.run({ action: 'resolve', disable_link: true }, `Report resolved; link ${code} is disabled.`)}>Resolve and disable link</Small>
              <Small kind="primary" busy={act.busy}
                onClick={() => act.run({ action: 'resolve' }, `Report on ${code} resolved.`)}>Resolve</Small>
              <Small busy={act.busy}
                onClick={() => act.run({ action: 'dismiss' }, `Report on ${code} dismissed.`)}>Dismiss</Small>
            </Actions>
          </>
        )}
        <Alert error={act.error} />
      </td>
    </tr>
  );
}

function Requests() {
  const l = useListing('/api/admin/permanent-requests', { status: 'pending' });
  const n = useNotice(l.list);
  const s = l.filters.status;
  return (
    <>
      <StatusFilter listing={l} label="Filter permanent requests" options={['pending', 'approved', 'rejected', 'all']} />
      {n.show}
      <Listing
        listing={l}
        items="requests"
        empty={s === 'all' ? 'No permanent requests.' : `No ${s} permanent requests.`}
        caption="Permanent requests"
        cols={['Code', 'Reason', 'Requested', 'Status', 'Actions']}
        row={(r) => <RequestRow key={r.id} r={r} onDone={n.done} />}
      />
    </>
  );
}

function RequestRow({ r, onDone }) {
  const [note, setNote] = useState('');
  const code = r.short_code;
  const act = useAction(async (action, msg) => {
    await post(`/api/admin/permanent-requests/${seg(r.id)}/resolve`, note ? { action, note } : { action });
    onDone(msg);
  });
  return (
    <tr data-testid={`row-${r.id}`}>
      <td><CodeLink code={code} /></td>
      <td><span class="prose">{r.reason || '—'}</span></td>
      <td>{when(r.created_at)}</td>
      <td>{r.status === 'pending' ? r.status : <Resolved item={r} />}</td>
      <td>
        {r.status === 'pending' && (
          <>
            <Field label="Note (optional)" maxLength={2000} value={note} onInput={(e) => setNote(e.currentTarget.value)} />
            <Actions>
              <Small kind="primary" busy={act.busy}
                onClick={() => act.run('approve', `Request for ${code} approved: the link is now permanent.`)}>Approve</Small>
              <Small busy={act.busy}
                onClick={() => act.run('reject', `Request for ${code} rejected.`)}>Reject</Small>
            </Actions>
          </>
        )}
        <Alert error={act.error} />
      </td>
    </tr>
  );
}

// ---- super admin: login records and audit log -------------------------------------------

// Hash shows the start of a keyed hash; the whole value is there to copy or compare.
const Hash = ({ h }) => (h ? <code class="ident" title={h}>{h.slice(0, 12)}…</code> : '—');

function Logins() {
  const l = useListing('/api/admin/login-records', { user_id: '', email: '', success: '' });
  return (
    <>
      <Filters label="Filter login records" onSubmit={l.submit}>
        <Field label="User id" {...l.bind('user_id')} />
        <Field label="E-mail" inputMode="email" {...l.bind('email')} />
        <Field label="Result" as="select" {...l.bind('success')}>
          <option value="">Any</option>
          <option value="true">Succeeded</option>
          <option value="false">Failed</option>
        </Field>
      </Filters>
      <Listing
        listing={l}
        items="records"
        empty="No login records match."
        caption="Login records"
        cols={['Time', 'E-mail', 'User id', 'Result', 'Method', 'IP hash', 'User agent']}
        row={(r) => (
          <tr key={r.id} data-testid={`row-${r.id}`}>
            <td>{when(r.created_at)}</td>
            <td>{r.email || '—'}</td>
            <td><span class="ident">{r.user_id || '—'}</span></td>
            <td>{r.success ? 'succeeded' : 'failed'}{r.reason && <Sub>{r.reason}</Sub>}</td>
            <td>{r.method}</td>
            <td><Hash h={r.ip_hash} /></td>
            <td><span class="ua">{r.user_agent || '—'}</span></td>
          </tr>
        )}
      />
    </>
  );
}

const AUDIT_ACTIONS = [
  'user.timeout', 'user.ban', 'user.unban', 'user.role', 'link.disable', 'link.enable', 'link.delete',
  'report.resolve', 'report.dismiss', 'permanent_request.approve', 'permanent_request.reject',
];

const detailText = (d) => (d == null ? '—' : typeof d === 'string' ? d : JSON.stringify(d));

function Audit() {
  const l = useListing('/api/admin/audit-log', { actor_id: '', action: '' });
  return (
    <>
      <Filters label="Filter audit log" onSubmit={l.submit}>
        <Field label="Actor id" {...l.bind('actor_id')} />
        <Field label="Action" list="admin-audit-actions" {...l.bind('action')} />
        <datalist id="admin-audit-actions">
          {AUDIT_ACTIONS.map((a) => <option key={a} value={a} />)}
        </datalist>
      </Filters>
      <Listing
        listing={l}
        items="entries"
        empty="No audit-log entries match."
        caption="Audit log"
        cols={['Time', 'Actor', 'Action', 'Target', 'Detail', 'IP hash']}
        row={(e) => (
          <tr key={e.id} data-testid={`row-${e.id}`}>
            <td>{when(e.created_at)}</td>
            <td><span class="ident">{e.actor_id}</span></td>
            <td><code>{e.action}</code></td>
            <td>{e.target_type} <span class="ident">{e.target_id}</span></td>
            <td><code class="detail">{detailText(e.detail)}</code></td>
            <td><Hash h={e.ip_hash} /></td>
          </tr>
        )}
      />
    </>
  );
}
