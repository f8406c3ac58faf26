// The page's controller: the router (`/`, `/s/<id>`, `/s/<id>/turn/<n>`,
// `/projects`, `/projects/<id>`), the live state from the WebSocket, and
// the wiring of the sidebar, conversation, replay bar and projects panel.

import { api, Socket, onTokenNeeded, setToken } from './api.js';
import { Sidebar, displayTitle, sourceLabel } from './sidebar.js';
import { renderConversation } from './chat.js';
import { attachTurnCard, renderHeldTurns } from './undo.js';
import { renderBar, renderTimeline } from './replay.js';
import { drawGraph } from './graph.js';
import { renderProjects, renderProjectPage, shortPath } from './projects.js';
import { openMenu, closeMenu } from './menu.js';
import { setUpComposer } from './composer.js';

const $ = (id) => document.getElementById(id);

const time = (s) =>
  s ? new Date(s * 1000).toLocaleString([], { dateStyle: 'medium', timeStyle: 'short' }) : '';

const state = {
  sessionId: null,
  messages: [],
  nodes: [],
  history: null,
  projects: [],
  banners: new Map(),
  loadSeq: 0,
  // The server's automatic deletion rules and whether it has an LLM for
  // titles (GET /api/health).
  retention: null,
  llm: false,
};

api('GET', '/api/health')
  .then((h) => {
    state.retention = h.retention || null;
    state.llm = !!h.llm;
    // Archived rows say when a retention rule deletes them.
    sidebar.draw();
  })
  .catch(() => {});

/// The archive action says what archiving leads to.
function archiveLabel() {
  const days = state.retention && state.retention.archive_ttl_days;
  return days > 0 ? `Archive (deleted after ${days} idle days)` : 'Archive';
}

// ---- token ---------------------------------------------------------------
let tokenAsk = null;
onTokenNeeded(() => {
  if (tokenAsk) return tokenAsk;
  tokenAsk = new Promise((resolve) => {
    const dlg = $('token-dialog');
    const form = $('token-form');
    const done = (e) => {
      e.preventDefault();
      setToken($('token-input').value);
      form.removeEventListener('submit', done);
      dlg.close();
      tokenAsk = null;
      resolve();
    };
    form.addEventListener('submit', done);
    dlg.showModal();
    $('token-input').focus();
  });
  return tokenAsk;
});

// ---- live connection -----------------------------------------------------
const ws = new Socket();
const sidebar = new Sidebar($('session-list'), {
  onOpen: (id) => navigate(`/s/${encodeURIComponent(id)}`),
  onMenu: (row, anchor, ev) =>
    openMenu(row, anchor, ev, {
      send: (action, fields) => ws.send(action, fields),
      llm: state.llm,
      archiveLabel: archiveLabel(),
    }),
  retentionDays: () => (state.retention && state.retention.archive_ttl_days) || 0,
});
const composerState = setUpComposer({
  state,
  ws,
  rowOf: (id) => sidebar.rows.get(id),
  listProject: () => sidebar.project,
  navigate: (path) => navigate(path),
  reload: () => loadSession(),
});

