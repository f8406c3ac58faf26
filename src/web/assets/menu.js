// The context menu of a session row (rename, regenerate the title, pin,
// archive, delete) and the two dialogs it opens. Keyboard: arrows move,
// Escape closes and gives the focus back to the row's button.
import { displayTitle } from './sidebar.js';

const $ = (id) => document.getElementById(id);

export function closeMenu() {
  const m = $('context-menu');
  if (!m.hidden) {
    m.hidden = true;
    m.replaceChildren();
  }
}

document.addEventListener('click', (e) => {
  if (!e.target.closest || !e.target.closest('#context-menu, .more')) closeMenu();
});

// `ctx`: `send(action, fields)` over the WebSocket, `llm` (a title can be
// regenerated) and `archiveLabel` (what archiving leads to).
export function openMenu(row, anchor, ev, ctx) {
  const m = $('context-menu');
  const { send } = ctx;
  const items = [
    ['Rename…', () => rename(row, send)],
    // Only with an LLM to ask.
    ...(ctx.llm ? [['Regenerate title', () => send('rename_session', { session_id: row.id, title: '' })]] : []),
    [row.pinned ? 'Unpin' : 'Pin', () => send('update_session_flags', { session_id: row.id, pinned: !row.pinned })],
    [row.archived ? 'Unarchive' : ctx.archiveLabel, () => send('update_session_flags', { session_id: row.id, archived: !row.archived })],
    ['Delete…', () => remove(row, send)],
  ];
  m.replaceChildren(
    ...items.map(([label, act]) => {
      const b = document.createElement('button');
      b.type = 'button';
      b.setAttribute('role', 'menuitem');
      b.textContent = label;
      b.addEventListener('click', () => {
        closeMenu();
        act();
      });
      return b;
    }),
  );
  m.hidden = false;
  const r = anchor.getBoundingClientRect();
  const x = ev ? ev.clientX : r.right - 8;
  const y = ev ? ev.clientY : r.bottom;
  m.style.left = `${Math.min(x, window.innerWidth - 200)}px`;
  m.style.top = `${Math.min(y, window.innerHeight - 220)}px`;
  m.querySelector('button').focus();
  m.onkeydown = (e) => {
    const bs = [...m.querySelectorAll('button')];
    const i = bs.indexOf(document.activeElement);
    if (e.key === 'ArrowDown') bs[(i + 1) % bs.length].focus();
    else if (e.key === 'ArrowUp') bs[(i - 1 + bs.length) % bs.length].focus();
    else if (e.key === 'Escape') {
      closeMenu();
      anchor.focus && anchor.focus();
    } else return;
    e.preventDefault();
  };
}

// A dialog whose form answers `ok` or `cancel`: `onOk` runs as the form
// is submitted with `ok` (not later, on the dialog's close event).
function ask(dlg, onOk) {
  const form = dlg.querySelector('form');
  form.onsubmit = (e) => {
    if (e.submitter && e.submitter.value === 'ok') onOk();
  };
  dlg.showModal();
}

function rename(row, send) {
  $('rename-input').value = row.title || '';
  ask($('rename-dialog'), () => {
    const title = $('rename-input').value.trim();
    if (title) send('rename_session', { session_id: row.id, title });
  });
  $('rename-input').select();
}

function remove(row, send) {
  $('confirm-text').textContent = `Delete “${displayTitle(row)}”? Its history is removed from this server.`;
  ask($('confirm-dialog'), () => send('delete_session', { session_id: row.id }));
}
