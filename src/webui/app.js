// glass web UI: chat with the served model (streamed through /v1/chat/completions), with
// the glass box: each reply as its tokens shaded by probability, and an inspector for any
// step (inspector.js, through POST /inspect). Conversations and settings live in
// localStorage. No framework, no bundler; every element is built with createElement and
// every text set with textContent (markdown.js renders replies the same way), so nothing
// the model writes is ever parsed as HTML.
import { parse, toDom } from './markdown.js';
import { h, clear, percent, visibleToken, describeToken } from './dom.js';
import { createInspector } from './inspector.js';

const $ = (id) => document.getElementById(id);

// ---------------------------------------------------------------------------------------
// Storage: localStorage that may be full, or missing (disabled by the browser).

const KEYS = {
  index: 'glass.conversations',
  conv: (id) => `glass.conversation.${id}`,
  current: 'glass.current',
  settings: 'glass.settings',
  apiKey: 'glass.apiKey',
  tokenView: 'glass.tokenView',
};

const store = {
  failed: false,
  get(key, fallback = null) {
    try {
      const raw = localStorage.getItem(key);
      return raw === null ? fallback : JSON.parse(raw);
    } catch {
      return fallback;
    }
  },
  // Returns whether the value was saved; a full (or unavailable) storage shows a notice
  // once, and the page keeps working from memory.
  set(key, value) {
    try {
      localStorage.setItem(key, JSON.stringify(value));
      if (this.failed) {
        this.failed = false;
        dismissNotice('storage');
      }
      return true;
    } catch (e) {
      if (!this.failed) {
        this.failed = true;
        const full = e && (e.name === 'QuotaExceededError' || e.code === 22 || e.code === 1014);
        notice(full
          ? 'Browser storage is full: new messages are kept only until this page closes. Delete old conversations to make room.'
          : `Cannot save to browser storage (${e && e.message ? e.message : e}): changes are kept only until this page closes.`,
        'warn', { key: 'storage' });
      }
      return false;
    }
  },
  remove(key) {
    try { localStorage.removeItem(key); } catch { /* nothing to remove */ }
  },
};

// ---------------------------------------------------------------------------------------
// State

const state = {
  props: null,
  model: null,
  inspect: false,
  apiKey: store.get(KEYS.apiKey, ''),
  settings: store.get(KEYS.settings, {}) || {},
  index: store.get(KEYS.index, []) || [],  // [{id, title, updated}], newest first
  current: null,  // the conversation shown: {id, title, created, updated, messages}
  streaming: null,  // {controller, conv, msg}
  tokenView: store.get(KEYS.tokenView, false) === true,
};
if (!Array.isArray(state.index)) state.index = [];

const views = new Map();  // message id -> its view (for the conversation shown)

function uid() {
  if (globalThis.crypto && crypto.randomUUID) return crypto.randomUUID();
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
}

// ---------------------------------------------------------------------------------------
// Notices

function notice(text, kind = 'info', { key, action } = {}) {
  const box = $('notices');
  if (key) dismissNotice(key);
  const el = h('div', { class: `notice ${kind}`, role: kind === 'error' ? 'alert' : null, dataset: key ? { key } : undefined },
    h('span', { class: 'notice-text', text }));
  if (action) el.appendChild(h('button', { type: 'button', class: 'btn small', text: action.label, onclick: () => { el.remove(); action.run(); } }));
  el.appendChild(h('button', { type: 'button', class: 'btn small icon', 'aria-label': 'Dismiss', text: '×', onclick: () => el.remove() }));
  box.appendChild(el);
  return el;
}

function dismissNotice(key) {
  for (const el of $('notices').querySelectorAll('.notice')) if (el.dataset.key === key) el.remove();
}

// ---------------------------------------------------------------------------------------
// The server

async function api(path, { method = 'GET', json, signal } = {}) {
  const headers = {};
  if (json !== undefined) headers['content-type'] = 'application/json';
  if (state.apiKey) headers.authorization = `Bearer ${state.apiKey}`;
  return fetch(path, { method, headers, body: json === undefined ? undefined : JSON.stringify(json), signal });
}

// The message of an error response ({"error": {"message", "code"}}), or its status.
async function errorMessage(res) {
  let text = '';
  try { text = await res.text(); } catch { /* no body */ }
  try {
    const e = JSON.parse(text).error;
    if (e && e.message) return e.code ? `${e.message} (${e.code})` : e.message;
  } catch { /* not JSON */ }
  return `HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}${text && text.length < 200 ? `: ${text}` : ''}`;
}

