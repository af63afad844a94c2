// Shared pieces of every page: the signed-in user, navigation, forms, messages, dialogs,
// paging and the number formats. Pages import from here and from api.js only.
import { useEffect, useRef, useState, useCallback } from 'preact/hooks';
import { api, describe, get, inTime } from './api.js';

// ---- the signed-in user ---------------------------------------------------------------

let me = { loaded: false, user: null };
const listeners = new Set();

function publish(next) {
  me = next;
  for (const l of listeners) l(me);
}

// loadMe asks the API who is signed in (401 means nobody).
export async function loadMe() {
  try {
    const r = await api('GET', '/api/auth/me');
    publish({ loaded: true, user: r.user });
  } catch (e) {
    publish({ loaded: true, user: null, error: e.status === 401 ? undefined : describe(e) });
  }
  return me.user;
}

// setUser records the user a sign-in, registration or change returned.
export const setUser = (user) => publish({ loaded: true, user });

// useMe returns {loaded, user} and re-renders when it changes.
export function useMe() {
  const [state, set] = useState(me);
  useEffect(() => {
    listeners.add(set);
    set(me);
    return () => listeners.delete(set);
  }, []);
  return state;
}

export const isModerator = (u) => !!u && (u.role === 'moderator' || u.role === 'super_admin');
export const isSuperAdmin = (u) => !!u && u.role === 'super_admin';
export const roleName = (r) => ({ user: 'user', moderator: 'moderator', super_admin: 'super admin' }[r] || r);

// ---- navigation -------------------------------------------------------------------------

