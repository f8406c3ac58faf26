// The projects panel and a project's page: sessions, agent commits, the
// `path_missing` warning with "Locate folder…", and "New project".

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// `/home/ada/src/work/api` → `~/src/work/api` is not knowable here (the
// home folder is the server's); long paths keep their ends.
export function shortPath(p) {
  if (!p) return '';
  const parts = p.split('/').filter(Boolean);
  if (parts.length <= 3) return p;
  return `/${parts[0]}/…/${parts.slice(-2).join('/')}`;
}

// The projects whose "Locate folder…" form is open (kept open when the
// list is drawn again).
const locating = new Set();
// What was typed in those forms.
const drafts = new Map();

export function renderProjects(root, projects, { onRelocate, onOpen }) {
  const frag = document.createDocumentFragment();
  for (const p of projects) {
    const card = el('article', `project${p.path_missing ? ' missing' : ''}`);
    card.dataset.project = p.id;
    const head = el('header', 'project-head');
    const a = el('a', 'project-name', p.name);
    a.href = `/projects/${encodeURIComponent(p.id)}`;
    a.dataset.link = '';
    a.addEventListener('click', (e) => {
      e.preventDefault();
      onOpen(p.id);
    });
    head.append(a, el('span', 'count', `${p.session_count} session${p.session_count === 1 ? '' : 's'}`));
    card.append(head);
    const path = el('code', 'project-path', shortPath(p.path));
    path.title = p.path;
    card.append(path);
    if (p.path_missing) card.append(locateForm(p, onRelocate));
    frag.append(card);
  }
  if (!projects.length) frag.append(el('p', 'empty', 'No projects yet.'));
  root.replaceChildren(frag);
}

export function locateForm(p, onRelocate) {
  const box = el('div', 'warning');
  box.setAttribute('role', 'alert');
  box.append(el('p', '', `The folder ${p.path} is missing: it was moved or renamed.`));
  const open = el('button', 'locate', 'Locate folder…');
  open.type = 'button';
  const form = el('form', 'locate-form');
  const label = el('label', '', 'New folder ');
  const input = el('input');
  input.type = 'text';
  input.name = 'path';
  input.required = true;
  input.placeholder = '/absolute/path/to/the/folder';
  label.append(input);
  const go = el('button', '', 'Relocate');
  go.type = 'submit';
  const err = el('p', 'error');
  err.setAttribute('role', 'status');
  form.append(label, go, err);
  form.hidden = !locating.has(p.id);
  input.value = drafts.get(p.id) || '';
  input.addEventListener('input', () => drafts.set(p.id, input.value));
  open.addEventListener('click', () => {
    locating.add(p.id);
    form.hidden = false;
    input.focus();
  });
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    err.textContent = '';
    const msg = await onRelocate(p, input.value.trim());
    if (msg) {
      // The form may have been drawn again meanwhile: show it on the one
      // in the page.
      const live = document.querySelector(`[data-project="${CSS.escape(p.id)}"] .locate-form .error`) || err;
      live.textContent = msg;
    } else {
      locating.delete(p.id);
      drafts.delete(p.id);
    }
  });
  box.append(open, form);
  return box;
}

export function renderProjectPage(root, project, sessions, commits, { onRelocate, onNewChat, time, sessionLink }) {
  const frag = document.createDocumentFragment();
  const h = el('h2', '', project.name);
  frag.append(h);
  const path = el('code', 'project-path', project.path);
  frag.append(path);
  if (project.path_missing) frag.append(locateForm(project, onRelocate));
  else {
    const start = el('button', 'new-chat-here', 'New chat here');
    start.type = 'button';
    start.addEventListener('click', onNewChat);
    frag.append(start);
  }
  frag.append(el('h3', '', 'Sessions'));
  const ul = el('ul', 'project-sessions');
  for (const s of sessions) {
    const li = el('li');
    li.append(sessionLink(s.id, s.title || s.preview || s.id));
    li.append(el('time', 'when', time(s.created_at)));
    ul.append(li);
  }
  if (!sessions.length) ul.append(el('li', 'empty', 'No sessions in this project.'));
  frag.append(ul);
  frag.append(el('h3', '', 'Agent commits'));
  const cl = el('ul', 'project-commits');
  for (const c of commits) {
    const li = el('li');
    li.append(el('code', 'sha', c.short_sha));
    li.append(' ');
    if (c.session_id) li.append(sessionLink(c.session_id, c.summary, c.turn));
    else li.append(el('span', '', c.summary));
    li.append(el('time', 'when', time(c.timestamp)));
    cl.append(li);
  }
  if (!commits.length) cl.append(el('li', 'empty', 'The agent has not committed here yet.'));
  frag.append(cl);
  root.replaceChildren(frag);
}
