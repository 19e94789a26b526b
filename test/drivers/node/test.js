'use strict';
// The inventory extension as a Node application sees it through
// node-postgres (pg 8.x): what each call returns in JavaScript, how errors
// arrive, transactions, prepared statements, arrays, and many clients at once;
// and reserve_now(), whose status is a string in autocommit and which a
// transaction (BEGIN) refuses with 25001.
//
// Run: node test/drivers/node/test.js   (PGHOST, PGPORT, PGUSER, PGDATABASE set;
// the server must preload inventory; PGUSER a superuser, to create a
// database, the extension and the login roles).  Prints TAP; exits 0 only
// if every test passed.
//
// The test works in a database of its own (inv_node_<pid>), created from
// PGDATABASE and dropped at the end, so reruns and other driver tests in the
// same cluster never see its keys.
//
// Who calls (docs/security.md, "The roles"), each over connections of its
// own login role, as an application configures its pools (a connection, not
// SET ROLE, so that role settings apply):
//   shop_app      (inventory_app)      reserve, reserve_now, reserve_many,
//                 reserve_cart, confirm, cancel, extend, confirm_order,
//                 available, the stock view: `client`, `pool` (every client
//                 racing for the last units) and the typed clients
//   shop_admin    (inventory_admin)    restock, set_rules, verify, and the
//                 reads of inventory.ledger and inventory.sku the checks make
//   shop_monitor  (inventory_monitor)  the express lane's figures
//                 (express_fallbacks, express_status)
// The superuser (PGUSER) only creates and drops the database, creates the
// extension and makes the login roles with the DO block of test/roles.sql:
// what the manual gives a superuser, and scaffolding.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const pg = require('pg');

// ---------------------------------------------------------------------------
// TAP: one "ok N - name" / "not ok N - name" line per test, diagnostics as
// "# " lines (so no other line can look like a result), the plan at the end.
// ---------------------------------------------------------------------------
let count = 0;
let failures = 0;

function diag(text) {
  for (const line of String(text).split('\n')) console.log('# ' + line);
}

async function test(name, fn) {
  count += 1;
  try {
    await fn();
    console.log(`ok ${count} - ${name}`);
  } catch (err) {
    failures += 1;
    console.log(`not ok ${count} - ${name}`);
    diag(err && err.stack ? err.stack : err);
    if (err instanceof pg.DatabaseError) diag(`SQLSTATE ${err.code}${err.detail ? '; detail: ' + err.detail : ''}`);
  }
}

// Runs a query that must fail and returns the error it raised.
async function expectError(client, text, values) {
  try {
    await client.query(text, values);
  } catch (err) {
    return err;
  }
  throw new assert.AssertionError({ message: `expected an error from: ${text}` });
}

// A test that hangs (a lock never released, say) must fail, not stall the suite.
const WATCHDOG_MS = 180000;
const watchdog = setTimeout(() => {
  console.log(`not ok ${count + 1} - the suite finished within ${WATCHDOG_MS / 1000} s`);
  console.log(`1..${count + 1}`);
  process.exit(1);
}, WATCHDOG_MS);
watchdog.unref();

const DB = `inv_node_${process.pid}`;
const base = { statement_timeout: 60000 };          // PGHOST etc. from the environment
const conf = { ...base, database: DB };             // the superuser (PGUSER), in our database
const APP = 'shop_app';
const ADMIN = 'shop_admin';
const MONITOR = 'shop_monitor';
const as = (user) => ({ ...conf, user });            // a login role, in our database

// The DO block of test/roles.sql, which makes the login roles (the file's
// other lines are psql's).
function rolesDoBlock() {
  const file = path.join(__dirname, '..', '..', 'roles.sql');
  const m = fs.readFileSync(file, 'utf8').match(/^DO \$\$$[\s\S]*?^\$\$;$/m);
  if (!m) throw new Error(`no DO block in ${file}`);
  return m[0];
}