// route returns the current fragment route: {path: "/links", params: URLSearchParams}. The
// path is decoded once; the query is left to URLSearchParams, so "a+b" or "a&b" in a search
// stay what was typed. A malformed escape reads as the raw text rather than failing.
export function route() {
  const h = location.hash.replace(/^#/, '');
  const i = h.indexOf('?');
  const raw = i < 0 ? h : h.slice(0, i);
  let path;
  try {
    path = decodeURIComponent(raw);
  } catch {
    path = raw;
  }
  return { path: path || '/', params: new URLSearchParams(i < 0 ? '' : h.slice(i + 1)) };
}

// go navigates inside the app.
export function go(path) {
  location.hash = '#' + path;
}

export function useRoute() {
  const [r, set] = useState(route());
  useEffect(() => {
    const on = () => set(route());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return r;
}

// ---- data loading -----------------------------------------------------------------------

// useLoad runs fn (an async function) when deps change; returns {data, error, loading, reload}.
export function useLoad(fn, deps) {
  const [state, set] = useState({ loading: true });
  const seq = useRef(0);
  const run = useCallback(() => {
    const n = ++seq.current;
    set((s) => ({ ...s, loading: true }));
    fn().then(
      (data) => n === seq.current && set({ data, loading: false }),
      (error) => n === seq.current && set({ error, loading: false }),
    );
  }, deps);
  useEffect(run, [run]);
  return { ...state, reload: run };
}

// ---- pieces -----------------------------------------------------------------------------

export function Page({ title, children, actions }) {
  useEffect(() => {
    document.title = title ? `${title} · linkmesh` : 'linkmesh';
    const h = document.querySelector('main h1');
    if (h) h.focus({ preventScroll: true });
  }, [title]);
  return (
    <section class="page">
      <div class="page-head">
        <h1 tabIndex={-1}>{title}</h1>
        {actions && <div class="actions">{actions}</div>}
      </div>
      {children}
    </section>
  );
}

export function Card({ title, children, id }) {
  const hid = id ? `${id}-title` : undefined;
  return (
    <section class="card" aria-labelledby={hid} id={id}>
      {title && <h2 id={hid}>{title}</h2>}
      {children}
    </section>
  );
}

// Alert shows an error (an ApiError or a string) or a notice; role=alert reads it out.
export function Alert({ error, kind = 'error', children }) {
  if (!error && !children) return null;
  const text = error ? describe(error) : children;
  return <p class={`alert alert-${kind}`} role={kind === 'error' ? 'alert' : 'status'} data-testid={`alert-${kind}`}>{text}</p>;
}

export const Loading = ({ what = 'Loading' }) => <p class="muted" role="status" aria-live="polite">{what}…</p>;

export const Empty = ({ children }) => <p class="empty">{children}</p>;

let fieldSeq = 0;
// Field is a labelled control; extra props go to the input (or select/textarea via as).
export function Field({ label, hint, as = 'input', children, id, ...rest }) {
  const [fid] = useState(() => id || `f${++fieldSeq}`);
  const Tag = as;
  const hintId = hint ? `${fid}-hint` : undefined;
  return (
    <div class="field">
      <label for={fid}>{label}</label>
      {as === 'select' ? (
        <select id={fid} aria-describedby={hintId} {...rest}>{children}</select>
      ) : (
        <Tag id={fid} aria-describedby={hintId} {...rest} />
      )}
      {hint && <small id={hintId} class="muted">{hint}</small>}
    </div>
  );
}

// useForm keeps a form's values; bind(name) gives value and onInput for a Field.
export function useForm(initial) {
  const [values, set] = useState(initial);
  const bind = (name) => ({
    name,
    value: values[name],
    onInput: (e) => set((v) => ({ ...v, [name]: e.currentTarget.type === 'checkbox' ? e.currentTarget.checked : e.currentTarget.value })),
  });
  return { values, set, bind, reset: () => set(initial) };
}

// useAction runs an async action once at a time, keeping its error and busy state.
export function useAction(fn) {
  const [state, set] = useState({ busy: false });
  const run = async (...args) => {
    set({ busy: true });
    try {
      const result = await fn(...args);
      set({ busy: false, done: true });
      return result;
    } catch (error) {
      set({ busy: false, error });
      return undefined;
    }
  };
  return { ...state, run, clear: () => set({ busy: false }) };
}

export function Button({ busy, children, kind = 'primary', disabled, ...rest }) {
  return (
    <button class={`btn btn-${kind}`} {...rest} disabled={busy || disabled} aria-busy={busy ? 'true' : undefined}>
      {children}
    </button>
  );
}

// Copy copies text to the clipboard and says so.
export function Copy({ text, label = 'Copy' }) {
  const [done, set] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      const t = document.createElement('textarea');
      t.value = text;
      document.body.append(t);
      t.select();
      document.execCommand('copy');
      t.remove();
    }
    set(true);
    setTimeout(() => set(false), 2000);
  };
  return (
    <button type="button" class="btn btn-secondary btn-small" onClick={copy} aria-label={`${label}: ${text}`}>
      {done ? 'Copied' : label}
    </button>
  );
}

// Dialog is a modal <dialog>: focus stays inside, Escape closes it.
export function Dialog({ title, open, onClose, children }) {
  const ref = useRef();
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <dialog ref={ref} onClose={onClose} aria-labelledby="dialog-title" class="dialog">
      {open && (
        <div>
          <h2 id="dialog-title">{title}</h2>
          {children}
        </div>
      )}
    </dialog>
  );
}

// Pager moves through a paged list ({page, page_size, total}).
export function Pager({ page, pageSize, total, onPage }) {
  const pages = Math.max(1, Math.ceil((total || 0) / (pageSize || 1)));
  if (pages <= 1) return null;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" class="btn btn-secondary btn-small" disabled={page <= 1} onClick={() => onPage(page - 1)}>Previous</button>
      <span>Page {page} of {pages}</span>
      <button type="button" class="btn btn-secondary btn-small" disabled={page >= pages} onClick={() => onPage(page + 1)}>Next</button>
    </nav>
  );
}

// ---- formats ----------------------------------------------------------------------------

const dateFmt = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const dayFmt = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium' });
export const when = (iso) => (iso ? dateFmt.format(new Date(iso)) : '—');
export const day = (iso) => (iso ? dayFmt.format(new Date(iso)) : '—');
export const num = (n) => new Intl.NumberFormat().format(n || 0);
export const until = (iso) => inTime(Math.max(0, Math.round((new Date(iso) - Date.now()) / 1000)));

// linkState is what a person calls a link's state.
function linkState(l) {
  if (l.deleted_at) return 'deleted';
  if (l.status === 'DISABLED') return 'disabled';
  if (l.expired) return 'expired';
  return l.auto_renew ? 'permanent' : 'active';
}

export const StateBadge = ({ link }) => {
  const s = linkState(link);
  return <span class={`badge badge-${s}`}>{s}</span>;
};
