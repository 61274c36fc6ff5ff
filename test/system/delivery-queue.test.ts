/** The bounded retry queue over real HTTP to a loopback peer. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger } from '../../src/core/log.js';
import { DeliveryQueue } from '../../src/sinks/delivery-queue.js';
import { createPoster, MAX_RESPONSE_BYTES } from '../../src/sinks/http-post.js';
import { createHttpClient } from '../../src/core/net/http-client.js';
import { SinkStats } from '../../src/core/sink.js';
import { HttpCapture } from '../helpers/http-capture.js';
import { waitFor } from '../helpers/wait.js';

const posterTo = (url: string, timeoutMs: number) =>
  createPoster(createHttpClient({ url, timeoutMs, maxResponseBytes: MAX_RESPONSE_BYTES }), {
    ca: 'ca',
    cert: 'cert',
    endpoint: 'endpoint',
  });

const payload = (i: number) => ({ body: Buffer.from(`payload-${String(i).padStart(3, '0')}-${'x'.repeat(88)}`), points: 10 });

test('while the peer fails, the queue keeps the newest data within max_queue_bytes; on recovery it delivers in order', async () => {
  const rx = await new HttpCapture().start();
  let up = false;
  const accepted: number[] = [];
  rx.status = (n) => {
    if (up) accepted.push(n - 1);
    return up ? 200 : 503;
  };
  const poster = posterTo(`${rx.url}/x`, 2000);
  const stats = new SinkStats();
  const lines: string[] = [];
  const q = new DeliveryQueue({
    maxBytes: 1000,
    send: (p) => poster.post(p.body, {}),
    stats,
    log: createLogger('info', (l) => lines.push(l)),
    minBackoffMs: 20,
    maxBackoffMs: 40,
  });
  try {
    for (let i = 0; i < 30; i++) {
      q.push(payload(i));
      assert.ok(stats.queueBytes <= 1000, `queue at ${stats.queueBytes} bytes`);
    }
    assert.equal(q.length, 10, 'ten 100-byte payloads fit in 1000 bytes');
    assert.equal(stats.dropped, 200, 'the 20 oldest payloads were dropped and counted (10 points each)');
    await waitFor('a few failed attempts', () => stats.errors >= 3);
    up = true;
    await waitFor('queue drained', () => q.length === 0);
    const delivered = accepted.map((i) => rx.requests[i]!.body.toString().slice(0, 11));
    assert.deepEqual(
      delivered,
      Array.from({ length: 10 }, (_, i) => `payload-${String(20 + i).padStart(3, '0')}`),
      'oldest kept first',
    );
    assert.equal(stats.exported, 100);
    assert.equal(stats.queueBytes, 0);
    assert.equal(lines.filter((l) => l.includes('delivery failed')).length, 1, 'an outage is logged once, not per retry');
    assert.equal(lines.filter((l) => l.includes('endpoint is back')).length, 1);
  } finally {
    poster.close();
    await rx.stop();
  }
});

test('shutdown delivers what it can before the deadline and counts the rest as dropped', async () => {
  const rx = await new HttpCapture().start();
  rx.status = 503;
  const poster = posterTo(`${rx.url}/x`, 500);
  const stats = new SinkStats();
  const lines: string[] = [];
  const q = new DeliveryQueue({
    maxBytes: 1 << 20,
    send: (p) => poster.post(p.body, {}),
    stats,
    log: createLogger('info', (l) => lines.push(l)),
    minBackoffMs: 10,
  });
  try {
    q.push(payload(1));
    q.push(payload(2));
    await q.shutdown(Date.now() + 300);
    assert.equal(stats.dropped, 20);
    assert.equal(stats.exported, 0);
    assert.equal(q.length, 0);
    assert.ok(lines.some((l) => /exiting with undelivered data \(counted as dropped\) requests=2 points=20/.test(l)));
  } finally {
    poster.close();
    await rx.stop();
  }
});
