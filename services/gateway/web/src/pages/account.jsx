// My account: profile, e-mail verification, password, sessions, data export and account
// deletion (CONTRACT § Accounts and abuse).
import { useState } from 'preact/hooks';
import { ApiError, del, get, post, seg } from '../api.js';
import {
  Alert, Button, Card, Dialog, Empty, Field, Loading, Page,
  go, loadMe, roleName, setUser, useAction, useForm, useLoad, useMe, when,
} from '../ui.jsx';

const isGoogle = (u) => u.auth_provider === 'google';

export function AccountPage() {
  const { user } = useMe();
  // A password change ends every session but gives this one a fresh cookie: list them anew.
  const [gen, setGen] = useState(0);
  if (!user) return null; // the router shows the sign-in page instead
  return (
    <Page title="My account">
      <Profile user={user} />
      {isGoogle(user) ? (
        <Card title="Password" id="password">
          <p>You sign in with Google, so this account has no password to change.</p>
        </Card>
      ) : (
        <PasswordCard onChanged={() => setGen((n) => n + 1)} />
      )}
      <Sessions gen={gen} />
      <ExportCard />
      <DeleteCard user={user} />
    </Page>
  );
}

function Profile({ user }) {
  const name = [user.first_name, user.last_name].filter(Boolean).join(' ');
  return (
    <Card title="Profile" id="profile">
      <dl class="stats">
        <div><dt>E-mail</dt><dd class="url" data-testid="profile-email">{user.email}</dd></div>
        <div><dt>Name</dt><dd>{name || '—'}</dd></div>
        <div><dt>Role</dt><dd>{roleName(user.role)}</dd></div>
        <div><dt>Signs in with</dt><dd>{isGoogle(user) ? 'Google' : 'e-mail and password'}</dd></div>
        {user.email_verified !== undefined && (
          <div><dt>E-mail address</dt><dd data-testid="profile-verified">{user.email_verified ? 'verified' : 'not verified'}</dd></div>
        )}
        <div><dt>Member since</dt><dd>{when(user.created_at)}</dd></div>
      </dl>
      {user.email_verified === false && <Resend email={user.email} />}
    </Card>
  );
}

// Resend mails the verification link again (at most 3 an hour: 429; 409 once verified).
function Resend({ email }) {
  const send = useAction(async () => {
    try {
      await post('/api/auth/resend-verification');
    } catch (e) {
      if (e.status === 409) loadMe(); // verified meanwhile: refresh the profile
      throw e;
    }
  });
  return (
    <div class="stack">
      <p>Your e-mail address is not verified yet: you cannot create links until you open the link we mailed to {email}.</p>
      {send.done && <Alert kind="success">Sent: check your inbox (and the spam folder).</Alert>}
      <Alert error={send.error} />
      <Button kind="secondary" type="button" busy={send.busy} onClick={() => send.run()}>Send the verification e-mail again</Button>
    </div>
  );
}

// PasswordCard changes the password; the API ends every session and sets a fresh cookie
// for this one, so the user stays signed in here only.
function PasswordCard({ onChanged }) {
  const f = useForm({ current: '', next: '' });
  const change = useAction(async () => {
    const r = await post('/api/auth/password', { current_password: f.values.current, new_password: f.values.next });
    f.reset();
    if (r && r.user) setUser(r.user);
    else loadMe();
    onChanged();
  });
  const submit = (e) => {
    e.preventDefault();
    change.run();
  };
  return (
    <Card title="Password" id="password">
      <form onSubmit={submit}>
        <Field label="Current password" type="password" required autoComplete="current-password" {...f.bind('current')} />
        <Field label="New password" type="password" required minLength={8} maxLength={128} autoComplete="new-password" hint="8 to 128 characters" {...f.bind('next')} />
        {change.done && <Alert kind="success">Password changed; your other sessions were signed out</Alert>}
        <Alert error={change.error} />
        <Button busy={change.busy} type="submit">Change password</Button>
      </form>
    </Card>
  );
}