ws.on('open', () => {
  $('conn').textContent = '';
  ws.send('list_sessions');
  ws.send('list_projects');
});
ws.on('close', () => {
  $('conn').textContent = 'Disconnected; reconnecting…';
});
ws.on('sessions_list', (m) => {
  sidebar.setAll(m.data || []);
  // A standard User Timing mark (devtools' performance panel shows it).
  if (!performance.getEntriesByName('sessions-list').length) performance.mark('sessions-list');
  sidebar.select(state.sessionId);
  header();
});
ws.on('session_created', (m) => sidebar.upsert(m.data));
ws.on('session_updated', (m) => {
  const was = sidebar.rows.get(m.data.id);
  const wasStatus = was && was.status;
  sidebar.patch(m.data);
  if (m.data.id === state.sessionId) {
    header();
    if ('status' in m.data && m.data.status !== wasStatus) loadSession();
  }
});
// Live replies: the open session's nodes are shown as a runner writes
// them (appends, streamed fills, the end of the turn), read again at most
// every 150 ms.
let liveTimer = null;
const live = (m) => {
  const d = m.data || {};
  if (d.session_id !== state.sessionId || liveTimer) return;
  liveTimer = setTimeout(() => {
    liveTimer = null;
    loadSession();
  }, 150);
};
ws.on('node_appended', live);
ws.on('node_updated', live);
ws.on('turn_ended', live);
ws.on('session_deleted', (m) => {
  const id = m.session_id || (m.data && m.data.session_id);
  sidebar.remove(id);
  if (id === state.sessionId) navigate('/');
});
ws.on('projects_list', (m) => {
  if (m.data && Array.isArray(m.data.projects)) {
    const same = JSON.stringify(m.data.projects) === JSON.stringify(state.projects);
    state.projects = m.data.projects;
    if (same) return;
    projectOptions();
    header();
    if (!$('projects-view').hidden) route();
  }
});
ws.on('chat_response', (m) => {
  const d = m.data || {};
  if (d.type === 'project_commit_skipped') {
    state.banners.set(d.session_id, d.message || d.detail || '');
    if (d.session_id === state.sessionId) banner();
  }
});

// ---- routing -------------------------------------------------------------
function navigate(path) {
  if (location.pathname + location.search !== path) history.pushState(null, '', path);
  route();
}
window.addEventListener('popstate', route);
document.addEventListener('click', (e) => {
  const a = e.target.closest && e.target.closest('a[data-link]');
  if (a && a.origin === location.origin && !e.ctrlKey && !e.metaKey && !e.shiftKey) {
    e.preventDefault();
    navigate(a.pathname);
  }
});

function route() {
  const p = decodeURI(location.pathname);
  let m;
  closeMenu();
  document.getElementById('app').classList.remove('side-open');
  if ((m = /^\/s\/([^/]+)\/turn\/(\d+)\/?$/.exec(p))) return openSession(m[1], Number(m[2]));
  if ((m = /^\/s\/([^/]+)\/?$/.exec(p))) return openSession(m[1]);
  if ((m = /^\/projects\/([^/]+)\/?$/.exec(p))) return showProjects(m[1]);
  if (p === '/projects' || p === '/projects/') return showProjects(null);
  return newChat(new URLSearchParams(location.search).get('project'));
}

function showView(name) {
  $('chat-view').hidden = name !== 'chat';
  $('projects-view').hidden = name !== 'projects';
  $('nav-chats').setAttribute('aria-current', name === 'chat' ? 'page' : 'false');
  $('nav-projects').setAttribute('aria-current', name === 'projects' ? 'page' : 'false');
}

// `projectId`: the new chat starts in that project ("New chat here").
function newChat(projectId) {
  showView('chat');
  state.newChatProject = projectId || null;
  state.sessionId = null;
  state.messages = [];
  state.nodes = [];
  state.history = null;
  sidebar.select(null);
  render();
  $('composer-text').focus();
}

async function openSession(id, turn) {
  showView('chat');
  const changed = state.sessionId !== id;
  state.sessionId = id;
  sidebar.select(id);
  if (changed) {
    state.messages = [];
    state.history = null;
    render();
  }
  const row = sidebar.rows.get(id);
  // Only when there is something to mark (unknown yet on a cold deep link).
  if (!row || row.unread) ws.send('mark_session_read', { session_id: id });
  if (row) row.unread = false;
  const started = performance.now();
  await loadSession(turn);
  window.__lastOpenMs = performance.now() - started;
}

// Messages, every node (for the retry switcher) and the history, then
// draw. `turn`: check that turn out first (a deep link).
async function loadSession(turn) {
  const id = state.sessionId;
  if (!id) return;
  const seq = ++state.loadSeq;
  const base = `/api/sessions/${encodeURIComponent(id)}`;
  try {
    if (turn) await api('POST', `${base}/checkout`, { turn });
    const [msgs, nodes, hist] = await Promise.all([
      api('GET', `${base}/messages`),
      api('GET', `${base}/nodes`),
      api('GET', `${base}/history`),
    ]);
    if (seq !== state.loadSeq) return;
    state.messages = msgs.messages || [];
    state.nodes = nodes.nodes || [];
    state.history = hist;
    render();
    followUrl();
  } catch (e) {
    if (seq !== state.loadSeq) return;
    state.messages = [];
    state.history = null;
    render();
    $('messages').replaceChildren(Object.assign(document.createElement('p'), { className: 'error', textContent: e.message }));
  }
}