// Reads a text/event-stream body, calling onData with each event's parsed JSON; resolves
// to true when `data: [DONE]` came.
async function readEvents(body, onData) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  const handle = (block) => {
    const data = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith('data:')) data.push(line.slice(line[5] === ' ' ? 6 : 5));
    }
    if (!data.length) return false;
    const text = data.join('\n');
    if (text === '[DONE]') return true;
    let value;
    try { value = JSON.parse(text); } catch { throw new Error(`the server sent an event that is not JSON: ${text.slice(0, 120)}`); }
    onData(value);
    return false;
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + (buffer[cut] === '\r' ? 4 : 2));
      if (handle(block)) {
        try { await reader.cancel(); } catch { /* already closed */ }
        return true;
      }
    }
  }
  buffer += decoder.decode();
  return buffer.trim() ? handle(buffer) : false;
}

// ---------------------------------------------------------------------------------------
// API key

let keyResolve = null;

// Opens the key dialog; resolves true when a key was given, false when cancelled.
function askKey(message, error = '') {
  const dialog = $('key-dialog');
  $('key-message').textContent = message;
  $('key-error').textContent = error;
  $('key-input').value = '';
  $('key-forget').hidden = !state.apiKey;
  if (keyResolve) keyResolve(false);
  return new Promise((resolve) => {
    keyResolve = resolve;
    if (!dialog.open) dialog.showModal();
    $('key-input').focus();
  });
}

function setupKeyDialog() {
  const dialog = $('key-dialog');
  const finish = (value) => {
    const resolve = keyResolve;
    keyResolve = null;
    if (dialog.open) dialog.close();
    if (resolve) resolve(value);
  };
  $('key-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const key = $('key-input').value.trim();
    if (!key) {
      $('key-error').textContent = 'Enter the key the server was started with.';
      return;
    }
    state.apiKey = key;
    store.set(KEYS.apiKey, key);
    finish(true);
  });
  $('key-cancel').addEventListener('click', () => finish(false));
  dialog.addEventListener('cancel', () => { if (keyResolve) { const r = keyResolve; keyResolve = null; r(false); } });
  $('key-forget').addEventListener('click', () => {
    state.apiKey = '';
    store.remove(KEYS.apiKey);
    $('key-forget').hidden = true;
    $('key-error').textContent = '';
    $('key-message').textContent = 'The key is forgotten. Enter another, or cancel.';
  });
  $('open-key').addEventListener('click', async () => {
    const given = await askKey(state.apiKey
      ? 'A key is kept in this browser and sent with every request. Enter a new one to replace it, or forget it.'
      : 'No key is kept. Enter one if the server was started with --api-key.');
    if (given || !state.model) connect();
  });
}

// ---------------------------------------------------------------------------------------
// Settings

const SAMPLING = ['temperature', 'top_k', 'top_p', 'min_p', 'repetition_penalty', 'presence_penalty', 'frequency_penalty'];

const number = (check) => (raw) => {
  const v = Number(raw);
  return raw !== '' && Number.isFinite(v) && check(v) ? v : undefined;
};
const integer = (check) => (raw) => {
  const v = Number(raw);
  return /^-?\d+$/.test(raw) && Number.isSafeInteger(v) && check(v) ? v : undefined;
};

const FIELDS = [
  { key: 'temperature', label: 'Temperature', range: '0 to 2 (0: greedy)', parse: number((v) => v >= 0 && v <= 2) },
  { key: 'top_k', label: 'Top-k', range: 'integer ≥ 0 (0: off)', parse: integer((v) => v >= 0) },
  { key: 'top_p', label: 'Top-p', range: 'above 0, at most 1 (1: off)', parse: number((v) => v > 0 && v <= 1) },
  { key: 'min_p', label: 'Min-p', range: '0 to 1 (0: off)', parse: number((v) => v >= 0 && v <= 1) },
  { key: 'repetition_penalty', label: 'Repetition penalty', range: '0.01 to 100 (1: off)', parse: number((v) => v >= 0.01 && v <= 100) },
  { key: 'presence_penalty', label: 'Presence penalty', range: '-2 to 2 (0: off)', parse: number((v) => v >= -2 && v <= 2) },
  { key: 'frequency_penalty', label: 'Frequency penalty', range: '-2 to 2 (0: off)', parse: number((v) => v >= -2 && v <= 2) },
  { key: 'seed', label: 'Seed', range: 'integer ≥ 0; empty or -1: random', parse: integer((v) => v >= -1) },
  { key: 'max_tokens', label: 'Max tokens', range: 'integer ≥ 1; empty: until the reply ends', parse: integer((v) => v >= 1) },
  { key: 'system', label: 'System prompt', range: 'empty: the chat template’s default', textarea: true, parse: (raw) => raw },
  {
    key: 'stop', label: 'Stop strings', range: 'one per line, up to 4', textarea: true,
    parse: (raw) => {
      const lines = raw.split('\n').filter((l) => l !== '');
      return lines.length <= 4 ? lines : undefined;
    },
  },
];

function serverDefault(key) {
  const d = state.props && state.props.default_generation_settings;
  const v = d ? d[key] : undefined;
  return v === undefined || v === null ? '' : String(v);
}

// The text a field shows: the user's, else the server's default.
function fieldText(key) {
  return Object.prototype.hasOwnProperty.call(state.settings, key) ? String(state.settings[key]) : serverDefault(key);
}

