// My links: the paged list with search and state filter, and every action on a link.
import { useState } from 'preact/hooks';
import { del, get, post, query, seg } from '../api.js';
import { Alert, Button, Copy, Dialog, Empty, Field, Loading, Page, Pager, StateBadge, go, num, useAction, useLoad, when } from '../ui.jsx';

const pageSize = 20;

export function LinksPage({ route }) {
  const p = route.params;
  const page = Math.max(1, parseInt(p.get('page') || '1', 10) || 1);
  const status = p.get('status') || 'all';
  const q = p.get('q') || '';
  const [search, setSearch] = useState(q);
  const list = useLoad(() => get(`/api/user/links${query({ page, page_size: pageSize, status, q })}`), [page, status, q]);
  const [notice, setNotice] = useState('');
  // The filters live in the fragment, so a list can be bookmarked and Back works.
  const nav = (next) => go(`/links${query({ status, q, page: 1, ...next })}`);
  const [dialog, setDialog] = useState(null); // {kind, link}
  const done = (msg) => { setDialog(null); setNotice(msg); list.reload(); };
  return (
    <Page title="My links" actions={<a class="btn btn-primary" href="#/">Shorten a link</a>}>
      <form class="filters" role="search" onSubmit={(e) => { e.preventDefault(); nav({ q: search.trim() }); }}>
        <Field label="Search code or destination" type="search" value={search} onInput={(e) => setSearch(e.currentTarget.value)} />
        <Field label="State" as="select" value={status} onChange={(e) => nav({ status: e.currentTarget.value })}>
          <option value="all">All</option>
          <option value="active">Active</option>
          <option value="expired">Expired</option>
          <option value="disabled">Disabled</option>
        </Field>
        <Button type="submit" kind="secondary">Search</Button>
      </form>
      <p class="muted">Newest first.</p>
      {notice && <Alert kind="success">{notice}</Alert>}
      <Alert error={list.error} />
      {list.loading && !list.data && <Loading what="Loading your links" />}
      {list.data && list.data.links.length === 0 && (
        <Empty>{q || status !== 'all' ? 'No link matches.' : <>You have no links yet. <a href="#/">Shorten one</a>.</>}</Empty>
      )}
      {list.data && list.data.links.length > 0 && (
        <div class="table-wrap">
          <table class="data cards">
            <caption class="sr-only">Your links, newest first</caption>
            <thead><tr><th scope="col">Short link</th><th scope="col">Destination</th><th scope="col">State</th><th scope="col" class="num">Clicks</th><th scope="col">Expires</th><th scope="col">Actions</th></tr></thead>
            <tbody>
              {list.data.links.map((l) => (
                <tr key={l.id} data-testid={`link-${l.short_code}`}>
                  <td data-label="Short link"><a class="code" href={`#/links/${seg(l.short_code)}`}>{l.short_code}</a></td>
                  <td data-label="Destination" class="url">{l.destination_url}</td>
                  <td data-label="State"><StateBadge link={l} /></td>
                  <td data-label="Clicks" class="num">{num(l.click_count)}</td>
                  <td data-label="Expires">{l.auto_renew ? 'never' : when(l.expires_at)}</td>
                  <td data-label="Actions">
                    <div class="actions-cell">
                      <Copy text={l.short_url} />
                      <button type="button" class="btn btn-secondary btn-small" onClick={() => setDialog({ kind: 'qr', link: l })} aria-label={`QR code of ${l.short_code}`}>QR</button>
                      <a class="btn btn-secondary btn-small" href={`#/links/${seg(l.short_code)}`} aria-label={`Analytics of ${l.short_code}`}>Analytics</a>
                      <button type="button" class="btn btn-secondary btn-small" onClick={() => setDialog({ kind: 'renew', link: l })} aria-label={`Renew ${l.short_code}`}>Renew</button>
                      {!l.auto_renew && <button type="button" class="btn btn-secondary btn-small" onClick={() => setDialog({ kind: 'permanent', link: l })} aria-label={`Make permanent ${l.short_code}`}>Make permanent</button>}
                      <button type="button" class="btn btn-danger btn-small" onClick={() => setDialog({ kind: 'delete', link: l })} aria-label={`Delete ${l.short_code}`}>Delete</button>
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {list.data && <Pager page={page} pageSize={pageSize} total={list.data.total} onPage={(n) => nav({ page: n })} />}
      {dialog && dialog.kind === 'qr' && <QRDialog link={dialog.link} onClose={() => setDialog(null)} />}
      {dialog && dialog.kind === 'renew' && <RenewDialog link={dialog.link} onClose={() => setDialog(null)} onDone={done} />}
      {dialog && dialog.kind === 'permanent' && <PermanentDialog link={dialog.link} onClose={() => setDialog(null)} onDone={done} />}
      {dialog && dialog.kind === 'delete' && <DeleteDialog link={dialog.link} onClose={() => setDialog(null)} onDone={done} />}
    </Page>
  );
}

export function QRDialog({ link, onClose }) {
  const base = `/api/links/${seg(link.short_code)}/qr`;
  return (
    <Dialog title={`QR code of ${link.short_code}`} open onClose={onClose}>
      <img class="qr" src={`${base}?format=svg`} alt={`QR code of ${link.short_url}`} width="160" height="160" />
      <p class="row">
        <a href={`${base}?format=png&size=512`} download={`${link.short_code}.png`}>Download PNG</a>
        <a href={`${base}?format=svg&size=512`} download={`${link.short_code}.svg`}>Download SVG</a>
      </p>
      <Button kind="secondary" onClick={onClose}>Close</Button>
    </Dialog>
  );
}

function RenewDialog({ link, onClose, onDone }) {
  const [days, setDays] = useState('30');
  const renew = useAction(async () => {
    const r = await post(`/api/user/links/${seg(link.short_code)}/renew`, { expiration_days: Number(days) });
    onDone(`${link.short_code} now expires ${when(r.link.expires_at)}.`);
  });
  return (
    <Dialog title={`Renew ${link.short_code}`} open onClose={onClose}>
      <form onSubmit={(e) => { e.preventDefault(); renew.run(); }}>
        <Field label="Days from now" type="number" min={1} max={365} required value={days} onInput={(e) => setDays(e.currentTarget.value)} />
        <Alert error={renew.error} />
        <div class="row"><Button busy={renew.busy} type="submit">Renew</Button><Button kind="secondary" type="button" onClick={onClose}>Cancel</Button></div>
      </form>
    </Dialog>
  );
}

function PermanentDialog({ link, onClose, onDone }) {
  const [reason, setReason] = useState('');
  const ask = useAction(async () => {
    await post(`/api/user/links/${seg(link.short_code)}/request-permanent`, { reason: reason.trim() || null });
    onDone(`A moderator will look at your request for ${link.short_code}.`);
  });
  return (
    <Dialog title={`Make ${link.short_code} permanent`} open onClose={onClose}>
      <form onSubmit={(e) => { e.preventDefault(); ask.run(); }}>
        <p>A permanent link renews itself and never expires. A moderator approves each request.</p>
        <Field label="Reason" as="textarea" maxLength={2000} value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
        <Alert error={ask.error} />
        <div class="row"><Button busy={ask.busy} type="submit">Send request</Button><Button kind="secondary" type="button" onClick={onClose}>Cancel</Button></div>
      </form>
    </Dialog>
  );
}

function DeleteDialog({ link, onClose, onDone }) {
  const remove = useAction(async () => {
    await del(`/api/user/links/${seg(link.short_code)}`);
    onDone(`${link.short_code} is deleted.`);
  });
  return (
    <Dialog title={`Delete ${link.short_code}?`} open onClose={onClose}>
      <p>The short link stops working at once and its analytics go with it. This cannot be undone.</p>
      <Alert error={remove.error} />
      <div class="row"><Button busy={remove.busy} kind="danger" onClick={() => remove.run()}>Delete</Button><Button kind="secondary" onClick={onClose}>Cancel</Button></div>
    </Dialog>
  );
}