// The address names the turn being viewed (read-only), or the session.
function followUrl() {
  const pos = state.history && state.history.position;
  const id = encodeURIComponent(state.sessionId);
  const want = pos && pos.commit && !pos.live ? `/s/${id}/turn/${pos.turn}` : `/s/${id}`;
  if (location.pathname !== want) history.replaceState(null, '', want);
}

// ---- drawing -------------------------------------------------------------
function header() {
  const row = state.sessionId && sidebar.rows.get(state.sessionId);
  $('chat-title').textContent = row ? displayTitle(row) : state.sessionId ? state.sessionId : 'New conversation';
  document.title = `${$('chat-title').textContent} · OpenProgram memory`;
  const ind = $('project-indicator');
  const proj = row && state.projects.find((p) => p.id === row.project_id);
  if (proj) {
    ind.hidden = false;
    ind.href = `/projects/${encodeURIComponent(proj.id)}`;
    ind.textContent = `${proj.name} · ${shortPath(proj.path)}`;
    ind.title = proj.path;
    ind.classList.toggle('missing', !!proj.path_missing);
  } else {
    ind.hidden = true;
  }
  composerState();
}

function banner() {
  const b = $('banner');
  const msg = state.sessionId && state.banners.get(state.sessionId);
  b.hidden = !msg;
  if (msg) {
    const text = document.createElement('span');
    text.textContent = msg;
    const x = document.createElement('button');
    x.type = 'button';
    x.className = 'close';
    x.textContent = '×';
    x.setAttribute('aria-label', 'Dismiss');
    x.addEventListener('click', () => {
      state.banners.delete(state.sessionId);
      banner();
    });
    b.replaceChildren(text, x);
  }
}

function render() {
  header();
  banner();
  const live = !state.history || !state.history.position || state.history.position.live !== false;
  const row = state.sessionId && sidebar.rows.get(state.sessionId);
  // Unknown rows (a deep link before the list came) ask too: the
  // answer for a session without a project is empty.
  const bound = !row || (row.project_id && row.project_id !== 'default');
  const sid = state.sessionId;
  const onTurnEnd = bound
    ? (n, msgEl) => attachTurnCard(msgEl, sid, n.id, ws, () => loadSession())
    : null;
  renderConversation($('messages'), state.messages, state.nodes, {
    onSwitch: switchTo,
    time,
    live,
    onTurnEnd,
    // No retry while a run holds the session.
    onRetry: row && ['running', 'needs_input'].includes(row.status) ? null : retry,
  });
  renderBar(
    { prev: $('prev-turn'), next: $('next-turn'), latest: $('latest-turn'), label: $('turn-pos'), note: $('readonly-note') },
    state.history && state.history.position,
  );
  $('replay-bar').hidden = !state.sessionId;
  const m = $('messages');
  m.scrollTop = m.scrollHeight;
}

// ---- retry ---------------------------------------------------------------
// A new answer to the message a reply answered: offered to the runners
// like a new message; the answer lands on a branch of its own and the
// `‹ n / m ›` switch appears. A refusal (no runner, a run active) shows in
// the composer's note.
async function retry(node, button) {
  const id = state.sessionId;
  if (!id) return;
  button.disabled = true;
  try {
    await ws.request('retry', { session_id: id, node_id: node.id });
    $('composer-note').textContent = 'Retrying: a new answer is on its way.';
  } catch (e) {
    $('composer-note').textContent = e.message;
    button.disabled = false;
  }
}

// ---- replay --------------------------------------------------------------
// Move the view (`checkout`: replay, read-only; `switch`: the head and
// branch), then read the session again. A refusal shows in the bar.
async function move(route, body) {
  const id = state.sessionId;
  if (!id) return;
  try {
    await api('POST', `/api/sessions/${encodeURIComponent(id)}/${route}`, body);
  } catch (e) {
    $('turn-pos').textContent = e.message;
    return;
  }
  await loadSession();
}
const checkout = (body) => move('checkout', body);
const switchBranch = (body) => move('switch', body);

