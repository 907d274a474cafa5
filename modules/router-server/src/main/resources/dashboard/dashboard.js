// kvrouter dashboard: polls the management server's JSON routes once a second and renders every model's admission
// state, its recent decisions and its regions' pools. Plain browser JavaScript, no build step.
'use strict';

(() => {
  const POLL_MS = 1000;
  const FETCH_TIMEOUT_MS = 5000;
  const DECISIONS_LIMIT = 10;
  const NOT_AVAILABLE = 'not available on this node';

  const byTestId = (id) => document.querySelector(`[data-testid="${id}"]`);
  const select = byTestId('model-select');
  const main = byTestId('models');
  const noModels = byTestId('no-models');
  const lastRefresh = byTestId('last-refresh');
  const banner = byTestId('error-banner');
  /** model name → its section element, kept across refreshes so unchanged sections are not touched. */
  const sections = new Map();
  let refreshes = 0;

  // JsonFormat prints 64-bit integers as strings and leaves out nothing (default values included).
  const num = (value) => {
    const n = Number(value);
    return Number.isFinite(n) ? n : 0;
  };
  const esc = (value) => String(value ?? '').replace(/[&<>"']/g,
      (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
  const fmt = (value) => {
    const n = num(value);
    return String(Number(n.toFixed(3)));
  };
  const age = (ms) => (num(ms) < 1000 ? `${num(ms)} ms` : `${(num(ms) / 1000).toFixed(1)} s`);
  const time = (unixMs) => {
    const d = new Date(num(unixMs));
    return d.toLocaleTimeString([], { hour12: false }) + '.' + String(d.getMilliseconds()).padStart(3, '0');
  };

  /** Thrown for a failed fetch; `status` is 0 when no HTTP answer came. */
  class FetchError extends Error {
    constructor(path, status, detail) {
      super(`GET ${path}: ${status ? 'HTTP ' + status : 'no answer'}${detail ? ' (' + detail + ')' : ''}`);
      this.status = status;
    }
  }

  async function getJson(path) {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), FETCH_TIMEOUT_MS);
    try {
      const response = await fetch(path, { signal: abort.signal, cache: 'no-store' });
      if (!response.ok) {
        const body = (await response.text()).slice(0, 200);
        throw new FetchError(path, response.status, body);
      }
      return await response.json();
    } catch (e) {
      throw e instanceof FetchError ? e : new FetchError(path, 0, e.name === 'AbortError' ? 'timed out' : e.message);
    } finally {
      clearTimeout(timer);
    }
  }

  /** A route that may not exist on this node (it answers 404 there): null then, so its panel says so. */
  async function getOptional(path) {
    try {
      return await getJson(path);
    } catch (e) {
      if (e instanceof FetchError && e.status === 404) {
        return null;
      }
      throw e;
    }
  }

  async function loadModel(model, errors) {
    const q = encodeURIComponent(model);
    const settled = await Promise.allSettled([
      getJson(`/models/state?model=${q}`),
      getOptional(`/models/explain?model=${q}&limit=${DECISIONS_LIMIT}`),
    ]);
    const [state, explain] = settled.map((s) => (s.status === 'fulfilled' ? s.value : undefined));
    settled.filter((s) => s.status === 'rejected').forEach((s) => errors.push(s.reason.message));
    let pools;
    if (state && Array.isArray(state.pools)) {
      pools = state.pools;
    } else {
      try {
        const answer = await getOptional(`/models/pools?model=${q}`);
        pools = answer === null ? null : Array.isArray(answer) ? answer : answer.pools || [];
      } catch (e) {
        errors.push(e.message);
      }
    }
    return { model, state, decisions: explain === null ? null : explain && (explain.decisions || []), pools };
  }

  // ---- rendering: each section's HTML is rebuilt as a string and written only when it changed (no flicker)

  function bar(testId, label, value, capacity) {
    const ratio = capacity > 0 ? Math.min(1, value / capacity) : 0;
    const level = ratio >= 1 ? ' full' : ratio >= 0.85 ? ' hot' : '';
    return `<div class="bar${level}" data-testid="${testId}" data-value="${value}" data-capacity="${capacity}"
        title="${esc(label)}: ${value} of ${capacity}">
      <div class="fill" style="width:${(ratio * 100).toFixed(1)}%"></div>
      <div class="text">${esc(label)} ${value} / ${capacity}</div></div>`;
  }

  function stat(testId, label, value) {
    return `<div class="stat"><span class="label">${esc(label)}</span>
      <span class="value" data-testid="${testId}">${esc(value)}</span></div>`;
  }

  function rankRow(worker, rank) {
    const config = worker.config || {};
    const load = rank.load || {};
    const available = worker.available !== false;
    const reported = rank.reported;
    const marks = [
      rank.overloaded ? '<span class="badge bad" data-testid="rank-overloaded">OVERLOADED</span>' : '',
      available ? '' : '<span class="badge warn" data-testid="rank-unavailable">UNAVAILABLE</span>',
    ].join('');
    return `<div class="rank${rank.overloaded ? ' overloaded' : ''}" data-testid="rank"
        data-worker="${esc(config.workerId)}" data-rank="${num(rank.dpRank)}"
        data-overloaded="${!!rank.overloaded}" data-available="${available}">
      <span class="rank-name">rank ${num(rank.dpRank)}</span>
      <span class="figure">in flight <b data-testid="rank-in-flight">${num(load.inFlight)}</b></span>
      <span class="figure">bookings <b data-testid="rank-live-bookings">${num(rank.liveBookings)}</b></span>
      ${bar('rank-prefill', 'prefill tokens', num(load.prefillTokens), num(config.maxNumBatchedTokens))}
      ${bar('rank-decode', 'decode blocks', num(load.decodeBlocks), num(config.totalKvBlocks))}
      <span class="marks">${marks}</span>
      ${reported ? `<span class="reported" data-testid="rank-reported">engine reported: ${num(reported.activeDecodeBlocks)}
        decode blocks, ${num(reported.activePrefillTokens)} prefill tokens, ${num(reported.waitingRequests)} waiting</span>` : ''}
    </div>`;
  }

  /** This node's front's circuit breaker of a worker, as a badge (none while closed or never failed). */
  function breakerBadge(breaker) {
    if (!breaker || breaker.state === 'CLOSED') {
      return '';
    }
    const open = breaker.state === 'OPEN';
    const title = `${num(breaker.failures)} failures, opened ${num(breaker.trips)} times`
      + (open ? `, excluded until ${time(breaker.openUntilUnixMs)}` : ', next request tries it');
    return `<span class="badge ${open ? 'bad' : 'warn'}" data-testid="worker-breaker"
        data-state="${esc(breaker.state)}" title="${esc(title)}">BREAKER ${open ? 'OPEN' : 'HALF-OPEN'}</span>`;
  }

  function workerBlock(worker, breakers) {
    const config = worker.config || {};
    const available = worker.available !== false;
    const breaker = (breakers || []).find((b) => b.workerId === config.workerId);
    return `<div class="worker${available ? '' : ' unavailable'}" data-testid="worker"
        data-worker="${esc(config.workerId)}" data-available="${available}">
      <div class="worker-head"><span class="id">${esc(config.workerId)}</span>
        <span class="meta">${esc(config.endpoint)} · region ${esc(config.region)} · ranks ${num(config.dpStart)}..${
          num(config.dpStart) + num(config.dpSize) - 1}</span>
        ${available ? '' : '<span class="badge warn" data-testid="worker-unavailable">UNAVAILABLE</span>'}
        ${breakerBadge(breaker)}</div>
      ${(worker.ranks || []).map((rank) => rankRow(worker, rank)).join('')}
    </div>`;
  }

  /**
   * A panel's table of `items`, one row each, or its note: null is a route this node does not serve (404),
   * undefined one that failed (the banner says how).
   */
  function panel(testId, items, none, headers, row) {
    if (items === null) {
      return `<p class="unavailable-note" data-testid="${testId}-unavailable">${NOT_AVAILABLE}</p>`;
    }
    if (items === undefined) {
      return '<p class="unavailable-note">could not be read</p>';
    }
    if (items.length === 0) {
      return `<p class="unavailable-note" data-testid="${testId}-empty">${none}</p>`;
    }
    return `<table><thead><tr>${headers.map((h) => `<th>${h}</th>`).join('')}</tr></thead>
      <tbody>${items.map(row).join('')}</tbody></table>`;
  }

  const decisionsPanel = (decisions) => panel('decisions', decisions, 'no decision yet',
      ['time', 'kind', 'request', 'picked', 'cost', 'margin', 'candidates', 'filtered', 'queued'], (d) => {
        const picked = d.picked || {};
        const queued = d.queue ? `${age(Math.round(num(d.queue.waitedMicros) / 1000))} ${esc(d.queue.reason)} → ${esc(d.queue.dispatchedBy)}`
          : '—';
        return `<tr data-testid="decision-row" data-kind="${esc(d.kind)}" data-request-id="${esc(d.requestId)}"
            data-worker="${esc(picked.workerId)}" data-rank="${num(picked.dpRank)}">
          <td>${time(d.unixMs)}</td><td>${esc(d.kind)}</td><td>${esc(d.requestId)}</td>
          <td>${esc(picked.workerId)} / ${num(picked.dpRank)}</td><td>${fmt(d.pickedCost)}</td>
          <td>${d.hasRunnerUp ? fmt(d.margin) : '—'}</td><td>${(d.candidates || []).length}</td>
          <td>${(d.filtered || []).length}</td><td data-testid="decision-queued">${queued}</td></tr>`;
      });

  const poolsPanel = (pools) => panel('pools', pools, 'no pool known',
      ['region', 'workers', 'ranks', 'in flight', 'pending', 'load', 'age', 'routers'],
      (p) => `<tr class="${p.stale ? 'stale' : ''}" data-testid="pool-row" data-region="${esc(p.region)}"
          data-stale="${!!p.stale}">
        <td>${esc(p.region)}${p.stale ? ' <span class="badge bad" data-testid="pool-stale">STALE</span>' : ''}</td>
        <td>${num(p.workers)}</td><td>${num(p.ranks)}</td><td>${num(p.inFlight)}</td><td>${num(p.pending)}</td>
        <td>${bar('pool-load', 'load', num(p.load), num(p.capacity))}</td><td>${age(p.ageMs)}</td>
        <td>${esc((p.routerEndpoints || []).join(', '))}</td></tr>`);

  /** The model's engines (router-engines' connectors), one row per rank: the state's `engines`, when it has them. */
  const enginesPanel = (engines) => panel('engines', engines, 'no engine connector',
      ['worker', 'node', 'phase', 'scrape', 'rank', 'connected', 'last seq', 'gaps', 'replays', 'clears', 'lag'],
      (e) => (e.ranks || []).map((r, i) => `<tr class="${e.stale ? 'stale' : ''}" data-testid="engine-row"
          data-worker="${esc(e.workerId)}" data-rank="${num(r.rank)}" data-connected="${!!r.connected}"
          data-available="${!!e.available}">
        <td>${i === 0 ? esc(e.workerId) : ''}${i === 0 && !e.available
          ? ' <span class="badge bad" data-testid="engine-unavailable">UNAVAILABLE</span>' : ''}${i === 0
          && e.stale ? ' <span class="badge bad">STALE</span>' : ''}</td>
        <td>${i === 0 ? esc(e.node) : ''}</td><td>${i === 0 ? esc(e.phase) : ''}</td>
        <td>${i === 0 ? (e.lastScrapeMillis ? time(e.lastScrapeMillis) : 'never')
          + (e.lastScrapeError ? ` <span class="badge bad" title="${esc(e.lastScrapeError)}">ERROR</span>` : '')
          : ''}</td>
        <td>${num(r.rank)}</td><td>${e.kvEvents ? (r.connected ? 'yes' : 'no') : '—'}</td>
        <td>${num(r.lastSeq)}</td><td>${num(r.gaps)}</td><td>${num(r.replays)}</td><td>${num(r.clears)}</td>
        <td>${num(r.lagMillis) >= 0 ? `${num(r.lagMillis)} ms` : '—'}</td></tr>`).join(''));

  const limit = (current, max) => (num(max) < 0 ? esc(String(num(current))) : `${num(current)} / ${num(max)}`);

  const rejections = (byReason) => Object.entries(byReason || {})
      .map(([reason, count]) => `${esc(reason)} ${num(count)}`).join(', ') || '—';

  /** The admission queue's classes (depth, limits, counters) and its longest-waiting Books. */
  function queuePanel(queue) {
    if (!queue || !queue.enabled && num(queue.pending) === 0) {
      return '<p class="unavailable-note" data-testid="queue-off">queueing off (no queue threshold set)</p>';
    }
    const classes = panel('queue-classes', queue.classes || [], 'no class',
        ['class', 'order', 'queueing', 'depth', 'requests', 'prompt tokens', 'cached tokens', 'oldest wait',
          'quantum / deficit', 'dispatched', 'rejections'],
        (c) => `<tr data-testid="queue-class-row" data-class="${esc(c.name)}" data-depth="${num(c.depth)}">
          <td>${esc(c.name)}${c.family ? ` <span class="meta">family ${esc(c.family)}</span>` : ''}${c.bucket
            ? ` <span class="meta">bucket ${esc(c.bucket)}</span>` : ''}</td>
          <td>${esc(c.queuePolicy)}</td><td>${c.queueing ? 'on' : 'off'}</td><td>${num(c.depth)}</td>
          <td>${limit(c.depth, c.requestsLimit)}</td><td>${limit(c.rawIslTokens, c.rawIslTokensLimit)}</td>
          <td>${limit(c.cachedTokens, c.cachedTokensLimit)}</td><td>${age(c.oldestWaitMs)}</td>
          <td>${num(c.quantum)} / ${num(c.deficit)}</td><td>${num(c.dispatched)}</td>
          <td data-testid="queue-class-rejections">${rejections(c.rejections)}</td></tr>`);
    const waiting = panel('queue-waiting', queue.waiting || [], 'no Book waiting',
        ['request', 'class', 'tier', 'priority', 'prompt (uncached)', 'why', 'waited', 'deadline in'],
        (w) => `<tr data-testid="queue-waiting-row" data-request-id="${esc(w.requestId)}" data-class="${esc(w.policyClass)}">
          <td>${esc(w.requestId)}</td><td>${esc(w.policyClass)}</td>
          <td>${num(w.strictPriority)}${w.aged ? ' <span class="badge warn">AGED</span>' : ''}</td>
          <td>${num(w.priority)}</td><td>${num(w.rawIslTokens)} (${num(w.uncachedTokens)})</td>
          <td>${esc(w.reason)}</td><td>${age(w.waitedMs)}</td>
          <td>${num(w.deadlineInMs) < 0 ? '—' : age(w.deadlineInMs)}</td></tr>`);
    return `<p class="meta">${num(queue.pending)} waiting of at most ${num(queue.maxPending)} · aging ${num(queue.agingMs)
      ? age(queue.agingMs) : 'off (strict tiers can starve lower ones)'}</p>${classes}<h4>Waiting</h4>${waiting}`;
  }

  function modelHtml({ model, state, decisions, pools }) {
    if (!state) {
      return `<div class="model-head"><h2 data-testid="model-name">${esc(model)}</h2>
        <span class="unavailable-note">state could not be read</span></div>`;
    }
    const workers = state.workers || [];
    const ranks = workers.flatMap((w) => w.ranks || []);
    const inFlight = ranks.reduce((sum, r) => sum + num((r.load || {}).inFlight), 0);
    const staleness = state.staleness || {};
    const lag = num(staleness.replicationSeqLag);
    const copy = num(staleness.viewAgeMs) > 0 || lag > 0 || staleness.awaitingSnapshot
      ? ` · this node's copy: ${lag} updates behind, ${num(staleness.viewAgeMs)} ms old` : '';
    return `<div class="model-head"><h2 data-testid="model-name">${esc(state.model || model)}</h2>
        <span class="meta">policy ${esc(state.policy)} · view ${num(state.viewVersion)} · block size
          ${num(state.blockSize)} · epoch ${num(state.epoch)} · region ${esc(state.region)} · actor on
          ${esc(state.hostNode)}${copy}</span>
        ${state.recovering ? '<span class="badge warn" data-testid="model-recovering">RECOVERING</span>' : ''}
        ${staleness.awaitingSnapshot ? '<span class="badge warn">AWAITING SNAPSHOT</span>' : ''}</div>
      <div class="stats">
        ${stat('queue-depth', 'queue depth', num(state.pending))}
        ${stat('live-bookings', 'live bookings', (state.bookings || []).length)}
        ${stat('total-in-flight', 'in flight', inFlight)}
        ${stat('worker-count', 'workers', `${workers.filter((w) => w.available !== false).length} / ${workers.length} available`)}
        ${stat('expired-bookings', 'expired bookings', num(state.expiredBookings))}
      </div>
      <h3>Ranks</h3>
      ${workers.map((w) => workerBlock(w, state.breakers)).join('') || '<p class="unavailable-note">no worker</p>'}
      <div data-testid="queue"><h3>Admission queue</h3>${queuePanel(state.queue)}</div>
      <div class="panels">
        <div data-testid="decisions"><h3>Recent decisions</h3>${decisionsPanel(decisions)}</div>
        <div data-testid="pools"><h3>Pools per region</h3>${poolsPanel(pools)}</div>
      </div>
      ${state.engines && state.engines.length
        ? `<div data-testid="engines"><h3>Engines</h3>${enginesPanel(state.engines)}</div>` : ''}`;
  }

  function renderModels(loaded) {
    const shown = new Set(loaded.map((m) => m.model));
    for (const [model, section] of sections) {
      if (!shown.has(model)) {
        section.remove();
        sections.delete(model);
      }
    }
    loaded.forEach((data) => {
      let section = sections.get(data.model);
      if (!section) {
        section = document.createElement('section');
        section.className = 'model';
        section.dataset.testid = 'model-section';
        section.dataset.model = data.model;
        sections.set(data.model, section);
      }
      const html = modelHtml(data);
      if (section.dataset.html !== html) {
        section.innerHTML = html;
        section.dataset.html = html;
      }
      main.appendChild(section); // keeps the sections in the models' order (a move, not a copy)
    });
    noModels.hidden = loaded.length > 0;
  }

  function renderSelector(models) {
    const current = [...select.options].slice(1).map((o) => o.value);
    if (current.join('\n') === models.join('\n')) {
      return;
    }
    const chosen = select.value;
    select.replaceChildren(select.options[0], ...models.map((m) => new Option(m, m)));
    select.value = models.includes(chosen) ? chosen : '';
  }

  function renderErrors(errors) {
    banner.hidden = errors.length === 0;
    banner.textContent = errors.length ? `Refresh failed: ${errors.join('\n')}` : '';
  }

  async function refresh() {
    const errors = [];
    let models;
    try {
      models = (await getJson('/models')).models || [];
    } catch (e) {
      renderErrors([e.message]);
      return; // keep showing the last figures under the banner
    }
    renderSelector(models);
    const shown = select.value ? [select.value] : models;
    const loaded = await Promise.all(shown.map((model) => loadModel(model, errors)));
    renderModels(loaded);
    renderErrors(errors);
    refreshes += 1;
    lastRefresh.dataset.refreshCount = String(refreshes);
    lastRefresh.textContent = `last refresh ${time(Date.now())}`;
  }

  async function poll() {
    try {
      await refresh();
    } catch (e) {
      renderErrors([String(e && e.message ? e.message : e)]);
    }
    setTimeout(poll, POLL_MS);
  }

  select.addEventListener('change', () => refresh().catch((e) => renderErrors([String(e.message || e)])));
  poll();
})();
