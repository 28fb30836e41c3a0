// The token inspector: one generation step taken apart through POST /inspect. For token k
// of a reply it sends the context the model saw (the prompt's ids and the reply's first k
// ids), the token chosen and the reply's sampling settings, and shows
//   - the candidates at each stage of the sampling chain (raw logits, then each
//     processor), with how many tokens each stage removed and where the chosen one stood;
//   - the logit lens: the top tokens read out of every layer's residual stream;
//   - the attention of every head over the context, a layer at a time;
//   - for mixture-of-experts models, the experts each layer chose.
// A side panel on wide screens, a bottom sheet on narrow ones; Escape closes it (app.js).
import { h, clear, percent, visibleToken, describeToken } from './dom.js';

const TOP = 10;
const LENS_TOP = 5;
// Column labels for the stages (the server's names are in each header's title).
const STAGE_LABELS = {
  logits: 'raw logits', logit_bias: 'logit bias', repetition_penalty: 'repetition', presence_penalty: 'presence', frequency_penalty: 'frequency',
  temperature: 'temperature', top_k: 'top-k', top_p: 'top-p', min_p: 'min-p',
};
const stageLabel = (name) => STAGE_LABELS[name] || name;

export function createInspector({ root, app, api, errorMessage, props, onUnauthorized, onClose }) {
  const cache = new Map();  // `${message id}:${k}` -> Promise of the inspection
  let current = null;  // {msg, k, tokEl}
  let seq = 0;

  const title = h('h2', { id: 'inspector-title', tabindex: '-1', text: 'Token' });
  const subtitle = h('p', { class: 'insp-sub' });
  const prev = h('button', { type: 'button', class: 'btn small', text: '‹ Previous', 'aria-label': 'Inspect the previous token', onclick: () => step(-1) });
  const next = h('button', { type: 'button', class: 'btn small', text: 'Next ›', 'aria-label': 'Inspect the next token', onclick: () => step(1) });
  const closeButton = h('button', { type: 'button', class: 'btn icon', 'aria-label': 'Close the inspector (Escape)', title: 'Close (Escape)', text: '×', onclick: () => close(true) });
  const status = h('div', { class: 'insp-status', role: 'status', 'aria-live': 'polite' });
  const panels = {
    candidates: h('section', { class: 'insp-panel', id: 'insp-candidates', role: 'tabpanel', 'aria-labelledby': 'tab-candidates', tabindex: '0' }),
    lens: h('section', { class: 'insp-panel', id: 'insp-lens', role: 'tabpanel', 'aria-labelledby': 'tab-lens', tabindex: '0', hidden: true }),
    attention: h('section', { class: 'insp-panel', id: 'insp-attention', role: 'tabpanel', 'aria-labelledby': 'tab-attention', hidden: true }),
    experts: h('section', { class: 'insp-panel', id: 'insp-experts', role: 'tabpanel', 'aria-labelledby': 'tab-experts', tabindex: '0', hidden: true }),
  };
  const names = { candidates: 'Candidates', lens: 'Logit lens', attention: 'Attention', experts: 'Experts' };
  const tabs = {};
  const tablist = h('div', { class: 'insp-tabs', role: 'tablist', 'aria-label': 'Views of this step' });
  for (const key of Object.keys(panels)) {
    tabs[key] = h('button', {
      type: 'button', role: 'tab', id: `tab-${key}`, class: 'insp-tab', 'aria-controls': `insp-${key}`,
      'aria-selected': key === 'candidates' ? 'true' : 'false', tabindex: key === 'candidates' ? '0' : '-1',
      text: names[key], onclick: () => selectTab(key),
    });
    tablist.appendChild(tabs[key]);
  }
  tablist.addEventListener('keydown', (e) => {
    const visible = Object.keys(tabs).filter((key) => !tabs[key].hidden);
    const at = visible.indexOf(Object.keys(tabs).find((key) => tabs[key] === document.activeElement));
    if (at < 0) return;
    let to = null;
    if (e.key === 'ArrowRight') to = visible[(at + 1) % visible.length];
    else if (e.key === 'ArrowLeft') to = visible[(at - 1 + visible.length) % visible.length];
    else if (e.key === 'Home') to = visible[0];
    else if (e.key === 'End') to = visible[visible.length - 1];
    if (to) { e.preventDefault(); selectTab(to); tabs[to].focus(); }
  });
  let selected = 'candidates';

  root.append(
    h('header', { class: 'insp-head' }, title, closeButton),
    subtitle,
    h('div', { class: 'insp-nav' }, prev, next),
    tablist,
    status,
    ...Object.values(panels));

  function selectTab(key) {
    selected = key;
    for (const [k, tab] of Object.entries(tabs)) {
      const on = k === key;
      tab.setAttribute('aria-selected', String(on));
      tab.tabIndex = on ? 0 : -1;
      panels[k].hidden = !on;
    }
    if (key === 'attention' && current && current.result) drawAttention(current.result);
  }

  function isOpen() {
    return !root.hidden;
  }

  function close(returnFocus) {
    if (root.hidden) return;
    root.hidden = true;
    app.classList.remove('inspecting');
    const tokEl = current && current.tokEl;
    current = null;
    seq++;
    onClose();
    if (returnFocus && tokEl && tokEl.isConnected) tokEl.focus();
  }

  function forget(messageId) {
    for (const key of [...cache.keys()]) if (key.startsWith(`${messageId}:`)) cache.delete(key);
    if (current && current.msg.id === messageId) close(false);
  }

  function step(delta) {
    if (!current) return;
    const k = current.k + delta;
    if (k < 0 || k >= current.msg.tokens.length) return;
    const group = current.tokEl && current.tokEl.parentElement;
    const el = group ? group.querySelector(`.tok[data-k="${k}"]`) : null;
    if (el) {
      for (const t of group.querySelectorAll('.tok.selected')) t.classList.remove('selected');
      el.classList.add('selected');
      for (const t of group.querySelectorAll('.tok[tabindex="0"]')) t.tabIndex = -1;
      el.tabIndex = 0;
    }
    open(current.msg, k, el || current.tokEl, { keepFocus: true });
  }

  function open(msg, k, tokEl, { keepFocus = false } = {}) {
    const wasOpen = isOpen();
    const tok = msg.tokens[k];
    current = { msg, k, tokEl, result: null };
    const mySeq = ++seq;
    root.hidden = false;
    app.classList.add('inspecting');
    const p = typeof tok.logprob === 'number' ? Math.exp(tok.logprob) : null;
    title.textContent = `Token ${k + 1} of ${msg.tokens.length}: ${describeToken(tok.text)}`;
    subtitle.textContent = `id ${tok.id ?? '?'} · sampled with probability ${percent(p)}${tok.r ? ' · reasoning' : ''}`;
    prev.disabled = k === 0;
    next.disabled = k >= msg.tokens.length - 1;
    for (const panel of Object.values(panels)) clear(panel);
    if (!wasOpen || !keepFocus) title.focus();

    const ids = msg.tokens.slice(0, k + 1).map((t) => t.id);
    if (!Array.isArray(msg.prompt_token_ids) || !msg.prompt_token_ids.length || ids.some((id) => typeof id !== 'number')) {
      setStatus('This reply has no token ids (the server did not send prompt_token_ids or token_ids), so its steps cannot be inspected.', 'error');
      return;
    }
    const key = `${msg.id}:${k}`;
    let promise = cache.get(key);
    if (!promise) {
      const body = {
        tokens: [...msg.prompt_token_ids, ...ids.slice(0, k)],
        prompt_tokens: msg.prompt_token_ids.length,
        token: ids[k],
        top: TOP,
      };
      if (msg.model) body.model = msg.model;
      for (const name of ['temperature', 'top_k', 'top_p', 'min_p', 'repetition_penalty', 'presence_penalty', 'frequency_penalty'])
        if (msg.settings && msg.settings[name] !== undefined) body[name] = msg.settings[name];
      promise = request(body);
      cache.set(key, promise);
      promise.catch(() => cache.delete(key));
    }
    setStatus(`Running step ${k + 1} over a context of ${msg.prompt_token_ids.length + k} tokens…`, 'busy');
    promise.then((result) => {
      if (mySeq !== seq) return;
      current.result = result;
      setStatus('', '');
      if (typeof result.cached_tokens === 'number') {
        const n = result.context ? result.context.length : 0;
        subtitle.textContent += ` · context ${n} tokens${result.cached_tokens ? `, ${result.cached_tokens} from the prefix cache` : ''}`;
      }
      render(result, tok);
    }, (e) => {
      if (mySeq !== seq) return;
      setStatus(e.message, 'error');
    });
  }

  async function request(body) {
    let res;
    try {
      res = await api('/inspect', { method: 'POST', json: body });
    } catch (e) {
      throw new Error(`Network error: could not reach the server (${e.message}).`);
    }
    if (res.ok) return res.json();
    const message = await errorMessage(res);
    if (res.status === 401) {
      onUnauthorized(message);
      throw new Error(`The server needs an API key: ${message}. Enter it, then select the token again.`);
    }
    if (res.status === 404) throw new Error(`The inspection API is not available on this server: ${message}`);
    throw new Error(`The server could not inspect this step: ${message}`);
  }

  function setStatus(text, kind) {
    status.textContent = text;
    status.className = `insp-status ${kind}`;
    status.setAttribute('role', kind === 'error' ? 'alert' : 'status');
  }

  function render(result, tok) {
    renderCandidates(result, tok);
    renderLens(result);
    const arch = (props() && props().architecture) || {};
    const moe = arch.experts > 0 && result.experts;
    tabs.experts.hidden = !moe;
    if (moe) renderExperts(result);
    else if (selected === 'experts') selectTab('candidates');
    tabs.attention.hidden = !result.attention;
    tabs.lens.hidden = !result.lens;
    if ((selected === 'attention' && !result.attention) || (selected === 'lens' && !result.lens)) selectTab('candidates');
    if (result.attention) renderAttention(result);
    else clear(panels.attention);
    if (selected === 'attention') drawAttention(result);
  }

  // ---- candidates: one column per stage

  function renderCandidates(result, tok) {
    const panel = panels.candidates;
    clear(panel);
    const stages = Array.isArray(result.stages) ? result.stages : [];
    const chosenId = result.token ? result.token.id : tok.id;
    panel.appendChild(h('p', { class: 'insp-note' },
      'Sampling chain: ', h('code', { text: result.sampling || 'greedy (no processors)' })));
    panel.appendChild(fateSummary(stages, result.token || { id: tok.id, text: tok.text }));
    const rows = Math.max(0, ...stages.map((s) => (s.top || []).length));
    const table = h('table', { class: 'cand', 'aria-label': 'Candidates at each sampling stage' });
    const headRow = h('tr', null, h('th', { scope: 'col', class: 'rank', text: 'rank' }));
    for (const s of stages) {
      const setting = s.setting && s.setting !== s.name ? s.setting.replace(`${s.name}=`, '') : '';
      headRow.appendChild(h('th', { scope: 'col', class: 'stage', dataset: { stage: s.name }, title: s.setting || s.name },
        h('span', { class: 'stage-name', text: stageLabel(s.name) }),
        setting ? h('span', { class: 'stage-setting', text: setting }) : null));
    }
    table.appendChild(h('thead', null, headRow));
    const body = h('tbody');
    const summary = (label, cell) => {
      const tr = h('tr', { class: 'summary' }, h('th', { scope: 'row', text: label }));
      for (const s of stages) tr.appendChild(cell(s));
      body.appendChild(tr);
    };
    summary('kept', (s) => h('td', { text: String(s.surviving) }));
    summary('removed', (s) => h('td', { class: s.removed ? 'removed' : '', text: String(s.removed) }));
    summary('chosen', (s) => {
      const t = s.token;
      if (!t) return h('td', { text: '–' });
      if (t.rank === null || t.rank === undefined) return h('td', { class: 'gone', text: 'removed' });
      return h('td', { class: 'chosen-at', title: `rank ${t.rank + 1}, probability ${percent(t.prob)}, logit ${fmt(t.logit)}` },
        h('span', { class: 'ct', text: `#${t.rank + 1}` }), h('span', { class: 'cp', text: percent(t.prob) }));
    });
    for (let r = 0; r < rows; r++) {
      const tr = h('tr', null, h('th', { scope: 'row', class: 'rank', text: String(r + 1) }));
      for (const s of stages) {
        const c = (s.top || [])[r];
        if (!c) { tr.appendChild(h('td', { class: 'none' })); continue; }
        const isChosen = c.id === chosenId;
        const td = h('td', {
          class: `cand-cell${isChosen ? ' chosen' : ''}`,
          title: `${describeToken(c.text)} · id ${c.id} · probability ${percent(c.prob)} · logit ${fmt(c.logit)}`,
          dataset: { id: String(c.id) },
        },
        h('span', { class: 'ct', text: visibleToken(c.text) }),
        h('span', { class: 'cp', text: percent(c.prob) }),
        h('span', { class: 'cl', text: fmt(c.logit) }));
        shade(td, c.prob);
        tr.appendChild(td);
      }
      body.appendChild(tr);
    }
    table.appendChild(body);
    panel.appendChild(h('div', { class: 'table-scroll' }, table));
    panel.appendChild(h('p', { class: 'insp-note', text: 'Each column: the top candidates after that stage, with probability and logit (shade: probability). The chosen token is outlined; its rank at each stage is in the “chosen” row even when it is outside the list.' }));
  }

  function fateSummary(stages, token) {
    const parts = [];
    for (const s of stages) {
      const t = s.token;
      if (!t) continue;
      const label = stageLabel(s.name);
      parts.push(t.rank === null || t.rank === undefined ? `${label}: removed` : `${label}: #${t.rank + 1} (${percent(t.prob)})`);
    }
    return h('p', { class: 'fate' },
      h('span', { class: 'fate-token', text: `${describeToken(token.text)} (id ${token.id})` }),
      parts.length ? ` — ${parts.join(' → ')}` : '');
  }

  // ---- the logit lens: a row per layer

  function renderLens(result) {
    const panel = panels.lens;
    clear(panel);
    if (!result.lens) return;
    const layers = result.lens.layers || [];
    const arch = (props() && props().architecture) || {};
    const table = h('table', { class: 'lens', 'aria-label': 'Logit lens: the top tokens read out of each layer' });
    const head = h('tr', null, h('th', { scope: 'col', text: 'layer' }));
    for (let i = 0; i < LENS_TOP; i++) head.appendChild(h('th', { scope: 'col', text: `#${i + 1}` }));
    head.appendChild(h('th', { scope: 'col', text: 'chosen' }));
    table.appendChild(h('thead', null, head));
    const body = h('tbody');
    const chosenId = result.token ? result.token.id : null;
    const row = (label, top, standing, cls) => {
      const tr = h('tr', { class: cls || '' }, h('th', { scope: 'row', text: label }));
      for (let i = 0; i < LENS_TOP; i++) {
        const c = (top || [])[i];
        if (!c) { tr.appendChild(h('td', { class: 'none' })); continue; }
        const td = h('td', {
          class: `lens-cell${c.id === chosenId ? ' chosen' : ''}`,
          title: `${describeToken(c.text)} · id ${c.id} · probability ${percent(c.prob)}${c.logit !== undefined ? ` · logit ${fmt(c.logit)}` : ''}`,
          dataset: { id: String(c.id) },
        }, h('span', { class: 'ct', text: visibleToken(c.text) }), h('span', { class: 'cp', text: percent(c.prob) }));
        shade(td, c.prob);
        tr.appendChild(td);
      }
      let chosen = '–';
      if (standing) chosen = standing.rank === null || standing.rank === undefined ? 'removed' : `#${standing.rank + 1} · ${percent(standing.prob)}`;
      tr.appendChild(h('td', { class: 'lens-chosen', text: chosen }));
      body.appendChild(tr);
    };
    for (const l of layers) row(String(l.layer), l.top, l.token, 'layer');
    // The model's own output (the raw logits' softmax) closes the table.
    const logits = (result.stages || [])[0];
    if (logits) row('final', logits.top, logits.token, 'final');
    table.appendChild(body);
    panel.appendChild(h('p', { class: 'insp-note', text: `The final norm and the output projection applied to the residual stream after each layer (${layers.length}${arch.layers ? ` of ${arch.layers}` : ''} layers), at the last position: what the model would predict if it stopped there. “final” is the model's output. The chosen column gives the sampled token's rank and probability at that layer.` }));
    panel.appendChild(h('div', { class: 'table-scroll' }, table));
  }

  // ---- attention: heads × context tokens for one layer

  let attentionState = null;

  function renderAttention(result) {
    const panel = panels.attention;
    clear(panel);
    const a = result.attention;
    const select = h('select', { id: 'attn-layer', 'aria-label': 'Layer' });
    for (let l = 0; l < a.layers; l++) select.appendChild(h('option', { value: String(l), text: `Layer ${l}` }));
    select.value = String(a.layers - 1);
    const canvas = h('canvas', {
      class: 'attn-canvas', tabindex: '0', role: 'img',
      'aria-label': `Attention weights: ${a.heads} heads (rows) by ${a.keys} context tokens (columns). Arrow keys move through the cells; the line below names the one selected.`,
    });
    const readout = h('p', { class: 'attn-readout', 'aria-live': 'polite', text: 'Hover or focus the map to read a cell.' });
    const strip = h('div', { class: 'attn-strip', 'aria-label': 'Context tokens shaded by the attention averaged over heads' });
    const topList = h('p', { class: 'insp-note attn-top' });
    panel.append(
      h('div', { class: 'attn-controls' }, h('label', { for: 'attn-layer', text: 'Layer ' }), select,
        h('span', { class: 'insp-note', text: ' rows: heads · columns: context tokens · shade: √(weight ÷ the layer’s largest)' })),
      h('div', { class: 'attn-scroll' }, canvas),
      readout,
      h('h3', { text: 'Average over heads' }),
      topList,
      strip);
    attentionState = { result, select, canvas, readout, strip, topList, cursor: null };
    select.addEventListener('change', () => { attentionState.cursor = null; drawAttention(result); });
    canvas.addEventListener('mousemove', (e) => {
      const cell = cellAt(e.offsetX, e.offsetY);
      if (cell) { attentionState.cursor = cell; paint(); }
    });
    canvas.addEventListener('keydown', (e) => {
      const st = attentionState;
      const c = st.cursor || { head: 0, key: a.keys - 1 };
      const moves = { ArrowRight: [0, 1], ArrowLeft: [0, -1], ArrowDown: [1, 0], ArrowUp: [-1, 0] };
      if (e.key === 'Home' || e.key === 'End') {
        e.preventDefault();
        st.cursor = { head: c.head, key: e.key === 'Home' ? 0 : a.keys - 1 };
        paint();
        return;
      }
      const m = moves[e.key];
      if (!m) return;
      e.preventDefault();
      st.cursor = { head: clamp(c.head + m[0], 0, a.heads - 1), key: clamp(c.key + m[1], 0, a.keys - 1) };
      paint();
    });
    canvas.addEventListener('focus', () => {
      if (!attentionState.cursor) { attentionState.cursor = { head: 0, key: a.keys - 1 }; paint(); }
    });
  }

  function geometry() {
    const { result, canvas } = attentionState;
    const a = result.attention;
    const available = Math.max(200, (canvas.parentElement.clientWidth || 400) - 4);
    const label = 30;
    const cellW = clamp(Math.floor((available - label) / a.keys), 2, 28);
    const cellH = clamp(Math.floor(220 / a.heads), 5, 24);
    return { label, cellW, cellH, width: label + cellW * a.keys, height: cellH * a.heads };
  }

  function cellAt(x, y) {
    const a = attentionState.result.attention;
    const g = geometry();
    const key = Math.floor((x - g.label) / g.cellW);
    const head = Math.floor(y / g.cellH);
    if (key < 0 || key >= a.keys || head < 0 || head >= a.heads) return null;
    return { head, key };
  }

  function drawAttention(result) {
    if (!attentionState || attentionState.result !== result) return;
    const { select, strip, topList } = attentionState;
    const a = result.attention;
    const layer = Number(select.value);
    const weights = a.weights[layer] || [];
    // The head-average strip over the context tokens.
    const avg = new Array(a.keys).fill(0);
    for (const row of weights) for (let j = 0; j < a.keys; j++) avg[j] += (row[j] > 0 ? row[j] : 0) / a.heads;
    const maxAvg = Math.max(1e-12, ...avg);
    clear(strip);
    const context = result.context || [];
    for (let j = 0; j < a.keys; j++) {
      const t = context[j] || { text: '?' };
      const span = h('span', {
        class: 'attn-tok', title: `#${j} ${describeToken(t.text)}: ${avg[j].toFixed(4)}`,
        text: visibleToken(t.text),
      });
      span.style.setProperty('--w', String(Math.sqrt(avg[j] / maxAvg)));
      strip.appendChild(span);
      if (String(t.text).includes('\n')) strip.appendChild(h('br'));
    }
    const order = avg.map((w, j) => [w, j]).sort((x, y) => y[0] - x[0]).slice(0, 5);
    topList.textContent = `Most attended in layer ${layer}: ${order.map(([w, j]) => `${describeToken((context[j] || {}).text)} (#${j}) ${w.toFixed(3)}`).join(', ')}`;
    paint();
  }

  function paint() {
    const { result, select, canvas, readout, cursor } = attentionState;
    const a = result.attention;
    const layer = Number(select.value);
    const weights = a.weights[layer] || [];
    const g = geometry();
    const ratio = window.devicePixelRatio || 1;
    canvas.width = Math.ceil(g.width * ratio);
    canvas.height = Math.ceil(g.height * ratio);
    canvas.style.width = `${g.width}px`;
    canvas.style.height = `${g.height}px`;
    const ctx = canvas.getContext('2d');
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    const css = getComputedStyle(root);
    const heat = (css.getPropertyValue('--heat-rgb') || '217, 98, 43').trim();
    const fg = (css.getPropertyValue('--fg') || '#222').trim();
    const bg = (css.getPropertyValue('--panel-bg') || '#fff').trim();
    ctx.fillStyle = bg;
    ctx.fillRect(0, 0, g.width, g.height);
    let max = 1e-12;
    for (const row of weights) for (const w of row) if (w > max) max = w;
    for (let hd = 0; hd < a.heads; hd++) {
      const row = weights[hd] || [];
      for (let j = 0; j < a.keys; j++) {
        const w = row[j] > 0 ? row[j] : 0;
        ctx.fillStyle = `rgba(${heat}, ${Math.sqrt(w / max).toFixed(3)})`;
        ctx.fillRect(g.label + j * g.cellW, hd * g.cellH, g.cellW, g.cellH);
      }
      ctx.fillStyle = fg;
      ctx.font = `${Math.min(11, g.cellH - 1)}px system-ui, sans-serif`;
      ctx.textBaseline = 'middle';
      if (g.cellH >= 8 || hd % 4 === 0) ctx.fillText(`h${hd}`, 2, hd * g.cellH + g.cellH / 2);
    }
    if (cursor) {
      ctx.strokeStyle = fg;
      ctx.lineWidth = 2;
      ctx.strokeRect(g.label + cursor.key * g.cellW + 1, cursor.head * g.cellH + 1, Math.max(1, g.cellW - 2), Math.max(1, g.cellH - 2));
      const t = (result.context || [])[cursor.key] || { text: '?' };
      const w = (weights[cursor.head] || [])[cursor.key];
      readout.textContent = `Layer ${layer}, head ${cursor.head} → token #${cursor.key} ${describeToken(t.text)}: weight ${typeof w === 'number' ? w.toFixed(4) : '–'}`;
    }
  }

  // ---- experts (mixture-of-experts models)

  function renderExperts(result) {
    const panel = panels.experts;
    clear(panel);
    const e = result.experts;
    panel.appendChild(h('p', { class: 'insp-note', text: `The experts each layer's router chose for this step (of ${e.experts}), with their weights.` }));
    const table = h('table', { class: 'experts', 'aria-label': 'Experts chosen per layer' },
      h('thead', null, h('tr', null, h('th', { scope: 'col', text: 'layer' }), h('th', { scope: 'col', text: 'experts (weight)' }))));
    const body = h('tbody');
    for (const l of e.layers || []) {
      const cell = h('td');
      for (const c of l.chosen || []) {
        const chip = h('span', { class: 'expert', title: `expert ${c.expert}: weight ${fmt(c.weight)}` },
          h('span', { class: 'ct', text: `E${c.expert}` }), h('span', { class: 'cp', text: percent(c.weight) }));
        shade(chip, c.weight);
        cell.appendChild(chip);
      }
      body.appendChild(h('tr', null, h('th', { scope: 'row', text: String(l.layer) }), cell));
    }
    table.appendChild(body);
    panel.appendChild(h('div', { class: 'table-scroll' }, table));
  }

  // Resize: the attention map follows the panel's width.
  let resizeTimer = null;
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      if (isOpen() && selected === 'attention' && current && current.result) drawAttention(current.result);
    }, 100);
  });

  return { open, close, isOpen, forget };
}

function shade(el, p) {
  el.style.setProperty('--p', String(clamp(Number(p) || 0, 0, 1)));
}

function clamp(x, lo, hi) {
  return Math.min(hi, Math.max(lo, x));
}

function fmt(x) {
  if (x === null || x === undefined || Number.isNaN(x)) return '–';
  if (x === -Infinity) return '−∞';
  return Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(2);
}
