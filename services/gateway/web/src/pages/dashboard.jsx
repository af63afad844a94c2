// The dashboard: the quota as a meter, counts by state, total clicks, recent links.
import { get } from '../api.js';
import { Alert, Card, Empty, Loading, Page, StateBadge, num, until, useLoad, when } from '../ui.jsx';

export function DashboardPage() {
  const d = useLoad(() => get('/api/user/dashboard'), []);
  return (
    <Page title="Dashboard" actions={<a class="btn btn-primary" href="#/">Shorten a link</a>}>
      <Alert error={d.error} />
      {d.loading && !d.data && <Loading />}
      {d.data && <Body d={d.data} />}
    </Page>
  );
}

function Body({ d }) {
  const q = d.quota;
  return (
    <>
      <Card title="Quota" id="quota">
        <p>
          <span data-testid="quota-used">{num(q.used)}</span> of {num(q.limit)} links used in the last {q.window_days} days
          {q.used > 0 && q.resets_at ? `; the oldest frees up ${until(q.resets_at)}` : ''}.
        </p>
        <meter class="meter" min={0} max={q.limit} low={q.limit * 0.7} high={q.limit * 0.9} optimum={0} value={q.used} aria-label={`Quota: ${q.used} of ${q.limit} used`} />
      </Card>
      <dl class="stats" aria-label="Your links">
        <div><dt>Links</dt><dd data-testid="total-links">{num(d.total_links)}</dd></div>
        <div><dt>Active</dt><dd>{num(d.active_links)}</dd></div>
        <div><dt>Expired</dt><dd>{num(d.expired_links)}</dd></div>
        <div><dt>Disabled</dt><dd>{num(d.disabled_links)}</dd></div>
        <div><dt>Clicks</dt><dd data-testid="total-clicks">{num(d.total_clicks)}</dd></div>
      </dl>
      <Card title="Recent links" id="recent">
        {d.recent_links.length === 0 ? (
          <Empty>No links yet. <a href="#/">Shorten your first link</a>.</Empty>
        ) : (
          <ul class="bars">
            {d.recent_links.map((l) => (
              <li key={l.id}>
                <span class="label"><a href={`#/links/${encodeURIComponent(l.short_code)}`}>{l.short_code}</a> <StateBadge link={l} /> <span class="muted url">{l.destination_url}</span></span>
                <span class="muted">{num(l.click_count)} clicks · {when(l.created_at)}</span>
              </li>
            ))}
          </ul>
        )}
      </Card>
    </>
  );
}
