#!/usr/bin/env node
// A Rami bot in JavaScript, written only against the contract in proto/rami/v1.
//
// It loads the .proto files at run time (no generated code), joins a table, watches it, and
// whenever its view says it is its turn it acts with that view's number. It decides with the
// server's hand analysis (TableService.AnalyseMyHand, RulesService.AnalyseHand and CheckMeld):
//
//   draw      take the discard when the analysis says it melds (portuguese, simple), else the stock
//   declare   portuguese: when the analysis lists declare_cards
//   lay       tallage: a whole-hand finish, else the opening the analysis gives; once opened,
//             the melds in hand and single cards that fit clean melds on the table;
//             simple: a whole-hand finish
//   discard   the costliest card the analysis leaves over (never a joker while another can go)
//
// A refused command (FAILED_PRECONDITION, INVALID_ARGUMENT) is counted and answered with a safe
// move; ABORTED means the game moved on: the bot waits for the next update. A dropped stream is
// resumed with `after` = the newest update number seen, less one (every try in a row), and so
// is one that brings nothing for 45 s (`--silence`; the server leaves no stream silent past 15 s: a
// frozen or cut-off server ends no connection). A table behind what the bot saw (its server restored from
// an older backup) is followed anew. It exits 0 when the game is over, printing one summary
// line.
//
//   node bot.js HOST:PORT TABLE_ID [NAME] [--seat N] [--token TOKEN] [--timeout SECONDS]
//               [--silence SECONDS] [--quiet]
'use strict';