// The `‹ ›` control: the branch whose turn ended on that answer (a retry's
// own branch), else the node itself.
function switchTo(node) {
  const commits = (state.history && state.history.commits) || [];
  const c = commits.find((x) => x.head_node === node.id);
  const retry = `retry-${node.id}`;
  if (commits.some((x) => x.branch === retry)) return switchBranch({ branch: retry });
  if (c) return switchBranch({ branch: c.branch });
  return switchBranch({ node_id: node.id });
}

$('prev-turn').addEventListener('click', () => checkout({ step: 'prev' }));
$('next-turn').addEventListener('click', () => checkout({ step: 'next' }));
$('latest-turn').addEventListener('click', () => checkout({ step: 'latest' }));
$('full-history').addEventListener('click', () => {
  if (!state.history) return;
  renderTimeline($('timeline'), state.history, {
    time,
    onPick: (c) => {
      $('timeline-dialog').close();
      checkout({ commit: c.sha });
    },
  });
  $('timeline-dialog').showModal();
});
$('show-graph').addEventListener('click', () => {
  if (!state.history) return;
  // Open first: the graph scrolls to the current position, which needs
  // the dialog's size.
  $('graph-dialog').showModal();
  drawGraph($('graph'), state.history, {
    time,
    onPick: (c) => {
      $('graph-dialog').close();
      checkout({ commit: c.sha });
    },
    onSwitch: (b) => {
      $('graph-dialog').close();
      switchBranch({ branch: b });
    },
  });
});
for (const d of document.querySelectorAll('dialog')) {
  d.querySelector('.close')?.addEventListener('click', () => d.close());
}
document.addEventListener('keydown', (e) => {
  const t = e.target;
  if (t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT' || t.isContentEditable)) return;
  if (document.querySelector('dialog[open]')) return;
  if (e.key === '[' && !$('prev-turn').disabled) checkout({ step: 'prev' });
  if (e.key === ']' && !$('next-turn').disabled) checkout({ step: 'next' });
  if (e.key === 'Escape') closeMenu();
});

$('new-chat').addEventListener('click', () => navigate('/'));

// ---- sidebar controls ----------------------------------------------------
for (const b of document.querySelectorAll('[data-show]')) {
  b.addEventListener('click', () => {
    for (const o of document.querySelectorAll('[data-show]')) o.setAttribute('aria-checked', String(o === b));
    sidebar.show = b.dataset.show;
    sidebar.rebuild();
  });
}
// The source filter shows once a session came from another tool.
sidebar.onSources = (list) => {
  const sel = $('source-filter');
  const keep = sel.value;
  const opts = [new Option('All sources', ''), new Option('This service', 'here')];
  for (const s of list) opts.push(new Option(sourceLabel(s), s));
  sel.replaceChildren(...opts);
  sel.value = keep === 'here' || list.includes(keep) ? keep : '';
  sel.hidden = list.length === 0;
  // Called from the sidebar's rebuild, before it filters.
  sidebar.source = sel.value;
};
$('source-filter').addEventListener('change', (e) => {
  sidebar.source = e.target.value;
  sidebar.rebuild();
});
$('project-filter').addEventListener('change', (e) => {
  sidebar.project = e.target.value;
  sidebar.rebuild();
});
$('group-by').addEventListener('change', (e) => {
  sidebar.groupBy = e.target.value;
  sidebar.rebuild();
});
let searchTimer = null;
$('filter').addEventListener('input', (e) => {
  sidebar.filter = e.target.value.trim();
  sidebar.searchHits = null;
  sidebar.snippets = new Map();
  sidebar.rebuild();
  clearTimeout(searchTimer);
  const q = sidebar.filter;
  if (q.length < 2) return;
  searchTimer = setTimeout(async () => {
    try {
      const r = await api('GET', `/api/search?q=${encodeURIComponent(q)}&group=session&limit=100`);
      if (sidebar.filter !== q) return;
      sidebar.searchHits = new Set((r.sessions || []).map((s) => s.session_id));
      sidebar.snippets = new Map(
        (r.sessions || []).filter((s) => s.hits && s.hits.length).map((s) => [s.session_id, s.hits[0]]),
      );
      sidebar.rebuild();
    } catch {
      /* a query the search grammar refuses: the local filter stands */
    }
  }, 250);
});
const toggle = () => document.getElementById('app').classList.toggle('side-open');
$('toggle-sidebar').addEventListener('click', toggle);
document.querySelector('.toggle-sidebar-2').addEventListener('click', toggle);

function projectOptions() {
  const sel = $('project-filter');
  const keep = sel.value;
  const opts = [new Option('All projects', '')];
  for (const p of state.projects) opts.push(new Option(p.name, p.id));
  sel.replaceChildren(...opts);
  sel.value = state.projects.some((p) => p.id === keep) ? keep : '';
}

// ---- projects ------------------------------------------------------------
async function relocate(p, path) {
  try {
    const r = await ws.request('relocate_project', { project_id: p.id, path });
    if (!r.data.ok) return r.data.error || 'not relocated';
    ws.send('list_projects');
    return null;
  } catch (e) {
    return e.message;
  }
}

// Each drawing of the projects view has a number; an older drawing whose
// requests answer late draws nothing.
let projectsDrawing = 0;

async function showProjects(id) {
  const drawing = ++projectsDrawing;
  showView('projects');
  state.sessionId = null;
  sidebar.select(null);
  const list = $('project-list');
  const page = $('project-page');
  $('new-project').hidden = !!id;
  list.hidden = !!id;
  page.hidden = !id;
  if (!id) {
    renderProjects(list, state.projects, { onRelocate: relocate, onOpen: (pid) => navigate(`/projects/${encodeURIComponent(pid)}`) });
    return;
  }
  try {
    const [project, sess, commits, turns] = await Promise.all([
      api('GET', `/api/projects/${encodeURIComponent(id)}`),
      ws.request('list_project_sessions', { project_id: id }),
      api('GET', `/api/projects/${encodeURIComponent(id)}/commits`).catch(() => ({ commits: [] })),
      api('GET', `/api/projects/${encodeURIComponent(id)}/agent-turns`).catch(() => ({ sessions: [] })),
    ]);
    if (drawing !== projectsDrawing) return;
    const sessionLink = (sid, text, turn) => {
      const a = document.createElement('a');
      a.href = turn ? `/s/${encodeURIComponent(sid)}/turn/${turn}` : `/s/${encodeURIComponent(sid)}`;
      a.dataset.link = '';
      a.textContent = text;
      return a;
    };
    renderProjectPage(page, project, sess.data.sessions || [], commits.commits || [], {
      onRelocate: relocate,
      onNewChat: () => navigate(`/?project=${encodeURIComponent(project.id)}`),
      time,
      sessionLink,
    });
    const held = document.createElement('section');
    held.className = 'held-section';
    held.append(Object.assign(document.createElement('h3'), { textContent: 'Held agent turns' }));
    const box = document.createElement('div');
    held.append(box);
    page.append(held);
    renderHeldTurns(box, id, turns.sessions || [], { api, sessionLink, time, onApplied: () => showProjects(id) });
  } catch (e) {
    if (drawing !== projectsDrawing) return;
    page.replaceChildren(Object.assign(document.createElement('p'), { className: 'error', textContent: e.message }));
  }
}

$('new-project').addEventListener('submit', async (e) => {
  e.preventDefault();
  const f = e.target;
  const err = f.querySelector('.error');
  err.textContent = '';
  const fields = { path: f.path.value.trim() };
  if (f.name.value.trim()) fields.name = f.name.value.trim();
  try {
    const r = await ws.request('create_project', fields);
    if (!r.data.ok) {
      err.textContent = r.data.error || 'not created';
      return;
    }
    f.reset();
    ws.send('list_projects');
  } catch (ex) {
    err.textContent = ex.message;
  }
});

route();
