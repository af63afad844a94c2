// The captcha widget of anonymous forms (hCaptcha or Cloudflare Turnstile). The gateway
// announces it in the page's head:
//   <meta name="linkmesh-captcha" content="SITEKEY" data-script="https://provider/api.js">
// No meta, no captcha: the API then ignores captcha_token (CONTRACT § Links).
import { useEffect, useRef } from 'preact/hooks';
import { post } from './api.js';

// captchaConfig returns {siteKey, script} or null when no captcha is configured.
export function captchaConfig() {
  const m = document.querySelector('meta[name="linkmesh-captcha"]');
  const siteKey = m && (m.getAttribute('content') || '').trim();
  if (!siteKey) return null;
  return { siteKey, script: m.getAttribute('data-script') || '' };
}

// postWithCaptcha posts body to path, with the solved captcha token when a widget is
// configured and needed; then it asks for a new challenge, since a token is good for one
// request whatever the answer.
export async function postWithCaptcha(path, body, token, needed = true) {
  if (!needed || !captchaConfig()) return post(path, body);
  try {
    return await post(path, { ...body, captcha_token: token });
  } finally {
    resetCaptcha();
  }
}

// CaptchaUnavailable tells a visitor why an anonymous form will be refused: the deployment
// verifies captchas but gave the pages no widget (LINKMESH_CAPTCHA_SITE_KEY unset).
export function CaptchaUnavailable({ what }) {
  if (!document.querySelector('meta[name="linkmesh-captcha-unavailable"]')) return null;
  return (
    <p class="alert alert-info" role="status">
      This linkmesh asks for a captcha to {what}, but its operator has not set one up for browsers. <a href="#/login">Sign in</a> or use the REST API.
    </p>
  );
}

// The provider's global once its script has run.
const provider = () => window.turnstile || window.hcaptcha;

// loadScript appends the provider's script once per page load (a plain <script src>: the
// CSP allows no inline script).
function loadScript(src) {
  if (!src || document.querySelector('script[data-linkmesh-captcha]')) return;
  const s = document.createElement('script');
  s.src = src;
  s.async = true;
  s.defer = true;
  s.dataset.linkmeshCaptcha = '';
  document.head.append(s);
}

// Both providers call the global functions named in data-callback / data-expired-callback.
// Only one Captcha is on screen at a time, so one pair of globals serves every form.
let current = null; // the onToken of the mounted widget

function globals() {
  window.linkmeshCaptcha = (token) => current && current(token || '');
  window.linkmeshCaptchaExpired = () => current && current('');
}

// resetCaptcha asks for a new challenge: a token is good for one request only, so
// postWithCaptcha calls this after every submission.
function resetCaptcha() {
  const box = document.querySelector('.h-captcha.cf-turnstile');
  try {
    if (window.turnstile && box) window.turnstile.reset(box);
    else if (window.hcaptcha && box) window.hcaptcha.reset(widgetID(box));
  } catch { /* no widget rendered yet */ }
  if (current) current('');
}

// widgetID is the hCaptcha widget in box: the id render() returned, or the one hCaptcha wrote
// on a widget it rendered by itself. Without an id, reset() would reset the page's first
// widget, which after moving between pages may be a removed one.
function widgetID(box) {
  const frame = box.querySelector('iframe[data-hcaptcha-widget-id]');
  return box.dataset.widgetId || box.getAttribute('data-hcaptcha-widget-id') || (frame && frame.getAttribute('data-hcaptcha-widget-id')) || undefined;
}

// Captcha renders the widget and hands each solved token to onToken ('' when it expires).
// When no captcha is configured it renders nothing.
export function Captcha({ onToken }) {
  const cfg = captchaConfig();
  const box = useRef();
  const cb = useRef(onToken);
  cb.current = onToken;

  useEffect(() => {
    if (!cfg) return undefined;
    const mine = (t) => cb.current && cb.current(t);
    current = mine;
    globals();
    const p = provider();
    if (p && box.current && !box.current.firstChild) {
      // The script ran on an earlier page: it renders by itself only the widgets present
      // when it loaded, so this one is rendered explicitly.
      try {
        const id = p.render(box.current, {
          sitekey: cfg.siteKey,
          callback: window.linkmeshCaptcha,
          'expired-callback': window.linkmeshCaptchaExpired,
        });
        if (id !== undefined && id !== null) box.current.dataset.widgetId = String(id);
      } catch { /* the provider refused: the form will say captcha verification failed */ }
    } else {
      loadScript(cfg.script); // renders every .h-captcha / .cf-turnstile once it has loaded
    }
    return () => { if (current === mine) current = null; };
  }, []);

  if (!cfg) return null;
  return (
    <div class="field captcha">
      <span class="muted">Confirm that you are a person:</span>
      <div
        ref={box}
        class="h-captcha cf-turnstile"
        data-sitekey={cfg.siteKey}
        data-callback="linkmeshCaptcha"
        data-expired-callback="linkmeshCaptchaExpired"
      />
    </div>
  );
}
