// The composer: a message sent over the WebSocket (`chat`) to the open
// session, or to a new one (in the project chosen for it); queued behind a
// running turn when asked; Enter sends, Shift+Enter breaks the line.

const $ = (id) => document.getElementById(id);
const RUN_ACTIVE = 'a run is currently active in this session — wait for it to finish or stop it first';
const NO_AGENT = 'No agent connected — your message is saved. Connect an agent: ';
// Sessions whose last message waits for a runner (the chat ack said so).
const waiting = new Set();

// `ctx`: `state` (the open session, the new chat's project, the
// projects), `rowOf(id)` (its sidebar row), `listProject()` (the sidebar's
// project filter), `ws`, `navigate(path)` and `reload()` (read the open
// session again).
export function setUpComposer(ctx) {
  const update = () => composerState(ctx);
  $('queue').addEventListener('change', update);
  $('stop').addEventListener('click', async () => {
    const id = ctx.state.sessionId;
    if (!id) return;
    $('stop').disabled = true;
    try {
      await ctx.ws.request('stop_run', { session_id: id });
      await ctx.reload();
    } catch (err) {
      $('composer-note').textContent = err.message;
    } finally {
      $('stop').disabled = false;
      update();
    }
  });
  $('composer-text').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $('composer').requestSubmit();
    }
  });
  $('composer').addEventListener('submit', async (e) => {
    e.preventDefault();
    const { state } = ctx;
    const text = $('composer-text').value.trim();
    if (!text || $('send').disabled) return;
    const fields = { text };
    if (state.sessionId) fields.session_id = state.sessionId;
    else if (state.newChatProject) fields.project_id = state.newChatProject;
    else if (ctx.listProject()) fields.project_id = ctx.listProject();
    if ($('queue').checked) fields.queue = true;
    $('send').disabled = true;
    try {
      const reply = await ctx.ws.request('chat', fields);
      const d = reply.data || {};
      if (reply.type === 'chat_ack') {
        $('composer-text').value = '';
        if (d.runner && d.runner.waiting) waiting.add(d.session_id);
        else waiting.delete(d.session_id);
        if (!state.sessionId) ctx.navigate(`/s/${encodeURIComponent(d.session_id)}`);
        else await ctx.reload();
      } else {
        $('composer-note').textContent = d.content || d.error || 'not sent';
      }
    } catch (err) {
      $('composer-note').textContent = err.message;
    } finally {
      update();
    }
  });
  return update;
}

// Send is refused while a turn runs unless the message is queued; the
// note says why, or where a new chat goes. A message waiting for a runner
// holds its session as a running turn does (the server refuses a second
// one), so it can be stopped or queued behind.
function composerState(ctx) {
  const { state } = ctx;
  const row = state.sessionId && ctx.rowOf(state.sessionId);
  const waits = !!row && row.status === 'needs_input' && waiting.has(state.sessionId);
  const running = !!row && row.status === 'running';
  const held = running || waits;
  const queue = $('queue').checked;
  $('send').disabled = held && !queue;
  const proj = !state.sessionId && state.newChatProject && state.projects.find((p) => p.id === state.newChatProject);
  const where = !state.sessionId && state.newChatProject ? `New chat in ${proj ? proj.name : state.newChatProject}` : '';
  $('composer-note').textContent = running ? (queue ? 'A turn is running: your message will be queued.' : RUN_ACTIVE) : where;
  $('queue').parentElement.hidden = !held;
  $('stop').hidden = !held;
  // A message nobody answers yet: say so, and how to connect an agent.
  if (waits) {
    const note = $('composer-note');
    note.textContent = NO_AGENT;
    const link = document.createElement('a');
    link.href = '/docs/RUNNERS.md';
    link.textContent = 'docs/RUNNERS.md';
    link.id = 'no-agent-link';
    note.append(link, ' (or run `openprogram runner llm`).');
  } else if (row && ['idle', 'done', 'failed'].includes(row.status)) {
    // Answered (or stopped): nothing waits any more.
    waiting.delete(state.sessionId);
  }
}
