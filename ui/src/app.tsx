// The app shell: logs in (or finds the API open without a token), starts the
// tab's event stream, and routes /ui/... paths to the pages.

import { useEffect, useState } from 'preact/hooks';
import { LocationProvider, Route, Router, useLocation } from 'preact-iso/router';
import { api, ApiError, roleOf, saveToken, savedToken, type Caller } from './api';
import { hub, useStreamState } from './live';
import { SessionContext } from './session';
import { AllocationPage } from './pages/allocation';
import { AllocExecPage } from './pages/alloc-exec';
import { AllocFilesPage } from './pages/alloc-files';
import { AllocLogsPage } from './pages/alloc-logs';
import { DoctorPage } from './pages/doctor';
import { JobPage, JobsPage, JobVersionsPage } from './pages/jobs';
import { EditJobPage, NewJobPage } from './pages/job-editor';
import { Login } from './pages/login';
import { NodePage } from './pages/node';
import { NodesPage } from './pages/nodes';
import { Overview } from './pages/overview';
import { PluginPage, PluginsPage } from './pages/plugins';
import { ServicePage, ServicesPage } from './pages/services';
import { TopologyPage } from './pages/topology';
import { VolumePage, VolumesPage } from './pages/volumes';
import { SearchBox } from './search';

const NAV: Array<[string, string]> = [
  ['/ui/', 'Overview'],
  ['/ui/jobs', 'Jobs'],
  ['/ui/nodes', 'Nodes'],
  ['/ui/topology', 'Topology'],
  ['/ui/services', 'Services'],
  ['/ui/plugins', 'CSI plugins'],
  ['/ui/volumes', 'Volumes'],
];

function Header({ who, onLogout }: { who: Caller; onLogout: () => void }) {
  const { path } = useLocation();
  const stream = useStreamState();
  return (
    <header class="top">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <a class="brand" href="/ui/">
        Berth
      </a>
      <nav aria-label="Sections">
        {NAV.map(([href, label]) => {
          const current = href === '/ui/' ? path === '/ui/' || path === '/ui' : path.startsWith(href);
          return (
            <a href={href} aria-current={current ? 'page' : undefined}>
              {label}
            </a>
          );
        })}
      </nav>
      <SearchBox />
      <span class="who">
        <span class={`dot ${stream}`} title={`event stream: ${stream}`} data-stream={stream} aria-label={`event stream ${stream}`} />
        <span data-role={roleOf(who)}>
          {who.Name} ({roleOf(who)})
        </span>
        {savedToken() ? (
          <button type="button" class="link" onClick={onLogout}>
            Log out
          </button>
        ) : null}
      </span>
    </header>
  );
}

function NotFound() {
  return (
    <main id="main">
      <h1>Not found</h1>
      <p>
        No page here. <a href="/ui/">Go to the overview</a>.
      </p>
    </main>
  );
}

export function App() {
  const [who, setWho] = useState<Caller | undefined>();
  const [checked, setChecked] = useState(false);
  const [reason, setReason] = useState<string | undefined>();

  // A saved token, or an API that needs none, logs in without the form.
  useEffect(() => {
    api
      .self()
      .then(setWho)
      .catch((err: unknown) => {
        if (err instanceof ApiError && err.status === 401 && savedToken()) {
          saveToken('');
          setReason('The saved token was refused; log in again.');
        }
      })
      .finally(() => setChecked(true));
  }, []);

  useEffect(() => {
    if (!who) return;
    hub.start();
    return () => hub.stop();
  }, [who]);

  if (!checked) return <p class="loading">Loading…</p>;
  if (!who) return <Login onLogin={setWho} {...(reason ? { reason } : {})} />;
  const logout = (): void => {
    saveToken('');
    hub.stop();
    setWho(undefined);
  };
  return (
    <SessionContext.Provider value={who}>
      <LocationProvider scope="/ui">
        <Header who={who} onLogout={logout} />
        <Router>
          <Route path="/ui" component={Overview} />
          <Route path="/ui/" component={Overview} />
          <Route path="/ui/jobs" component={JobsPage} />
          <Route path="/ui/jobs/new" component={NewJobPage} />
          <Route path="/ui/jobs/:ns/:id" component={JobPage} />
          <Route path="/ui/jobs/:ns/:id/versions" component={JobVersionsPage} />
          <Route path="/ui/jobs/:ns/:id/edit" component={EditJobPage} />
          <Route path="/ui/allocations/:id" component={AllocationPage} />
          <Route path="/ui/allocations/:id/logs" component={AllocLogsPage} />
          <Route path="/ui/allocations/:id/fs/:path*" component={AllocFilesPage} />
          <Route path="/ui/allocations/:id/exec" component={AllocExecPage} />
          <Route path="/ui/nodes" component={NodesPage} />
          <Route path="/ui/nodes/:id" component={NodePage} />
          <Route path="/ui/topology" component={TopologyPage} />
          <Route path="/ui/services" component={ServicesPage} />
          <Route path="/ui/services/:ns/:name" component={ServicePage} />
          <Route path="/ui/plugins" component={PluginsPage} />
          <Route path="/ui/plugins/:id" component={PluginPage} />
          <Route path="/ui/volumes" component={VolumesPage} />
          <Route path="/ui/volumes/doctor" component={DoctorPage} />
          <Route path="/ui/volumes/:ns/:id" component={VolumePage} />
          <Route default component={NotFound} />
        </Router>
      </LocationProvider>
    </SessionContext.Provider>
  );
}
