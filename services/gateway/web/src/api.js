// The one way the app talks to linkmesh: the public REST API, same origin, with the session
// cookie the API sets (never a token in storage).

export class ApiError extends Error {
  constructor(status, message, retryAfter, body) {
    super(message);
    this.status = status;
    this.retryAfter = retryAfter; // seconds, when the API sent Retry-After
    this.body = body;
  }
}

// api calls method path with an optional JSON body and returns the parsed answer (null for
// 204). A non-2xx answer throws ApiError carrying the envelope's message.
export async function api(method, path, body, headers = {}) {
  const init = { method, credentials: 'same-origin', headers: { Accept: 'application/json', ...headers } };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, 'linkmesh cannot be reached: check your connection and try again');
  }
  const text = await res.text();
  let data = null;
  if (text && (res.headers.get('Content-Type') || '').includes('json')) {
    try { data = JSON.parse(text); } catch { data = null; }
  }
  if (!res.ok) {
    const retry = parseInt(res.headers.get('Retry-After') || '', 10);
    const msg = (data && data.error) || `the server answered ${res.status}`;
    throw new ApiError(res.status, msg, Number.isFinite(retry) ? retry : undefined, data);
  }
  return data;
}

export const get = (path) => api('GET', path);
export const post = (path, body = {}, headers) => api('POST', path, body, headers);
export const del = (path, body) => api('DELETE', path, body);

// query builds "?a=1&b=2" from the entries that have a value.
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

// seg escapes one path segment.
export const seg = (s) => encodeURIComponent(s);

// describe turns an ApiError into the sentence the page shows: the API's own message, and
// for 429 when to try again.
export function describe(err) {
  if (!(err instanceof ApiError)) return String((err && err.message) || err);
  let msg = err.message;
  if (err.status === 429 && err.retryAfter !== undefined) msg += ` — try again ${inTime(err.retryAfter)}`;
  return msg;
}

// inTime says "in 5 minutes" for a number of seconds.
export function inTime(seconds) {
  if (seconds < 60) return `in ${seconds} second${seconds === 1 ? '' : 's'}`;
  const m = Math.ceil(seconds / 60);
  if (m < 120) return `in ${m} minute${m === 1 ? '' : 's'}`;
  const h = Math.ceil(m / 60);
  if (h < 48) return `in ${h} hours`;
  return `in ${Math.ceil(h / 24)} days`;
}