function Sessions({ gen }) {
  const list = useLoad(() => get('/api/user/sessions'), [gen]);
  const revoke = useAction(async (id) => {
    await del(`/api/user/sessions/${seg(id)}`);
    list.reload();
  });
  const sessions = (list.data && list.data.sessions) || [];
  const others = sessions.filter((s) => !s.current);
  return (
    <Card title="Sessions" id="sessions">
      <p class="muted">Where your account is signed in. Sign out a device you do not recognise, then change your password.</p>
      <Alert error={list.error} />
      <Alert error={revoke.error} />
      {list.loading && !list.data && <Loading what="Loading sessions" />}
      {list.data && sessions.length === 0 && <Empty>No sessions.</Empty>}
      {sessions.length > 0 && (
        <div class="table-wrap">
          <table class="data">
            <caption class="sr-only">Your sessions</caption>
            <thead>
              <tr>
                <th scope="col">Signed in</th>
                <th scope="col">Last seen</th>
                <th scope="col">Browser</th>
                <th scope="col"><span class="sr-only">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              {sessions.map((s) => (
                <tr key={s.id} data-testid={`session-${s.id}`}>
                  <td>{when(s.created_at)}</td>
                  <td>{s.last_seen_at ? when(s.last_seen_at) : '—'}</td>
                  <td class="url">{s.user_agent || 'unknown'}</td>
                  <td>
                    {s.current ? (
                      <span class="badge badge-active">This session</span>
                    ) : (
                      <button type="button" class="btn btn-secondary btn-small" disabled={revoke.busy} onClick={() => revoke.run(s.id)}>Sign out</button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {others.length > 0 && (
        <div class="toolbar">
          <Button kind="secondary" type="button" busy={revoke.busy} onClick={() => revoke.run('others')}>Sign out all other sessions</Button>
        </div>
      )}
    </Card>
  );
}

// downloadExport fetches the export (an attachment) and saves it; fetching rather than a
// plain link lets the page show a refusal (at most 10 an hour) instead of saving it.
async function downloadExport() {
  let res;
  try {
    res = await fetch('/api/user/export', { credentials: 'same-origin', headers: { Accept: 'application/json' } });
  } catch {
    throw new ApiError(0, 'linkmesh cannot be reached: check your connection and try again');
  }
  if (!res.ok) {
    let msg = `the server answered ${res.status}`;
    try { msg = (await res.json()).error || msg; } catch { /* not JSON */ }
    const retry = parseInt(res.headers.get('Retry-After') || '', 10);
    throw new ApiError(res.status, msg, Number.isFinite(retry) ? retry : undefined);
  }
  const m = /filename="?([^";]+)"?/.exec(res.headers.get('Content-Disposition') || '');
  const name = m ? m[1] : `linkmesh-export-${new Date().toISOString().slice(0, 10)}.json`;
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

function ExportCard() {
  const exp = useAction(downloadExport);
  return (
    <Card title="Your data" id="export">
      <p>Download everything linkmesh keeps about you as one JSON file: your account, your links with their analytics over the last year, and the metadata of your API tokens and sessions.</p>
      {exp.done && <Alert kind="success">The export was downloaded.</Alert>}
      <Alert error={exp.error} />
      <Button kind="secondary" type="button" busy={exp.busy} onClick={() => exp.run()}>Export my data</Button>
    </Card>
  );
}

const CONFIRM_WORD = 'delete';

function DeleteCard({ user }) {
  const [open, setOpen] = useState(false);
  const f = useForm({ password: '', confirm: '' });
  const google = isGoogle(user);
  const remove = useAction(async () => {
    await del('/api/user/account', google ? {} : { password: f.values.password });
    setUser(null);
    go('/');
  });
  const close = () => {
    setOpen(false);
    f.reset();
    remove.clear();
  };
  const confirmed = f.values.confirm.trim().toLowerCase() === CONFIRM_WORD && (google || f.values.password !== '');
  const submit = (e) => {
    e.preventDefault();
    if (confirmed) remove.run();
  };
  return (
    <Card title="Delete the account" id="delete">
      <p>Deleting your account removes it for good, with all your links (they stop working at once), their analytics, your API tokens and webhooks. It cannot be undone.</p>
      <button type="button" class="btn btn-danger" onClick={() => setOpen(true)}>Delete my account</button>
      <Dialog title="Delete your account?" open={open} onClose={close}>
        <form onSubmit={submit}>
          <p>This removes your account and all your links for good.</p>
          {google ? (
            <p class="alert alert-info">Your account signs in with Google and has no password. To confirm it is you, sign out, sign in again with Google, and delete the account within 10 minutes of that sign-in, in the same browser.</p>
          ) : (
            <Field label="Your password" type="password" required autoComplete="current-password" {...f.bind('password')} />
          )}
          <Field label="Type DELETE to confirm" required autoComplete="off" {...f.bind('confirm')} />
          <Alert error={remove.error} />
          <div class="toolbar">
            <Button kind="danger" type="submit" busy={remove.busy} disabled={!confirmed || remove.busy}>Delete for good</Button>
            <button type="button" class="btn btn-secondary" onClick={close}>Cancel</button>
          </div>
        </form>
      </Dialog>
    </Card>
  );
}