// {value, error}: value undefined when the field is empty (not sent).
function checkField(field, text) {
  const raw = field.textarea ? text : text.trim();
  if (raw === '') return { value: undefined, error: '' };
  const value = field.parse(raw);
  if (value === undefined) return { value: undefined, error: `Must be ${field.range}` };
  return { value, error: '' };
}

// What a request sends: {sent, system, invalid: [labels]}.
function currentSettings() {
  const sent = {};
  const invalid = [];
  let system = '';
  for (const field of FIELDS) {
    const { value, error } = checkField(field, fieldText(field.key));
    if (error) { invalid.push(field.label); continue; }
    if (value === undefined) continue;
    if (field.key === 'system') system = value;
    else if (field.key === 'stop') { if (value.length) sent.stop = value; }
    else sent[field.key] = value;
  }
  return { sent, system, invalid };
}

function buildSettingsForm() {
  const grid = $('settings-fields');
  clear(grid);
  for (const field of FIELDS) {
    const id = `setting-${field.key}`;
    const dflt = serverDefault(field.key);
    const input = field.textarea
      ? h('textarea', { id, rows: field.key === 'system' ? 3 : 2, spellcheck: 'false', 'aria-describedby': `${id}-hint ${id}-error` })
      : h('input', { id, type: 'text', inputmode: 'decimal', spellcheck: 'false', 'aria-describedby': `${id}-hint ${id}-error` });
    input.value = fieldText(field.key);
    const error = h('span', { class: 'field-error', id: `${id}-error` });
    const validate = () => {
      const { error: message } = checkField(field, input.value);
      error.textContent = message;
      input.setAttribute('aria-invalid', message ? 'true' : 'false');
    };
    input.addEventListener('input', () => {
      if (input.value === serverDefault(field.key)) delete state.settings[field.key];
      else state.settings[field.key] = input.value;
      store.set(KEYS.settings, state.settings);
      validate();
      updateSettingsBadge();
    });
    validate();
    grid.appendChild(h('div', { class: `field${field.textarea ? ' wide' : ''}` },
      h('label', { for: id, text: field.label }),
      input,
      h('span', { class: 'hint', id: `${id}-hint`, text: `${field.range}${dflt !== '' ? ` · server: ${dflt}` : ''}` }),
      error));
  }
  updateSettingsBadge();
}

function updateSettingsBadge() {
  const { invalid } = currentSettings();
  const button = $('open-settings');
  button.classList.toggle('invalid', invalid.length > 0);
  button.textContent = invalid.length ? `Settings (${invalid.length} invalid)` : 'Settings';
}

function setupSettings() {
  const dialog = $('settings-dialog');
  $('open-settings').addEventListener('click', () => {
    buildSettingsForm();
    dialog.showModal();
  });
  $('reset-settings').addEventListener('click', () => {
    state.settings = {};
    store.remove(KEYS.settings);
    buildSettingsForm();
  });
  buildSettingsForm();
}

// ---------------------------------------------------------------------------------------
// Conversations

function loadConversation(id) {
  const conv = store.get(KEYS.conv(id));
  if (!conv || !Array.isArray(conv.messages)) return null;
  return conv;
}

function newConversation() {
  return { id: uid(), title: 'New chat', created: Date.now(), updated: Date.now(), messages: [] };
}

function saveConversation(conv) {
  if (!conv.messages.length) return;
  conv.updated = Date.now();
  store.set(KEYS.conv(conv.id), conv);
  state.index = [{ id: conv.id, title: conv.title, updated: conv.updated }, ...state.index.filter((c) => c.id !== conv.id)];
  store.set(KEYS.index, state.index);
  if (state.current === conv) store.set(KEYS.current, conv.id);
  renderConversationList();
}

function titleOf(text) {
  const t = text.replace(/\s+/g, ' ').trim();
  return t.length > 60 ? `${t.slice(0, 57)}…` : t || 'New chat';
}

function switchTo(conv) {
  if (inspector) inspector.close(false);
  state.current = conv;
  store.set(KEYS.current, conv.id);
  renderConversation();
  renderConversationList();
  closeSidebarOnPhone();
}

function deleteConversation(id) {
  if (state.streaming && state.streaming.conv.id === id) state.streaming.controller.abort();
  store.remove(KEYS.conv(id));
  state.index = state.index.filter((c) => c.id !== id);
  store.set(KEYS.index, state.index);
  if (state.current && state.current.id === id) switchTo(newConversation());
  else renderConversationList();
}

