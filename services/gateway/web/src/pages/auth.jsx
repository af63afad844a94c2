// Sign in, register, password reset and e-mail verification: the links in linkmesh's mails
// land on the last two (/#/reset-password?token=…, /#/verify-email?token=…).
import { useEffect, useState } from 'preact/hooks';
import { get, post } from '../api.js';
import { Alert, Button, Field, Page, go, setUser, useAction, useForm } from '../ui.jsx';
import { Captcha, CaptchaUnavailable, captchaConfig, postWithCaptcha } from '../captcha.jsx';

export function LoginPage({ next, route }) {
  const idpError = route && route.params.get('error');
  const f = useForm({ email: '', password: '' });
  const [needCaptcha, setNeedCaptcha] = useState(false);
  const [token, setToken] = useState('');
  const login = useAction(async () => {
    const body = { email: f.values.email.trim(), password: f.values.password };
    try {
      const r = await postWithCaptcha('/api/auth/login', body, token, needCaptcha);
      setUser(r.user);
      go(next && next !== '/login' ? next : '/dashboard');
    } catch (e) {
      // Past an e-mail's failure ceiling a login needs a captcha (when one is configured).
      if (e.status === 400 && /captcha_token is required/.test(e.message) && captchaConfig()) setNeedCaptcha(true);
      throw e;
    }
  });
  return (
    <Page title="Sign in">
      <div class="grid">
        <form class="card" onSubmit={(e) => { e.preventDefault(); login.run(); }}>
          <Field label="E-mail" type="email" required autoComplete="username" {...f.bind('email')} />
          <Field label="Password" type="password" required autoComplete="current-password" {...f.bind('password')} />
          {needCaptcha && <Captcha onToken={setToken} />}
          {idpError && !login.error && <Alert error={`Signing in with Google did not work: ${idpError}`} />}
          <Alert error={login.error} />
          <div class="row">
            <Button busy={login.busy} type="submit">Sign in</Button>
            <a href="#/forgot-password">Forgot your password?</a>
          </div>
        </form>
        <IdpSignIn />
      </div>
      <p>No account yet? <a href="#/register">Register</a>.</p>
    </Page>
  );
}

export function RegisterPage() {
  const f = useForm({ email: '', password: '', first_name: '', last_name: '' });
  const [token, setToken] = useState('');
  const captcha = captchaConfig();
  const register = useAction(async () => {
    const r = await postWithCaptcha('/api/auth/register', { ...f.values, email: f.values.email.trim() }, token);
    setUser(r.user);
    go('/dashboard');
  });
  return (
    <Page title="Register">
      <form class="card" onSubmit={(e) => { e.preventDefault(); register.run(); }}>
        <div class="row">
          <Field label="First name" required autoComplete="given-name" {...f.bind('first_name')} />
          <Field label="Last name" required autoComplete="family-name" {...f.bind('last_name')} />
        </div>
        <Field label="E-mail" type="email" required autoComplete="email" {...f.bind('email')} />
        <Field label="Password" type="password" required minLength={8} maxLength={128} autoComplete="new-password" hint="8 to 128 characters" {...f.bind('password')} />
        {captcha && <Captcha onToken={setToken} />}
        <CaptchaUnavailable what="register" />
        <p class="muted">We mail you a link to verify the address; until then you can sign in but not create links.</p>
        <Alert error={register.error} />
        <Button busy={register.busy} type="submit">Register</Button>
      </form>
      <p>Already registered? <a href="#/login">Sign in</a>.</p>
    </Page>
  );
}

export function ForgotPage() {
  const f = useForm({ email: '' });
  const send = useAction(() => post('/api/auth/password-reset', { email: f.values.email.trim() }));
  return (
    <Page title="Reset your password">
      <form class="card" onSubmit={(e) => { e.preventDefault(); send.run(); }}>
        <Field label="E-mail" type="email" required autoComplete="email" {...f.bind('email')} />
        <Alert error={send.error} />
        {send.done && <Alert kind="success">If an account has this address, a reset link is on its way. It works for 30 minutes.</Alert>}
        <Button busy={send.busy} type="submit">Send reset link</Button>
      </form>
    </Page>
  );
}

