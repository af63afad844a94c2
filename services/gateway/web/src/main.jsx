// The linkmesh web application: one page, routes in the URL fragment (/#/links), every
// action through the public REST API.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import 'uplot/dist/uPlot.min.css';
import './app.css';
import { post } from './api.js';
import { loadMe, useMe, useRoute, go, isModerator, roleName, setUser, Loading } from './ui.jsx';
import { CreatePage } from './pages/create.jsx';
import { LoginPage, RegisterPage, ForgotPage, ResetPage, VerifyPage, finishIdpSignIn, idpAnswer } from './pages/auth.jsx';
import { DashboardPage } from './pages/dashboard.jsx';
import { LinksPage } from './pages/links.jsx';
import { AnalyticsPage } from './pages/analytics.jsx';
import { AccountPage } from './pages/account.jsx';
import { IntegrationsPage } from './pages/integrations.jsx';
import { ReportPage } from './pages/report.jsx';
import { AdminPage } from './pages/admin.jsx';

// pages by route; `auth` pages need a signed-in user, `mod` a moderator.
const pages = [
  { path: '/', page: CreatePage },
  { path: '/login', page: LoginPage },
  { path: '/register', page: RegisterPage },
  { path: '/forgot-password', page: ForgotPage },
  { path: '/reset-password', page: ResetPage },
  { path: '/verify-email', page: VerifyPage },
  { path: '/report', page: ReportPage },
  { path: '/dashboard', page: DashboardPage, auth: true },
  { path: '/links', page: LinksPage, auth: true },
  { path: '/links/', prefix: true, page: AnalyticsPage, auth: true },
  { path: '/account', page: AccountPage, auth: true },
  { path: '/integrations', page: IntegrationsPage, auth: true },
  { path: '/admin', prefix: true, page: AdminPage, auth: true, mod: true },
];

function find(path) {
  return pages.find((p) => (p.prefix ? path === p.path || path.startsWith(p.path.endsWith('/') ? p.path : p.path + '/') : path === p.path));
}

function Header() {
  const { user } = useMe();
  const r = useRoute();
  const link = (href, text) => (
    <a href={`#${href}`} aria-current={r.path === href || (href !== '/' && r.path.startsWith(href + '/')) ? 'page' : undefined}>{text}</a>
  );
  const signOut = async () => {
    try { await post('/api/auth/logout'); } catch { /* the session is gone either way */ }
    setUser(null);
    go('/login');
  };
  return (
    <header class="top">
      <a class="brand" href="#/">linkmesh</a>
      <nav aria-label="Main">
        {link('/', 'Shorten')}
        {user && link('/dashboard', 'Dashboard')}
        {user && link('/links', 'My links')}
        {user && link('/integrations', 'Integrations')}
        {isModerator(user) && link('/admin', 'Admin')}
        {link('/report', 'Report a link')}
      </nav>
      <div class="who">
        {user ? (
          <>
            <a href="#/account" class="me" data-testid="current-user">
              {user.email} <span class="badge badge-role">{roleName(user.role)}</span>
            </a>
            <button type="button" class="btn btn-secondary btn-small" onClick={signOut}>Sign out</button>
          </>
        ) : (
          <>
            {link('/login', 'Sign in')}
            {link('/register', 'Register')}
          </>
        )}
      </div>
    </header>
  );
}

// Restricted tells a signed-in user what holds them back (a ban or a timeout), on every page.
function Restricted() {
  const { user } = useMe();
  if (!user || user.status === 'active') return null;
  const why = user.status === 'banned'
    ? `Your account is banned${user.ban_reason ? `: ${user.ban_reason}` : ''}. You can still sign out; links and settings are closed to you.`
    : `Your account is timed out until ${new Date(user.timeout_until).toLocaleString()}${user.timeout_reason ? `: ${user.timeout_reason}` : ''}. Until then you cannot create or change links.`;
  return <p class="alert alert-error" role="alert" data-testid="restricted">{why}</p>;
}

function Unverified() {
  const { user } = useMe();
  if (!user || user.email_verified !== false) return null;
  return (
    <p class="alert alert-info" role="status" data-testid="unverified">
      Verify your e-mail address to create links: open the link we mailed to {user.email}. <a href="#/account">Send it again</a>
    </p>
  );
}

function App() {
  const me = useMe();
  const r = useRoute();
  // While the provider's answer is being taken, nothing else renders (the token is in the
  // fragment until finishIdpSignIn removes it).
  const [signingIn, setSigningIn] = useState(idpAnswer());
  // (The route it moves to arrives with a hashchange event, queued before this timeout.)
  useEffect(() => { finishIdpSignIn().finally(() => setTimeout(() => setSigningIn(false), 0)); }, []);
  const entry = find(r.path);
  let body;
  if (signingIn) body = <Loading what="Signing you in" />;
  else if (!me.loaded) body = <Loading />;
  else if (!entry) body = <section class="page"><h1>Not found</h1><p>There is no page {r.path.startsWith('/') ? `at ${r.path}` : 'here'}. <a href="#/">Shorten a link</a>.</p></section>;
  else if (entry.auth && !me.user) body = <LoginPage next={r.path} />;
  else if (entry.mod && !isModerator(me.user)) body = <section class="page"><h1>Not allowed</h1><p>This page is for moderators.</p></section>;
  else {
    const P = entry.page;
    body = <P route={r} />;
  }
  return (
    <>
      <a class="skip" href="#main" onClick={(e) => { e.preventDefault(); document.getElementById('main').focus(); }}>Skip to content</a>
      <Header />
      <main id="main" tabIndex={-1}>
        <Restricted />
        <Unverified />
        {body}
      </main>
      <footer class="foot">
        <a href="/api/openapi.yaml">REST API (OpenAPI)</a>
      </footer>
    </>
  );
}

loadMe();
render(<App />, document.getElementById('app'));