function renderConversationList() {
  const list = $('conv-list');
  clear(list);
  const entries = [...state.index];
  if (state.current && !state.current.messages.length) entries.unshift({ id: state.current.id, title: 'New chat', draft: true });
  for (const entry of entries) {
    const isCurrent = state.current && state.current.id === entry.id;
    const open = h('button', {
      type: 'button', class: 'conv-open', 'aria-current': isCurrent ? 'page' : null, text: entry.title || 'Untitled',
      title: entry.title,
      onclick: () => {
        if (isCurrent) { closeSidebarOnPhone(); return; }
        const conv = entry.draft ? state.current : loadConversation(entry.id);
        if (conv) switchTo(conv);
        else { notice('That conversation could not be read from storage.', 'warn'); deleteConversation(entry.id); }
      },
    });
    const del = entry.draft ? null : h('button', {
      type: 'button', class: 'conv-delete', 'aria-label': `Delete conversation: ${entry.title}`, title: 'Delete', text: '×',
      onclick: () => {
        // Two steps: the first click asks, a second within 4 s deletes.
        if (del.classList.contains('confirm')) { deleteConversation(entry.id); return; }
        del.classList.add('confirm');
        del.textContent = 'Delete?';
        del.setAttribute('aria-label', `Confirm deleting: ${entry.title}`);
        setTimeout(() => {
          if (!del.isConnected) return;
          del.classList.remove('confirm');
          del.textContent = '×';
          del.setAttribute('aria-label', `Delete conversation: ${entry.title}`);
        }, 4000);
      },
    });
    list.appendChild(h('li', { class: `conv${isCurrent ? ' current' : ''}` }, open, del));
  }
}

// ---------------------------------------------------------------------------------------
// Messages

function bucket(p) {
  if (p === null || p === undefined || Number.isNaN(p)) return 'n';
  if (p >= 0.8) return '0';
  if (p >= 0.5) return '1';
  if (p >= 0.2) return '2';
  if (p >= 0.05) return '3';
  return '4';
}

const BUCKETS = [['0', '≥ 80%'], ['1', '50–80%'], ['2', '20–50%'], ['3', '5–20%'], ['4', '< 5%']];

function renderLegend() {
  const legend = $('legend');
  clear(legend);
  legend.appendChild(h('span', { class: 'legend-title', text: 'Token probability' }));
  for (const [b, label] of BUCKETS) legend.appendChild(h('span', { class: `tok-sample b${b}`, text: label }));
  legend.appendChild(h('span', { class: 'legend-note', text: 'The model’s own probability of each token, before the sampling settings (the stream’s logprobs). ↵ newline · → tab · · space. Select a token, or Tab to it and press Enter, to inspect that step.' }));
}

function renderConversation() {
  const box = $('messages');
  clear(box);
  views.clear();
  const conv = state.current;
  $('chat-title').textContent = conv.messages.length ? conv.title : 'New chat';
  if (!conv.messages.length) {
    box.appendChild(h('div', { class: 'empty' },
      h('p', { class: 'empty-title', text: 'Chat with the model' }),
      h('p', { text: state.inspect
        ? 'Replies stream as they are written. Turn on Tokens to see each generated token shaded by its probability, and select one to inspect that step: the candidates at each sampling stage, the logit lens and the attention.'
        : 'Replies stream as they are written.' })));
  }
  conv.messages.forEach((msg) => box.appendChild(messageView(msg)));
  refreshActions();
  box.scrollTop = box.scrollHeight;
}

function messageView(msg) {
  if (msg.role === 'user') {
    const el = h('article', { class: 'msg user', 'aria-label': 'You' },
      h('div', { class: 'msg-head' }, h('span', { class: 'role', text: 'You' })),
      h('div', { class: 'msg-text', text: msg.content }),
      h('div', { class: 'msg-actions' }));
    views.set(msg.id, { msg, el, actions: el.querySelector('.msg-actions') });
    return el;
  }
  const view = {
    msg,
    el: h('article', { class: 'msg assistant', 'aria-label': 'Assistant' }),
    reasoning: h('details', { class: 'reasoning', hidden: true }, h('summary', { text: 'Reasoning' })),
    reasoningBody: h('div', { class: 'reasoning-text' }),
    body: h('div', { class: 'msg-body' }),
    tokens: h('div', { class: 'msg-tokens', role: 'group', 'aria-label': 'Generated tokens (arrow keys move, Enter inspects)' }),
    error: h('div', { class: 'msg-error', role: 'alert', hidden: true }),
    meta: h('div', { class: 'msg-meta' }),
    actions: h('div', { class: 'msg-actions' }),
    renderedTokens: 0,
    renderedText: null,
    pending: false,
  };
  view.reasoning.appendChild(view.reasoningBody);
  view.el.append(
    h('div', { class: 'msg-head' }, h('span', { class: 'role', text: 'Assistant' })),
    view.reasoning, view.body, view.tokens, view.error, view.meta, view.actions);
  views.set(msg.id, view);
  updateView(view);
  return view.el;
}

function scheduleUpdate(msg) {
  const view = views.get(msg.id);
  if (!view || view.pending) return;
  view.pending = true;
  requestAnimationFrame(() => {
    view.pending = false;
    if (views.get(msg.id) === view) updateView(view);
  });
}