const crypto = require('crypto');
const path = require('path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const PROTO_ROOT = process.env.RAMI_PROTO_DIR || path.join(__dirname, '..', '..', 'proto');
const PROTO_FILES = [
  'rami/v1/lobby_service.proto',
  'rami/v1/table_service.proto',
  'rami/v1/rules_service.proto',
];
const TOKEN_METADATA = 'rami-token';
// A stream silent this long is dead (three heartbeats missed): it is opened again.
const SILENCE_SECONDS = 45;

if (!require('fs').existsSync(path.join(PROTO_ROOT, PROTO_FILES[1]))) {
  console.error(
    `rami-js-bot: no contract under ${PROTO_ROOT} (set RAMI_PROTO_DIR to the proto folder ` +
      'of a Rami checkout)'
  );
  process.exit(2);
}

// ---- the contract, loaded at run time --------------------------------------------------------

const definition = protoLoader.loadSync(PROTO_FILES, {
  includeDirs: [PROTO_ROOT],
  keepCase: true, // field names as in the .proto files: table_id, draw_sources...
  longs: Number, // uint64 update numbers as plain numbers
  enums: String, // enum values by name: 'PHASE_DRAW', 'CARD_HEARTS_KING'...
  defaults: true, // unset fields read as their defaults
  oneofs: true, // a oneof's name says which field is set: msg.kind === 'update'
});
const rami = grpc.loadPackageDefinition(definition).rami.v1;

// Card names to numbers and back: value - 1 = suit * 13 + rank - 1 (cards.proto); joker 53.
const CARD_NUMBER = {};
for (const v of definition['rami.v1.Card'].type.value) CARD_NUMBER[v.name] = v.number;
const JOKER = 'CARD_JOKER';

function rankOf(card) {
  return ((CARD_NUMBER[card] - 1) % 13) + 1; // 1 = ace ... 13 = king
}

// What a card left in hand costs (docs/rules.md): portuguese A 20, joker 0; moroccan A 10,
// joker `joker_penalty`; J Q K 10; pips their number.
function cardValue(card, view) {
  if (card === JOKER) {
    return view.variant === 'VARIANT_PORTUGUESE' ? 0 : view.options.joker_penalty;
  }
  const rank = rankOf(card);
  if (rank === 1) return view.variant === 'VARIANT_PORTUGUESE' ? 20 : 10;
  return Math.min(rank, 10);
}

// ---- google.rpc.Status details: the ErrorInfo reason of a refusal ------------------------------

// The server puts a google.rpc.Status in the `grpc-status-details-bin` trailer, whose details
// hold a google.rpc.ErrorInfo with a machine-readable `reason` (NOT_YOUR_TURN, STALE...). The
// messages are small, so a few lines of protobuf wire decoding read them without more .proto
// files.
function fields(buf) {
  const out = [];
  let i = 0;
  const varint = () => {
    let result = 0;
    let shift = 0;
    for (;;) {
      const b = buf[i++];
      result += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return result;
      shift += 7;
    }
  };
  while (i < buf.length) {
    const key = varint();
    const no = Math.floor(key / 8);
    const wire = key % 8;
    if (wire === 0) out.push([no, varint()]);
    else if (wire === 2) {
      const n = varint();
      out.push([no, buf.subarray(i, i + n)]);
      i += n;
    } else if (wire === 1) i += 8;
    else if (wire === 5) i += 4;
    else break;
  }
  return out;
}

// The ErrorInfo of a refusal: { reason, metadata } (reason '' when there is none).
function errorInfo(err) {
  try {
    const [bin] = err.metadata ? err.metadata.get('grpc-status-details-bin') : [];
    if (!bin) return { reason: '', metadata: {} };
    for (const [no, any] of fields(bin)) {
      if (no !== 3) continue; // Status.details: repeated Any
      const parts = fields(any);
      const typeUrl = parts.find(([n]) => n === 1);
      const value = parts.find(([n]) => n === 2);
      if (typeUrl && String(typeUrl[1]).endsWith('google.rpc.ErrorInfo') && value) {
        const info = { reason: '', metadata: {} };
        for (const [n, v] of fields(value[1])) {
          if (n === 1) info.reason = v.toString('utf8'); // ErrorInfo.reason
          if (n === 3) {
            // ErrorInfo.metadata: map<string, string>, each entry {1: key, 2: value}
            const entry = fields(v);
            const k = entry.find(([m]) => m === 1);
            const val = entry.find(([m]) => m === 2);
            if (k) info.metadata[k[1].toString('utf8')] = val ? val[1].toString('utf8') : '';
          }
        }
        return info;
      }
    }
  } catch (e) {
    // an unreadable detail: the status code and message still say what happened
  }
  return { reason: '', metadata: {} };
}

function errorReason(err) {
  return errorInfo(err).reason;
}

// ---- arguments ----------------------------------------------------------------------------------

function parseArgs(argv) {
  const args = {
    positional: [],
    seat: undefined,
    token: undefined,
    timeout: 0,
    silence: SILENCE_SECONDS,
    quiet: false,
  };
  // A number in [least, most]; setTimeout takes at most 2^31 - 1 ms (24.8 days).
  const number = (flag, text, least, most, whole = false) => {
    const n = Number(text);
    const ok = text !== undefined && text !== '' && n >= least && n <= most;
    if (!ok || (whole && !Number.isInteger(n))) {
      const kind = whole ? 'a whole number' : 'a number';
      throw new Error(`${flag} needs ${kind} from ${least} to ${most}, not ${JSON.stringify(text)}`);
    }
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--seat') args.seat = number(a, argv[++i], 0, 5, true);
    else if (a === '--token') args.token = argv[++i];
    else if (a === '--timeout') args.timeout = number(a, argv[++i], 0, 86400);
    else if (a === '--silence') args.silence = number(a, argv[++i], 0.1, 86400);
    else if (a === '--quiet') args.quiet = true;
    else if (a === '--help' || a === '-h') args.help = true;
    else if (a.startsWith('-')) throw new Error(`unknown option ${a}`);
    else args.positional.push(a);
  }
  if (!args.help && (args.positional.length < 2 || args.positional.length > 3)) {
    throw new Error(`HOST:PORT and TABLE_ID are needed, and a NAME may follow: got ${args.positional.length} arguments`);
  }
  return args;
}

const USAGE =
  'usage: node bot.js HOST:PORT TABLE_ID [NAME] [--seat N] [--token TOKEN] ' +
  '[--timeout SECONDS] [--silence SECONDS] [--quiet]';

// ---- the bot ------------------------------------------------------------------------------------

// A gRPC target naming several servers (ipv4:A,B,C or ipv6:[A]:P,[B]:P) with its first put
// last, so that a channel tries the next one first; null for a target of one server.
function nextFirst(target) {
  const m = /^(ipv4|ipv6):(?!\/\/)(.*)$/.exec(target);
  const servers = m ? m[2].split(',') : [];
  if (servers.length < 2) return null;
  return `${m[1]}:${[...servers.slice(1), servers[0]].join(',')}`;
}

class Bot {
  constructor(target, tableId, name, opts) {
    this.tableId = tableId;
    this.name = name;
    this.opts = opts;
    this.home = target; // the address given: the way back when a table's owner is gone
    this.moves = 0;
    this.connect(target);
    this.seat = undefined;
    this.metadata = new grpc.Metadata();
    this.last = undefined; // the last update number seen on the stream
    this.latest = null; // the newest view known (from the stream or an Act response)
    this.handled = -1; // the newest update number acted on
    this.busy = false;
    this.stream = null;
    this.done = false;
    this.stats = { actions: 0, lays: 0, refused: 0, aborted: 0, reconnects: 0 };
  }

  // Clients of the three services at `target`.
  connect(target) {
    const channelOptions = { 'grpc.keepalive_time_ms': 30000 };
    const creds = grpc.credentials.createInsecure();
    this.at = target;
    this.lobby = new rami.LobbyService(target, creds, channelOptions);
    this.table = new rami.TableService(target, creds, channelOptions);
    this.rules = new rami.RulesService(target, creds, channelOptions);
  }

  // Several servers may share one database, each playing some tables: a call for a table at a
  // server that does not play it is refused UNAVAILABLE/TABLE_MOVED, the ErrorInfo metadata
  // `owner` naming the one that does (none: no server holds it this moment). Follow it: call
  // the owner from now on; go back to the address given when there is no owner, or when the
  // owner followed can't be reached. True when the bot moved (call again).
  follow(err) {
    if (err.code !== grpc.status.UNAVAILABLE || this.moves >= 1000) return false;
    const info = errorInfo(err);
    let where;
    if (info.reason === 'TABLE_MOVED') where = info.metadata.owner || this.home;
    else if (this.at !== this.home) where = this.home;
    else if (info.reason === 'STORAGE_FAILED' && nextFirst(this.home)) {
      // A server of the list given that cannot serve the table (its database out of reach),
      // which a channel keeps to while it answers: the list from its next server, from now on.
      where = this.home = nextFirst(this.home);
    } else return false;
    if (where === this.at && info.metadata.owner) return false;
    this.moves += 1;
    this.log(`table moved (${err.details}): going to ${where}`);
    const old = [this.lobby, this.table, this.rules];
    // Closed once the calls still on them have had their time.
    setTimeout(() => old.forEach((c) => c.close()), 20000).unref();
    this.connect(where);
    return true;
  }

  log(...words) {
    if (!this.opts.quiet) console.error('rami-js-bot:', ...words);
  }

  // One unary call, retried a few times when the server is briefly unavailable or asks us to
  // slow down (RESOURCE_EXHAUSTED). Retrying Act is safe: a command carries the number of the
  // view it was decided on, so a copy that already got through comes back ABORTED.
  // `service` is 'lobby', 'table' or 'rules': its client where the bot is now.
  async call(service, method, request, withToken = true) {
    const once = () =>
      new Promise((resolve, reject) => {
        const client = this[service];
        const cb = (err, resp) => (err ? reject(err) : resolve(resp));
        const deadline = { deadline: Date.now() + 15000 };
        if (withToken) client[method](request, this.metadata, deadline, cb);
        else client[method](request, deadline, cb);
      });
    for (let attempt = 1; ; attempt++) {
      try {
        return await once();
      } catch (err) {
        if (this.follow(err)) {
          attempt = 0; // at the table's owner: the same request again
          await new Promise((r) => setTimeout(r, 100));
          continue;
        }
        const transient = [grpc.status.UNAVAILABLE, grpc.status.RESOURCE_EXHAUSTED];
        if (!transient.includes(err.code) || attempt >= 5) throw err;
        await new Promise((r) => setTimeout(r, 100 * 2 ** attempt));
      }
    }
  }

  async start() {
    let token = this.opts.token;
    if (!token) {
      // 32 bytes of our own randomness go into every deal: nobody, the server included, can
      // then choose or foresee it (docs/records.md).
      const req = { table_id: this.tableId, name: this.name, entropy: crypto.randomBytes(32) };
      if (this.opts.seat !== undefined) req.seat = this.opts.seat; // optional: unset = first free
      const joined = await this.call('lobby', 'JoinTable', req, false);
      token = joined.token;
      this.seat = joined.seat;
      this.log(`joined table ${this.tableId} at seat ${this.seat}`);
    }
    this.metadata.set(TOKEN_METADATA, token);
    return new Promise((resolve, reject) => {
      this.finish = resolve;
      this.fail = (err) => {
        clearTimeout(this.silent);
        reject(err);
      };
      this.watch();
    });
  }

  // One Watch stream: a snapshot (or, resuming, every update after `this.last`), then updates.
  watch() {
    const req = { table_id: this.tableId };
    if (this.last !== undefined) req.after = this.last;
    const stream = this.table.Watch(req, this.metadata);
    this.stream = stream;
    const heard = () => {
      clearTimeout(this.silent);
      this.silent = setTimeout(() => {
        retry(`nothing came for ${this.opts.silence} s`);
        stream.cancel();
      }, this.opts.silence * 1000);
    };
    heard();
    stream.on('data', (msg) => {
      heard();
      if (msg.kind !== 'update') {
        // A heartbeat: the stream is alive. One below the newest update seen says the table
        // is behind it (its server went back to a backup one update older).
        if (this.seen !== undefined && msg.heartbeat.number < this.seen && stream === this.stream) {
          this.followAnew(`the table is at ${msg.heartbeat.number}, the bot saw ${this.seen}`);
          stream.cancel();
        }
        return;
      }
      const update = msg.update;
      this.restarted = false;
      this.last = update.number;
      this.seen = Math.max(this.seen === undefined ? 0 : this.seen, update.number);
      this.onView(update.view);
    });
    const retry = (why) => {
      if (this.done || stream !== this.stream) return; // an old stream's late news
      clearTimeout(this.silent);
      this.stream = null;
      this.stats.reconnects += 1;
      // Resume one update early, and forget what was acted on: if the stream dropped on our
      // turn, the view comes again and is decided anew (a stale retry is only ABORTED).
      this.resumeEarly();
      this.handled = -1;
      if (this.stats.reconnects > 20) {
        this.fail(new Error(`gave up after 20 reconnects (${why})`));
        return;
      }
      this.log(`stream lost (${why}); resuming after update ${this.last}`);
      setTimeout(() => this.watch(), Math.min(2000, 50 * this.stats.reconnects));
    };
    stream.on('error', (err) => {
      if (this.done) return;
      if (stream === this.stream && this.follow(err)) {
        // Resumed at the table's owner, after the last update seen (not a reconnect).
        this.stream = null;
        this.resumeEarly();
        this.handled = -1;
        setTimeout(() => this.watch(), 50);
        return;
      }
      if (
        err.code === grpc.status.INVALID_ARGUMENT &&
        errorInfo(err).reason === 'BAD_NUMBER' &&
        stream === this.stream &&
        !this.restarted
      ) {
        this.followAnew(err.details);
        return;
      }
      const again = [
        grpc.status.UNAVAILABLE,
        grpc.status.CANCELLED,
        grpc.status.RESOURCE_EXHAUSTED, // TOO_SLOW: cut off, resume from the last number
        grpc.status.DEADLINE_EXCEEDED,
        grpc.status.INTERNAL,
      ];
      if (again.includes(err.code)) retry(`${grpc.status[err.code]}: ${err.details}`);
      else this.fail(err);
    });
    stream.on('end', () => retry('the server ended the stream'));
  }

  // Where the next stream starts: one update before the newest seen. Every try in a row starts
  // there (not each one earlier than the last: a try past a restored table's number would not
  // be refused).
  resumeEarly() {
    if (this.seen) this.last = this.seen - 1;
  }

  // The table is behind the updates seen (its server restored from an older backup): follow
  // it from where it is now, once until an update comes.
  followAnew(why) {
    if (this.restarted) return;
    this.restarted = true;
    clearTimeout(this.silent);
    this.stream = null;
    this.last = undefined;
    this.seen = undefined;
    this.latest = null; // newer than the table now: its views are the ones to follow
    this.handled = -1;
    this.log(`the table is behind what this bot saw (${why}): following it anew`);
    setTimeout(() => this.watch(), 50);
  }

  onView(view) {
    if (this.latest === null || view.number >= this.latest.number) this.latest = view;
    if (view.seat !== undefined && view._seat === 'seat') this.seat = view.seat;
    if (view.phase === 'PHASE_GAME_OVER') {
      this.gameOver(view);
      return;
    }
    this.pump();
  }

  myTurn(view) {
    return (
      view !== null &&
      view.turn === this.seat &&
      (view.phase === 'PHASE_DRAW' || view.phase === 'PHASE_PLAY')
    );
  }

  // Act on the newest view while it is our turn; one turn at a time.
  async pump() {
    if (this.busy || this.done) return;
    this.busy = true;
    try {
      while (!this.done && this.myTurn(this.latest) && this.latest.number > this.handled) {
        const view = this.latest;
        this.handled = view.number;
        await this.playTurn(view);
      }
    } catch (err) {
      this.fail(err);
    } finally {
      this.busy = false;
    }
  }

  // Send one action decided on `view`. Returns the view after it, or null when the game moved on
  // (ABORTED: wait for the next update) or when it was refused (answered with a safe move).
  async send(view, action, safe = true) {
    const req = Object.assign({ table_id: this.tableId, number: view.number }, action);
    try {
      const resp = await this.call('table', 'Act', req);
      this.stats.actions += 1;
      this.handled = Math.max(this.handled, resp.number);
      if (this.latest === null || resp.view.number >= this.latest.number) this.latest = resp.view;
      return resp.view;
    } catch (err) {
      const reason = errorReason(err);
      if (err.code === grpc.status.ABORTED) {
        this.stats.aborted += 1; // stale: the stream brings the newer view
        return null;
      }
      if (err.code === grpc.status.FAILED_PRECONDITION || err.code === grpc.status.INVALID_ARGUMENT) {
        this.stats.refused += 1;
        this.log(`refused ${JSON.stringify(action)}: ${reason} ${err.details}`);
        if (safe) await this.send(view, this.safeMove(view), false);
        return null;
      }
      throw err;
    }
  }

  safeMove(view) {
    if (view.phase === 'PHASE_DRAW') return { draw: { source: 'DRAW_SOURCE_STOCK' } };
    // The card drawn, while it is still held (a discard taken with its lay went to the table).
    const held = view.drawn !== 'CARD_UNSPECIFIED' && view.hand.includes(view.drawn);
    const card = held ? view.drawn : view.hand[view.hand.length - 1];
    return { discard: { card } };
  }

  async analyseMine() {
    const resp = await this.call('table', 'AnalyseMyHand', { table_id: this.tableId });
    return resp.analysis;
  }

  async analyse(view, hand) {
    const req = { variant: view.variant, options: view.options, hand, bar: view.bar };
    const resp = await this.call('rules', 'AnalyseHand', req, false);
    return resp.analysis;
  }

  // ---- one turn ----

  async playTurn(view) {
    let v = view;
    if (v.phase === 'PHASE_DRAW') {
      v = await this.draw(v);
      if (!this.myTurn(v) || v.phase !== 'PHASE_PLAY') return;
    }
    v = await this.lay(v);
    if (!this.myTurn(v) || v.phase !== 'PHASE_PLAY') return;
    await this.end(v);
  }

  async draw(v) {
    const top = v.discard_top;
    const mayTake = v.draw_sources.includes('DRAW_SOURCE_DISCARD') && top !== 'CARD_UNSPECIFIED';
    // In tallage a discard taken must be laid in the same DrawAction: this bot keeps it simple
    // and takes the stock there. Elsewhere it takes the discard when it lowers the points left.
    if (mayTake && v.variant !== 'VARIANT_TALLAGE') {
      const now = await this.analyse(v, v.hand);
      const after = await this.analyse(v, [...v.hand, top]);
      if (!after.left.includes(top) && after.points_left < now.points_left) {
        return this.send(v, { draw: { source: 'DRAW_SOURCE_DISCARD' } });
      }
    }
    return this.send(v, { draw: { source: 'DRAW_SOURCE_STOCK' } });
  }

  // A whole-hand finish: every card but `last` in melds with a clean set and a clean run.
  async finishLay(v, analysis) {
    for (const last of analysis.finish_discards) {
      const rest = [...v.hand];
      rest.splice(rest.indexOf(last), 1);
      const a = await this.analyse(v, rest);
      const clean = (kind) => a.melds.some((m) => m.kind === kind && !m.cards.includes(JOKER));
      if (a.left.length === 0 && clean('MELD_KIND_SET') && clean('MELD_KIND_RUN')) {
        return a.melds.map(newMeld);
      }
    }
    return null;
  }

  async lay(v) {
    if (!v.can_lay || v.variant === 'VARIANT_PORTUGUESE') return v;
    const analysis = await this.analyseMine();
    const opened = v.players[this.seat].opened;
    let steps = null;
    if (v.variant === 'VARIANT_SIMPLE' || !opened) {
      steps = await this.finishLay(v, analysis);
      if (!steps && v.variant === 'VARIANT_TALLAGE' && analysis.can_open) {
        steps = analysis.opening_melds.map(newMeld);
      }
    } else {
      steps = await this.freeLay(v, analysis);
    }
    if (!steps || steps.length === 0) return v;
    const after = await this.send(v, { lay: { steps } });
    if (after) this.stats.lays += 1;
    return after;
  }

  // Tallage, opened on an earlier turn: the melds in hand, then single cards on clean melds.
  async freeLay(v, analysis) {
    const melds = [...analysis.melds];
    let kept = analysis.left.length;
    if (kept === 0 && melds.length) {
      const held = melds.pop(); // keep a card to discard: no lay may empty the hand
      kept = held.cards.length;
    }
    const steps = melds.map(newMeld);
    const loose = [...analysis.left];
    for (const tm of v.melds) {
      if (kept <= 1) break;
      if (tm.meld.cards.includes(JOKER)) continue; // keep it simple: clean melds only
      for (const card of loose) {
        if (card === JOKER) continue;
        const check = await this.call('rules', 'CheckMeld', {
          cards: [...tm.meld.cards, card],
          jokers_per_meld: v.options.jokers_per_meld,
        }, false);
        if (check.valid) {
          steps.push({ add: { meld: tm.number, cards: [card], end: 'RUN_END_UNSPECIFIED' } });
          loose.splice(loose.indexOf(card), 1);
          kept -= 1;
          break;
        }
      }
    }
    return steps;
  }

  async end(v) {
    const analysis = await this.analyseMine();
    if (v.variant === 'VARIANT_PORTUGUESE' && v.can_declare && analysis.declare_cards.length) {
      return this.send(v, { declare: { card: analysis.declare_cards[0] } });
    }
    const pool = analysis.left.length ? analysis.left : v.hand;
    const choices = pool.filter((c) => c !== JOKER);
    const candidates = choices.length ? choices : pool;
    let best = candidates[0];
    for (const c of candidates) if (cardValue(c, v) > cardValue(best, v)) best = c;
    return this.send(v, { discard: { card: best } });
  }

  gameOver(view) {
    if (this.done) return;
    this.done = true;
    clearTimeout(this.silent);
    if (this.stream) this.stream.cancel();
    const totals = view.players.map((p) => p.total).join('/');
    console.log(
      `rami-js-bot: seat ${this.seat}: game over after ${view.results.length} rounds; ` +
        `totals ${totals}; winners ${view.winners.join(',')}; actions ${this.stats.actions} ` +
        `(lays ${this.stats.lays}), ` +
        `refused ${this.stats.refused}, aborted ${this.stats.aborted}, ` +
        `reconnects ${this.stats.reconnects}`
    );
    this.finish(this.stats);
  }

  close() {
    this.lobby.close();
    this.table.close();
    this.rules.close();
  }
}

// A meld of the analysis as a NewMeld: a run's jokers say the card they stand for.
function newMeld(m) {
  const jokersAs = m.kind === 'MELD_KIND_RUN' ? m.stands_for : [];
  return { new_meld: { cards: m.cards, jokers_as: jokersAs } };
}

async function main() {
  let args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (err) {
    console.error(`rami-js-bot: ${err.message}\n${USAGE}`);
    process.exit(2);
  }
  if (args.help) {
    console.error(USAGE);
    process.exit(0);
  }
  const [target, tableId, name = 'JS bot'] = args.positional;
  const bot = new Bot(target, tableId, name, args);
  if (args.timeout > 0) {
    setTimeout(() => {
      console.error(`rami-js-bot: the game did not end within ${args.timeout} s`);
      process.exit(3);
    }, args.timeout * 1000).unref();
  }
  try {
    await bot.start();
  } catch (err) {
    const reason = errorReason(err);
    const code = err.code !== undefined ? grpc.status[err.code] : 'ERROR';
    console.error(`rami-js-bot: ${code}${reason ? ` (${reason})` : ''}: ${err.details || err.message}`);
    process.exit(1);
  } finally {
    bot.close();
  }
  process.exit(0);
}

if (require.main === module) main();

module.exports = { Bot, errorInfo, errorReason, cardValue, newMeld, nextFirst };
