// Report an abusive short link to the moderators: public, signed in or not
// (POST /api/reports, CONTRACT § Public reports).
import { useEffect, useState } from 'preact/hooks';
import { Alert, Button, Field, Page, useAction, useForm } from '../ui.jsx';
import { Captcha, CaptchaUnavailable, captchaConfig, postWithCaptcha } from '../captcha.jsx';

const REASONS = [
  ['spam', 'Spam'],
  ['phishing', 'Phishing'],
  ['malware', 'Malware'],
  ['illegal', 'Illegal content'],
  ['other', 'Something else'],
];
const MAX_DETAILS = 2000;

// codeOf takes what people paste — "https://host/abc123", "host/abc123?x", "abc123" — and
// returns the code: the last path segment.
export function codeOf(input) {
  const s = (input || '').trim().split(/[?#]/)[0];
  const parts = s.split('/').filter(Boolean);
  return parts.length ? parts[parts.length - 1] : '';
}

export function ReportPage({ route }) {
  const f = useForm({ link: (route && route.params.get('code')) || '', reason: '', details: '' });
  const [token, setToken] = useState('');
  const [sent, setSent] = useState(false);
  const [problem, setProblem] = useState('');
  const captcha = captchaConfig();
  // A link to #/report?code=… while the page is open fills the field too.
  const prefill = route && route.params.get('code');
  useEffect(() => { if (prefill) f.set((v) => ({ ...v, link: prefill })); }, [prefill]);

  const send = useAction(async () => {
    const body = { short_code: codeOf(f.values.link), reason: f.values.reason };
    if (f.values.details.trim()) body.details = f.values.details.trim();
    await postWithCaptcha('/api/reports', body, token);
    setSent(true);
    f.set({ link: '', reason: '', details: '' });
  });

  const submit = (e) => {
    e.preventDefault();
    setProblem('');
    send.clear();
    if (!codeOf(f.values.link)) return setProblem('Enter the short link or its code.');
    if (!f.values.reason) return setProblem('Choose a reason.');
    if (captcha && !token) return setProblem('Complete the captcha first.');
    send.run();
  };

  if (sent) {
    return (
      <Page title="Report a link">
        <div class="card stack">
          <p class="alert alert-success" role="status" data-testid="report-sent">Thank you: the report was sent to the moderators</p>
          <button type="button" class="btn btn-secondary" onClick={() => { setSent(false); setToken(''); }}>Report another link</button>
        </div>
      </Page>
    );
  }

  const left = MAX_DETAILS - f.values.details.length;
  return (
    <Page title="Report a link">
      <form class="card" onSubmit={submit} noValidate>
        <p class="muted">Tell the moderators about a short link that leads to spam, phishing, malware or other abuse. Nothing about you is stored with the report.</p>
        <Field label="Short link or code" required autoComplete="off" placeholder="https://… or abc123" hint="The whole short link, or just its code" {...f.bind('link')} />
        <Field label="Reason" as="select" required {...f.bind('reason')}>
          <option value="">Choose a reason</option>
          {REASONS.map(([v, t]) => <option key={v} value={v}>{t}</option>)}
        </Field>
        <Field
          label="Details"
          as="textarea"
          maxLength={MAX_DETAILS}
          rows={5}
          hint={`Optional. ${f.values.details.length} of ${MAX_DETAILS} characters${left <= 100 ? ` (${left} left)` : ''}`}
          {...f.bind('details')}
        />
        {captcha && <Captcha onToken={setToken} />}
        <CaptchaUnavailable what="send a report" />
        <Alert error={problem || send.error} />
        <Button busy={send.busy} type="submit">Send report</Button>
      </form>
    </Page>
  );
}