function updateView(view) {
  const { msg } = view;
  const box = $('messages');
  const nearBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 80;
  const streaming = state.streaming && state.streaming.msg === msg;

  view.reasoning.hidden = !msg.reasoning;
  if (msg.reasoning && view.reasoningBody.textContent !== msg.reasoning) view.reasoningBody.textContent = msg.reasoning;
  if (streaming && msg.reasoning && !msg.content) view.reasoning.open = true;

  if (view.renderedText !== msg.content) {
    clear(view.body);
    toDom(parse(msg.content), document, view.body);
    view.renderedText = msg.content;
  }
  view.el.classList.toggle('streaming', !!streaming);
  view.el.classList.toggle('waiting', !!streaming && !msg.content && !msg.reasoning);

  const hasTokens = state.inspect && msg.tokens && msg.tokens.length > 0;
  view.el.classList.toggle('has-tokens', hasTokens);
  if (hasTokens && state.tokenView) renderTokens(view);

  view.error.hidden = !msg.error;
  view.error.textContent = msg.error ? `Error: ${msg.error}` : '';

  clear(view.meta);
  const parts = [];
  if (streaming) parts.push('writing…');
  else if (msg.stopped) parts.push('stopped');
  else if (msg.finish_reason) parts.push(msg.finish_reason === 'length' ? 'finished: length (max tokens)' : `finished: ${msg.finish_reason}`);
  if (msg.usage) parts.push(`${msg.usage.prompt_tokens} prompt + ${msg.usage.completion_tokens} generated tokens`);
  else if (msg.tokens && msg.tokens.length) parts.push(`${msg.tokens.length} tokens`);
  if (parts.length) view.meta.appendChild(h('span', { text: parts.join(' · ') }));
  const used = Object.entries(msg.settings || {}).filter(([k]) => k !== 'system');
  if (used.length) {
    view.meta.appendChild(h('details', { class: 'used' },
      h('summary', { text: 'settings' }),
      h('code', { text: used.map(([k, v]) => `${k}=${Array.isArray(v) ? JSON.stringify(v) : v}`).join(' ') })));
  }
  if (nearBottom) box.scrollTop = box.scrollHeight;
}

// Appends the tokens not yet shown (the view grows while the reply streams).
function renderTokens(view) {
  const { msg } = view;
  if (view.renderedTokens > msg.tokens.length) { clear(view.tokens); view.renderedTokens = 0; }
  for (let k = view.renderedTokens; k < msg.tokens.length; k++) {
    const tok = msg.tokens[k];
    const p = typeof tok.logprob === 'number' ? Math.exp(tok.logprob) : null;
    const alternatives = (tok.top || []).slice(0, 5).map((t) => `${visibleToken(t.token)} ${percent(Math.exp(t.logprob))}`).join(', ');
    const span = h('span', {
      class: `tok b${bucket(p)}${tok.r ? ' r' : ''}`,
      role: 'button',
      tabindex: k === 0 ? '0' : '-1',
      dataset: { k: String(k) },
      'aria-label': `${describeToken(tok.text)}, probability ${percent(p)}${tok.r ? ', reasoning' : ''}`,
      title: `${percent(p)}${alternatives ? ` · top: ${alternatives}` : ''}`,
      text: visibleToken(tok.text, tok.bytes),
    });
    view.tokens.appendChild(span);
    const newlines = Math.min(2, (String(tok.text).match(/\n/g) || []).length);
    for (let i = 0; i < newlines; i++) view.tokens.appendChild(h('br'));
  }
  view.renderedTokens = msg.tokens.length;
}

function setTokenView(on) {
  state.tokenView = on && state.inspect;
  store.set(KEYS.tokenView, on);
  $('token-view').checked = state.tokenView;
  $('app').classList.toggle('show-tokens', state.tokenView);
  $('legend').hidden = !state.tokenView;
  if (state.tokenView) for (const view of views.values()) if (view.tokens) updateView(view);
  if (!state.tokenView && inspector) inspector.close(false);
}

function lastIndexOf(messages, role) {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i].role === role) return i;
  return -1;
}

// Copy, regenerate and edit, where they apply (not while a reply streams).
function refreshActions() {
  const conv = state.current;
  const busy = !!state.streaming;
  const lastAssistant = lastIndexOf(conv.messages, 'assistant');
  const lastUser = lastIndexOf(conv.messages, 'user');
  conv.messages.forEach((msg, i) => {
    const view = views.get(msg.id);
    if (!view) return;
    clear(view.actions);
    if (msg.role === 'assistant') {
      if (msg.content) view.actions.appendChild(h('button', { type: 'button', class: 'btn small', text: 'Copy', onclick: (e) => copy(msg.content, e.currentTarget) }));
      if (i === lastAssistant && i === conv.messages.length - 1 && !busy)
        view.actions.appendChild(h('button', { type: 'button', class: 'btn small', text: 'Regenerate', onclick: regenerate }));
    } else {
      view.actions.appendChild(h('button', { type: 'button', class: 'btn small', text: 'Copy', onclick: (e) => copy(msg.content, e.currentTarget) }));
      if (i === lastUser && !busy) view.actions.appendChild(h('button', { type: 'button', class: 'btn small', text: 'Edit', onclick: () => editLast(i) }));
    }
  });
}

