// The gateway playground: plain ES module, no dependencies, no build step.
// The API key lives in the `state` object only (spec 5.5): never localStorage, sessionStorage, cookies or the URL.

const $ = (sel) => document.querySelector(sel);
const POLL_MS = 1000;
const POLL_MAX_MS = 30 * 60 * 1000; // the gateway's own task timeout: the poll loop is bounded by it
const MEDIA_FIELD = /(image|img|frame|mask|photo|picture)/i;

const state = { key: '', models: [], model: undefined, pollToken: 0 };

/** One call to the gateway with the key from memory; answers { ok, status, body }. */
async function api(path, { method = 'GET', body, form } = {}) {
  const headers = { authorization: `Bearer ${state.key}`, accept: 'application/json' };
  let payload;
  if (form) payload = form;
  else if (body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  const res = await fetch(path, { method, headers, body: payload, credentials: 'omit', cache: 'no-store' });
  let json;
  try {
    json = await res.json();
  } catch {
    json = undefined;
  }
  return { ok: res.ok, status: res.status, body: json };
}

const errorMessage = (r) => r.body?.error?.message ?? `HTTP ${r.status}`;
/** The field an error names: `param` when the server sends one, else the back-quoted name its message starts with. */
const errorParam = (r) => r.body?.error?.param ?? /^`([^`\s]+)`/.exec(r.body?.error?.message ?? '')?.[1];

function show(el, text) {
  el.textContent = text ?? '';
  el.hidden = !text;
}

// ---------------------------------------------------------------- models

async function loadModels() {
  state.key = $('#api-key').value.trim();
  show($('#auth-error'), '');
  if (!state.key) return show($('#auth-error'), 'Paste an API key first.');
  const r = await api('/v1/models?expand=parameters');
  if (!r.ok) return show($('#auth-error'), errorMessage(r));
  state.models = (r.body?.data ?? []).filter((m) => m.parameters?.input_schema);
  const select = $('#model');
  select.replaceChildren();
  for (const category of ['image', 'video']) {
    const group = document.createElement('optgroup');
    group.label = category;
    for (const m of state.models.filter((x) => x.category === category)) {
      const o = document.createElement('option');
      o.value = m.id;
      o.textContent = m.parameters.actions ? `${m.id} (art suite)` : m.id;
      group.append(o);
    }
    if (group.children.length) select.append(group);
  }
  $('#model-card').hidden = false;
  selectModel(select.value);
}

function selectModel(id) {
  state.model = state.models.find((m) => m.id === id);
  if (!state.model) return;
  const p = state.model.parameters;
  $('#model-info').textContent = `${p.method} ${p.endpoint} · schema ${p.schema_version}`;
  renderForm($('#fields'), p.input_schema);
  show($('#form-error'), '');
}

// ---------------------------------------------------------------- form from JSON Schema

/** The TypeScript-like kind of a property schema; `false` = refused by this model (not shown). */
function kindOf(s) {
  if (s === false || s === true || !s) return 'skip';
  if (Array.isArray(s.enum)) return 'enum';
  if (Array.isArray(s.anyOf) && s.anyOf.some((a) => Array.isArray(a.enum))) return 'suggest';
  if ((s.type === 'integer' || s.type === 'number') && s.minimum !== undefined && s.maximum !== undefined && s.maximum > s.minimum) return 'range';
  if (s.type === 'integer' || s.type === 'number') return 'number';
  if (s.type === 'boolean') return 'boolean';
  if (s.type === 'array') return s.items?.type === 'string' || !s.items ? 'list' : 'json';
  if (s.type === 'object') return 'json';
  return 'string';
}

const fieldControls = new Map(); // name → { kind, schema, read(): value | undefined }

function renderForm(container, schema) {
  container.replaceChildren();
  fieldControls.clear();
  const required = new Set(schema.required ?? []);
  for (const [name, prop] of Object.entries(schema.properties ?? {})) {
    if (name === 'model') continue; // fixed by the model picker
    const kind = kindOf(prop);
    if (kind === 'skip') continue;
    container.append(renderField(name, prop, kind, required.has(name)));
  }
}

function renderField(name, s, kind, required) {
  const wrap = document.createElement('div');
  wrap.className = 'field';
  wrap.dataset.field = name;
  const id = `f-${name}`;
  const label = document.createElement('label');
  label.htmlFor = id;
  label.textContent = name;
  if (required) label.classList.add('required');
  const control = document.createElement('div');
  control.className = 'control';
  let dirty = required;
  const touch = () => {
    dirty = true;
    clearFieldError(name);
  };
  let read;

  if (kind === 'enum') {
    const select = document.createElement('select');
    select.id = id;
    select.name = name;
    if (!required) select.append(new Option(s.default !== undefined ? `(default: ${s.default})` : '(not set)', ''));
    for (const v of s.enum) select.append(new Option(String(v), JSON.stringify(v)));
    select.addEventListener('change', touch);
    control.append(select);
    read = () => (select.value === '' ? undefined : JSON.parse(select.value));
  } else if (kind === 'range') {
    const slider = document.createElement('input');
    slider.type = 'range';
    slider.min = String(s.minimum);
    slider.max = String(s.maximum);
    slider.step = s.type === 'integer' ? '1' : String((s.maximum - s.minimum) / 100);
    slider.value = String(s.default ?? s.minimum);
    slider.setAttribute('aria-label', `${name} slider`);
    const box = document.createElement('input');
    box.type = 'number';
    box.id = id;
    box.name = name;
    box.value = slider.value;
    // the box is not clamped: the server's answer is authoritative (spec 4.1 rule 4), and its error shows here
    slider.addEventListener('input', () => {
      box.value = slider.value;
      touch();
    });
    box.addEventListener('input', () => {
      slider.value = box.value;
      touch();
    });
    control.append(slider, box);
    read = () => (dirty && box.value !== '' ? Number(box.value) : undefined);
  } else if (kind === 'number') {
    const box = document.createElement('input');
    box.type = 'number';
    box.id = id;
    box.name = name;
    if (s.default !== undefined) box.placeholder = `default ${s.default}`;
    box.addEventListener('input', touch);
    control.append(box);
    read = () => (box.value === '' ? undefined : Number(box.value));
  } else if (kind === 'boolean') {
    const box = document.createElement('input');
    box.type = 'checkbox';
    box.id = id;
    box.name = name;
    box.checked = s.default === true;
    box.addEventListener('change', touch);
    control.append(box);
    read = () => (dirty ? box.checked : undefined);
  } else if (kind === 'list' || kind === 'json') {
    const area = document.createElement('textarea');
    area.id = id;
    area.name = name;
    area.placeholder = kind === 'list' ? 'one per line' : 'JSON';
    area.addEventListener('input', touch);
    control.append(area);
    if (kind === 'list' && MEDIA_FIELD.test(name))
      control.append(
        uploadButton(name, (url) => {
          area.value = area.value ? `${area.value.trimEnd()}\n${url}` : url;
          touch();
        }),
      );
    read = () => {
      const text = area.value.trim();
      if (!text) return undefined;
      if (kind === 'list')
        return text
          .split('\n')
          .map((l) => l.trim())
          .filter(Boolean);
      return JSON.parse(text);
    };
  } else {
    const long = name === 'prompt' || (s.maxLength ?? 0) > 200;
    const input = document.createElement(long ? 'textarea' : 'input');
    if (!long) input.type = 'text';
    input.id = id;
    input.name = name;
    if (s.default !== undefined) input.placeholder = `default ${s.default}`;
    if (kind === 'suggest') {
      const list = document.createElement('datalist');
      list.id = `${id}-options`;
      for (const alt of s.anyOf) for (const v of alt.enum ?? []) list.append(new Option(String(v)));
      input.setAttribute('list', list.id);
      control.append(list);
    }
    input.addEventListener('input', touch);
    control.prepend(input);
    if (MEDIA_FIELD.test(name))
      control.append(
        uploadButton(name, (url) => {
          input.value = url;
          touch();
        }),
      );
    read = () => (input.value === '' ? undefined : input.value);
  }

  const desc = document.createElement('p');
  desc.className = 'desc';
  desc.textContent = [s.description, rangeText(s)].filter(Boolean).join(' · ');
  const err = document.createElement('div');
  err.className = 'field-error';
  err.dataset.errorFor = name;
  err.setAttribute('role', 'alert');
  wrap.append(label, control, desc, err);
  fieldControls.set(name, { kind, schema: s, read });
  return wrap;
}

function rangeText(s) {
  if (s.minimum !== undefined && s.maximum !== undefined) return `${s.minimum}..${s.maximum}`;
  if (s.maxItems !== undefined) return `at most ${s.maxItems}`;
  return '';
}

/** A file picker that uploads through POST /v1/uploads/images and hands the link back. */
function uploadButton(name, onUrl) {
  const input = document.createElement('input');
  input.type = 'file';
  input.accept = 'image/png,image/jpeg,image/webp,image/bmp';
  input.setAttribute('aria-label', `upload ${name}`);
  input.dataset.uploadFor = name;
  input.addEventListener('change', async () => {
    const file = input.files?.[0];
    if (!file) return;
    const form = new FormData();
    form.append('file', file, file.name);
    const r = await api('/v1/uploads/images', { method: 'POST', form });
    input.value = '';
    if (!r.ok) return showFieldError(name, errorMessage(r));
    onUrl(r.body.data.url);
  });
  return input;
}

function showFieldError(name, message) {
  const top = String(name).split(/[.[]/)[0];
  const wrap = document.querySelector(`.field[data-field="${CSS.escape(top)}"]`);
  if (!wrap) return false;
  wrap.classList.add('invalid');
  wrap.querySelector('.field-error').textContent = message;
  wrap.scrollIntoView({ block: 'center' });
  return true;
}

function clearFieldError(name) {
  const wrap = document.querySelector(`.field[data-field="${CSS.escape(name)}"]`);
  wrap?.classList.remove('invalid');
  const e = wrap?.querySelector('.field-error');
  if (e) e.textContent = '';
}

function clearErrors() {
  for (const name of fieldControls.keys()) clearFieldError(name);
  show($('#form-error'), '');
}

// ---------------------------------------------------------------- submit and watch

function buildBody() {
  const body = {};
  // the art suite takes no `model` (it is implied by the path)
  if (!state.model.parameters.actions) body.model = state.model.id;
  for (const [name, f] of fieldControls) {
    let v;
    try {
      v = f.read();
    } catch {
      throw Object.assign(new Error(`\`${name}\` is not valid JSON`), { field: name });
    }
    if (v !== undefined) body[name] = v;
  }
  return body;
}

