// The home page: shorten a link, anonymous or signed in.
import { useState } from 'preact/hooks';
import { seg } from '../api.js';
import { Alert, Button, Copy, Field, Page, useAction, useForm, useMe, when } from '../ui.jsx';
import { Captcha, CaptchaUnavailable, captchaConfig, postWithCaptcha } from '../captcha.jsx';

// The allowed expiry range per caller (CONTRACT § Links): anonymous 1–30 days, registered 1–365.
const maxDays = (user) => (user ? 365 : 30);

export function CreatePage() {
  const { user } = useMe();
  const f = useForm({ url: '', days: '30', code: '' });
  const [token, setToken] = useState('');
  const [result, setResult] = useState(null);
  const captcha = !user && captchaConfig();
  const create = useAction(async () => {
    const body = { url: f.values.url.trim(), expiration_days: Number(f.values.days) };
    if (user && f.values.code.trim()) body.custom_code = f.values.code.trim();
    const r = await postWithCaptcha('/api/links/shorten', body, token, !user);
    setResult(r);
    f.set((v) => ({ ...v, url: '', code: '' }));
  });
  const submit = (e) => {
    e.preventDefault();
    setResult(null);
    create.run();
  };
  return (
    <Page title="Shorten a link">
      <form class="card" onSubmit={submit} aria-describedby="create-note">
        <Field label="Destination URL" type="url" required maxLength={2048} placeholder="https://example.com/a/long/path" autoComplete="url" {...f.bind('url')} />
        <div class="row">
          <Field label="Expires in days" type="number" min={1} max={maxDays(user)} required hint={`1 to ${maxDays(user)} days`} {...f.bind('days')} />
          {user && <Field label="Custom code (optional)" pattern="[A-Za-z0-9_\-]{3,32}" hint="3–32 letters, digits, - or _" {...f.bind('code')} />}
        </div>
        {captcha && <Captcha onToken={setToken} />}
        {!user && <CaptchaUnavailable what="shorten a link without an account" />}
        <p id="create-note" class="muted">
          {user ? 'Links count against your quota; see the dashboard.' : <>Anonymous links last up to 30 days. <a href="#/register">Register</a> for longer links, custom codes and analytics.</>}
        </p>
        <Alert error={create.error} />
        <Button busy={create.busy} type="submit">Shorten</Button>
      </form>
      {result && <Result r={result} />}
    </Page>
  );
}

function Result({ r }) {
  return (
    <section class="card result" aria-labelledby="result-title" data-testid="create-result">
      <div class="stack">
        <h2 id="result-title">Your short link</h2>
        <p class="short"><a href={r.short_url} data-testid="short-url">{r.short_url}</a> <Copy text={r.short_url} /></p>
        <p class="muted url">to {r.destination_url}</p>
        <p>Expires {when(r.expires_at)}.</p>
        <p><a href={`/api/links/${seg(r.short_code)}/qr?format=png&size=512`} download={`${r.short_code}.png`}>Download the QR code</a></p>
      </div>
      <img class="qr" src={`/api/links/${seg(r.short_code)}/qr?format=svg`} alt={`QR code of ${r.short_url}`} width="160" height="160" />
    </section>
  );
}