async function copy(text, button) {
  let ok = false;
  try {
    await navigator.clipboard.writeText(text);
    ok = true;
  } catch {
    const area = h('textarea', { class: 'visually-hidden', readonly: true });
    area.value = text;
    document.body.appendChild(area);
    area.select();
    try { ok = document.execCommand('copy'); } catch { ok = false; }
    area.remove();
  }
  const old = button.textContent;
  button.textContent = ok ? 'Copied' : 'Copy failed';
  setTimeout(() => { button.textContent = old; }, 1500);
}

// ---------------------------------------------------------------------------------------
// Chat

function updateComposer() {
  const busy = !!state.streaming;
  $('send').disabled = busy || !state.model;
  $('send').hidden = busy;
  $('stop').hidden = !busy;
}

async function send(text) {
  if (state.streaming || !state.model) return;
  const conv = state.current;
  if (!conv.messages.length) conv.title = titleOf(text);
  const msg = { id: uid(), role: 'user', content: text };
  conv.messages.push(msg);
  if (conv.messages.length === 1) renderConversation();
  else $('messages').appendChild(messageView(msg));
  $('chat-title').textContent = conv.title;
  saveConversation(conv);
  await generate(conv);
}

async function generate(conv) {
  const { sent, system, invalid } = currentSettings();
  if (invalid.length)
    notice(`Not sent, as invalid: ${invalid.join(', ')} (the server's defaults apply). Fix them in Settings.`, 'warn', { key: 'invalid' });
  else dismissNotice('invalid');
  const history = [];
  if (system) history.push({ role: 'system', content: system });
  for (const m of conv.messages) {
    if (m.role === 'user') history.push({ role: 'user', content: m.content });
    else if (m.role === 'assistant' && m.content) history.push({ role: 'assistant', content: m.content });
  }
  const msg = {
    id: uid(), role: 'assistant', content: '', reasoning: '', prompt_token_ids: null, tokens: [],
    settings: system ? { ...sent, system } : { ...sent }, finish_reason: null, usage: null, error: null, model: state.model,
    created: Date.now(),
  };
  conv.messages.push(msg);
  const empty = $('messages').querySelector('.empty');
  if (empty && state.current === conv) empty.remove();
  if (state.current === conv) $('messages').appendChild(messageView(msg));
  const controller = new AbortController();
  state.streaming = { controller, conv, msg };
  updateComposer();
  refreshActions();
  const body = {
    model: state.model,
    messages: history,
    stream: true,
    logprobs: true,
    top_logprobs: 5,
    return_token_ids: true,
    stream_options: { include_usage: true },
    ...sent,
  };
  let done = false;
  try {
    const res = await api('/v1/chat/completions', { method: 'POST', json: body, signal: controller.signal });
    if (!res.ok) {
      msg.error = await errorMessage(res);
      if (res.status === 401) {
        askKey('The server needs an API key (it answered 401). Enter it, then regenerate the reply.', msg.error).then((given) => {
          if (given) connect();
        });
      }
    } else {
      done = await readEvents(res.body, (data) => onChunk(msg, data));
      if (!done && !msg.error && !msg.finish_reason) msg.error = 'The connection closed before the reply was finished.';
    }
  } catch (e) {
    if (e && e.name === 'AbortError') msg.stopped = true;
    else msg.error = e instanceof TypeError ? `Network error: could not reach the server (${e.message})` : String(e && e.message ? e.message : e);
  } finally {
    state.streaming = null;
    // For screen readers, once per reply (the streamed text itself is not announced).
    $('announce').textContent = msg.error ? `The reply failed: ${msg.error}`
      : msg.stopped ? 'Reply stopped.' : `Reply finished, ${msg.tokens.length} tokens.`;
    updateComposer();
    const view = views.get(msg.id);
    if (view) updateView(view);
    refreshActions();
    saveConversation(conv);
  }
}