export function ResetPage({ route }) {
  const token = route.params.get('token') || '';
  const f = useForm({ password: '' });
  const reset = useAction(() => post('/api/auth/password-reset/confirm', { token, new_password: f.values.password }));
  return (
    <Page title="Choose a new password">
      {!token && <Alert error="This page needs the link from the reset e-mail." />}
      <form class="card" onSubmit={(e) => { e.preventDefault(); reset.run(); }}>
        <Field label="New password" type="password" required minLength={8} maxLength={128} autoComplete="new-password" hint="8 to 128 characters; every session of the account ends" {...f.bind('password')} />
        <Alert error={reset.error} />
        {reset.done ? (
          <Alert kind="success">Your password is changed. <a href="#/login">Sign in</a> with it.</Alert>
        ) : (
          <Button busy={reset.busy} type="submit" disabled={!token}>Set password</Button>
        )}
      </form>
    </Page>
  );
}

export function VerifyPage({ route }) {
  const token = route.params.get('token') || '';
  const verify = useAction(async () => {
    const r = await post('/api/auth/verify-email', { token });
    // Verifying ends every session of the account; sign in again.
    setUser(null);
    return r;
  });
  useEffect(() => { if (token) verify.run(); }, [token]);
  return (
    <Page title="Verify your e-mail address">
      {!token && <Alert error="This page needs the link from the verification e-mail." />}
      {verify.busy && <p role="status">Verifying…</p>}
      <Alert error={verify.error} />
      {verify.done && (
        <Alert kind="success">
          Your address is verified. <a href="#/login">Sign in</a> to create links.
        </Alert>
      )}
    </Page>
  );
}

// ---- signing in with the identity provider ------------------------------------------------
// The browser goes to the provider's authorization endpoint (idp-config's
// authorization_endpoint) for an ID token (implicit flow) and comes back to /#id_token=…; no
// provider script runs on our pages.

function IdpSignIn() {
  const [cfg, setCfg] = useState(null);
  useEffect(() => { get('/api/auth/idp-config').then(setCfg, () => setCfg(null)); }, []);
  if (!cfg || !cfg.enabled || !cfg.client_id || !cfg.authorization_endpoint) return null;
  const start = () => {
    const nonce = randomString();
    const state = randomString();
    sessionStorage.setItem('linkmesh-idp', JSON.stringify({ nonce, state }));
    const q = new URLSearchParams({
      client_id: cfg.client_id, response_type: 'id_token', scope: 'openid email profile',
      redirect_uri: location.origin + '/', nonce, state, prompt: 'select_account',
    });
    // The endpoint may carry a query of its own (a policy, a tenant): add to it.
    const u = new URL(cfg.authorization_endpoint);
    q.forEach((v, k) => u.searchParams.set(k, v));
    location.assign(u.toString());
  };
  return (
    <section class="card" aria-labelledby="idp-title">
      <h2 id="idp-title">Or</h2>
      <button type="button" class="btn btn-secondary" onClick={start}>Sign in with Google</button>
    </section>
  );
}

function randomString() {
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

// finishIdpSignIn completes a sign-in when the provider sent the browser back with an ID
// token in the fragment: state and nonce must be the ones this tab sent.
export async function finishIdpSignIn() {
  if (!idpAnswer()) return;
  const p = new URLSearchParams(location.hash.replace(/^#/, ''));
  history.replaceState(null, '', location.pathname); // the token leaves the address bar at once
  const sent = JSON.parse(sessionStorage.getItem('linkmesh-idp') || '{}');
  sessionStorage.removeItem('linkmesh-idp');
  const fail = (why) => go(`/login?error=${encodeURIComponent(why)}`);
  if (!sent.state || p.get('state') !== sent.state) return fail('the answer does not belong to this sign-in; try again');
  if (p.get('error')) return fail(p.get('error_description') || p.get('error'));
  const idToken = p.get('id_token') || '';
  if (tokenNonce(idToken) !== sent.nonce) return fail('the answer does not belong to this sign-in; try again');
  try {
    const r = await post('/api/auth/google', { id_token: idToken });
    setUser(r.user);
    go('/dashboard');
  } catch (e) {
    fail(e.message);
  }
  return undefined;
}

// idpAnswer reports whether the fragment is the provider's answer (a token or an error)
// rather than a route of the app.
export function idpAnswer() {
  const p = new URLSearchParams(location.hash.replace(/^#/, ''));
  return p.has('state') && (p.has('id_token') || p.has('error'));
}

function tokenNonce(jwt) {
  try {
    const part = jwt.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    return JSON.parse(atob(part)).nonce;
  } catch {
    return undefined;
  }
}