const taskIdOf = (ack) => {
  const d = ack?.data;
  const first = Array.isArray(d) ? d[0] : d;
  return first?.task_id ?? first?.id;
};

async function submit(event) {
  event.preventDefault();
  clearErrors();
  let body;
  try {
    body = buildBody();
  } catch (e) {
    if (!showFieldError(e.field, e.message)) show($('#form-error'), e.message);
    return;
  }
  await send(state.model.parameters.endpoint, body);
}

async function send(path, body) {
  const button = $('#submit');
  button.disabled = true;
  try {
    const r = await api(path, { method: 'POST', body });
    if (!r.ok) {
      const param = errorParam(r);
      if (!param || !showFieldError(param, errorMessage(r))) show($('#form-error'), errorMessage(r));
      return;
    }
    const id = taskIdOf(r.body);
    if (!id) return show($('#form-error'), 'the answer names no task');
    await watch(id, Boolean(state.model.parameters.actions));
  } finally {
    button.disabled = false;
  }
}

async function watch(id, artgen) {
  const token = ++state.pollToken; // a newer submission stops this loop
  $('#task-card').hidden = false;
  $('#task-id').textContent = id;
  $('#progress').value = 0;
  $('#task-status').textContent = 'submitted';
  document.body.dataset.taskStatus = 'submitted';
  $('#result').replaceChildren();
  $('#buttons').replaceChildren();
  show($('#task-error'), '');
  const started = Date.now();
  while (token === state.pollToken && Date.now() - started < POLL_MAX_MS) {
    const r = await api(`/v1/tasks/${encodeURIComponent(id)}`);
    if (!r.ok) {
      show($('#task-error'), errorMessage(r));
      if (r.status !== 429 && r.status < 500) return;
    } else {
      const t = r.body.data;
      $('#progress').value = t.progress ?? 0;
      $('#task-status').textContent = `${t.status} · ${t.progress ?? 0}%${t.estimated_time ? ` · about ${t.estimated_time} s` : ''}`;
      document.body.dataset.taskStatus = t.status;
      if (t.status === 'completed') return showResult(t, artgen);
      if (t.status === 'failed') return show($('#task-error'), `${t.error?.message ?? 'failed'} (cost ${t.cost})`);
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  if (token === state.pollToken) show($('#task-error'), 'stopped watching: the task ran past the gateway timeout');
}

async function showResult(task, artgen) {
  const out = $('#result');
  const images = task.result?.images ?? [];
  const gallery = document.createElement('div');
  gallery.className = images.length > 1 ? 'gallery' : '';
  for (const [i, img] of images.entries()) {
    const el = document.createElement('img');
    el.src = img.url;
    el.alt = `result ${i + 1} of ${task.id}`;
    gallery.append(el);
  }
  out.append(gallery);
  for (const v of task.result?.videos ?? []) {
    const el = document.createElement('video');
    el.src = Array.isArray(v.url) ? v.url[0] : v.url;
    el.controls = true;
    el.muted = true;
    el.autoplay = true;
    el.loop = true;
    out.append(el);
  }
  if (task.result?.text) {
    const p = document.createElement('pre');
    p.textContent = task.result.text;
    out.append(p);
  }
  const cost = document.createElement('p');
  cost.className = 'hint';
  cost.textContent = `cost ${task.cost} · ${task.actual_time ?? '?'} s`;
  out.append(cost);
  if (artgen) await showButtons(task.id);
}

/** The art suite's follow-ups: each button of the finished task posts to /action with its customId. */
async function showButtons(id) {
  const r = await api(`/v1/artgen/${encodeURIComponent(id)}`);
  if (!r.ok) return;
  const box = $('#buttons');
  for (const b of r.body.buttons ?? []) {
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'secondary';
    button.textContent = b.label;
    button.dataset.customId = b.customId;
    button.addEventListener('click', () => {
      void send('/v1/artgen/generations/action', { task_id: id, customId: b.customId });
    });
    box.append(button);
  }
}

// ---------------------------------------------------------------- wiring

$('#connect').addEventListener('click', () => void loadModels());
$('#api-key').addEventListener('keydown', (e) => {
  if (e.key === 'Enter') void loadModels();
});
$('#model').addEventListener('change', (e) => selectModel(e.target.value));
$('#request-form').addEventListener('submit', (e) => void submit(e));
document.body.dataset.ready = 'true';