function onChunk(msg, data) {
  if (data.error) {
    msg.error = data.error.message || JSON.stringify(data.error);
    scheduleUpdate(msg);
    return;
  }
  if (Array.isArray(data.prompt_token_ids)) msg.prompt_token_ids = data.prompt_token_ids;
  if (data.usage) msg.usage = data.usage;
  const choice = data.choices && data.choices[0];
  if (choice) {
    const delta = choice.delta || {};
    const reasoning = typeof delta.reasoning_content === 'string' && delta.reasoning_content !== '';
    if (typeof delta.reasoning_content === 'string') msg.reasoning += delta.reasoning_content;
    if (typeof delta.content === 'string') msg.content += delta.content;
    const ids = Array.isArray(choice.token_ids) ? choice.token_ids : [];
    const lps = (choice.logprobs && Array.isArray(choice.logprobs.content)) ? choice.logprobs.content : [];
    const count = Math.max(ids.length, lps.length);
    for (let j = 0; j < count; j++) {
      const lp = lps[j] || {};
      const tok = {
        id: typeof ids[j] === 'number' ? ids[j] : null,
        text: typeof lp.token === 'string' ? lp.token : '',
        logprob: typeof lp.logprob === 'number' ? round(lp.logprob) : null,
        top: Array.isArray(lp.top_logprobs) ? lp.top_logprobs.map((t) => ({ token: t.token, logprob: round(t.logprob) })) : [],
      };
      if (tok.text.includes('\uFFFD') && Array.isArray(lp.bytes)) tok.bytes = lp.bytes;
      if (reasoning) tok.r = 1;
      msg.tokens.push(tok);
    }
    if (choice.finish_reason) msg.finish_reason = choice.finish_reason;
  }
  scheduleUpdate(msg);
}

function round(x) {
  return typeof x === 'number' ? Math.round(x * 1e5) / 1e5 : x;
}

function stop() {
  if (state.streaming) state.streaming.controller.abort();
}

function regenerate() {
  const conv = state.current;
  if (state.streaming || !state.model) return;
  const last = conv.messages[conv.messages.length - 1];
  if (!last || last.role !== 'assistant') return;
  conv.messages.pop();
  const view = views.get(last.id);
  if (view) view.el.remove();
  views.delete(last.id);
  if (inspector) inspector.forget(last.id);
  generate(conv);
}

function editLast(i) {
  const conv = state.current;
  if (state.streaming) return;
  const msg = conv.messages[i];
  for (const m of conv.messages.slice(i)) if (inspector) inspector.forget(m.id);
  conv.messages.splice(i);
  $('prompt').value = msg.content;
  if (conv.messages.length) saveConversation(conv);
  else {
    store.remove(KEYS.conv(conv.id));
    state.index = state.index.filter((c) => c.id !== conv.id);
    store.set(KEYS.index, state.index);
  }
  renderConversation();
  renderConversationList();
  $('prompt').focus();
}

// ---------------------------------------------------------------------------------------
// Tokens: keyboard and selection

function tokenTarget(e) {
  const tok = e.target.closest && e.target.closest('.tok');
  if (!tok) return null;
  const article = tok.closest('.msg');
  for (const view of views.values()) if (view.el === article) return { tok, view, k: Number(tok.dataset.k) };
  return null;
}

function focusToken(group, el) {
  for (const t of group.querySelectorAll('.tok[tabindex="0"]')) t.tabIndex = -1;
  el.tabIndex = 0;
  el.focus();
}

function setupTokens() {
  const box = $('messages');
  box.addEventListener('click', (e) => {
    const hit = tokenTarget(e);
    if (hit) openInspector(hit);
  });
  box.addEventListener('keydown', (e) => {
    const hit = tokenTarget(e);
    if (!hit) return;
    const group = hit.view.tokens;
    const all = group.querySelectorAll('.tok');
    let next = null;
    if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); openInspector(hit); return; }
    if (e.key === 'ArrowRight' || e.key === 'ArrowDown') next = all[Math.min(all.length - 1, hit.k + 1)];
    else if (e.key === 'ArrowLeft' || e.key === 'ArrowUp') next = all[Math.max(0, hit.k - 1)];
    else if (e.key === 'Home') next = all[0];
    else if (e.key === 'End') next = all[all.length - 1];
    if (next) { e.preventDefault(); focusToken(group, next); }
  });
  box.addEventListener('focusin', (e) => {
    const hit = tokenTarget(e);
    if (hit && hit.tok.tabIndex !== 0) focusToken(hit.view.tokens, hit.tok);
  });
}

function openInspector({ tok, view, k }) {
  if (!inspector) return;
  for (const t of document.querySelectorAll('.tok.selected')) t.classList.remove('selected');
  tok.classList.add('selected');
  inspector.open(view.msg, k, tok);
}

let inspector = null;

// ---------------------------------------------------------------------------------------
// Layout

function closeSidebarOnPhone() {
  if (matchMedia('(max-width: 700px)').matches) {
    $('app').classList.remove('sidebar-open');
    $('toggle-sidebar').setAttribute('aria-expanded', 'false');
  }
}

