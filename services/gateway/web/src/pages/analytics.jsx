// A link's analytics: clicks and unique visitors over time as a chart, the breakdowns as bar
// lists, and every number in a table too (the table toggle), for screen readers.
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { get, query, seg } from '../api.js';
import { Alert, Card, Empty, Loading, Page, num, useLoad } from '../ui.jsx';
import { QRDialog } from './links.jsx';

const ranges = [7, 30, 90, 365];
const breakdowns = [
  ['countries', 'Countries'], ['referrers', 'Referrers'], ['devices', 'Devices'],
  ['browsers', 'Browsers'], ['operating_systems', 'Operating systems'],
];

export function AnalyticsPage({ route }) {
  const code = route.path.slice('/links/'.length); // route() decoded it
  const days = ranges.includes(Number(route.params.get('days'))) ? Number(route.params.get('days')) : 30;
  const [table, setTable] = useState(false);
  const [qr, setQR] = useState(false);
  const a = useLoad(() => get(`/api/user/links/${seg(code)}/analytics${query({ days })}`), [code, days]);
  const csv = (breakdown) => `/api/user/links/${seg(code)}/analytics/export${query({ days, breakdown })}`;
  return (
    <Page title={`Analytics of ${code}`}>
      <div class="toolbar">
        <div class="seg" role="group" aria-label="Range">
          {ranges.map((d) => (
            <button type="button" aria-pressed={d === days ? 'true' : 'false'} onClick={() => (location.hash = `#/links/${seg(code)}?days=${d}`)}>{d} days</button>
          ))}
        </div>
        <label class="check"><input type="checkbox" checked={table} onChange={(e) => setTable(e.currentTarget.checked)} /> Show numbers as tables</label>
        <a class="btn btn-secondary btn-small" href={csv()} download>Download CSV</a>
        <button type="button" class="btn btn-secondary btn-small" onClick={() => setQR(true)}>QR code</button>
      </div>
      <Alert error={a.error} />
      {a.loading && !a.data && <Loading what="Loading analytics" />}
      {a.data && (
        <>
          <dl class="stats" aria-label="Totals">
            <div><dt>Clicks</dt><dd data-testid="analytics-clicks">{num(a.data.total_clicks)}</dd></div>
            <div><dt>Unique visitors</dt><dd data-testid="analytics-visitors">{num(a.data.unique_visitors)}</dd></div>
            <div><dt>Range</dt><dd class="small">{a.data.from} – {a.data.to}</dd></div>
          </dl>
          <Card title="Over time" id="over-time">
            {table ? <SeriesTable series={a.data.timeseries} /> : <SeriesChart series={a.data.timeseries} />}
          </Card>
          <div class="grid">
            {breakdowns.map(([key, title]) => (
              <Card title={title} id={key} key={key}>
                <Breakdown rows={a.data[key]} title={title} table={table} />
                <p><a href={csv(key)} download>{title} as CSV</a></p>
              </Card>
            ))}
          </div>
        </>
      )}
      {qr && <QRDialog link={{ short_code: code, short_url: `${location.origin}/${code}` }} onClose={() => setQR(false)} />}
    </Page>
  );
}

function SeriesChart({ series }) {
  const ref = useRef();
  useEffect(() => {
    const el = ref.current;
    const xs = series.map((d) => Date.parse(`${d.date}T00:00:00Z`) / 1000);
    const width = () => Math.max(280, el.clientWidth);
    const plot = new uPlot({
      width: width(), height: 260,
      series: [{}, { label: 'Clicks', stroke: '#0b57d0', width: 2 }, { label: 'Unique visitors', stroke: '#b3261e', width: 2, dash: [6, 4] }],
      axes: [{}, { size: 50 }],
      scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(4, max)] } },
    }, [xs, series.map((d) => d.clicks), series.map((d) => d.unique_visitors)], el);
    // The chart follows its box (a rotated phone, a resized window).
    const watch = new ResizeObserver(() => {
      if (Math.abs(plot.width - width()) > 1) plot.setSize({ width: width(), height: 260 });
    });
    watch.observe(el);
    return () => { watch.disconnect(); plot.destroy(); };
  }, [series]);
  // The chart is a picture for sighted users; the table toggle gives everyone the numbers.
  return <div class="chart" ref={ref} role="img" aria-label={`Clicks per day: ${series.reduce((s, d) => s + d.clicks, 0)} in all; use "Show numbers as tables" for each day`} />;
}

function SeriesTable({ series }) {
  return (
    <div class="table-wrap">
      <table class="data" data-testid="series-table">
        <caption class="sr-only">Clicks and unique visitors per day</caption>
        <thead><tr><th scope="col">Day</th><th scope="col" class="num">Clicks</th><th scope="col" class="num">Unique visitors</th></tr></thead>
        <tbody>{series.map((d) => <tr key={d.date}><td>{d.date}</td><td class="num">{num(d.clicks)}</td><td class="num">{num(d.unique_visitors)}</td></tr>)}</tbody>
      </table>
    </div>
  );
}

function Breakdown({ rows, title, table }) {
  if (!rows || rows.length === 0) return <Empty>No clicks yet.</Empty>;
  const total = rows.reduce((s, r) => s + r.clicks, 0);
  if (table) {
    return (
      <div class="table-wrap">
        <table class="data">
          <caption class="sr-only">{title}</caption>
          <thead><tr><th scope="col">{title}</th><th scope="col" class="num">Clicks</th></tr></thead>
          <tbody>{rows.map((r) => <tr key={r.value}><td>{r.value || 'unknown'}</td><td class="num">{num(r.clicks)}</td></tr>)}</tbody>
        </table>
      </div>
    );
  }
  return (
    <ul class="bars">
      {rows.map((r) => (
        <li key={r.value}>
          <span class="label">{r.value || 'unknown'}</span>
          <span>{num(r.clicks)}</span>
          <progress max={total} value={r.clicks} aria-label={`${r.value || 'unknown'}: ${r.clicks} of ${total} clicks`} />
        </li>
      ))}
    </ul>
  );
}