async function main() {
  // The superuser, on PGDATABASE: only to create and drop our own database.
  const superuser = new pg.Client(base);
  await superuser.connect();
  await superuser.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(DB)}`);
  await superuser.query(`CREATE DATABASE ${pg.escapeIdentifier(DB)}`);

  const clients = {};
  let pool;
  try {
    // Without an 'error' listener, a server closing an idle pooled
    // connection (a restart, pg_terminate_backend) crashes the process.
    for (const [name, user] of [['client', APP], ['admin', ADMIN], ['monitor', MONITOR]]) {
      clients[name] = new pg.Client(as(user));
      clients[name].on('error', (e) => diag(`${name} error: ${e.code} ${e.message}`));
    }
    pool = new pg.Pool({ ...as(APP), max: 20 });
    pool.on('error', (e) => diag(`idle pool client error: ${e.code} ${e.message}`));
    await run(clients.client, clients.admin, clients.monitor, pool);
  } finally {
    for (const c of Object.values(clients)) await c.end().catch(() => {});
    if (pool) await pool.end().catch(() => {});
    // DROP DATABASE waits a few seconds for closing sessions to go; FORCE
    // only if one is somehow still there.
    const drop = `DROP DATABASE IF EXISTS ${pg.escapeIdentifier(DB)}`;
    await superuser.query(drop)
      .catch(() => superuser.query(`${drop} WITH (FORCE)`))
      .catch((e) => diag(`could not drop ${DB}: ${e.message}`));
    await superuser.end();
  }
}

// client: shop_app; admin: shop_admin; monitor: shop_monitor; pool: shop_app
async function run(client, admin, monitor, pool) {
  // Stock of a new SKU counts once its restock commits: each restock here
  // runs alone (autocommit), so the units are on sale when it returns.
  const restock = (sku, qty, key) =>
    admin.query('SELECT * FROM inventory.restock($1, $2, $3)', [sku, qty, key]);
  const available = async (sku) =>
    (await client.query('SELECT inventory.available($1) AS a', [sku])).rows[0].a;
  const ledgerRows = async (key) =>
    (await admin.query('SELECT count(*) AS n FROM inventory.ledger WHERE order_id = $1', [key])).rows[0].n;

  // 1 ----------------------------------------------------------------------
  await test('the superuser creates the extension and the login roles; pg.Client connects as each', async () => {
    // the superuser's part: CREATE EXTENSION (the extension is not
    // trusted) and granting the extension's roles to the login roles
    const su = new pg.Client(conf);
    su.on('error', (e) => diag(`superuser client error: ${e.code} ${e.message}`));
    await su.connect();
    try {
      await su.query('CREATE EXTENSION IF NOT EXISTS inventory');
      const r = await su.query(
        "SELECT extversion, default_version FROM pg_extension, pg_available_extensions" +
        " WHERE extname = 'inventory' AND name = extname");
      assert.equal(r.rows.length, 1);
      assert.equal(r.rows[0].extversion, r.rows[0].default_version);
      await su.query(rolesDoBlock());
      // each login role no superuser, and a member of its own group only:
      // otherwise a call could pass on a right the role is not given
      const roles = await su.query(
        'SELECT r.rolname::text AS login, r.rolsuper,' +
        ' array(SELECT g.rolname::text FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid' +
        '       WHERE m.member = r.oid ORDER BY 1) AS member_of' +
        ' FROM pg_roles r WHERE r.rolname = ANY($1) ORDER BY 1', [[APP, ADMIN, MONITOR]]);
      assert.deepEqual(roles.rows, [
        { login: ADMIN, rolsuper: false, member_of: ['inventory_admin'] },
        { login: APP, rolsuper: false, member_of: ['inventory_app'] },
        { login: MONITOR, rolsuper: false, member_of: ['inventory_monitor'] },
      ]);
    } finally {
      await su.end();
    }
    for (const [c, user] of [[client, APP], [admin, ADMIN], [monitor, MONITOR]]) {
      await c.connect();
      assert.equal((await c.query('SELECT current_user AS u')).rows[0].u, user);
    }
  });

  await test('pg.Pool connects and sees the extension', async () => {
    const r = await pool.query("SELECT to_regprocedure('inventory.available(text)') IS NOT NULL AS has");
    assert.equal(r.rows[0].has, true);
  });

  // The OID of inventory.state is assigned at CREATE EXTENSION; pg has no
  // parser for it, so its values arrive as the server's text.
  const stateOid = (await client.query("SELECT 'inventory.state'::regtype::oid AS oid")).rows[0].oid;

  // 2 ----------------------------------------------------------------------
  await test('restock with JS values: ok, int8 columns as strings', async () => {
    const r = await restock('node-A', 10, 'node-restock-A');
    assert.equal(r.rows.length, 1);
    const row = r.rows[0];
    assert.equal(row.ok, true);
    assert.equal(row.status, 'ok');
    assert.equal(row.sku, 'node-A');
    assert.equal(row.qty, '10');
    assert.equal(row.state, null);            // a restock has no reservation state
    assert.equal(row.expires_at, null);
    // available: what the SKU has once the restock commits, its units included
    assert.equal(row.available, '10');
    assert.equal(await available('node-A'), '10');
  });

  await test('SELECT * FROM inventory.reserve($1,$2,$3): every column, JS type and value', async () => {
    const r = await client.query('SELECT * FROM inventory.reserve($1, $2, $3)',
      ['node-A', 2, 'node-order-1']);
    assert.deepEqual(r.fields.map((f) => f.name),
      ['ok', 'status', 'sku', 'qty', 'state', 'available', 'version', 'expires_at']);
    const row = r.rows[0];
    assert.equal(typeof row.ok, 'boolean');
    assert.equal(row.ok, true);
    assert.equal(row.status, 'ok');
    assert.equal(row.sku, 'node-A');
    // int8 is returned as a string by default (it may not fit a JS number).
    assert.equal(typeof row.qty, 'string');
    assert.equal(row.qty, '2');
    assert.equal(r.fields[4].dataTypeID, stateOid);
    assert.equal(typeof row.state, 'string');
    assert.equal(row.state, 'PENDING');
    assert.equal(row.available, '8');
    assert.equal(typeof row.version, 'string');
    assert.match(row.version, /^[0-9]+$/);
    assert.ok(row.expires_at instanceof Date, 'expires_at is a Date');
    assert.ok(!Number.isNaN(row.expires_at.getTime()));
  });

  await test('cheap form SELECT (inventory.reserve($1,$2,$3)).status returns a string', async () => {
    const r = await client.query('SELECT (inventory.reserve($1, $2, $3)).status',
      ['node-A', 1, 'node-order-2']);
    assert.deepEqual(r.fields.map((f) => f.name), ['status']);
    assert.equal(r.rows[0].status, 'ok');
    assert.equal(await available('node-A'), '7');
  });

  await test('row as one value, SELECT inventory.reserve(...), is a composite in text (do not use)', async () => {
    // A replay, so it changes nothing; node-postgres does not parse composites.
    const r = await client.query('SELECT inventory.reserve($1, $2, $3)',
      ['node-A', 2, 'node-order-1']);
    const v = r.rows[0].reserve;
    assert.equal(typeof v, 'string');
    assert.ok(v.startsWith('(t,duplicate,node-A,2,PENDING,'), v);
  });

  await test('qty as a JS BigInt or a numeric string is accepted; a fraction is 22P02', async () => {
    let r = await client.query('SELECT (inventory.reserve($1, $2, $3)).status',
      ['node-A', 1n, 'node-order-bigint']);
    assert.equal(r.rows[0].status, 'ok');
    r = await client.query('SELECT (inventory.reserve($1, $2, $3)).status',
      ['node-A', '1', 'node-order-string']);
    assert.equal(r.rows[0].status, 'ok');
    // pg sends 2.5 as the text '2.5'; the server refuses it as a bigint.
    const err = await expectError(client, 'SELECT * FROM inventory.reserve($1, $2, $3)',
      ['node-A', 2.5, 'node-order-frac']);
    assert.equal(err.code, '22P02');
    assert.equal(await ledgerRows('node-order-frac'), '0');
  });

  // 3 ----------------------------------------------------------------------
  await test('named prepared statement, many calls: ok until sold out, then insufficient rows', async () => {
    await restock('node-P', 5, 'node-restock-P');
    const statuses = [];
    const avail = [];
    for (let i = 0; i < 8; i += 1) {
      const r = await client.query({
        name: 'reserve',
        text: 'SELECT * FROM inventory.reserve($1, $2, $3)',
        values: ['node-P', 1, `node-prep-${i}`],
      });
      assert.equal(r.rows.length, 1);
      assert.equal(r.rows[0].ok, r.rows[0].status === 'ok');
      assert.equal(r.rows[0].sku, 'node-P');
      statuses.push(r.rows[0].status);
      avail.push(r.rows[0].available);
    }
    // A refusal is a result row, not an error.
    assert.deepEqual(statuses, ['ok', 'ok', 'ok', 'ok', 'ok',
      'insufficient', 'insufficient', 'insufficient']);
    assert.deepEqual(avail, ['4', '3', '2', '1', '0', '0', '0', '0']);
    // It really was one server-side prepared statement.
    const p = await client.query(
      "SELECT statement FROM pg_prepared_statements WHERE name = 'reserve'");
    assert.equal(p.rows.length, 1);
    assert.match(p.rows[0].statement, /inventory\.reserve/);
    assert.equal(await ledgerRows('node-prep-5'), '0');
  });

  // 4 ----------------------------------------------------------------------
  await test('replaying a reserve answers duplicate, ok true, nothing changes', async () => {
    const first = (await client.query('SELECT * FROM inventory.reserve($1, $2, $3)',
      ['node-A', 1, 'node-order-idem'])).rows[0];
    assert.equal(first.status, 'ok');
    const before = await available('node-A');
    const again = (await client.query('SELECT * FROM inventory.reserve($1, $2, $3)',
      ['node-A', 1, 'node-order-idem'])).rows[0];
    assert.equal(again.ok, true);
    assert.equal(again.status, 'duplicate');
    assert.equal(again.state, 'PENDING');
    assert.equal(again.qty, '1');
    assert.equal(again.available, before);
    assert.equal(again.expires_at.getTime(), first.expires_at.getTime());
    assert.equal(await available('node-A'), before);
    assert.equal(await ledgerRows('node-order-idem'), '1');
  });

  // 5 ----------------------------------------------------------------------
  await test('key reused with another qty: err.code 23505 with detail and hint', async () => {
    const err = await expectError(client, 'SELECT * FROM inventory.reserve($1, $2, $3)',
      ['node-A', 5, 'node-order-idem']);
    assert.ok(err instanceof pg.DatabaseError, 'a pg.DatabaseError');
    assert.equal(err.code, '23505');
    assert.equal(err.severity, 'ERROR');
    assert.match(err.message, /already used/);
    assert.equal(typeof err.detail, 'string');
    assert.ok(err.detail.length > 0);
    assert.match(err.detail, /reservation of 1 unit/);
    assert.equal(typeof err.hint, 'string');
    assert.ok(err.hint.length > 0);
  });

  await test('key reused for another SKU: 23505', async () => {
    await restock('node-B', 3, 'node-restock-B');
    const err = await expectError(client, 'SELECT * FROM inventory.reserve($1, $2, $3)',
      ['node-B', 1, 'node-order-idem']);
    assert.equal(err.code, '23505');
    assert.ok(err.detail && err.hint);
    assert.equal(await available('node-B'), '3');
  });

  await test('NULL sku is 22004, qty 0 is 22023, empty order_id is 22023', async () => {
    let err = await expectError(client, 'SELECT * FROM inventory.reserve($1, $2, $3)',
      [null, 1, 'node-order-null']);
    assert.equal(err.code, '22004');
    assert.match(err.message, /sku must not be null/);
    err = await expectError(client, 'SELECT * FROM inventory.reserve($1, $2, $3)',
      ['node-A', 0, 'node-order-zero']);
    assert.equal(err.code, '22023');
    assert.match(err.message, /qty must be positive/);
    err = await expectError(client, 'SELECT * FROM inventory.reserve($1, $2, $3)',
      ['node-A', 1, '']);
    assert.equal(err.code, '22023');
  });

  await test('an error inside BEGIN aborts the transaction (25P02) and ROLLBACK recovers', async () => {
    const before = await available('node-A');
    await client.query('BEGIN');
    try {
      const ok = await client.query('SELECT (inventory.reserve($1, $2, $3)).status',
        ['node-A', 1, 'node-order-aborted']);
      assert.equal(ok.rows[0].status, 'ok');
      const err = await expectError(client, 'SELECT * FROM inventory.reserve($1, $2, $3)',
        ['node-A', 0, 'node-order-zero']);
      assert.equal(err.code, '22023');
      const next = await expectError(client, 'SELECT 1');
      assert.equal(next.code, '25P02');
    } finally {
      await client.query('ROLLBACK');
    }
    const r = await client.query('SELECT 1 AS one');
    assert.equal(r.rows[0].one, 1);
    // The reservation made before the error went with the transaction.
    assert.equal(await ledgerRows('node-order-aborted'), '0');
    assert.equal(await available('node-A'), before);
  });

  // 6 ----------------------------------------------------------------------
  await test('BEGIN; reserve; ROLLBACK: available back, no ledger row', async () => {
    const other = await pool.connect();
    try {
      const before = await available('node-A');
      const reservedBefore = (await client.query(
        'SELECT reserved FROM inventory.stock WHERE sku = $1', ['node-A'])).rows[0].reserved;
      await client.query('BEGIN');
      const r = await client.query('SELECT * FROM inventory.reserve($1, $2, $3)',
        ['node-A', 2, 'node-order-rb']);
      assert.equal(r.rows[0].status, 'ok');
      // In flight: the hold is live for everybody, the row only for us
      // (the stock view reads the tables: the ledger row in our
      // transaction counts in its reserved, for us alone).
      const reserved = async (c) => (await c.query(
        'SELECT reserved FROM inventory.stock WHERE sku = $1', ['node-A'])).rows[0].reserved;
      assert.equal(await reserved(client), String(Number(reservedBefore) + 2));
      assert.equal(await reserved(other), reservedBefore);
      assert.equal((await other.query('SELECT inventory.available($1) AS a', ['node-A'])).rows[0].a,
        String(Number(before) - 2));
      await client.query('ROLLBACK');
      assert.equal(await available('node-A'), before);
      assert.equal(await ledgerRows('node-order-rb'), '0');
    } finally {
      other.release();
    }
  });

  await test('BEGIN; reserve; COMMIT: counted', async () => {
    const before = Number(await available('node-A'));
    await client.query('BEGIN');
    const r = await client.query('SELECT * FROM inventory.reserve($1, $2, $3)',
      ['node-A', 2, 'node-order-commit']);
    assert.equal(r.rows[0].status, 'ok');
    await client.query('COMMIT');
    assert.equal(await available('node-A'), String(before - 2));
    const l = await admin.query(
      'SELECT state, qty FROM inventory.ledger WHERE order_id = $1', ['node-order-commit']);
    assert.deepEqual(l.rows, [{ state: 'PENDING', qty: '2' }]);
  });

  await test('a restock is on sale only after its transaction commits', async () => {
    await admin.query('BEGIN');
    try {
      await restock('node-T', 4, 'node-restock-T');
      // to the application's sessions the new SKU is not there yet
      let r = await client.query('SELECT (inventory.reserve($1, $2, $3)).status',
        ['node-T', 1, 'node-order-T0']);
      assert.equal(r.rows[0].status, 'unknown_sku');
      // nor are its units on sale in the restocking transaction itself:
      // shop_admin's reserve, the one role that restocks and may reserve
      // (inventory_admin has all of inventory_app's calls)
      r = await admin.query('SELECT (inventory.reserve($1, $2, $3)).status',
        ['node-T', 1, 'node-order-T1']);
      assert.equal(r.rows[0].status, 'insufficient');
      await admin.query('COMMIT');
    } catch (e) {
      await admin.query('ROLLBACK');
      throw e;
    }
    const r = await client.query('SELECT (inventory.reserve($1, $2, $3)).status',
      ['node-T', 1, 'node-order-T2']);
    assert.equal(r.rows[0].status, 'ok');
  });

  // 7 ----------------------------------------------------------------------
  await test('confirm by key: ok, then duplicate', async () => {
    const q = 'SELECT (inventory.confirm($1)).status';
    assert.equal((await client.query(q, ['node-order-commit'])).rows[0].status, 'ok');
    assert.equal((await client.query(q, ['node-order-commit'])).rows[0].status, 'duplicate');
    const full = (await client.query('SELECT * FROM inventory.confirm($1)',
      ['node-order-commit'])).rows[0];
    assert.equal(full.ok, true);
    assert.equal(full.state, 'CONFIRMED');
    assert.equal((await client.query(q, ['node-no-such-order'])).rows[0].status, 'not_found');
  });

  await test('cancel of a confirmed reservation: ok false, status confirmed', async () => {
    const r = (await client.query('SELECT ok, status, state FROM inventory.cancel($1)',
      ['node-order-commit'])).rows[0];
    assert.deepEqual(r, { ok: false, status: 'confirmed', state: 'CONFIRMED' });
  });

  await test('cancel of a pending reservation: ok (units back), then duplicate', async () => {
    const before = Number(await available('node-A'));
    let r = (await client.query('SELECT ok, status, state FROM inventory.cancel($1)',
      ['node-order-2'])).rows[0];
    assert.deepEqual(r, { ok: true, status: 'ok', state: 'CANCELLED' });
    assert.equal(await available('node-A'), String(before + 1));
    r = (await client.query('SELECT ok, status, state FROM inventory.cancel($1)',
      ['node-order-2'])).rows[0];
    assert.deepEqual(r, { ok: true, status: 'duplicate', state: 'CANCELLED' });
  });

  // 8 ----------------------------------------------------------------------
  await restock('node-M1', 3, 'node-restock-M1');
  await restock('node-M2', 1, 'node-restock-M2');

  await test('reserve_many($1::text[], $2::bigint[], $3::text[]) with JS arrays: one row per element, in order', async () => {
    const keys = ['node-many-1', 'node-many-2', 'node-many-3'];
    const r = await client.query(
      'SELECT * FROM inventory.reserve_many($1::text[], $2::bigint[], $3::text[])',
      [['node-M1', 'node-M2', 'node-M2'], [1, 2, 1], keys]);
    const rows = r.rows;
    assert.deepEqual(rows.map((x) => [x.sku, x.qty, x.ok, x.status]), [
      ['node-M1', '1', true, 'ok'],
      ['node-M2', '2', false, 'insufficient'],
      ['node-M2', '1', true, 'ok'],
    ]);
    assert.equal(rows[1].state, null);
    assert.equal(rows[0].state, 'PENDING');
    assert.ok(rows[0].expires_at instanceof Date);
    assert.equal(await available('node-M1'), '2');
    assert.equal(await available('node-M2'), '0');
  });

  await test('reserve_many($1, $2, $3) without casts: JS arrays resolve to text[]/bigint[]', async () => {
    // Works because reserve_many has one signature: the server infers the
    // parameters' types from it (pg sends them untyped, as array literals).
    await restock('node-M2', 2, 'node-restock-M2b');
    const keys = ['node-many-4', 'node-many-5', 'node-many-6'];
    const r = await client.query('SELECT * FROM inventory.reserve_many($1, $2, $3)',
      [['node-M1', 'node-M2', 'node-M2'], [1, 3, 1], keys]);
    assert.deepEqual(r.rows.map((x) => [x.sku, x.qty, x.ok, x.status]), [
      ['node-M1', '1', true, 'ok'],
      ['node-M2', '3', false, 'insufficient'],
      ['node-M2', '1', true, 'ok'],
    ]);
    assert.equal(await available('node-M1'), '1');
    assert.equal(await available('node-M2'), '1');
    assert.equal(await ledgerRows('node-many-5'), '0');
  });

  await test('reserve_many with arrays of different lengths: 2202E', async () => {
    const err = await expectError(client, 'SELECT * FROM inventory.reserve_many($1, $2, $3)',
      [['node-M1', 'node-M1'], [1], ['node-many-x', 'node-many-y']]);
    assert.equal(err.code, '2202E');
  });

  await test('reserve_cart with JS arrays is all or nothing; confirm_order settles every line', async () => {
    await restock('node-C1', 5, 'node-restock-C1');
    await restock('node-C2', 1, 'node-restock-C2');
    // node-C2 cannot serve 2: the whole cart is refused, nothing held.
    let r = await client.query('SELECT ok, status, sku FROM inventory.reserve_cart($1, $2, $3)',
      ['node-cart-1', ['node-C1', 'node-C2'], [1, 2]]);
    assert.deepEqual(r.rows, [
      { ok: false, status: 'cart_refused', sku: 'node-C1' },
      { ok: false, status: 'insufficient', sku: 'node-C2' },
    ]);
    assert.equal(await available('node-C1'), '5');
    assert.equal(await ledgerRows('node-cart-1'), '0');
    r = await client.query('SELECT ok, status, sku FROM inventory.reserve_cart($1, $2, $3)',
      ['node-cart-2', ['node-C1', 'node-C2'], [1, 1]]);
    assert.deepEqual(r.rows.map((x) => x.status), ['ok', 'ok']);
    r = await client.query('SELECT ok, status, sku, state FROM inventory.confirm_order($1)',
      ['node-cart-2']);
    assert.deepEqual(r.rows, [
      { ok: true, status: 'ok', sku: 'node-C1', state: 'CONFIRMED' },
      { ok: true, status: 'ok', sku: 'node-C2', state: 'CONFIRMED' },
    ]);
  });

  await test('set_rules: per-buyer limit through buyer_id => $n, a sale window from JS Dates', async () => {
    await restock('node-R', 10, 'node-restock-R');
    await admin.query('SELECT inventory.set_rules($1, max_per_buyer => $2)', ['node-R', 2]);
    const q = 'SELECT (inventory.reserve($1, $2, $3, buyer_id => $4)).status';
    assert.equal((await client.query(q, ['node-R', 1, 'node-rule-0', null])).rows[0].status,
      'buyer_required');
    assert.equal((await client.query(q, ['node-R', 2, 'node-rule-1', 'ann'])).rows[0].status, 'ok');
    assert.equal((await client.query(q, ['node-R', 1, 'node-rule-2', 'ann'])).rows[0].status,
      'limit_exceeded');
    assert.equal((await client.query(q, ['node-R', 1, 'node-rule-3', 'bob'])).rows[0].status, 'ok');
    // JS Dates are sent as timestamps with their offset; a window far ahead.
    await admin.query('SELECT inventory.set_rules($1, sale_starts => $2, sale_ends => $3)',
      ['node-R', new Date(Date.UTC(2100, 0, 1)), new Date(Date.UTC(2100, 0, 2))]);
    const s = await admin.query('SELECT sale_starts, sale_ends FROM inventory.sku WHERE sku = $1',
      ['node-R']);
    assert.equal(s.rows[0].sale_starts.toISOString(), '2100-01-01T00:00:00.000Z');
    assert.equal(s.rows[0].sale_ends.toISOString(), '2100-01-02T00:00:00.000Z');
    assert.equal((await client.query(q, ['node-R', 1, 'node-rule-4', 'cat'])).rows[0].status,
      'not_on_sale');
    const err = await expectError(admin, 'SELECT inventory.set_rules($1, max_per_buyer => $2)',
      ['node-no-such-sku', 1]);
    assert.equal(err.code, '42704');
  });

  // 9 ----------------------------------------------------------------------
  await test('inventory.available($1) is an int8 string by default', async () => {
    const r = await client.query('SELECT inventory.available($1) AS a', ['node-B']);
    assert.equal(r.fields[0].dataTypeID, 20);
    assert.equal(r.rows[0].a, '3');
    const none = await client.query('SELECT inventory.available($1) AS a', ['node-no-such-sku']);
    assert.equal(none.rows[0].a, null);
  });

  await test('a per-client int8 parser (Client config types) gives BigInt, and does not leak', async () => {
    const types = new pg.TypeOverrides();
    types.setTypeParser(20, BigInt);             // int8 -> BigInt, exact
    const typed = new pg.Client({ ...as(APP), types });
    await typed.connect();
    try {
      let r = await typed.query('SELECT inventory.available($1) AS a', ['node-B']);
      assert.equal(typeof r.rows[0].a, 'bigint');
      assert.equal(r.rows[0].a, 3n);
      r = await typed.query('SELECT qty, available, version FROM inventory.reserve($1, $2, $3)',
        ['node-B', 1, 'node-order-typed']);
      assert.equal(r.rows[0].qty, 1n);
      assert.equal(r.rows[0].available, 2n);
      assert.equal(typeof r.rows[0].version, 'bigint');
    } finally {
      await typed.end();
    }
    // The other clients still get strings.
    assert.equal(await available('node-B'), '2');
    const p = await pool.query('SELECT inventory.available($1) AS a', ['node-B']);
    assert.equal(p.rows[0].a, '2');
  });

  await test('a per-client parseInt parser gives a JS number', async () => {
    const typed = new pg.Client({
      ...as(APP),
      types: { getTypeParser: (oid, format) => (oid === 20 ? (v) => parseInt(v, 10) : pg.types.getTypeParser(oid, format)) },
    });
    await typed.connect();
    try {
      const r = await typed.query('SELECT inventory.available($1) AS a', ['node-B']);
      assert.equal(r.rows[0].a, 2);
    } finally {
      await typed.end();
    }
  });

  // 10 ---------------------------------------------------------------------
  await test("ttl => $4 as the string '10 minutes': expires_at = the server's now() + 10 min", async () => {
    const r = await client.query(
      `SELECT r.*, now() AS server_now, extract(epoch FROM r.expires_at - now()) AS secs
         FROM inventory.reserve($1, $2, $3, ttl => $4) r`,
      ['node-A', 1, 'node-order-ttl', '10 minutes']);
    const row = r.rows[0];
    assert.equal(row.status, 'ok');
    // "now" of the call is the statement's start, which is now() here.
    const secs = parseFloat(row.secs);             // numeric also arrives as a string
    assert.equal(typeof row.secs, 'string');
    assert.ok(Math.abs(secs - 600) <= 1, `expires in ${secs} s`);
    assert.ok(row.server_now instanceof Date);
    const ms = row.expires_at.getTime() - row.server_now.getTime();
    assert.ok(Math.abs(ms - 600000) <= 1000, `expires_at - now() = ${ms} ms`);
  });

  await test('extend($1, 1, $2) with an interval string; a non-positive ttl is 22023', async () => {
    const r = await client.query(
      `SELECT r.status, extract(epoch FROM r.expires_at - now()) AS secs
         FROM inventory.extend($1, 1, $2) r`, ['node-order-ttl', '1 hour']);
    assert.equal(r.rows[0].status, 'ok');
    assert.ok(Math.abs(parseFloat(r.rows[0].secs) - 3600) <= 1);
    const err = await expectError(client, 'SELECT * FROM inventory.reserve($1, $2, $3, ttl => $4)',
      ['node-A', 1, 'node-order-ttl0', '0 seconds']);
    assert.equal(err.code, '22023');
  });

  // 11 ---------------------------------------------------------------------
  await test('20 pooled clients, 200 reserves of 1 unit on 50: exactly 50 ok, 150 insufficient', async () => {
    const CLIENTS = 20;
    const PER_CLIENT = 10;
    await restock('node-HOT', 50, 'node-restock-HOT');
    // Hold 20 distinct sessions at once, then let all of them buy together.
    const sessions = await Promise.all(Array.from({ length: CLIENTS }, () => pool.connect()));
    let results;
    try {
      const pids = await Promise.all(sessions.map(async (s) =>
        (await s.query('SELECT pg_backend_pid() AS pid')).rows[0].pid));
      assert.equal(new Set(pids).size, CLIENTS, '20 distinct backends');
      results = await Promise.all(sessions.map(async (s, c) => {
        const out = [];
        for (let i = 0; i < PER_CLIENT; i += 1) {
          const r = await s.query({
            name: 'hot-reserve',
            text: 'SELECT ok, status FROM inventory.reserve($1, $2, $3)',
            values: ['node-HOT', 1, `node-hot-${c}-${i}`],
          });
          out.push(r.rows[0]);
        }
        return out;
      }));
    } finally {
      sessions.forEach((s) => s.release());
    }
    const all = results.flat();
    assert.equal(all.length, CLIENTS * PER_CLIENT);
    const tally = {};
    for (const r of all) {
      assert.equal(r.ok, r.status === 'ok');
      tally[r.status] = (tally[r.status] || 0) + 1;
    }
    assert.deepEqual(tally, { ok: 50, insufficient: 150 });
    assert.equal(await available('node-HOT'), '0');
    const st = await client.query(
      'SELECT on_hand, reserved, available FROM inventory.stock WHERE sku = $1', ['node-HOT']);
    assert.deepEqual(st.rows, [{ on_hand: '50', reserved: '50', available: '0' }]);
    const l = await admin.query(
      "SELECT count(*) AS n FROM inventory.ledger WHERE sku = $1 AND kind = 'reserve'", ['node-HOT']);
    assert.equal(l.rows[0].n, '50');
  });

  // 12 ---------------------------------------------------------------------
  // reserve_now(): one reservation committed on its own, the status as text.
  const fallbacks = async () =>
    (await monitor.query('SELECT inventory.express_fallbacks() AS n')).rows[0].n;
  const fallbacksBefore = await fallbacks();
  await restock('node-NOW', 6, 'node-restock-NOW');

  await test('reserve_now($1, $2, $3) parameterised: the status is a string; the ledger row is there after ok', async () => {
    const r = await client.query(
      'SELECT s AS status, statement_timestamp()::text AS at FROM inventory.reserve_now($1, $2, $3, ttl => $4) s',
      ['node-NOW', 2, 'node-now-1', '10 minutes']);
    assert.equal(r.fields[0].dataTypeID, 25);            // text
    assert.equal(r.rows[0].status, 'ok');
    const l = await admin.query(
      `SELECT kind, sku, qty, state, buyer_id, created_at::text AS created_at,
              expires_at - created_at = interval '10 minutes' AS ttl_ok
         FROM inventory.ledger WHERE order_id = $1 AND batch_id = 1`, ['node-now-1']);
    assert.deepEqual(l.rows, [{ kind: 'reserve', sku: 'node-NOW', qty: '2', state: 'PENDING',
      buyer_id: null, created_at: r.rows[0].at, ttl_ok: true }]);
    assert.equal(await available('node-NOW'), '4');
  });

  await test('reserve_now replayed: duplicate; unknown SKU: unknown_sku; key reused: 23505', async () => {
    const q = 'SELECT inventory.reserve_now($1, $2, $3) AS status';
    assert.equal((await client.query(q, ['node-NOW', 2, 'node-now-1'])).rows[0].status, 'duplicate');
    assert.equal(await ledgerRows('node-now-1'), '1');
    assert.equal(await available('node-NOW'), '4');
    assert.equal((await client.query(q, ['node-no-such-sku', 1, 'node-now-x'])).rows[0].status,
      'unknown_sku');
    const err = await expectError(client, q, ['node-NOW', 3, 'node-now-1']);
    assert.equal(err.code, '23505');
    assert.match(err.detail, /reservation of 2 units/);
  });

  await test('reserve_now as a simple query without parameters: ok', async () => {
    const r = await client.query("SELECT inventory.reserve_now('node-NOW', 1, 'node-now-simple') AS status");
    assert.equal(r.rows[0].status, 'ok');
    assert.equal(await ledgerRows('node-now-simple'), '1');
  });

  await test('reserve_now as a named prepared statement: ok until sold out, then insufficient; a replay duplicate', async () => {
    const left = Number(await available('node-NOW'));
    const call = (key) => client.query({
      name: 'reserve-now',
      text: 'SELECT inventory.reserve_now($1, $2, $3) AS status',
      values: ['node-NOW', 1, key],
    });
    const statuses = [];
    for (let i = 0; i < left + 3; i += 1) statuses.push((await call(`node-now-prep-${i}`)).rows[0].status);
    assert.deepEqual(statuses, [...Array(left).fill('ok'), 'insufficient', 'insufficient', 'insufficient']);
    assert.equal((await call('node-now-prep-0')).rows[0].status, 'duplicate');
    const p = await client.query(
      "SELECT statement FROM pg_prepared_statements WHERE name = 'reserve-now'");
    assert.equal(p.rows.length, 1);
    assert.match(p.rows[0].statement, /inventory\.reserve_now/);
    const l = await admin.query(
      "SELECT count(*) AS n FROM inventory.ledger WHERE order_id LIKE 'node-now-prep-%'");
    assert.equal(l.rows[0].n, String(left));
    assert.equal(await available('node-NOW'), '0');
  });

  await restock('node-NOW2', 10, 'node-restock-NOW2');

  await test('BEGIN; reserve_now: 25001 with the hint to use reserve(); ROLLBACK; nothing reserved', async () => {
    const before = await available('node-NOW2');
    await client.query('BEGIN');
    let err;
    try {
      err = await expectError(client, 'SELECT inventory.reserve_now($1, $2, $3)',
        ['node-NOW2', 1, 'node-now-tx']);
      assert.equal(err.code, '25001');
      assert.equal(err.message, 'inventory.reserve_now() cannot run inside a transaction block');
      assert.equal(err.hint, 'Call it outside the transaction, in autocommit (psycopg: connection.autocommit = True; node-postgres and psql: without BEGIN), or use inventory.reserve(), which commits with the transaction around it.');
      assert.equal((await expectError(client, 'SELECT 1')).code, '25P02');
    } finally {
      await client.query('ROLLBACK');
    }
    // a named prepared statement inside a transaction: refused the same way
    await client.query('BEGIN');
    try {
      err = await expectError(client, {
        name: 'reserve-now', text: 'SELECT inventory.reserve_now($1, $2, $3) AS status',
        values: ['node-NOW2', 1, 'node-now-tx'] });
      assert.equal(err.code, '25001');
    } finally {
      await client.query('ROLLBACK');
    }
    assert.equal(await ledgerRows('node-now-tx'), '0');
    assert.equal(await available('node-NOW2'), before);
  });

  await test('reserve_now in a query string of two statements (an implicit transaction block): 25001', async () => {
    const err = await expectError(client,
      "SELECT inventory.reserve_now('node-NOW2', 1, 'node-now-multi'); SELECT 1");
    assert.equal(err.code, '25001');
    assert.equal(await ledgerRows('node-now-multi'), '0');
    // the connection goes on
    assert.equal((await client.query('SELECT inventory.reserve_now($1, $2, $3) AS s',
      ['node-NOW2', 1, 'node-now-after'])).rows[0].s, 'ok');
  });

  await test('20 pooled clients, 200 reserve_now calls of 1 unit on 50: exactly 50 ok, one ledger row each', async () => {
    const CLIENTS = 20;
    const PER_CLIENT = 10;
    await restock('node-NOW-HOT', 50, 'node-restock-NOW-HOT');
    const sessions = await Promise.all(Array.from({ length: CLIENTS }, () => pool.connect()));
    let results;
    try {
      results = await Promise.all(sessions.map(async (s, c) => {
        const out = [];
        for (let i = 0; i < PER_CLIENT; i += 1) {
          const key = `node-now-hot-${c}-${i}`;
          const r = await s.query({
            name: 'hot-reserve-now',
            text: 'SELECT inventory.reserve_now($1, $2, $3) AS status',
            values: ['node-NOW-HOT', 1, key],
          });
          out.push([key, r.rows[0].status]);
        }
        return out;
      }));
    } finally {
      sessions.forEach((s) => s.release());
    }
    const all = results.flat();
    const tally = {};
    for (const [, st] of all) tally[st] = (tally[st] || 0) + 1;
    assert.deepEqual(tally, { ok: 50, insufficient: 150 });
    const oks = all.filter(([, st]) => st === 'ok').map(([k]) => k).sort();
    const l = await admin.query(
      "SELECT order_id FROM inventory.ledger WHERE sku = $1 AND kind = 'reserve' ORDER BY order_id",
      ['node-NOW-HOT']);
    assert.deepEqual(l.rows.map((x) => x.order_id), oks);
    assert.equal(await available('node-NOW-HOT'), '0');
  });

  await test("every reserve_now went through the database's express writer, none fell back", async () => {
    assert.equal(await fallbacks(), fallbacksBefore);
    const w = await monitor.query(
      'SELECT rows FROM inventory.express_status WHERE datname = current_database()');
    const l = await admin.query(
      "SELECT count(*) AS n FROM inventory.ledger WHERE order_id LIKE 'node-now-%' AND kind = 'reserve'");
    assert.deepEqual(w.rows, [{ rows: l.rows[0].n }]);
  });

  await test('inventory.verify() returns no rows: cache = tables', async () => {
    // verify(wait): every cached SKU compared, none passed over as busy
    const r = await admin.query("SELECT * FROM inventory.verify('30 s')");
    assert.deepEqual(r.rows, []);
  });
}

main()
  .catch((err) => {
    // Setup or teardown failed outside any test: report it as a failed test.
    count += 1;
    failures += 1;
    console.log(`not ok ${count} - the suite ran to the end`);
    diag(err && err.stack ? err.stack : err);
  })
  .finally(() => {
    console.log(`1..${count}`);
    if (failures) diag(`${failures} of ${count} failed`);
    process.exit(failures ? 1 : 0);
  });