function setupLayout() {
  $('toggle-sidebar').addEventListener('click', () => {
    const open = !$('app').classList.contains('sidebar-open');
    $('app').classList.toggle('sidebar-open', open);
    $('toggle-sidebar').setAttribute('aria-expanded', String(open));
  });
  // On a phone the sidebar covers the chat: a tap beside it or Escape closes it.
  $('chat').addEventListener('click', (e) => {
    if ($('app').classList.contains('sidebar-open') && !e.target.closest('#toggle-sidebar')) closeSidebarOnPhone();
  });
  $('new-chat').addEventListener('click', () => {
    if (state.current.messages.length) switchTo(newConversation());
    else closeSidebarOnPhone();
    $('prompt').focus();
  });
  $('composer').addEventListener('submit', (e) => {
    e.preventDefault();
    const text = $('prompt').value;
    if (!text.trim() || state.streaming || !state.model) return;
    $('prompt').value = '';
    send(text);
  });
  $('prompt').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $('composer').requestSubmit();
    }
  });
  $('stop').addEventListener('click', stop);
  $('token-view').addEventListener('change', (e) => setTokenView(e.target.checked));
  document.addEventListener('keydown', (e) => {
    if (e.key !== 'Escape' || document.querySelector('dialog[open]')) return;
    if (inspector && inspector.isOpen()) {
      e.preventDefault();
      inspector.close(true);
    } else if ($('app').classList.contains('sidebar-open')) {
      closeSidebarOnPhone();
      $('toggle-sidebar').focus();
    }
  });
  // Another tab changed the conversations: follow its list.
  window.addEventListener('storage', (e) => {
    if (e.key === KEYS.index) {
      state.index = store.get(KEYS.index, []) || [];
      renderConversationList();
    }
  });
}

// ---------------------------------------------------------------------------------------
// Connecting: GET /props (the model, its defaults, whether /inspect is on)

let connecting = null;

function connect() {
  if (!connecting) connecting = doConnect().finally(() => { connecting = null; });
  return connecting;
}

async function doConnect() {
  $('model-name').textContent = 'connecting…';
  for (;;) {
    let res;
    try {
      res = await api('/props');
    } catch (e) {
      $('model-name').textContent = 'not connected';
      notice(`Cannot reach the server (${e.message}).`, 'error', { key: 'connect', action: { label: 'Retry', run: connect } });
      return;
    }
    if (res.status === 401) {
      const message = await errorMessage(res);
      $('model-name').textContent = 'API key needed';
      const given = await askKey(state.apiKey ? 'The server refused the key kept in this browser.' : 'This server needs an API key (glass serve --api-key).',
        state.apiKey ? message : '');
      if (!given) {
        notice('No API key: this server answers nothing without one.', 'error', { key: 'connect', action: { label: 'Enter key', run: connect } });
        return;
      }
      continue;
    }
    let props;
    if (res.status === 404) {
      // A server without /props: chat only, with the first model it lists.
      props = { inspect: false, default_generation_settings: {} };
      try {
        const models = await api('/v1/models');
        const list = models.ok ? await models.json() : null;
        props.model = list && list.data && list.data[0] ? list.data[0].id : null;
      } catch { props.model = null; }
    } else if (!res.ok) {
      const message = await errorMessage(res);
      $('model-name').textContent = 'not connected';
      notice(`The server answered GET /props with an error: ${message}`, 'error', { key: 'connect', action: { label: 'Retry', run: connect } });
      return;
    } else {
      try { props = await res.json(); } catch { props = null; }
      if (!props || typeof props !== 'object') {
        notice('The server sent /props that is not JSON.', 'error', { key: 'connect', action: { label: 'Retry', run: connect } });
        return;
      }
    }
    dismissNotice('connect');
    applyProps(props);
    return;
  }
}

function applyProps(props) {
  state.props = props;
  state.model = props.model || null;
  state.inspect = props.inspect === true;
  $('model-name').textContent = state.model || 'no model';
  $('model-name').title = props.architecture
    ? `${props.architecture.layers} layers, ${props.architecture.heads} heads${props.architecture.experts ? `, ${props.architecture.experts} experts` : ''}, context ${props.context_length}`
    : '';
  $('token-switch').hidden = !state.inspect;
  if (state.inspect && !inspector) {
    inspector = createInspector({
      root: $('inspector'),
      app: $('app'),
      api,
      errorMessage,
      props: () => state.props,
      onUnauthorized: (message) => askKey('The server needs an API key (it answered 401).', message),
      onClose: () => { for (const t of document.querySelectorAll('.tok.selected')) t.classList.remove('selected'); },
    });
  }
  if (!state.inspect && inspector) { inspector.close(false); inspector = null; }
  setTokenView(state.tokenView || store.get(KEYS.tokenView, false) === true);
  buildSettingsForm();
  renderConversation();
  updateComposer();
  if (!state.model) notice('The server lists no model to chat with.', 'error', { key: 'connect' });
}

// ---------------------------------------------------------------------------------------
// Boot: the saved conversations first (no network needed), then the server.

function boot() {
  setupLayout();
  setupKeyDialog();
  setupSettings();
  setupTokens();
  renderLegend();
  const currentId = store.get(KEYS.current);
  state.current = (currentId && loadConversation(currentId)) || newConversation();
  renderConversation();
  renderConversationList();
  updateComposer();
  connect();
}

boot();

// For tests and the curious: the state, read-only by convention.
globalThis.glass = { state };
