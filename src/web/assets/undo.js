// Undo in the web UI: the files an agent turn changed (under the reply
// that ended it), "Undo this turn's changes" with a preview of the diff
// and the reasons it cannot be done, and a project's held turns with
// "Apply".

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// A unified diff, each line classed by its first character.
export function diffView(patch) {
  const pre = el('pre', 'diff');
  for (const line of (patch || '').split('\n')) {
    const cls = line.startsWith('+++') || line.startsWith('---') || line.startsWith('diff ') || line.startsWith('index ')
      ? 'meta'
      : line.startsWith('@@') ? 'hunk' : line.startsWith('+') ? 'add' : line.startsWith('-') ? 'del' : '';
    pre.append(el('span', cls ? `d-${cls}` : '', `${line}\n`));
  }
  return pre;
}

function fileList(files) {
  const ul = el('ul', 'turn-files');
  for (const f of files) {
    const li = el('li');
    li.append(el('code', '', f.rel || f.path));
    li.append(el('span', 'adds', ` +${f.added ?? f.additions ?? 0}`));
    li.append(el('span', 'dels', ` −${f.removed ?? f.deletions ?? 0}`));
    ul.append(li);
  }
  return ul;
}

// Why an undo cannot be done, each reason with its files and commits.
function refusalList(refusals) {
  const ul = el('ul', 'refusals');
  for (const r of refusals) {
    const li = el('li');
    li.append(el('strong', '', r.message));
    if (r.paths && r.paths.length) li.append(el('div', 'paths', r.paths.join(', ')));
    for (const c of r.commits || []) li.append(el('div', 'later', `${c.commit.slice(0, 7)} ${c.summary} (${c.author})`));
    ul.append(li);
  }
  return ul;
}

const cache = new Map();

// The card under the reply `nodeId` that ended a turn of a project-bound
// session; `onDone` reloads the session after an undo.
// An ended turn's answer is kept (an undo clears the cache); a turn still
// open is asked again.
export async function attachTurnCard(msgEl, sessionId, nodeId, ws, onDone) {
  const key = `${sessionId}:${nodeId}`;
  let listed = cache.get(key);
  if (!listed) {
    try {
      listed = (await ws.request('list_turn_files', { session_id: sessionId, assistant_msg_id: nodeId })).data;
    } catch {
      return;
    }
    if (listed.turn != null && !listed.error) cache.set(key, listed);
  }
  if (!listed.files || !listed.files.length || !msgEl.isConnected) return;
  const card = el('div', 'turn-card');
  card.dataset.state = listed.reverted ? 'reverted' : listed.state;
  const head = el('div', 'turn-card-head');
  const n = listed.files.length;
  const label = listed.state === 'held'
    ? `Held: the agent changed ${n} file${n === 1 ? '' : 's'} (your tree was dirty; see the project page to apply)`
    : `The agent changed ${n} file${n === 1 ? '' : 's'}${listed.reverted ? ' · undone' : ''}`;
  head.append(el('span', '', label));
  card.append(head, fileList(listed.files));
  if (listed.state === 'committed' && !listed.reverted) {
    const undo = el('button', 'undo-turn', "Undo this turn's changes");
    undo.type = 'button';
    const panel = el('div', 'undo-panel');
    undo.addEventListener('click', async () => {
      undo.disabled = true;
      panel.replaceChildren(el('p', 'muted', 'Checking…'));
      try {
        const p = (await ws.request('revert_preview', { session_id: sessionId, assistant_msg_id: nodeId })).data;
        panel.replaceChildren();
        if (p.refusals.length) {
          panel.append(el('p', 'error', 'This turn cannot be undone now:'), refusalList(p.refusals));
        }
        if (p.diff && p.diff.patch) {
          panel.append(el('p', 'muted', `Undoing makes one new commit (+${p.diff.additions} −${p.diff.deletions}):`));
          panel.append(diffView(p.diff.patch));
        }
        const go = el('button', 'confirm-undo', 'Undo');
        go.type = 'button';
        go.disabled = !p.can_revert;
        const cancel = el('button', 'cancel-undo', 'Cancel');
        cancel.type = 'button';
        cancel.addEventListener('click', () => {
          panel.replaceChildren();
          undo.disabled = false;
        });
        go.addEventListener('click', async () => {
          go.disabled = true;
          const r = (await ws.request('revert_turn', { session_id: sessionId, msg_id: nodeId })).data;
          if (r.errors && r.errors.length) {
            panel.replaceChildren(el('p', 'error', r.errors.join('; ')));
            if (r.refusal) panel.append(refusalList([r.refusal]));
            return;
          }
          cache.clear();
          onDone();
        });
        panel.append(el('div', 'undo-actions'));
        panel.lastChild.append(go, cancel);
      } catch (e) {
        panel.replaceChildren(el('p', 'error', e.message));
        undo.disabled = false;
      }
    });
    card.append(undo, panel);
  }
  msgEl.append(card);
}

// The outcome of the last "Apply" per held turn, kept apart from the page:
// a broadcast may draw the project page again while a request is out, and
// the answer is then shown on the page as it is drawn now.
const applyOutcome = new Map();

function showOutcome(out, outcome) {
  out.replaceChildren();
  if (!outcome) return;
  out.append(el('p', 'error', outcome.error));
  if (outcome.paths && outcome.paths.length) out.append(el('div', 'paths', outcome.paths.join(', ')));
}

// The project page's held turns: each with its files and "Apply".
export function renderHeldTurns(root, projectId, sessions, { api, sessionLink, time, onApplied }) {
  const held = [];
  for (const s of sessions) for (const t of s.turns) if (t.state === 'held') held.push({ session: s.session_id, ...t });
  root.replaceChildren();
  if (!held.length) {
    root.append(el('p', 'empty', 'No held turns: every agent turn landed on your branch.'));
    return;
  }
  const ul = el('ul', 'held-turns');
  for (const t of held) {
    const key = `${projectId}/${t.session}/${t.turn}`;
    const li = el('li', 'held-turn');
    li.dataset.key = key;
    const line = el('div', 'held-line');
    line.append(sessionLink(t.session, t.summary, t.turn));
    line.append(el('time', 'when', time(t.time)));
    li.append(line, fileList(t.files));
    const out = el('div', 'held-out');
    if (t.applied_as) {
      applyOutcome.delete(key);
      li.append(el('span', 'applied', `applied as ${t.applied_as.slice(0, 7)}`));
    } else {
      showOutcome(out, applyOutcome.get(key));
      const b = el('button', 'apply-turn', 'Apply');
      b.type = 'button';
      b.addEventListener('click', async () => {
        b.disabled = true;
        try {
          await api('POST', `/api/projects/${encodeURIComponent(projectId)}/agent-turns/${encodeURIComponent(t.session)}/${t.turn}/apply`);
          applyOutcome.delete(key);
          onApplied();
        } catch (e) {
          const d = e.data || {};
          const outcome = { error: d.error || e.message, paths: d.paths || [] };
          applyOutcome.set(key, outcome);
          const now = [...document.querySelectorAll('.held-turn')].find((x) => x.dataset.key === key);
          const shown = (now && now.querySelector('.held-out')) || out;
          showOutcome(shown, outcome);
          b.disabled = false;
          const nowButton = now && now.querySelector('.apply-turn');
          if (nowButton) nowButton.disabled = false;
        }
      });
      li.append(b);
    }
    li.append(out);
    ul.append(li);
  }
  root.append(ul);
}
