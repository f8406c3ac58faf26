// The replay bar (`← prev turn · Turn 7 / 12 · next turn →`), the full
// history timeline (one line per commit) and the keyboard's `[` / `]`.

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

export function renderBar(parts, position) {
  const { prev, next, latest, label, note } = parts;
  if (!position || !position.commit) {
    label.textContent = 'No turns yet';
    prev.disabled = true;
    next.disabled = true;
    latest.hidden = true;
    note.hidden = true;
    return;
  }
  const b = position.branch && position.branch !== 'main' ? position.branch : '';
  const short = b.length > 22 ? `${b.slice(0, 21)}…` : b;
  label.textContent = `Turn ${position.turn} / ${position.of}${short ? ` · ${short}` : ''}`;
  label.title = b ? `on branch ${b}` : '';
  prev.disabled = !position.prev;
  next.disabled = !position.next;
  latest.hidden = !!position.live;
  note.hidden = !!position.live;
  if (!position.live) {
    note.textContent = `Viewing turn ${position.turn} of ${position.of} read-only. Sending from here continues on a new branch.`;
  }
}

// The timeline: newest first, the current line marked; `onPick(commit)`.
export function renderTimeline(list, history, { onPick, time }) {
  const frag = document.createDocumentFragment();
  const at = history.position && history.position.commit;
  for (const c of history.commits || []) {
    const li = el('li', `tl-row${c.sha === at ? ' here' : ''}${c.on_current_path ? ' path' : ''}`);
    const b = el('button', 'tl-pick');
    b.type = 'button';
    b.dataset.sha = c.sha;
    b.append(
      el('span', 'tl-turn', `Turn ${c.turn}`),
      el('span', 'tl-branch', c.branch),
      el('time', 'tl-time', time(c.timestamp)),
      el('span', 'tl-subject', c.summary),
    );
    if (c.sha === at) b.setAttribute('aria-current', 'step');
    b.addEventListener('click', () => onPick(c));
    li.append(b);
    frag.append(li);
  }
  if (!(history.commits || []).length) frag.append(el('li', 'empty', 'No turns yet.'));
  list.replaceChildren(frag);
}
